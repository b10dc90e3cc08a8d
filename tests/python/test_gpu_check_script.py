"""bench/gpu_check.sh's handling of failures, on a fake bundle (shell scripts standing in for the
binaries; no build, no GPU): a failing test binary, a bench binary that crashes and one that
times out are each reported on their own line, the steps after them still run, what they wrote
is kept (a JSON cut short is cut after its last whole case), a binary left without time is named,
and the exit code is 1; and, with stand-ins for nvidia-smi and compute-sanitizer, the steps only a
GPU machine takes. About 25 s (one fake binary waits for its timeout)."""
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REASON = "no GPU in this test"


def bench_json(binary, cases, reason=REASON, skipped_devices=True):
    context = {"binary": binary, "build": {"build_type": "Release", "compiler": "test", "cuda": "13.0",
                                           "git_commit": "test"},
               "devices": {}, "run": {"argv": [binary], "hot": False, "omp_threads": 1}, "schema": 1,
               "skipped_devices": {"cuda:0": reason} if skipped_devices else {}}
    benchmarks = [{"name": f"copy/vec16/f32/cuda:0/n={n}/manual_time", "family_index": i,
                   "per_family_instance_index": 0, "run_name": f"copy/vec16/f32/cuda:0/n={n}/manual_time",
                   "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1,
                   "error_occurred": True, "error_message": f"skipped: {reason}", "iterations": 0,
                   "real_time": 0.0, "cpu_time": 0.0, "time_unit": "us"} for i, n in enumerate(cases)]
    return json.dumps({"context": {"date": "2026-12-03T00:00:00+00:00", "host_name": "test",
                                   "executable": binary, "num_cpus": 1, "flopscope": json.dumps(context)},
                       "benchmarks": benchmarks}, indent=2)


def fake(path, body):
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(0o755)


def write_json_script(template):
    """A fake bench binary's start: copies `template` to its --benchmark_out path."""
    return (f'for a in "$@"; do case $a in --benchmark_out=*) out=${{a#*=}};; esac; done\n'
            f'cp "{template}" "$out"\n')


