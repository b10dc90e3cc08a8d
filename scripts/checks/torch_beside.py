#!/usr/bin/env python3
"""PyTorch's CPU figures beside flopscope's for the same ops, in alternating rounds (drift and
other load hit both sides alike):
  - `.contiguous()` of an 8192 x 8192 f32 transpose, and a clone of the same bytes (the copy it is
    set against): bench_strided's own kernels (the table shows the one that measured fastest), its
    vendor and its baseline copy vs torch, both into a tensor allocated once (`y.copy_(x.t())`, as
    flopscope's destination is) and as users write it (`x.t().contiguous()`, which allocates, page
    faults included);
  - the broadcast add (8, 1024, 768) + (768,) f32: bench_broadcast's own kernels (the fastest
    measured), its vendor and the copy of the same bytes vs torch's `a + b`;
  - GPT-2 small's feed-forward block (2048 tokens, 768 -> 3072 -> 768, GELU tanh, no bias) forward
    and forward + backward, f32: bench_backward net=ffn, the own kernels marked fastest and the
    vendors, vs torch (nn.Linear, autograd; its backward time is fwd+bwd minus fwd).
The cases are chosen by role (--roles=...) and named as `BINARY --describe` names them.
PyTorch is a peer, not a dependency: pass the Python that has it (--torch). Torch runs with as many
threads as the CPU has cores, as flopscope's OpenMP does.
Usage: .venv/bin/python scripts/checks/torch_beside.py --torch /path/to/python [--rounds 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from check_common import cpu_model, describe, gbench_medians, write_table

ROOT = Path(__file__).resolve().parents[2]

TORCH_SCRIPT = """
import json, statistics, sys, time, torch
from torch import nn
sys.path.insert(0, {scripts!r})
from torch_peer import measure
torch.set_num_threads({threads})
def median(fn, reps={reps}):
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter(); fn(); times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]
x, y = torch.randn(8192, 8192), torch.empty(8192, 8192)
print(json.dumps({{"op": "transpose", "s": median(lambda: x.t().contiguous())}}))
transpose = measure(torch, ["strided/torch/f32/cpu/m=8192,n=8192/view=transpose"], repetitions={reps})
print(json.dumps({{"op": "transpose_into", "s": statistics.median(*[c["seconds"] for c in transpose.values()])}}))
print(json.dumps({{"op": "clone", "s": median(lambda: x.clone())}}))
print(json.dumps({{"op": "clone_into", "s": median(lambda: y.copy_(x))}}))
a, b, c = torch.randn(8, 1024, 768), torch.randn(768), torch.empty(8, 1024, 768)
print(json.dumps({{"op": "add_d", "s": median(lambda: a + b)}}))
print(json.dumps({{"op": "add_d_into", "s": median(lambda: torch.add(a, b, out=c))}}))
ffn = nn.Sequential(nn.Linear(768, 3072, bias=False), nn.GELU(approximate="tanh"), nn.Linear(3072, 768, bias=False))
h = torch.randn(2048, 768, requires_grad=True)
def step():
    y = ffn(h); y.backward(torch.ones_like(y))
with torch.no_grad():
    print(json.dumps({{"op": "ffn_fwd_nograd", "s": median(lambda: ffn(h))}}))
