"""scripts/run_suite.py with fake bench binaries: the flags it passes (bench_peak writes the
ceilings itself), status.json, Ctrl-C and a killed runner. The fakes record their arguments and
copy a fixture into --benchmark_out, or sleep, or fail, as the test asks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ANALYSIS, FIXTURES

RUN_SUITE = ANALYSIS.parent / "scripts" / "run_suite.py"

FAKE = f"""#!{sys.executable}
import json, os, shutil, signal, sys, time
from pathlib import Path
signal.signal(signal.SIGINT, signal.SIG_DFL)  # die of Ctrl-C quietly, as a C++ binary does
name = Path(sys.argv[0]).name
log = Path(os.environ["FAKE_LOG"])
with open(log / "calls.jsonl", "a") as calls:
    calls.write(json.dumps({{"binary": name, "argv": sys.argv[1:], "pid": os.getpid()}}) + "\\n")
if name == os.environ.get("FAKE_FAIL"):
    sys.exit(1)
if name == os.environ.get("FAKE_SLEEP"):
    (log / "sleeping").write_text(str(os.getpid()))
    time.sleep(120)
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--benchmark_out="))
shutil.copy(os.path.join(os.environ["FAKE_FIXTURES"], name + ".json"), out)
"""


@pytest.fixture
def suite(tmp_path):
    """A build dir of fake binaries (bench_copy, bench_peak) and a way to start the runner."""
    bench = tmp_path / "build" / "bench"
    bench.mkdir(parents=True)
    for name in ("bench_copy", "bench_peak"):
        path = bench / name
        path.write_text(FAKE)
        path.chmod(0o755)
    log = tmp_path / "log"
    log.mkdir()

    def start(*args, **env) -> subprocess.Popen:
        environment = dict(os.environ, FAKE_LOG=str(log), FAKE_FIXTURES=str(FIXTURES / "run_cpu"),
                           FLOPSCOPE_CEILINGS_DIR=str(tmp_path / "ceilings"), MPLBACKEND="Agg", **env)
        # Ctrl-C as a terminal's foreground job gets it: a shell without job control starts its
        # background jobs (`.ci/run &` in a script) with SIGINT ignored, which Python then keeps.
        return subprocess.Popen([sys.executable, str(RUN_SUITE), "--build-dir", str(tmp_path / "build"),
                                 "--runs-dir", str(tmp_path / "runs"), *args],
                                env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def calls() -> list[dict]:
        path = log / "calls.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def run_dir() -> Path:
        (only,) = list((tmp_path / "runs").iterdir())
        return only

    return start, calls, run_dir, log, tmp_path


def status(run_dir: Path) -> dict:
    return json.loads((run_dir / "status.json").read_text())


@pytest.mark.parametrize("quick, expected", [
    (False, ["--write-ceilings={ceilings}"]),
    (True, ["--write-ceilings={ceilings}", "--keep-ceilings"]),
])
def test_bench_peak_writes_the_ceilings_itself(suite, quick, expected):
    start, calls, run_dir, _, tmp_path = suite
    done = start(*(["--quick"] if quick else []))
    stdout, stderr = done.communicate(timeout=120)
    assert done.returncode == 0, stderr
    recorded = calls()
    assert [c["binary"] for c in recorded] == ["bench_peak", "bench_copy"]  # ceilings first
    peak, copy = (c["argv"] for c in recorded)
    ceilings = [a for a in peak if "ceilings" in a]
    assert ceilings == [e.format(ceilings=tmp_path / "ceilings") for e in expected]
    assert not any("ceilings" in a for a in copy)
    run = run_dir()
    assert stdout.splitlines()[-1] == str(run)
    assert not (tmp_path / "ceilings").exists()  # the fake bench_peak wrote none; nothing else does
    assert sorted(p.name for p in run.iterdir()) == ["bench_copy.json", "bench_peak.json", "console",
                                                     "plots", "report.md", "status.json"]
    state = status(run)
    assert state["state"] == "complete" and state["suite"] == ("quick" if quick else "default")
    assert state["finished"] == ["bench_peak", "bench_copy"] and state["failed"] == []


def test_a_failed_binary_marks_the_run_failed(suite):
    start, _, run_dir, _, _ = suite
    done = start(FAKE_FAIL="bench_copy")
    _, stderr = done.communicate(timeout=120)
    assert done.returncode == 1
    assert "these binaries failed: bench_copy" in stderr
    run = run_dir()
    assert status(run)["state"] == "failed" and status(run)["failed"] == ["bench_copy"]
    assert (run / "bench_peak.json").is_file() and not (run / "bench_copy.json").exists()
    assert "Incomplete run" in (run / "report.md").read_text(encoding="utf-8")


def wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def gone(pid: int, timeout: float = 10) -> bool:
    """True once the process has exited (gone, or a zombie that nobody reaped yet)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_ctrl_c_keeps_what_finished_and_marks_the_run_interrupted(suite):
    start, _, run_dir, log, _ = suite
    done = start(FAKE_SLEEP="bench_copy")
    wait_for(log / "sleeping")
    child = int((log / "sleeping").read_text())
    done.send_signal(signal.SIGINT)  # what Ctrl-C sends (the terminal sends it to the binary too)
    _, stderr = done.communicate(timeout=60)
    assert done.returncode == 130
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert "interrupted" in stderr
    assert gone(child)
    run = run_dir()
    state = status(run)
    assert state["state"] == "interrupted" and state["finished"] == ["bench_peak"]
    assert state["finished_at"]
    assert (run / "bench_peak.json").is_file()
    assert not list(run.glob(".*partial"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_runner_takes_its_binary_with_it(suite):
    start, _, run_dir, log, _ = suite
    done = start(FAKE_SLEEP="bench_peak")
    wait_for(log / "sleeping")
    child = int((log / "sleeping").read_text())
    done.kill()
    done.communicate(timeout=60)
    assert gone(child), "the bench binary outlived its runner"
    assert status(run_dir())["state"] == "running"  # the marker that was written first stays


def test_ceilings_flags():
    sys.path.insert(0, str(RUN_SUITE.parent))
    try:
        import run_suite
    finally:
        sys.path.remove(str(RUN_SUITE.parent))
    assert run_suite.ceilings_flags(Path("/c"), quick=False) == ["--write-ceilings=/c"]
    assert run_suite.ceilings_flags(Path("/c"), quick=True) == ["--write-ceilings=/c", "--keep-ceilings"]


def test_ci_run_rejects_an_unknown_argument_before_doing_anything():
    done = subprocess.run([str(ANALYSIS.parent / ".ci" / "run"), "--fast"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == ".ci/run: unknown argument '--fast' (accepted: --strict-timing)\n"
    assert done.stdout == ""
