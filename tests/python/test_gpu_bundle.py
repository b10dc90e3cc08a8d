"""The GPU device bundle (bench/gpu_bundle.sh), where it was built: every binary's libraries resolve
to the bundle, glibc/libstdc++/libgcc or CUDA; the binaries run from a copy outside the repository
with LD_LIBRARY_PATH cleared, their CUDA cases skipped with the driver's reason; and
bench/gpu_check.sh's dry run on that copy (no GPU: the GPU-only steps skipped with their reason,
every CUDA case of the smoke and gpu suites skipped) exits 0 and leaves the files the device tool
brings back.

Building the bundle takes 4 minutes on 2 cores, so ./test.sh does not: these tests skip unless
build-gpu-bundle/bundle exists. CI (.ci/run) builds it and runs them with FLOPSCOPE_REQUIRE_BUNDLE=1,
where a missing bundle fails instead. With it they take under a minute."""
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "build-gpu-bundle" / "bundle"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    """A copy of the bundle outside the repository (as the device machine sees it: no build tree)."""
    if not (BUNDLE / "bin").is_dir():
        if os.environ.get("FLOPSCOPE_REQUIRE_BUNDLE") == "1":
            pytest.fail(f"{BUNDLE} not built, and FLOPSCOPE_REQUIRE_BUNDLE=1 (run bench/gpu_bundle.sh)")
        pytest.skip(f"{BUNDLE} not built (bench/gpu_bundle.sh: 4 min on 2 cores)")
    copy = tmp_path_factory.mktemp("elsewhere") / "bundle"
    shutil.copytree(BUNDLE, copy, symlinks=True)
    return copy


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    env.update(extra)
    return env


def binaries(bundle, prefix):
    found = sorted(p for p in (bundle / "bin").iterdir() if p.name.startswith(prefix))
    assert found, f"no {prefix}* in {bundle / 'bin'}"
    return found


def test_every_library_is_the_bundles_the_systems_or_cudas(bundle):
    proc = subprocess.run([str(ROOT / "bench" / "gpu_bundle.sh"), "--check", str(bundle)],
                          capture_output=True, text=True, env=clean_env(), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith("  ")}
    for binary in binaries(bundle, "bench_") + binaries(bundle, "test_") + [bundle / "bin" / "flopscope"]:
        assert f"bin/{binary.name}" in lines, proc.stdout
    for line in lines.values():
        assert "NOT-FOUND" not in line and "OUTSIDE" not in line, line
    # Google Benchmark has no static library on Debian: the bench binaries take the bundle's copy.
    assert "libbenchmark.so.1debian:bundle" in lines["bin/bench_peak"], lines["bin/bench_peak"]
    assert "libcublasLt.so.13:cuda" in lines["bin/bench_peak"], lines["bin/bench_peak"]
    assert "libcudart" not in proc.stdout, "the CUDA runtime should be linked statically"


def test_the_bundle_was_built_without_werror_for_cxx_and_cuda(bundle):
    """Another compiler must not stop on a new warning: FLOPSCOPE_WERROR=OFF reaches nvcc too."""
    commands = json.loads((BUNDLE.parent / "compile_commands.json").read_text())
    cuda = [c for c in commands if c["file"].endswith(".cu")]
    assert cuda, "no CUDA source in the bundle's build"
    for c in commands:
        assert "Werror" not in c["command"], (c["file"], c["command"])
    assert all("sm_90" in c["command"] for c in cuda), cuda[0]["command"]


def test_bench_binaries_run_from_the_copy_and_skip_cuda_with_the_drivers_reason(bundle, tmp_path):
    for binary in binaries(bundle, "bench_"):
        out = tmp_path / f"{binary.name}.json"
        proc = subprocess.run(
            [str(binary), "--devices=cuda:0", "--benchmark_min_time=0.001", "--benchmark_repetitions=1",
             f"--benchmark_out={out}", "--benchmark_out_format=json"],
            capture_output=True, text=True, env=clean_env(FLOPSCOPE_WARMUP_S="0.05"), cwd=tmp_path, timeout=300)
        assert proc.returncode == 0, (binary.name, proc.stderr[-2000:])
        data = json.loads(out.read_text())
        context = json.loads(data["context"]["flopscope"])
        if "cuda:0" in context["devices"]:
            pytest.skip("a GPU is present: nothing is skipped")
        reason = context["skipped_devices"]["cuda:0"]
        assert reason and reason in proc.stderr, (binary.name, proc.stderr[-2000:])
        assert data["benchmarks"], f"{binary.name}: no cases for cuda:0"
        for case in data["benchmarks"]:
            assert case["error_message"] == f"skipped: {reason}", (binary.name, case["name"], case.get("error_message"))