print(json.dumps({{"op": "ffn_fwd", "s": median(lambda: ffn(h))}}))
print(json.dumps({{"op": "ffn_fwd_bwd", "s": median(step)}}))
print(json.dumps({{"op": "version", "s": 0, "torch": torch.__version__}}))
"""


def seconds(b):
    return b["real_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", required=True, help="a Python that has PyTorch")
    parser.add_argument("--build-dir", default=str(ROOT / "build"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "results" / "baselines"))
    args = parser.parse_args()
    bench = Path(args.build_dir) / "bench"
    times: dict[str, list[float]] = {}
    version = "?"

    def add(key, value):
        times.setdefault(key, []).append(value)

    runs = [
        (bench / "bench_strided", "--devices=cpu", "--dtypes=f32", "--views=transpose", "--matrices=8192x8192",
         "--roles=baseline,own,vendor", "--benchmark_enable_random_interleaving=true"),
        (bench / "bench_broadcast", "--devices=cpu", "--dtypes=f32", "--ops=add", "--bcasts=d", "--btd=8x1024x768",
         "--roles=baseline,own,vendor", "--benchmark_enable_random_interleaving=true"),
        (bench / "bench_backward", "--devices=cpu", "--dtypes=f32", "--ffns=2048x768x3072", "--passes=fwd,bwd",
         "--roles=fastest,vendor", "--benchmark_enable_random_interleaving=true"),
    ]
    cases = {}
    for binary, *flags in runs:
        cases.update(describe(binary, *flags))
    for _ in range(args.rounds):
        for binary, *flags in runs:
            for name, b in gbench_medians(binary, *flags, repetitions=5, min_time=0.2, warmup_s=0.5).items():
                add(name, seconds(b))
        script = TORCH_SCRIPT.format(threads=os.cpu_count(), reps=7, scripts=str(ROOT / "scripts"))
        out = subprocess.run([args.torch, "-c", script], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            row = json.loads(line)
            if row["op"] == "version":
                version = row["torch"]
            else:
                add(f"torch {row['op']}", row["s"])
    med = {k: statistics.median(v) for k, v in times.items()}

    def measured(family, role):
        """{variant: median} of the family's cases of that role (one case a variant here)."""
        return {c["variant"]: med[name] for name, c in cases.items()
                if name.startswith(f"{family}/") and c["role"] == role and name in med}

    def fastest(family, role):
        """(variant, median) of the family's case of that role that measured fastest, else (None, None)."""
        return min(measured(family, role).items(), key=lambda vs: vs[1], default=(None, None))

    n = 8192 * 8192
    copy_t = fastest("strided", "baseline")[1]
    copy_b = fastest("broadcast", "baseline")[1]
    own_t, own_b = fastest("strided", "own"), fastest("broadcast", "own")
    rows = [(f"transpose 8192² f32: flopscope {own_t[0]}", own_t[1], copy_t, "its copy")]
    rows += [(f"transpose 8192² f32: {v} (vendor)", s, copy_t, "its copy")
             for v, s in measured("strided", "vendor").items()]
    rows += [
        ("transpose 8192² f32: flopscope copy of the same bytes", copy_t, None, ""),
        (f"transpose 8192² f32: torch {version} y.copy_(x.t()) (y allocated once)", med.get("torch transpose_into"),
         med.get("torch clone_into"), "torch's y.copy_(x)"),
        (f"transpose 8192² f32: torch {version} x.t().contiguous() (allocates y each call)", med.get("torch transpose"),
         med.get("torch clone"), "torch's x.clone()"),
        (f"torch {version} y.copy_(x) (8192² f32, y allocated once)", med.get("torch clone_into"), copy_t,
         "flopscope's copy"),
        (f"torch {version} x.clone() (8192² f32)", med.get("torch clone"), None, ""),
        (f"add (8,1024,768)+(768) f32: flopscope {own_b[0]}", own_b[1], copy_b, "a copy of the same bytes"),
    ]
    rows += [(f"add (8,1024,768)+(768) f32: {v} (vendor)", s, copy_b, "a copy of the same bytes")
             for v, s in measured("broadcast", "vendor").items()]
    rows += [
        (f"add (8,1024,768)+(768) f32: torch {version} torch.add(a, b, out=c)", med.get("torch add_d_into"), copy_b,
         "flopscope's copy of the same bytes"),
        (f"add (8,1024,768)+(768) f32: torch {version} a + b (allocates)", med.get("torch add_d"), copy_b,
         "flopscope's copy of the same bytes"),
    ]
    ffn = "m=2048,d=768,d_ff=3072/net=ffn"
    for variant in dict.fromkeys(c["variant"] for name, c in cases.items() if name.startswith("backward/")):
        fwd = med.get(f"backward/{variant}/f32/cpu/{ffn}/pass=fwd")
        bwd = med.get(f"backward/{variant}/f32/cpu/{ffn}/pass=bwd")
        rows.append((f"FFN block fwd f32: bench_backward {variant}", fwd, med.get("torch ffn_fwd"), "torch's forward"))
        rows.append((f"FFN block bwd f32: bench_backward {variant}", bwd,
                     med.get("torch ffn_fwd_bwd", 0) - med.get("torch ffn_fwd", 0), "torch's backward"))
    rows.append((f"FFN block fwd f32: torch {version} (autograd recording)", med.get("torch ffn_fwd"), None, ""))
    rows.append((f"FFN block fwd f32: torch {version} (no_grad)", med.get("torch ffn_fwd_nograd"), None, ""))
    rows.append((f"FFN block bwd f32: torch {version} (fwd+bwd minus fwd)",
                 med.get("torch ffn_fwd_bwd", 0) - med.get("torch ffn_fwd", 0), None, ""))
    cores = os.cpu_count()
    lines = [f"# PyTorch beside flopscope on the CPU, {cpu_model()} ({cores} CPUs)", "",
             f"`{' '.join(sys.argv)}`: medians of {args.rounds} alternating rounds (flopscope's figures are "
             "themselves medians of 5 interleaved repetitions; torch's of 7 calls). A ratio is the other's time "
             "over this one's (above 1: this one is faster).", "",
             "| case | median time | time ratio | against |", "|---|---|---|---|"]
    for name, s, other, against in rows:
        if s:
            lines.append(f"| {name} | {s * 1e3:.2f} ms | {f'{other / s:.2f}' if other else ''} | {against} |")
    lines.append("")
    lines.append(f"Bytes: a transpose or clone of 8192² f32 moves {2 * n * 4 / 2**20:.0f} MiB; the FFN block forward is "
                 f"{2 * 2 * 2048 * 768 * 3072 / 1e9:.1f} GFLOP (PyTorch's count), backward twice that.")
    write_table("\n".join(lines) + "\n", args.out, "torch-beside")


if __name__ == "__main__":
    main()
