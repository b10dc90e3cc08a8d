"""Writes tests/python/data/matmul_run/: the fixture that `flopscope account --predict` is tested on.

The matmul family does not exist yet; this is what its Google Benchmark JSON will look like
(analysis/FORMAT.md): cases `matmul/<variant>/<dtype>/<device>/m=,n=,k=/layout=NN|NT|TN` with
`flops` and `flops_per_second` counters, repetitions with mean/median/stddev/cv aggregates (CUDA,
manual time) or single iterations (CPU), one case with repetitions and no aggregates, a failed and
a skipped case, and a copy case in another file. Rates follow a saturating curve in the size
(geometric mean of m, n, k) at the measured fractions of peak an H100 SXM (bf16, cuBLAS) and a
2-core AVX-512 Xeon (f32, OpenBLAS) reach, with a deterministic +-3% wobble; the repetitions
spread around the median so that mean and median differ.

Run it again after a format change: python3 tests/python/data/make_matmul_run.py
"""
import hashlib
import json
from pathlib import Path

OUT = Path(__file__).resolve().parent / "matmul_run"
H100_BF16 = 132 * 4096 * 1.83e9
XEON_F32 = 2 * 2.6e9 * 2 * 16 * 2
LAYOUT_FACTOR = {"NN": 1.0, "NT": 0.98, "TN": 0.96}


def wobble(name):
    return 1 + ((int(hashlib.sha256(name.encode()).hexdigest(), 16) % 61) - 30) / 1000


def rate(device, variant, layout, m, n, k):
    g = (m * n * k) ** (1 / 3)
    if device == "cuda:0":
        r = H100_BF16 * 0.78 * g / (g + 1200) * (0.45 if variant == "tiled" else 1.0)
    else:
        r = XEON_F32 * 0.85 * g / (g + 48) * (0.7 if variant == "own" else 1.0)
    return r * LAYOUT_FACTOR[layout]


def context(binary):
    devices = {
        "cpu": {"kind": "cpu", "name": "Intel(R) Xeon(R) Processor", "key": "cpu-intel-r-xeon-r-processor",
                "peaks": {"compute": {"f32": {"flops_per_second": XEON_F32, "formula": "2 cores x 2.600 GHz x 2 FMA units x 16 lanes x 2 FLOP", "source": "computed"}},
                          "memory_bytes_per_second": None, "memory_source": "unknown"}},
        "cuda:0": {"kind": "cuda", "name": "NVIDIA H100 80GB HBM3", "key": "cuda-nvidia-h100-80gb-hbm3", "sm": "9.0", "sm_count": 132,
                   "peaks": {"compute": {"bf16": {"flops_per_second": H100_BF16, "formula": "132 SMs x 4096 FLOP/clk/SM x 1.83 GHz", "source": "datasheet"}},
                             "memory_bytes_per_second": 3.35e12, "memory_source": "datasheet"}},
    }
    flopscope = {"schema": 1, "binary": binary, "build": {"compiler": "GNU 12.2.0", "build_type": "Release", "cuda": "12.8", "git_commit": "fixture"},
                 "run": {"hot": False, "argv": [binary]}, "devices": devices, "skipped_devices": {}}
    return {"date": "2026-12-10T12:00:00+00:00", "host_name": "fixture", "executable": f"build/bench/{binary}",
            "num_cpus": 2, "mhz_per_cpu": 2600, "library_version": "v1.7.1", "library_build_type": "release",
            "flopscope": json.dumps(flopscope)}


def entry(run_name, suffix, flops, seconds, dtype, extra):
    time_ns = seconds * 1e9
    out = {"name": run_name + suffix, "family_index": 0, "per_family_instance_index": 0, "run_name": run_name + suffix,
           "iterations": max(1, int(0.2 / seconds)), "real_time": time_ns, "cpu_time": time_ns, "time_unit": "ns",
           "flops": flops, "flops_per_second": flops / seconds, "bytes": 0.0, "label": f"bound=compute compute={dtype}"}
    out.update(extra)
    return out


