#!/usr/bin/env python3
"""Runs flopscope's bench binaries and writes results/runs/<run-id>/.

Order: bench_peak first (given --write-ceilings, it writes results/ceilings/<device>.json itself,
which every later binary reads into its context), then every other bench_* binary, then the
report. Each binary writes Google Benchmark JSON to a temporary name that is renamed when it
finishes, so an interrupted run leaves no half-written file and never touches an earlier run.
Progress (binary, cases done of total, elapsed) comes from the binaries on stderr; their console
tables go to <run-dir>/console/<binary>.txt.

<run-dir>/status.json says whether the run finished (analysis/FORMAT.md): "running" from the
start, then "complete", "failed" (a binary exited non-zero) or "interrupted" (Ctrl-C: the binary
is stopped, what finished is kept, exit code 130, no traceback). A runner killed outright takes
its binary with it (PR_SET_PDEATHSIG) and leaves "running" behind.
"""
import argparse
import ctypes
import datetime
import os
import signal
import socket
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "analysis"))
from flopscope_analysis import runstatus  # noqa: E402
from flopscope_analysis.cli import main as analysis_main  # noqa: E402

EXIT_INTERRUPTED = 130

# Each binary's flags for a suite are its own data (`BINARY --describe` lists them under
# "suites"): the runner passes --suite=default or --suite=quick and knows no binary's flags.


def ceilings_flags(ceilings_dir: Path, quick: bool) -> list[str]:
    """bench_peak's flags for the ceilings files: the default suite replaces them; a quick run's
    (short, so less reliable) only fills in a device that has none yet."""
    return [f"--write-ceilings={ceilings_dir}"] + (["--keep-ceilings"] if quick else [])


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent() -> Optional[Callable[[], None]]:
    """A preexec_fn that has the kernel SIGKILL the child when the runner dies, whatever kills
    it (Linux's PR_SET_PDEATHSIG); None where prctl does not exist."""
    prctl = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)
    if prctl is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the runner died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def stop(child: subprocess.Popen) -> None:
    """Ends a child that is still running: SIGINT (what Ctrl-C sends), then SIGKILL."""
    for sig in (signal.SIGINT, signal.SIGKILL):
        if child.poll() is not None:
            return
        child.send_signal(sig)
        try:
            child.wait(5)
        except subprocess.TimeoutExpired:
            pass


# bench_collectives runs under mpirun with 2 ranks (shared memory); without mpirun it runs alone
# and every mpi case is a named skip ("needs 2 ranks"; its GPU cases need no launcher).
LAUNCHERS = {"bench_collectives": ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                                   "--mca", "btl", "self,vader"]}


def launcher(binary: Path) -> list[str]:
    """The launcher of a binary where it has one and it is installed, else [] (said on stderr)."""
    command = LAUNCHERS.get(binary.name, [])
    if command and not shutil.which(command[0]):
        print(f"flopscope: {command[0]} not found (scripts/setup.sh installs openmpi-bin): {binary.name} runs "
              "alone, its cases that need 2 ranks are named skips", file=sys.stderr)
        return []
    return command


# What runs after a binary that finished, in the run directory (each a command: its output is the
# run's, its failure a line, never the run's failure):
#   torch_gloo.json: torch.distributed's gloo all-reduce at bench_collectives' f32 all_reduce
#     sizes (every case a named skip without PyTorch), the report's peer column;
#   account/train_busbw.json: `flopscope account train --busbw RUN_DIR --json`: the data-parallel
#     step of GPT-2 small (bf16 gradients, 8 ranks, batch 8 x seq 1024 per rank on an H100 at 40%
#     MFU) at the run's measured all_reduce busbw: the report's comm-vs-compute table.
ACCOUNT_TRAIN = ["account", "train", "--model", "gpt2-small", "--devices", "8", "--batch", "8", "--seq", "1024",
                 "--device", "h100", "--mfu", "0.4", "--dtype", "bf16", "--json"]