def test_test_binaries_and_the_tool_run_from_the_copy(bundle):
    for binary in binaries(bundle, "test_"):
        proc = subprocess.run([str(binary), "--gtest_brief=1"], capture_output=True, text=True, env=clean_env(),
                              timeout=600)
        assert proc.returncode == 0, (binary.name, proc.stdout[-3000:], proc.stderr[-2000:])
    kernels = subprocess.run([str(bundle / "bin" / "test_kernels"), "--gtest_filter=CudaCopy.*"],
                             capture_output=True, text=True, env=clean_env(), timeout=120)
    if "SKIPPED" in kernels.stdout:
        assert "CUDA unavailable: " in kernels.stdout, kernels.stdout
    peaks = subprocess.run([str(bundle / "bin" / "flopscope"), "peaks"], capture_output=True, text=True,
                           env=clean_env(), timeout=60)
    assert peaks.returncode == 0 and "H200 SXM" in peaks.stdout, peaks.stdout + peaks.stderr


def test_gpu_check_dry_run(bundle, tmp_path):
    if shutil.which("nvidia-smi"):
        pytest.skip("nvidia-smi is here: run bench/gpu_check.sh itself, not its dry run")
    out = tmp_path / "out"
    proc = subprocess.run([str(ROOT / "bench" / "gpu_check.sh"), str(out)], capture_output=True, text=True,
                          env=clean_env(FLOPSCOPE_BUNDLE=str(bundle), PYTHON=sys.executable), cwd=ROOT, timeout=900)
    console = proc.stdout + proc.stderr
    lines = console.splitlines()
    assert proc.returncode == 0, console[-6000:]
    assert "nvidia-smi before: skipped: nvidia-smi not found" in console
    assert "nvidia-smi after: skipped: nvidia-smi not found" in console
    for tool in ("memcheck", "racecheck", "synccheck"):
        assert any(line.startswith(f"{tool}: skipped: ") for line in lines), (tool, console)
    assert any(line.startswith("plan: ") and " s planned of 480 s" in line for line in lines), console
    written = set()  # the JSON files the steps that ran must have packed
    for binary in binaries(bundle, "bench_"):
        for kind in ("smoke", "bench"):
            line = next(line for line in lines if line.split()[:2] == [kind, binary.name])
            if "skipped it has no --suite=" in " ".join(line.split()):
                assert binary.name == "bench_collectives", line  # every other family has both suites
                continue
            assert " ok " in line and " 0 ran, " in line and " 0 failed" in line, line
            written.add(f"smoke/{binary.name}.json" if kind == "smoke" else f"{binary.name}.json")
    for binary in binaries(bundle, "test_"):  # CUDA tests only, each a skip without a GPU
        line = next((line for line in lines if line.split()[:2] == ["tests", binary.name]), None)
        assert line is None or (" ok " in line and " 0 failed" in line), line
    assert lines[-1].startswith("gpu_check: passed in "), console[-2000:]

    # What the device tool brings back: at most 8 files, no deeper than 2 folders.
    files = [p for p in out.rglob("*") if p.is_file()]
    assert sorted(p.name for p in files) == ["gpu_check.log", "report.md", "results.tar.gz"], files
    with tarfile.open(out / "results.tar.gz") as tar:
        names = tar.getnames()
        assert written <= set(names), written - set(names)
        for binary in binaries(bundle, "bench_"):
            for path in (f"{binary.name}.json", f"smoke/{binary.name}.json"):
                if path not in written:
                    continue
                data = json.load(tar.extractfile(path))
                reason = json.loads(data["context"]["flopscope"])["skipped_devices"]["cuda:0"]
                assert data["benchmarks"] and all(case["error_message"] == f"skipped: {reason}"
                                                  for case in data["benchmarks"]), path
    assert "report.md" in names
    assert "No case ran" in (out / "report.md").read_text()
    log = (out / "gpu_check.log").read_text()
    assert "==== bench bench_peak: " in log and "--suite=gpu" in log and "total: " in log
