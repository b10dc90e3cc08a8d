#!/usr/bin/env python3
"""Side-by-side check of flopscope's CPU figures against likwid-bench and against each other.

Runs, alternating, `rounds` times each (so drift and other load hit both sides alike):
  - likwid-bench copy_avx512 and copy_mem_avx512 on two 1 GiB arrays (all cores) vs
    bench_copy f32 n=2^28 (1 GiB per array), every variant;
  - likwid-bench peakflops_sp_avx512_fma (all cores, L1-resident) vs bench_peak's f32 FMA chains
    (the cases that measure the f32 compute ceiling; the table keeps the fastest, the widest ISA);
  - bench_convert f32->f16 and f32->bf16 at n=2^26 (256 MiB of f32), the own kernels marked fastest
    (the vector ones), vs its f32->f32 copy baseline in the same process (5 repetitions each,
    randomly interleaved), and that baseline vs the best of bench_copy's own kernels at the same n.
The cases are chosen by role (--roles=...) and by what they measure, as `BINARY --describe` says.
Prints a markdown table of medians and ratios and writes it to results/baselines/ (or --out).
Usage: .venv/bin/python scripts/checks/reference_check.py [--build-dir build] [--rounds 3]
"""
import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from check_common import F32_PEAK_FLAGS, cpu_model, describe, f32_fma_chains, gbench_medians, write_table

ROOT = Path(__file__).resolve().parents[2]
BYTES_1GIB_PAIR_KB = 2147484  # likwid's kB are 1000 bytes: two arrays of ~1 GiB


def likwid(test, workgroup, iterations):
    out = subprocess.run(["likwid-bench", "-t", test, "-W", workgroup, "-i", str(iterations)],
                         capture_output=True, text=True, timeout=600).stdout
    mflops = re.search(r"MFlops/s:\s+([\d.]+)", out)
    mbytes = re.search(r"MByte/s:\s+([\d.]+)", out)
    if not mbytes:
        raise SystemExit(f"reference_check: likwid-bench -t {test} gave no result:\n{out[-500:]}")
    return {"bytes_per_second": float(mbytes.group(1)) * 1e6,
            "flops_per_second": float(mflops.group(1)) * 1e6 if mflops else 0.0}


def flopscope(binary, *flags, repetitions=3):
    return gbench_medians(binary, *flags, repetitions=repetitions, min_time=0.3, warmup_s=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "results" / "baselines"))
    args = parser.parse_args()
    bench = ROOT / args.build_dir / "bench"
    cores = os.cpu_count()
    samples = {}

    def add(key, value):
        samples.setdefault(key, []).append(value)

    fma_cases = f32_fma_chains(bench)
    fma_chains = sorted(set(fma_cases.values()))
    convert_flags = ("--devices=cpu", "--dtypes=f16,bf16", "--sizes=2^26", "--roles=baseline,fastest",
                     "--benchmark_filter=f32->", "--benchmark_enable_random_interleaving=true")
    baseline_key = next(f"flopscope {name}" for name, c in describe(bench / "bench_convert", *convert_flags).items()
                        if c["role"] == "baseline")
    for _ in range(args.rounds):
        for test in ("copy_avx512", "copy_mem_avx512"):
            add(f"likwid {test} (2 x 1 GiB)", likwid(test, f"N:{BYTES_1GIB_PAIR_KB}kB:{cores}", 10)["bytes_per_second"])
        for name, b in flopscope(bench / "bench_copy", "--devices=cpu", "--dtypes=f32", "--sizes=2^28").items():
            add(f"flopscope {name}", b["bytes_per_second"])
        add("likwid peakflops_sp_avx512_fma", likwid("peakflops_sp_avx512_fma", f"N:24kB:{cores}", 200000)["flops_per_second"])
        for name, b in flopscope(bench / "bench_peak", *F32_PEAK_FLAGS, f"--variants={','.join(fma_chains)}").items():
            if name in fma_cases:
                add(f"flopscope {name}", b["flops_per_second"])
        # The conversions and their f32->f32 copy baseline in one process, repetitions interleaved.
        for name, b in flopscope(bench / "bench_convert", *convert_flags, repetitions=5).items():
            add(f"flopscope {name}", b["bytes_per_second"])
        for name, b in flopscope(bench / "bench_copy", "--devices=cpu", "--dtypes=f32", "--sizes=2^26",
                                 "--roles=own").items():
            add(f"flopscope {name}", b["bytes_per_second"])

    med = {k: statistics.median(v) for k, v in samples.items()}
    # The measured f32 compute ceiling: the fastest FMA chain (the widest ISA); the others left out.
    fma_keys = [k for k in med if k.removeprefix("flopscope ") in fma_cases]
    fma_key = max(fma_keys, key=med.get)
    med = {k: v for k, v in med.items() if k not in fma_keys or k == fma_key}
    copy_ref = max(med["likwid copy_avx512 (2 x 1 GiB)"], med["likwid copy_mem_avx512 (2 x 1 GiB)"])
    copy_256 = max(v for k, v in med.items() if k.startswith("flopscope copy/") and "n=67108864" in k)
    fma_ref = med["likwid peakflops_sp_avx512_fma"]
    model = cpu_model()
    lines = [f"# CPU figures against likwid-bench, {datetime.date.today()}, {model} ({cores} CPUs)", "",
             f"`{' '.join(sys.argv)}`: medians of {args.rounds} alternating rounds (each flopscope figure is itself "
             "the median of its repetitions: 3, or 5 for bench_convert), all cores.", "",
             "| measurement | median | ratio | against |", "|---|---|---|---|"]
    for key, value in sorted(med.items()):
        unit, scale = ("GFLOP/s", 1e9) if "peak" in key else ("GB/s", 1e9)
        if key.startswith("flopscope copy/") and "n=268435456" in key:
            ratio, against = value / copy_ref, "best likwid copy (1 GiB)"
        elif key == fma_key:
            ratio, against = value / fma_ref, "likwid peakflops_sp_avx512_fma"
        elif key == baseline_key:
            ratio, against = value / copy_256, "best bench_copy at n=2^26 (another process)"
        elif "convert/" in key:
            ratio, against = value / med[baseline_key], "the f32->f32 copy baseline (same process, interleaved)"
        else:
            ratio, against = None, ""
        lines.append(f"| {key} | {value / scale:.1f} {unit} | {'' if ratio is None else f'{ratio:.0%}'} | {against} |")
    write_table("\n".join(lines) + "\n", args.out, "cpu-vs-likwid")


if __name__ == "__main__":
    main()