AFTER_TIMEOUT_S = 300  # gloo at the default sizes: 66 s measured at load 25 on 2 cores (mostly torch imports)
AFTER = {"bench_collectives": [
    ("torch gloo all_reduce", lambda run_dir, tools_dir: (
        None, [sys.executable, str(ROOT / "scripts" / "checks" / "gloo_allreduce.py"), f"--run-dir={run_dir}"])),
    ("flopscope account train --busbw", lambda run_dir, tools_dir: (
        run_dir / "account" / "train_busbw.json", [str(tools_dir / "flopscope"), *ACCOUNT_TRAIN, "--busbw", str(run_dir)])),
]}


def run_after(binary: Path, run_dir: Path, tools_dir: Path, env: dict) -> None:
    """The commands of AFTER[binary], each writing into the run directory or into its file (its stdout)."""
    for name, step in AFTER.get(binary.name, []):
        out, cmd = step(run_dir, tools_dir)
        print(f"flopscope: running {name}", flush=True)
        started = time.monotonic()
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                  timeout=AFTER_TIMEOUT_S, preexec_fn=die_with_parent())
        except (OSError, subprocess.TimeoutExpired) as error:
            print(f"flopscope: {name}: {error}", file=sys.stderr)
            continue
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
            print(f"flopscope: {name} exited {proc.returncode}: {last}", file=sys.stderr)
            continue
        if out is not None:
            out.parent.mkdir(exist_ok=True)
            partial = out.with_name("." + out.name + ".partial")
            partial.write_text(proc.stdout)
            os.replace(partial, out)
        print(f"flopscope: {name} took {time.monotonic() - started:.1f} s", flush=True)


def keep_partial(partial: Path, out: Path) -> None:
    """A binary's JSON that did not finish, kept as <binary>.json.partial where there is one."""
    if partial.exists():
        os.replace(partial, out.with_name(out.name + ".partial"))


def run_binary(binary: Path, args: list[str], run_dir: Path, env: dict) -> int:
    """Runs one binary into run_dir/<binary>.json (renamed into place only if it exits 0). The
    binary keeps its JSON whole after every case, so a failed or interrupted one leaves what it
    finished as run_dir/<binary>.json.partial (valid JSON, not read by the report)."""
    out = run_dir / f"{binary.name}.json"
    partial = run_dir / f".{binary.name}.json.partial"
    console = run_dir / "console" / f"{binary.name}.txt"
    console.parent.mkdir(exist_ok=True)
    cmd = [*launcher(binary), str(binary), *args, f"--benchmark_out={partial}",
           "--benchmark_out_format=json"]
    print(f"flopscope: running {' '.join(cmd[:1] + args)}", flush=True)
    with open(console, "w") as log:
        child = subprocess.Popen(cmd, stdout=log, env=env, preexec_fn=die_with_parent())
        try:
            rc = child.wait()
        except BaseException:  # Ctrl-C: keep what the binary finished, beside the whole files
            stop(child)
            keep_partial(partial, out)
            raise
    if rc != 0:
        print(f"flopscope: {binary.name} exited {rc}; see {console}", file=sys.stderr)
        keep_partial(partial, out)
        return rc
    os.replace(partial, out)
    return 0


def find_binaries(bench_dir: Path, only: str) -> list[Path]:
    """The bench_* executables, bench_peak first (its ceilings serve the others)."""
    binaries = sorted(p for p in bench_dir.glob("bench_*") if p.is_file() and os.access(p, os.X_OK))
    if only:
        wanted = set(only.split(","))
        binaries = [b for b in binaries if b.name in wanted]
    return sorted(binaries, key=lambda b: (b.name != "bench_peak", b.name))


