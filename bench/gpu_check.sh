#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU: builds for sm_90, runs the CUDA tests, a short
# ceilings, copy and conversion run on cuda:0, and prints a table. Output goes to stdout and to
# results/gpu_check/<date>-<gpu>.txt (keep it: it is the evidence of a GPU run).
#   bench/gpu_check.sh            # needs cmake, g++, nvcc, Google Benchmark, GoogleTest, nlohmann-json
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FLOPSCOPE_GPU_BUILD_DIR:-build-gpu}
jobs=$(nproc)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | tr ' ' '_' || echo unknown)
mkdir -p results/gpu_check
log=results/gpu_check/$(date +%Y%m%d-%H%M%S)-${gpu:-unknown}.txt
exec > >(tee "$log") 2>&1
echo "== flopscope gpu_check on $(hostname): ${gpu}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv || true
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DFLOPSCOPE_CUDA=ON -DFLOPSCOPE_CUDA_ARCHITECTURES=90 >/dev/null
cmake --build "$build" -j "$jobs" --target bench_copy bench_peak bench_convert test_bench test_convert flopscope 2>&1 | grep -E "error|warning" || true
cmake --build "$build" -j "$jobs" --target bench_copy bench_peak bench_convert test_bench test_convert flopscope >/dev/null
echo "== CUDA tests"
"$build/tests/test_bench" --gtest_filter='Cuda*:*cuda*:*Cuda*' --gtest_brief=1 || true
for t in "$build"/tests/test_*; do
  [[ -x $t && $t != */test_bench ]] && "$t" --gtest_filter='*Cuda*:*CUDA*:*cuda*' --gtest_brief=1 || true
done
out=$(mktemp -d)
export FLOPSCOPE_WARMUP_S=0.5
echo "== ceilings (cuda:0)"
"$build/bench/bench_peak" --devices=cuda:0 --benchmark_repetitions=3 --benchmark_min_time=0.1 \
  --benchmark_out="$out/bench_peak.json" --benchmark_out_format=json >/dev/null
echo "== copy sweep (cuda:0)"
"$build/bench/bench_copy" --devices=cuda:0 --dtypes=f32 --benchmark_repetitions=3 --benchmark_min_time=0.05 \
  --benchmark_out="$out/bench_copy.json" --benchmark_out_format=json >/dev/null
echo "== conversions beside their f32->f32 copy (cuda:0)"
"$build/bench/bench_convert" --devices=cuda:0 --sizes=2^26 --benchmark_repetitions=3 --benchmark_min_time=0.05 \
  --benchmark_enable_random_interleaving=true --benchmark_out="$out/bench_convert.json" --benchmark_out_format=json >/dev/null
python3 - "$out" <<'PY'
import json, sys, pathlib
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    data = json.loads(f.read_text())
    ctx = json.loads(data["context"]["flopscope"])
    for dev, d in ctx["devices"].items():
        print(f"{f.name}: {dev} {d['name']} clock {d['clock_hz']/1e9:.2f} GHz")
    print(f"{'case':60s} {'median':>10s} {'TFLOP/s':>9s} {'GB/s':>9s} {'%peak':>7s}  note")
    for b in data["benchmarks"]:
        if b.get("error_occurred"):
            print(f"{b['run_name']:60s} {b['error_message']}")
            continue
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        if b.get("run_type") != "aggregate" and any(x.get("run_name") == b["run_name"] and x.get("run_type") == "aggregate" for x in data["benchmarks"]):
            continue
        pct = b.get("pct_peak_flops") or b.get("pct_peak_bw") or 0
        print(f"{b['run_name']:60s} {b['real_time']:9.1f}{b['time_unit']} {b.get('flops_per_second',0)/1e12:9.1f}"
              f" {b.get('bytes_per_second',0)/1e9:9.1f} {pct:6.1f}%  {b.get('label','')}")
PY
cp "$out"/*.json results/gpu_check/ 2>/dev/null || true
echo "== written to $log"
