#!/usr/bin/env python3
"""Runs flopscope's bench binaries and writes results/runs/<run-id>/.

Order: bench_peak first (its results become results/ceilings/<device>.json, which every other
binary then reads into its context), then every other bench_* binary, then the report. Each
binary writes Google Benchmark JSON to a temporary name that is renamed when it finishes, so an
interrupted run leaves no half-written file and never touches an earlier run. Progress (binary,
cases done of total, elapsed) comes from the binaries on stderr; their console tables go to
<run-dir>/console/<binary>.txt.
"""
import argparse
import datetime
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Per binary: the flags of the default suite and of --quick. Sizes are element counts.
SUITES = {
    "default": {
        "common": ["--benchmark_repetitions=3", "--benchmark_min_time=0.1"],
        "bench_peak": [],
        "bench_copy": [],
        # Conversions and their f32->f32 copy baseline share the machine's noise fairly.
        "bench_convert": ["--benchmark_enable_random_interleaving=true"],
        # Each view or broadcast and the copy of the same bytes it is set against, interleaved.
        # bench_broadcast: add only (mul moves the same bytes); its "reference" (lib's iterator in
        # double, 10x slower) validates every case but is not timed here.
        "bench_strided": ["--benchmark_enable_random_interleaving=true"],
        "bench_broadcast": ["--ops=add", "--variants=copy,simd,onednn,plain,vec",
                            "--benchmark_enable_random_interleaving=true"],
    },
    "quick": {
        "common": ["--benchmark_repetitions=2", "--benchmark_min_time=0.02"],
        "bench_peak": ["--sizes=2^22"],
        "bench_copy": ["--dtypes=f32", "--sizes=1Ki,64Ki,1Mi,16Mi"],
        "bench_convert": ["--dtypes=f16,bf16", "--sizes=1Mi", "--benchmark_enable_random_interleaving=true"],
        # One case of each view kind and each broadcast pattern.
        "bench_strided": ["--matrices=1024x1024", "--heads=8x256x12x64", "--slices=1024x1024", "--steps=4",
                          "--expands=1024x1024", "--shape=8x256x12x64", "--perm=0,2,3,1",
                          "--benchmark_enable_random_interleaving=true"],
        "bench_broadcast": ["--btd=8x256x768", "--outer=1024x1024", "--ops=add",
                            "--benchmark_enable_random_interleaving=true"],
    },
}


def run_binary(binary: Path, args, run_dir: Path, env) -> int:
    out = run_dir / f"{binary.name}.json"
    partial = run_dir / f".{binary.name}.json.partial"
    console = run_dir / "console" / f"{binary.name}.txt"
    console.parent.mkdir(exist_ok=True)
    cmd = [str(binary), *args, f"--benchmark_out={partial}", "--benchmark_out_format=json"]
    print(f"flopscope: running {' '.join(cmd[:1] + args)}", flush=True)
    with open(console, "w") as log:
        rc = subprocess.call(cmd, stdout=log, env=env)
    if rc != 0:
        print(f"flopscope: {binary.name} exited {rc}; see {console}", file=sys.stderr)
        partial.unlink(missing_ok=True)
        return rc
    os.replace(partial, out)
    return 0


def update_ceilings(analysis, run_dir: Path, ceilings_dir: Path, quick: bool) -> None:
    """The default suite's bench_peak replaces the ceilings; a quick run's (short, so less
    reliable) only fills in a device that has none yet."""
    staging = run_dir / "ceilings"
    if subprocess.call(analysis + ["ceilings", str(run_dir), "--out", str(staging)]) != 0:
        return
    ceilings_dir.mkdir(parents=True, exist_ok=True)
    for new in staging.glob("*.json"):
        target = ceilings_dir / new.name
        if quick and target.exists():
            print(f"flopscope: quick run: keeping the ceilings in {target}")
            continue
        tmp = target.with_suffix(".json.partial")
        tmp.write_bytes(new.read_bytes())
        os.replace(tmp, target)
        print(f"flopscope: ceilings written to {target}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short suite (under a minute)")
    parser.add_argument("--build-dir", default=os.environ.get("FLOPSCOPE_BUILD_DIR", "build"))
    parser.add_argument("--runs-dir", default="results/runs")
    parser.add_argument("--only", default="", help="comma-separated binaries to run (default: all)")
    args = parser.parse_args()

    bench_dir = (ROOT / args.build_dir / "bench").resolve()
    binaries = sorted(p for p in bench_dir.glob("bench_*") if p.is_file() and os.access(p, os.X_OK))
    if args.only:
        wanted = set(args.only.split(","))
        binaries = [b for b in binaries if b.name in wanted]
    if not binaries:
        print(f"flopscope: no bench binaries in {bench_dir} (build first)", file=sys.stderr)
        return 2
    binaries.sort(key=lambda b: (b.name != "bench_peak", b.name))  # ceilings first

    suite = SUITES["quick" if args.quick else "default"]
    run_id = datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + "-" + socket.gethostname().split(".")[0]
    run_dir = ROOT / args.runs_dir / run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    env = dict(os.environ)
    env.setdefault("FLOPSCOPE_CEILINGS_DIR", str(ROOT / "results" / "ceilings"))
    if args.quick:
        env.setdefault("FLOPSCOPE_WARMUP_S", "0.3")
    analysis = [str(ROOT / ".venv" / "bin" / "python"), "-m", "flopscope_analysis"]

    start = time.monotonic()
    failed = []
    for binary in binaries:
        extra = suite["common"] + suite.get(binary.name, [])
        if run_binary(binary, extra, run_dir, env) != 0:
            failed.append(binary.name)
            continue
        if binary.name == "bench_peak":
            update_ceilings(analysis, run_dir, Path(env["FLOPSCOPE_CEILINGS_DIR"]), args.quick)
    rc = subprocess.call(analysis + ["report", str(run_dir)])
    print(f"flopscope: suite took {time.monotonic() - start:.0f} s", flush=True)
    if failed:
        print(f"flopscope: these binaries failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    if rc != 0:
        return rc
    print(run_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