def run_suite(binaries: list[Path], run_dir: Path, quick: bool, env: dict) -> int:
    """Runs every binary, keeping status.json up to date; 0, or 1 when a binary failed."""
    suite = "quick" if quick else "default"
    status = {"suite": "quick" if quick else "default", "started_at": runstatus.now(),
              "finished_at": None, "binaries": [b.name for b in binaries], "finished": [], "failed": []}
    runstatus.write(run_dir, runstatus.RUNNING, **status)
    try:
        for binary in binaries:
            extra = [f"--suite={suite}"]
            if binary.name == "bench_peak":
                extra += ceilings_flags(Path(env["FLOPSCOPE_CEILINGS_DIR"]), quick)
            failed = run_binary(binary, extra, run_dir, env) != 0
            if not failed:
                run_after(binary, run_dir, binary.parent.parent / "tools", env)
            status["failed" if failed else "finished"].append(binary.name)
            runstatus.write(run_dir, runstatus.RUNNING, **status)
    except KeyboardInterrupt:
        runstatus.write(run_dir, runstatus.INTERRUPTED, **dict(status, finished_at=runstatus.now()))
        raise
    state = runstatus.FAILED if status["failed"] else runstatus.COMPLETE
    runstatus.write(run_dir, state, **dict(status, finished_at=runstatus.now()))
    if status["failed"]:
        print(f"flopscope: these binaries failed: {', '.join(status['failed'])}", file=sys.stderr)
        return 1
    return 0


def torch_beside(run_dir: Path, env: dict) -> None:
    """PyTorch's figures for the run's matmul and strided cases (scripts/torch_peer.py writes
    run_dir/torch_beside.json), in $FLOPSCOPE_TORCH_PYTHON or this Python; where torch does not
    import it says so in one line. Its failure costs the report PyTorch's column, not the run."""
    python = env.get("FLOPSCOPE_TORCH_PYTHON", sys.executable)
    print("flopscope: running torch_peer.py (PyTorch beside)", flush=True)
    child = subprocess.Popen([python, str(ROOT / "scripts" / "torch_peer.py"), str(run_dir)], env=env,
                             preexec_fn=die_with_parent())
    try:
        rc = child.wait()
    except BaseException:
        stop(child)
        raise
    if rc != 0:
        print(f"flopscope: torch_peer.py exited {rc}; the report has no PyTorch figures", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short suite (under a minute)")
    parser.add_argument("--build-dir", default=os.environ.get("FLOPSCOPE_BUILD_DIR", "build"))
    parser.add_argument("--runs-dir", default="results/runs")
    parser.add_argument("--only", default="", help="comma-separated binaries to run (default: all)")
    args = parser.parse_args()

    bench_dir = (ROOT / args.build_dir / "bench").resolve()
    binaries = find_binaries(bench_dir, args.only)
    if not binaries:
        print(f"flopscope: no bench binaries in {bench_dir} (build first)", file=sys.stderr)
        return 2

    run_id = datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + "-" + socket.gethostname().split(".")[0]
    run_dir = ROOT / args.runs_dir / run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    env = dict(os.environ)
    env.setdefault("FLOPSCOPE_CEILINGS_DIR", str(ROOT / "results" / "ceilings"))
    # Each binary spins the CPU up before it reads the clock (1 s alone); in a suite the binary
    # before has just kept it busy, so 0.3 s does (8 binaries: ~6 s less).
    env.setdefault("FLOPSCOPE_WARMUP_S", "0.3")

    start = time.monotonic()
    try:
        rc = run_suite(binaries, run_dir, args.quick, env)
        torch_beside(run_dir, env)
    except KeyboardInterrupt:
        print(f"\nflopscope: interrupted; what finished is kept in {run_dir} (status.json: interrupted)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    report_rc = analysis_main(["report", str(run_dir)])
    print(f"flopscope: suite took {time.monotonic() - start:.0f} s", flush=True)
    if rc != 0 or report_rc != 0:
        return rc or report_rc
    print(run_dir)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C outside the run (argument parsing, the report)
        sys.exit(EXIT_INTERRUPTED)
