"""bench/gpu_plan.py (`bench/gpu_check.sh --plan`): its arithmetic on stand-in binaries whose
--describe documents are known, the steps it derives from which suites a binary has, a binary
that cannot describe itself, and the real plan of this build's bench binaries within the budget
(CI checks the same on the GPU bundle)."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "bench" / "gpu_plan.py"
spec = importlib.util.spec_from_file_location("gpu_plan", PLAN)
gpu_plan = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_plan)


def doc(binary, suite, args, cases):
    return {"binary": binary, "suite": suite, "suites": {suite: {"description": "", "args": args}},
            "cases": [{"name": f"x/{i}", "device": device, "operand_bytes": operand, "output_bytes": output,
                       "skip": None} for i, (device, operand, output) in enumerate(cases)]}


def stand_in(bin_dir, name, docs, fails=False):
    """A bench binary that answers --suite=S --describe from `docs` (suite -> document), refuses
    other suites as the harness does, or (fails) cannot start."""
    docs_file = bin_dir.parent / f"{name}.docs.json"
    docs_file.write_text(json.dumps(docs))
    body = "echo 'error while loading shared libraries: libcublasLt.so.13' >&2; exit 127\n" if fails else f"""
for a in "$@"; do case $a in --suite=*) suite=${{a#*=}};; esac; done
exec {sys.executable} -c '
import json, sys
docs = json.load(open("{docs_file}"))
if sys.argv[1] not in docs:
    sys.exit(print("{name}: has no " + sys.argv[1] + " suite (its suites: default)", file=sys.stderr) or 2)
print(json.dumps(docs[sys.argv[1]]))' "$suite"
"""
    path = bin_dir / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(0o755)


def steps(bin_dir, budget=480):
    proc = subprocess.run([sys.executable, str(PLAN), str(bin_dir), "--budget", str(budget), "--steps"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    return [r for r in rows if r[0] != "total"], float(rows[-1][4])


def test_the_plan_is_the_cost_model_over_the_described_cases(tmp_path):
    g = gpu_plan
    tmp_path = tmp_path / "bin"
    tmp_path.mkdir()
    gpu_args = ["--devices=cuda:0", "--benchmark_repetitions=3", "--benchmark_min_time=0.2s",
                "--benchmark_enable_random_interleaving=true"]
    smoke_args = ["--devices=cuda:0", "--benchmark_repetitions=1", "--benchmark_min_time=0.001"]
    stand_in(tmp_path, "bench_peak", {
        "gpu": doc("bench_peak", "gpu", gpu_args, [("cuda:0", 4e9, 1e9), ("cuda:0", 0, 0), ("cpu", 1e12, 1e12)]),
        "smoke": doc("bench_peak", "smoke", smoke_args, [("cuda:0", 1e6, 5e5)]),
        "sync": doc("bench_peak", "sync", smoke_args, [("cuda:0", 2e6, 1e6)]),
    })
    stand_in(tmp_path, "bench_zeta", {"gpu": doc("bench_zeta", "gpu", ["--devices=cuda:0"], [("cuda:0", 1e9, 0)])})
    (tmp_path / "test_kernels").write_text("#!/bin/sh\n")
    (tmp_path / "test_kernels").chmod(0o755)
    rows, total = steps(tmp_path)

    # By hand: a case is set-up (again at each repetition where interleaved) + validation +
    # warm-up + repetitions x (min_time + per-call overhead); the CPU case is not planned.
    setup = lambda operand: g.SETUP_S + operand * 1e-9 * (g.HOST_FILL_S_PER_GB + g.TRANSFER_S_PER_GB)
    validation = lambda output: output * 1e-9 * (g.TRANSFER_S_PER_GB + g.VALIDATE_S_PER_GB)
    peak_gpu = g.BINARY_START_S + sum(3 * setup(o) + validation(w) + g.WARMUP_S + 3 * (0.2 + g.CALL_S)
                                      for o, w in ((4e9, 1e9), (0, 0)))
    # min_time not given: Google Benchmark's 0.5 s; one repetition; not interleaved.
    zeta_gpu = g.BINARY_START_S + setup(1e9) + g.WARMUP_S + (0.5 + g.CALL_S)
    smoke = g.BINARY_START_S + setup(1e6) + validation(5e5) + 0.001 + (0.001 + g.CALL_S)
    sanitized = lambda operand, output: (g.BINARY_START_S + g.SANITIZER_START_S + setup(operand) + validation(output)
                                         + 0.001 * g.SANITIZER_SLOWDOWN + (0.001 * g.SANITIZER_SLOWDOWN + g.CALL_S)
                                         + g.SANITIZER_CASE_S)
    expected = [
        ("smoke", "bench_peak", "smoke", "1", smoke, "-"),
        ("smoke", "bench_zeta", "smoke", "0", 0, "no smoke suite"),
        ("bench", "bench_peak", "gpu", "2", peak_gpu, "-"),
        ("bench", "bench_zeta", "gpu", "1", zeta_gpu, "-"),
        ("memcheck", "bench_peak", "smoke", "1", sanitized(1e6, 5e5), "--disable-blocking-kernel --hot"),
        ("memcheck", "bench_zeta", "smoke", "0", 0, "no smoke suite"),
        ("racecheck", "bench_peak", "sync", "1", sanitized(2e6, 1e6), "--disable-blocking-kernel --hot"),
        ("synccheck", "bench_peak", "sync", "1", sanitized(2e6, 1e6), "--disable-blocking-kernel --hot"),
        ("tests", "test_kernels", "-", "0", 0, "in the time left"),
    ]
    assert [(r[0], r[1], r[2], r[3], r[6]) for r in rows] == [(e[0], e[1], e[2], e[3], e[5]) for e in expected]
    for row, e in zip(rows, expected):
        assert float(row[4]) == pytest.approx(e[4], abs=0.051), row
        limit = 0 if e[4] == 0 else -(-(g.LIMIT_FACTOR * float(row[4]) + g.LIMIT_SLACK_S) // 1)
        assert int(row[5]) == pytest.approx(limit, abs=1), row
    assert total == pytest.approx(sum(e[4] for e in expected) + g.REPORT_S, abs=0.2)

    table = subprocess.run([sys.executable, str(PLAN), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert table.returncode == 0 and f"total: {total:.1f} s planned of a 480 s budget" in table.stdout, table.stdout
    over = subprocess.run([sys.executable, str(PLAN), str(tmp_path), "--budget", "10"], capture_output=True,
                          text=True, timeout=120)
    assert over.returncode == 1 and "OVER by" in over.stdout, over.stdout


def test_a_binary_that_cannot_describe_itself_is_a_named_step_and_fails_the_plan(tmp_path):
    tmp_path = tmp_path / "bin"
    tmp_path.mkdir()
    stand_in(tmp_path, "bench_copy", {}, fails=True)
    rows, _ = steps(tmp_path)
    assert rows[0][:2] == ["smoke", "bench_copy"] and rows[0][6].startswith("ERROR: --suite=smoke --describe: exit 127")
    assert "libcublasLt.so.13" in rows[0][6]
    table = subprocess.run([sys.executable, str(PLAN), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert table.returncode == 1 and "steps cannot be planned" in table.stdout, table.stdout


def test_the_real_plan_fits_the_budget():
    build = Path(os.environ.get("FLOPSCOPE_BUILD_DIR", ROOT / "build"))
    bench = build / "bench" if (build / "bench").is_dir() else build
    if not (bench / "bench_peak").exists():
        pytest.skip(f"no bench binaries in {bench}")
    proc = subprocess.run([sys.executable, str(PLAN), str(bench)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    total = float(proc.stdout.splitlines()[-1].split()[1])
    assert total <= gpu_plan.BUDGET_S
    kinds = {line.split()[0] for line in proc.stdout.splitlines()[1:-2]}
    assert {"smoke", "bench", "memcheck", "racecheck", "synccheck"} <= kinds, proc.stdout
