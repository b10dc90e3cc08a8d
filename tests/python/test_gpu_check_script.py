"""bench/gpu_check.sh's handling of failures, on a fake bundle (shell scripts standing in for the
binaries, answering --describe for their suites; no build, no GPU): a binary that cannot start, one
that crashes and one that times out are each reported on their own line, the steps after them
still run, what they wrote is kept (a JSON cut short is cut after its last whole case), a binary
left without time is named, and the exit code is 1; and, with stand-ins for nvidia-smi and
compute-sanitizer, the steps only a GPU machine takes, in the plan's order. About 25 s (one fake
binary waits for its timeout)."""
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


def describe_doc(binary, suite, min_time=0.001, cases=1):
    """What `binary --suite=suite --describe` prints, as much of it as bench/gpu_plan.py reads."""
    return json.dumps({"binary": binary, "suite": suite,
                       "suites": {suite: {"description": "", "args": [f"--benchmark_min_time={min_time}"]}},
                       "cases": [{"name": f"c{i}", "device": "cuda:0", "operand_bytes": 0, "output_bytes": 0,
                                  "skip": None} for i in range(cases)]})


def fake_bench(bin_dir, name, template, suites=("gpu",), min_time=0.001, then=""):
    """A bench binary: --describe answers for its suites (refusing others as the harness does);
    a run copies `template` to its --benchmark_out path, then runs `then`."""
    docs = bin_dir.parent / "docs"
    docs.mkdir(exist_ok=True)
    for suite in suites:
        (docs / f"{name}.{suite}.json").write_text(describe_doc(name, suite, min_time))
    fake(bin_dir / name, f"""for a in "$@"; do
  case $a in --suite=*) suite=${{a#*=}};; --describe) describe=1;; --benchmark_out=*) out=${{a#*=}};; esac
done
if [[ ! -e {docs}/{name}.$suite.json ]]; then echo "{name}: has no $suite suite (its suites: default)" >&2; exit 2; fi
if [[ -n $describe ]]; then cat {docs}/{name}.$suite.json; exit 0; fi
cp "{template}" "$out"
""" + then)


