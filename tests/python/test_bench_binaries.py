"""Each bench binary run at tiny sizes, as a user would: exit codes, JSON contents, errors."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / os.environ.get("FLOPSCOPE_BUILD_DIR", "build") / "bench"
BINARIES = ["bench_copy", "bench_peak", "bench_convert"]
ENV = dict(os.environ, FLOPSCOPE_WARMUP_S="0.05")


def binary(name):
    path = BENCH / name
    if not path.exists():
        pytest.skip(f"{path} not built (run ./test.sh, which builds first)")
    return path


def run_json(name, tmp_path, *flags):
    out = tmp_path / f"{name}.json"
    proc = subprocess.run(
        [str(binary(name)), *flags, "--benchmark_min_time=0.001", "--benchmark_repetitions=1",
         f"--benchmark_out={out}", "--benchmark_out_format=json"],
        capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text()), proc


@pytest.mark.parametrize("name", BINARIES)
def test_tiny_run_writes_valid_json_with_context(name, tmp_path):
    data, proc = run_json(name, tmp_path, "--sizes=17,1Ki")
    context = json.loads(data["context"]["flopscope"])
    assert context["binary"] == name
    assert "cpu" in context["devices"]
    cpu = context["devices"]["cpu"]
    assert cpu["clock_hz"] > 1e8 and cpu["peaks"]["compute"]["f32"]["flops_per_second"] > 0
    # No GPU here (or none built): the context and the console say why CUDA was skipped.
    if not any(k.startswith("cuda") for k in context["devices"]):
        assert context["skipped_devices"], "CUDA skipped without a reason in the context"
        reason = next(iter(context["skipped_devices"].values()))
        assert reason and reason in proc.stderr
    ran = 0
    for bench in data["benchmarks"]:
        if bench.get("error_occurred"):
            message = bench["error_message"]
            assert message.startswith("skipped: "), f"{bench['name']}: {message}"
            continue
        ran += 1
        for counter in ("flops", "bytes", "flops_per_second", "bytes_per_second", "intensity"):
            assert counter in bench, (bench["name"], counter)
        assert "bound=" in bench["label"]
    assert ran > 0


def test_copy_counts_bytes_by_the_convention(tmp_path):
    data, _ = run_json("bench_copy", tmp_path, "--sizes=1Ki", "--dtypes=f32,f8e4m3", "--devices=cpu")
    by_name = {b["run_name"]: b for b in data["benchmarks"]}
    assert by_name["copy/simd/f32/cpu/n=1024/real_time"]["bytes"] == 2 * 1024 * 4
    assert by_name["copy/memcpy/f8e4m3/cpu/n=1024/real_time"]["bytes"] == 2 * 1024
    rate = by_name["copy/simd/f32/cpu/n=1024/real_time"]
    assert rate["bytes_per_second"] == pytest.approx(rate["bytes"] / (rate["real_time"] * 1e-6), rel=1e-6)


def test_cuda_cases_are_skips_not_failures_without_a_gpu(tmp_path):
    data, _ = run_json("bench_copy", tmp_path, "--sizes=1Ki", "--devices=cpu,cuda:0")
    context = json.loads(data["context"]["flopscope"])
    cuda = [b for b in data["benchmarks"] if "/cuda:0/" in b["name"]]
    if "cuda:0" in context["devices"]:
        pytest.skip("a GPU is present: CUDA cases ran")
    if not cuda:  # built without CUDA: no CUDA variants at all, and the context says so
        assert "cuda" in context["skipped_devices"]
        return
    assert all(b["error_message"].startswith("skipped: ") for b in cuda)
    assert context["skipped_devices"]["cuda:0"] in cuda[0]["error_message"]


@pytest.mark.parametrize("flag, named", [
    ("--dtypes=f33", "f33"), ("--devices=gpu", "gpu"), ("--variants=fast", "fast"),
    ("--sizes=1.5M", "1.5M"), ("--sizes=", "--sizes"), ("--bogus", "--bogus"),
])
@pytest.mark.parametrize("name", BINARIES)
def test_bad_flags_are_one_line_errors_with_exit_2(name, flag, named):
    proc = subprocess.run([str(binary(name)), flag], capture_output=True, text=True, env=ENV, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0] and name in lines[0], proc.stderr


def test_compare_py_reads_the_json(tmp_path):
    compare = Path("/usr/share/benchmark/compare.py")
    if not compare.exists():
        pytest.skip("Google Benchmark's compare.py (Debian libbenchmark-tools) is not installed")
    pytest.importorskip("scipy")
    a, _ = run_json("bench_copy", tmp_path, "--sizes=1Ki", "--dtypes=f32")
    first = tmp_path / "a.json"
    (tmp_path / "bench_copy.json").rename(first)
    run_json("bench_copy", tmp_path, "--sizes=1Ki", "--dtypes=f32")
    proc = subprocess.run([sys.executable, str(compare), "benchmarks", str(first), str(tmp_path / "bench_copy.json")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "copy/simd/f32/cpu/n=1024" in proc.stdout