def run_gpu_check(out, bundle, path_first=None, budget="330", pythonpath=None):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    path = [p for p in env["PATH"].split(os.pathsep) if not (Path(p) / "nvidia-smi").exists()]
    env.update(FLOPSCOPE_BUNDLE=str(bundle), PYTHON=sys.executable, FLOPSCOPE_GPU_CHECK_BUDGET_S=budget,
               PATH=os.pathsep.join(([str(path_first)] if path_first else []) + path))
    return subprocess.run([str(ROOT / "bench" / "gpu_check.sh"), str(out)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)


def test_failures_are_reported_and_the_script_goes_on(tmp_path):
    bundle = tmp_path / "bundle"
    (bundle / "bin").mkdir(parents=True)
    whole = tmp_path / "whole.json"
    whole.write_text(bench_json("bench_peak", [1024, 2048]))
    cut = tmp_path / "cut.json"
    text = bench_json("bench_crash", [1024, 2048, 4096])
    cut.write_text(text[: text.rfind("manual_time") + 5])  # inside the third entry
    fake(bundle / "bin" / "test_pass", 'echo "[==========] 3 tests ran."; echo "[  PASSED  ] 3 tests."\n')
    fake(bundle / "bin" / "test_fail",
         'echo "[  PASSED  ] 1 test."; echo "[  FAILED  ] 2 tests, listed below:"; exit 1\n')
    fake(bundle / "bin" / "bench_peak", write_json_script(whole))
    fake(bundle / "bin" / "bench_crash", write_json_script(cut) + 'kill -SEGV $$\n')
    fake(bundle / "bin" / "bench_slow", write_json_script(cut) + 'exec sleep 300\n')
    fake(bundle / "bin" / "bench_zlast", write_json_script(whole))

    out = tmp_path / "out"
    # 60 s, of which 40 are kept for the report: bench_slow's limit is what is left, ~18 s.
    proc = run_gpu_check(out, bundle, budget="60")
    console = proc.stdout + proc.stderr  # stderr: bash's own word on the crash ("Segmentation fault")
    lines = proc.stdout.splitlines()

    def line_of(prefix):
        return next(line for line in lines if line.startswith(prefix))

    assert proc.returncode == 1, console
    assert " ok " in line_of("test   test_pass ") and "3 passed, 0 skipped, 0 failed" in line_of("test   test_pass ")
    assert "FAILED  exit 1: 1 passed, 0 skipped, 2 failed" in line_of("test   test_fail ")
    assert " ok " in line_of("bench  bench_peak ") and "2 cases: 0 ran, 2 skipped" in line_of("bench  bench_peak ")
    crash = line_of("bench  bench_crash ")
    assert "FAILED  exit 139" in crash and "JSON cut short, kept its 2 whole entries" in crash, crash
    slow = line_of("bench  bench_slow ")
    assert "FAILED  timed out after" in slow and "kept its 2 whole entries" in slow, slow
    assert "NOT RUN" in line_of("bench  bench_zlast "), console
    assert line_of("report: ").startswith("report: ") and "FAILED" not in line_of("report: "), console
    last = lines[-1]
    assert last.startswith("gpu_check: FAILED in "), last
    for what in ("test_fail (exit 1)", "bench_crash (exit 139)", "bench_slow (timed out)",
                 "bench_zlast (not run: time budget)"):
        assert what in last, last

    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.log", "report.md", "results.tar.gz"]
    with tarfile.open(out / "results.tar.gz") as tar:
        crashed = json.load(tar.extractfile("bench_crash.json"))
        assert len(crashed["benchmarks"]) == 2
        assert {"bench_peak.json", "bench_slow.json", "report.md"} <= set(tar.getnames())


def test_the_gpu_machines_steps_with_stand_in_tools(tmp_path):
    """nvidia-smi and compute-sanitizer stand-ins: the steps that only a GPU machine takes."""
    tools = tmp_path / "tools"
    tools.mkdir()
    fake(tools / "nvidia-smi", """case "$1" in
  -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-0)";;
  --query-gpu=*) echo "NVIDIA H200, 00000000:19:00.0, 580.159.04, P0, 31, 120.00 W, 700.00 W, 1980 MHz, 3201 MHz, 1980 MHz, 3201 MHz, 0 %, 1 MiB, 143771 MiB";;
  *) echo "Clocks Event Reasons: Idle";;
esac
""")
    # Runs the command after its own options; a binary whose name has "leak" has a memory error.
    fake(tools / "compute-sanitizer", """while [[ $1 == --* ]]; do
  case $1 in --tool|--error-exitcode|--print-limit) shift 2;; *) shift;; esac
done
"$@"; rc=$?
if [[ $1 == *leak* ]]; then echo "========= ERROR SUMMARY: 1 error"; exit 86; fi
echo "========= ERROR SUMMARY: 0 errors"; exit $rc
""")
    # ldd: cuBLASLt is found only in a folder on LD_LIBRARY_PATH, as where it comes from a wheel.
    fake(tools / "ldd", """for dir in ${LD_LIBRARY_PATH//:/ }; do
  if [[ -e $dir/libcublasLt.so.13 ]]; then echo "	libcublasLt.so.13 => $dir/libcublasLt.so.13 (0x0)"; exit 0; fi
done
echo "	libcublasLt.so.13 => not found"
""")
    wheel = tmp_path / "site" / "nvidia" / "cu13" / "lib"
    wheel.mkdir(parents=True)
    (wheel / "libcublasLt.so.13").write_text("")
    bundle = tmp_path / "bundle"
    (bundle / "bin").mkdir(parents=True)
    listing = 'if [[ $1 == --gtest_list_tests ]]; then echo "CudaCopy."; echo "  Works"; exit 0; fi\n'
    fake(bundle / "bin" / "test_copy", listing + 'echo "[  PASSED  ] 1 test."\n')
    fake(bundle / "bin" / "test_leak", listing + 'echo "[  PASSED  ] 1 test."\n')
    fake(bundle / "bin" / "test_cpu", 'if [[ $1 == --gtest_list_tests ]]; then exit 0; fi\necho "[  PASSED  ] 5 tests."\n')
    peak = tmp_path / "peak.json"
    peak.write_text(bench_json("bench_peak", [1024], reason="fp8 needs sm_89", skipped_devices=False))
    nogpu = tmp_path / "nogpu.json"
    nogpu.write_text(bench_json("bench_nogpu", [1024], reason="CUDA driver version is insufficient"))
    fake(bundle / "bin" / "bench_peak", write_json_script(peak) + """for a in "$@"; do
  case $a in --write-ceilings=*) echo '{}' > "${a#*=}/cuda-nvidia-h200.json";; esac
done
""")
    fake(bundle / "bin" / "bench_nogpu", write_json_script(nogpu))

    proc = run_gpu_check(tmp_path / "out", bundle, path_first=tools, pythonpath=tmp_path / "site")
    lines = proc.stdout.splitlines()
    console = proc.stdout + proc.stderr

    def line_of(prefix):
        return next(line for line in lines if line.startswith(prefix))

    assert proc.returncode == 1, console
    # The machine's CUDA (/usr/local/cuda/lib64) where it has cuBLAS, else the wheel's folder.
    assert line_of("libraries: ").startswith("libraries: libcublasLt.so.13 from /"), console
    assert "FAILED" not in line_of("libraries: ")
    assert "NVIDIA H200, 00000000:19:00.0, 580.159.04, P0" in line_of("nvidia-smi before: ")
    assert "1980 MHz" in line_of("nvidia-smi after: ")
    assert " ok " in line_of("memchk test_copy ") and "ERROR SUMMARY: 0 errors" in line_of("memchk test_copy ")
    leak = line_of("memchk test_leak ")
    assert "FAILED  exit 86: memory errors" in leak and "ERROR SUMMARY: 1 error" in leak, leak
    assert not any(line.startswith("memchk test_cpu ") for line in lines), "test_cpu has no CUDA copy test"
    assert " ok " in line_of("bench  bench_peak ")
    assert line_of("ceilings: ").startswith("ceilings: cuda-nvidia-h200.json "), console
    nogpu_line = line_of("bench  bench_nogpu ")
    assert "FAILED  a GPU is present but cuda:0: CUDA driver version is insufficient" in nogpu_line, nogpu_line
    assert "memchk test_leak (exit 86)" in lines[-1] and "bench_nogpu (cuda:0 skipped" in lines[-1], lines[-1]
    log = (tmp_path / "out" / "gpu_check.log").read_text()
    assert "Clocks Event Reasons: Idle" in log


def test_refuses_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "old.json").write_text("{}")
    proc = subprocess.run([str(ROOT / "bench" / "gpu_check.sh"), str(tmp_path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "is not empty" in proc.stderr, proc.stderr


def test_usage_without_a_folder():
    proc = subprocess.run([str(ROOT / "bench" / "gpu_check.sh")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "bench/gpu_check.sh OUT_DIR" in proc.stderr, proc.stderr