def run_gpu_check(out, bundle, path_first=None, budget="330", pythonpath=None):
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    path = [p for p in env["PATH"].split(os.pathsep) if not (Path(p) / "nvidia-smi").exists()
            and not (Path(p) / "compute-sanitizer").exists() and not (Path(p) / "nvcc").exists()]
    env.update(FLOPSCOPE_BUNDLE=str(bundle), PYTHON=sys.executable, FLOPSCOPE_GPU_CHECK_BUDGET_S=budget,
               PATH=os.pathsep.join(([str(path_first)] if path_first else []) + path))
    return subprocess.run([str(ROOT / "bench" / "gpu_check.sh"), str(out)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)


def step(lines, kind, name):
    """The console line of step `kind` of binary `name` (kind, name, then the verdict and the rest)."""
    return next(line for line in lines if line.split()[:2] == [kind, name])


def test_failures_are_reported_and_the_script_goes_on(tmp_path):
    bundle = tmp_path / "bundle"
    (bundle / "bin").mkdir(parents=True)
    whole = tmp_path / "whole.json"
    whole.write_text(bench_json("bench_peak", [1024, 2048]))
    cut = tmp_path / "cut.json"
    text = bench_json("bench_crash", [1024, 2048, 4096])
    cut.write_text(text[: text.rfind("manual_time") + 5])  # inside the third entry
    bin_dir = bundle / "bin"
    fake_bench(bin_dir, "bench_peak", whole, suites=("gpu", "smoke"))
    fake_bench(bin_dir, "bench_crash", cut, then="kill -SEGV $$\n")
    # Planned at 40 s: its own limit is more than the budget leaves, which is its limit then.
    fake_bench(bin_dir, "bench_slow", cut, min_time=40, then="exec sleep 300\n")
    fake_bench(bin_dir, "bench_zlast", whole)
    fake(bin_dir / "bench_broken", "echo 'bench_broken: error while loading shared libraries: libfoo.so.1' >&2; exit 127\n")

    out = tmp_path / "out"
    # 60 s, of which 40 are kept for the report: bench_slow's limit is what is left, ~18 s.
    proc = run_gpu_check(out, bundle, budget="60")
    console = proc.stdout + proc.stderr  # stderr: bash's own word on the crash ("Segmentation fault")
    lines = proc.stdout.splitlines()

    assert proc.returncode == 1, console
    assert any(line.startswith("plan: ") and "s planned of 60 s" in line for line in lines), console
    assert " ok " in step(lines, "smoke", "bench_peak") and "2 cases: 0 ran, 2 skipped" in step(lines, "smoke", "bench_peak")
    assert "skipped it has no --suite=smoke" in " ".join(step(lines, "smoke", "bench_crash").split())
    broken = step(lines, "smoke", "bench_broken")
    assert "FAILED" in broken and "exit 127" in broken and "libfoo.so.1" in broken, broken
    assert " ok " in step(lines, "bench", "bench_peak") and "2 cases: 0 ran, 2 skipped" in step(lines, "bench", "bench_peak")
    crash = step(lines, "bench", "bench_crash")
    assert "FAILED  exit 139" in crash and "JSON cut short, kept its 2 whole entries" in crash, crash
    slow = step(lines, "bench", "bench_slow")
    assert "FAILED  timed out after" in slow and "kept its 2 whole entries" in slow, slow
    assert "NOT RUN" in step(lines, "bench", "bench_zlast"), console
    assert any(line.startswith("memcheck: skipped: compute-sanitizer not found") for line in lines), console
    assert line_of(lines, "report: ").startswith("report: ") and "FAILED" not in line_of(lines, "report: "), console
    last = lines[-1]
    assert last.startswith("gpu_check: FAILED in "), last
    for what in ("bench bench_crash (exit 139)", "bench bench_slow (timed out)", "bench bench_zlast (not run: time budget)",
                 "smoke bench_broken (cannot describe itself)"):
        assert what in last, last

    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.log", "report.md", "results.tar.gz"]
    with tarfile.open(out / "results.tar.gz") as tar:
        crashed = json.load(tar.extractfile("bench_crash.json"))
        assert len(crashed["benchmarks"]) == 2
        assert {"bench_peak.json", "bench_slow.json", "report.md", "smoke/bench_peak.json"} <= set(tar.getnames())
    log = (out / "gpu_check.log").read_text()
    assert "total: " in log and "planned of a 60 s budget" in log, "the plan's table is in the log"


def line_of(lines, prefix):
    return next(line for line in lines if line.startswith(prefix))


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
    # Runs the command after its own options (recording them); a binary whose name has "leak" has
    # a memory error.
    fake(tools / "compute-sanitizer", f"""echo "$*" >> {tmp_path}/sanitizer.calls
while [[ $1 == --* ]]; do
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
    bin_dir = bundle / "bin"
    bin_dir.mkdir(parents=True)
    listing = 'if [[ $1 == --gtest_list_tests ]]; then echo "CudaCopy."; echo "  Works"; exit 0; fi\n'
    fake(bin_dir / "test_copy", listing + 'echo "[  PASSED  ] 1 test."\n')
    fake(bin_dir / "test_cpu", 'if [[ $1 == --gtest_list_tests ]]; then exit 0; fi\necho "[  PASSED  ] 5 tests."\n')
    peak = tmp_path / "peak.json"
    peak.write_text(bench_json("bench_peak", [1024], reason="fp8 needs sm_89", skipped_devices=False))
    nogpu = tmp_path / "nogpu.json"
    nogpu.write_text(bench_json("bench_nogpu", [1024], reason="CUDA driver version is insufficient"))
    fake_bench(bin_dir, "bench_peak", peak, suites=("gpu", "smoke", "sync"), then="""for a in "$@"; do
  case $a in --write-ceilings=*) echo '{}' > "${a#*=}/cuda-nvidia-h200.json";; esac
done
""")
    fake_bench(bin_dir, "bench_leak", peak, suites=("gpu", "smoke"))
    fake_bench(bin_dir, "bench_nogpu", nogpu)

    proc = run_gpu_check(tmp_path / "out", bundle, path_first=tools, pythonpath=tmp_path / "site")
    lines = proc.stdout.splitlines()
    console = proc.stdout + proc.stderr

    assert proc.returncode == 1, console
    # The machine's CUDA (/usr/local/cuda/lib64) where it has cuBLAS, else the wheel's folder.
    assert line_of(lines, "libraries: ").startswith("libraries: libcublasLt.so.13 from /"), console
    assert "FAILED" not in line_of(lines, "libraries: ")
    assert "NVIDIA H200, 00000000:19:00.0, 580.159.04, P0" in line_of(lines, "nvidia-smi before: ")
    assert "1980 MHz" in line_of(lines, "nvidia-smi after: ")
    order = [line.split()[0] + " " + line.split()[1] for line in lines if line.split()[0] in
             ("smoke", "bench", "memcheck", "racecheck", "synccheck", "tests") and len(line.split()) > 2]
    assert order == ["smoke bench_peak", "smoke bench_leak", "smoke bench_nogpu", "bench bench_peak", "bench bench_leak",
                     "bench bench_nogpu", "memcheck bench_peak", "memcheck bench_leak", "memcheck bench_nogpu",
                     "racecheck bench_peak", "synccheck bench_peak", "tests test_copy"], order
    assert lines.index(line_of(lines, "nvidia-smi after: ")) == lines.index(step(lines, "memcheck", "bench_peak")) - 1
    assert " ok " in step(lines, "memcheck", "bench_peak") and "ERROR SUMMARY: 0 errors" in step(lines, "memcheck", "bench_peak")
    leak = step(lines, "memcheck", "bench_leak")
    assert "FAILED  memcheck found errors" in leak and "ERROR SUMMARY: 1 error" in leak, leak
    assert " ok " in step(lines, "racecheck", "bench_peak") and " ok " in step(lines, "synccheck", "bench_peak")
    calls = (tmp_path / "sanitizer.calls").read_text().splitlines()
    assert any("--tool racecheck" in c and "--suite=sync --disable-blocking-kernel --hot" in c for c in calls), calls
    assert " ok " in step(lines, "tests", "test_copy") and "1 passed" in step(lines, "tests", "test_copy")
    assert not any(line.split()[:2] == ["tests", "test_cpu"] for line in lines), "test_cpu has no CUDA test"
    assert " ok " in step(lines, "bench", "bench_peak")
    assert line_of(lines, "ceilings: ").startswith("ceilings: cuda-nvidia-h200.json "), console
    nogpu_line = step(lines, "bench", "bench_nogpu")
    assert "FAILED  a GPU is present but cuda:0: CUDA driver version is insufficient" in nogpu_line, nogpu_line
    assert "memcheck bench_leak (errors)" in lines[-1] and "bench bench_nogpu (cuda:0 skipped" in lines[-1], lines[-1]
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