def cases():
    squares = {"cuda:0": [256, 512, 1024, 2048, 4096, 8192], "cpu": [64, 128, 256, 512, 1024, 2048]}
    # GPT-2 small at batch 8 x seq 1024 (8192 tokens): a few of its forward shapes, measured as they are.
    gpt2 = [(8192, 2304, 768, "NN"), (8192, 768, 768, "NN"), (8192, 3072, 768, "NN"), (8192, 768, 3072, "NN")]
    for device, dtype, variants in (("cuda:0", "bf16", ("cublas", "tiled")), ("cpu", "f32", ("openblas", "own"))):
        shapes = [(s, s, s, layout) for s in squares[device] for layout in ("NN", "NT", "TN")]
        if device == "cuda:0":
            shapes += gpt2
        for variant in variants:
            for m, n, k, layout in shapes:
                yield device, dtype, variant, m, n, k, layout


def main():
    benchmarks = []
    for index, (device, dtype, variant, m, n, k, layout) in enumerate(cases()):
        name = f"matmul/{variant}/{dtype}/{device}/m={m},n={n},k={k}/layout={layout}"
        flops = 2.0 * m * n * k
        median = flops / (rate(device, variant, layout, m, n, k) * wobble(name))
        if device == "cuda:0":
            times = [median * 0.99, median, median * 1.05]  # mean above the median
            for i, t in enumerate(times):
                benchmarks.append(entry(name, "/manual_time", flops, t, dtype, {"run_type": "iteration", "repetitions": 3, "repetition_index": i, "threads": 1}))
            mean = sum(times) / 3
            for aggregate, t in (("mean", mean), ("median", median), ("stddev", median * 0.03)):
                benchmarks.append(entry(name, "/manual_time", flops, t, dtype, {"run_type": "aggregate", "repetitions": 3, "threads": 1, "aggregate_name": aggregate, "aggregate_unit": "time"}))
            benchmarks.append({"name": name + "/manual_time_cv", "run_name": name + "/manual_time", "run_type": "aggregate", "repetitions": 3, "threads": 1,
                               "aggregate_name": "cv", "aggregate_unit": "percentage", "iterations": 3, "real_time": 0.03, "cpu_time": 0.03, "time_unit": "ns"})
        elif (m, layout) == (512, "NN") and variant == "openblas":
            # Three repetitions, no aggregates: the repetition of median real_time stands for the case.
            for i, t in enumerate((median * 1.2, median, median * 0.9)):
                benchmarks.append(entry(name, "/real_time", flops, t, dtype, {"run_type": "iteration", "repetitions": 3, "repetition_index": i, "threads": 1}))
        else:
            benchmarks.append(entry(name, "/real_time", flops, median, dtype, {"run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1}))
    # A failed case (must not be used) and a skipped one.
    failed = "matmul/fast/bf16/cuda:0/m=4096,n=4096,k=4096/layout=NN/manual_time"
    benchmarks.append({"name": failed, "run_name": failed, "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1, "iterations": 0,
                       "real_time": 0, "cpu_time": 0, "time_unit": "ns", "error_occurred": True, "error_message": "failed: 12 of 16777216 elements differ; first at [0, 3]"})
    skipped = "matmul/cublas/f8e4m3/cuda:0/m=4096,n=4096,k=4096/layout=TN/manual_time"
    benchmarks.append({"name": skipped, "run_name": skipped, "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1, "iterations": 0,
                       "real_time": 0, "cpu_time": 0, "time_unit": "ns", "error_occurred": True, "error_message": "skipped: fp8 needs sm_89 or newer"})
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_matmul.json").write_text(json.dumps({"context": context("bench_matmul"), "benchmarks": benchmarks}, indent=1) + "\n")
    copy = "copy/simd/f32/cpu/n=268435456/real_time"
    (OUT / "bench_copy.json").write_text(json.dumps({"context": context("bench_copy"), "benchmarks": [
        entry(copy, "", 0.0, 0.03, "f32", {"run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1, "bytes": 2147483648.0})]}, indent=1) + "\n")


if __name__ == "__main__":
    main()
