#!/usr/bin/env python3
"""Side-by-side check of bench_matmul's CPU figures: own kernels against the vendors, the vendors'
wrappers against the vendors' own calls, and everything against the FMA ceiling and PyTorch.

Runs, alternating, `rounds` times (so drift and other load hit every side alike):
  - bench_matmul --devices=cpu f32 and bf16, NN, at each square, --roles=fastest,vendor: the own
    kernels marked fastest beside the vendors (one process, repetitions interleaved); the table
    shows, per dtype and square, the own kernel that measured fastest and every vendor;
  - build/bench/vendor_direct at each square, for each vendor variant and dtype that bench_matmul
    runs (vendor_direct takes the variant's name; a pair it does not call is left out): cblas_sgemm
    and oneDNN's matmul primitive called back to back with nothing of flopscope around them (the
    vendors' own time for the same call);
  - bench_peak's f32 FMA chains (the cases that measure the f32 compute ceiling; the fastest is the
    measured ceiling);
  - with --torch PYTHON (an interpreter with PyTorch): torch.mm at the same squares and dtypes,
    all cores (PyTorch's CPU matmul: oneDNN or MKL).
Prints a markdown table of medians and ratios and writes it to results/baselines/ (or --out).
Usage: .venv/bin/python scripts/checks/matmul_check.py [--build-dir build] [--rounds 3] [--squares 2048,4096]
       [--torch /path/to/python]
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from check_common import F32_PEAK_FLAGS, cpu_model, describe, f32_fma_chains, gbench_medians, write_table

ROOT = Path(__file__).resolve().parents[2]

# torch.mm timed by scripts/torch_peer.py's measure() (the code the default suite's report uses).
TORCH_SCRIPT = """
import json, statistics, sys, torch
sys.path.insert(0, {scripts!r})
from torch_peer import measure
names = [f"matmul/torch/{{dtype}}/cpu/m={{n}},n={{n}},k={{n}}/layout=NN" for n in {squares} for dtype in ("f32", "bf16")]
for name, case in measure(torch, names, repetitions={reps}).items():
    print(json.dumps({{"dtype": name.split("/")[2], "n": int(name.split("m=")[1].split(",")[0]),
                      "median_s": statistics.median(case["seconds"]), "torch": torch.__version__}}))
"""


def gbench(binary, *flags, repetitions):
    return gbench_medians(binary, *flags, repetitions=repetitions, min_time=0.2, warmup_s=0.5)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--squares", default="2048,4096")
    parser.add_argument("--torch", help="a Python interpreter with PyTorch installed")
    parser.add_argument("--out", default=str(ROOT / "results" / "baselines"))
    args = parser.parse_args()
    bench = ROOT / args.build_dir / "bench"
    squares = [int(s) for s in args.squares.split(",")]
    cores = os.cpu_count()
    seconds: dict[str, list[float]] = {}

    def add(key, value):
        seconds.setdefault(key, []).append(value)

    matmul_flags = ("--devices=cpu", "--dtypes=f32,bf16", "--layouts=NN", f"--squares={args.squares}",
                    "--roles=fastest,vendor", "--benchmark_enable_random_interleaving=true")
    cases = describe(bench / "bench_matmul", *matmul_flags)
    own_variants = list(dict.fromkeys(c["variant"] for c in cases.values() if c["role"] == "own"))
    vendor_variants = list(dict.fromkeys(c["variant"] for c in cases.values() if c["role"] == "vendor"))
    direct_calls = list(dict.fromkeys((c["variant"], c["dtype"]) for c in cases.values()
                                      if c["role"] == "vendor" and not c["skip"]))
    fma_chains = sorted(set(f32_fma_chains(bench).values()))
    fma = None
    for _ in range(args.rounds):
        for name, b in gbench(bench / "bench_matmul", *matmul_flags, repetitions=5).items():
            add(name, b["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]])
        for n, (vendor, dtype) in ((n, call) for n in squares for call in direct_calls):
            run = subprocess.run([str(bench / "vendor_direct"), vendor, dtype, str(n), str(n), str(n), "5"],
                                 capture_output=True, text=True)
            if run.returncode == 2 and "usage" in run.stderr:  # a vendor or dtype that vendor_direct does not call
                continue
            if run.returncode != 0:
                raise SystemExit(f"matmul_check: vendor_direct {vendor} {dtype} {n}: {run.stderr.strip()}")
            row = json.loads(run.stdout)
            if "median_s" in row:
                add(f"direct {vendor} {dtype} n={n}", row["median_s"])
        peak = gbench(bench / "bench_peak", *F32_PEAK_FLAGS, f"--variants={','.join(fma_chains)}", repetitions=3)
        if peak:
            fma = max([fma or 0.0] + [b["flops_per_second"] for b in peak.values()])
        if args.torch:
            script = TORCH_SCRIPT.format(scripts=str(ROOT / "scripts"), squares=squares, reps=5)
            out = subprocess.run([args.torch, "-c", script], check=True, capture_output=True, text=True).stdout
            for line in out.splitlines():
                row = json.loads(line)
                add(f"torch {row['torch']} mm {row['dtype']} n={row['n']}", row["median_s"])

    med = {k: statistics.median(v) for k, v in seconds.items()}

    def case(variant, dtype, n):
        return med.get(f"matmul/{variant}/{dtype}/cpu/m={n},n={n},k={n}/layout=NN")

    def gflops(n, s):
        return 2.0 * n ** 3 / s / 1e9 if s else None

    rows = []
    for n in squares:
        for dtype in ("f32", "bf16"):
            # The own kernel that measured fastest of those marked fastest.
            own_name, own = min(((v, case(v, dtype, n)) for v in own_variants if case(v, dtype, n)),
                                key=lambda vs: vs[1], default=(None, None))
            measured = {v: case(v, dtype, n) for v in vendor_variants if case(v, dtype, n)}
            best_vendor = min(measured.values(), default=None)
            torch = next((v for k, v in med.items() if k.startswith("torch") and f" {dtype} n={n}" in k), None)
            if own:
                rows.append([f"{own_name} {dtype} n={n}", gflops(n, own),
                             f"{best_vendor / own:.2f}x the faster vendor" if best_vendor else "",
                             f"{gflops(n, own) * 1e9 / fma:.0%} of the f32 FMA ceiling" if fma and dtype == "f32" else ""])
            for vendor, s in measured.items():
                direct = med.get(f"direct {vendor} {dtype} n={n}")
                rows.append([f"{vendor} {dtype} n={n} (bench_matmul)", gflops(n, s),
                             f"time {s / direct:.3f}x the vendor's own call ({direct * 1e3:.1f} ms)" if direct else "", ""])
            if torch:
                rows.append([f"torch.mm {dtype} n={n}", gflops(n, torch),
                             f"own {torch / own:.2f}x torch" if own else "", ""])
    model = cpu_model()
    lines = [f"# Matmul on the CPU against its vendors, {datetime.date.today()}, {model} ({cores} CPUs)", "",
             f"`{' '.join(sys.argv)}`: medians of {args.rounds} alternating rounds (bench_matmul's figures are "
             "themselves medians of 5 interleaved repetitions; vendor_direct and torch of 5 calls).",
             f"Measured f32 FMA ceiling (bench_peak): {fma / 1e9:.1f} GFLOP/s." if fma else "", "",
             "| case | GFLOP/s | against | ceiling |", "|---|---|---|---|"]
    lines += [f"| {r[0]} | {r[1]:.1f} | {r[2]} | {r[3]} |" for r in rows]
    write_table("\n".join(lines) + "\n", args.out, "matmul-vs-vendors")


if __name__ == "__main__":
    main()
