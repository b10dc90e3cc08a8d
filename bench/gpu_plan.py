#!/usr/bin/env python3
"""The GPU check's steps and what each should cost (bench/gpu_check.sh runs them; `gpu_check.sh
--plan` prints this without running anything). Python's standard library only.

    bench/gpu_plan.py BIN_DIR [--budget S]            # the plan as a table, its total last
    bench/gpu_plan.py BIN_DIR [--budget S] --steps [--table FILE]
        # one tab-separated line per step for gpu_check.sh ('-' for an empty field), the table into FILE

The steps, in the order a short lease needs them (each binary's cases are its own suite data:
`BINARY --suite=S --describe`; a binary that has no such suite has no such step):
  smoke      every bench binary's --suite=smoke on cuda:0: every CUDA kernel once, tiny, validated;
  bench      the measurements, --suite=gpu, in BENCH_ORDER (then any other bench binary with a
             gpu suite);
  memcheck   compute-sanitizer memcheck over the smoke suites;
  racecheck, synccheck   compute-sanitizer over the --suite=sync cases (shared-memory tiles,
             barriers, mma fragments);
  tests      the CUDA tests of the test binaries (*Cuda*), only in the time that is left: planned
             at 0 s, never a failure when left out.

The cost model (machine start not counted; CONSTANTS below, each stated once):
  a binary:  BINARY_START_S (process, CUDA context, cuBLAS, the device probe), then its cases;
  a case:    set-up  SETUP_S + operand bytes x (HOST_FILL_S_PER_GB + TRANSFER_S_PER_GB)
             validation  output bytes x (TRANSFER_S_PER_GB + VALIDATE_S_PER_GB), once
             (no bytes for a case filled on the device and validated by samples: "sampled")
             warm-up  min(WARMUP_S, min_time)
             timed  repetitions x (min_time + CALL_S), min_time from --benchmark_min_time (0.5 s
             where not given); with random interleaving every repetition sets the case up again;
  every case counts as run, also one that is a skip where the plan is made (no GPU here);
  under compute-sanitizer: the binary's start + SANITIZER_START_S, each case SANITIZER_CASE_S
  more (the tool's work on its ~10 launches) and its warm-up and timed GPU time SANITIZER_SLOWDOWN
  times longer; its set-up, validation and per-call overhead (host work) as they are.
These constants are estimates made without a GPU: gpu_check.log puts each step's real seconds
beside its plan, to set them from the first run.
Each step's time limit is LIMIT_FACTOR x its plan + LIMIT_SLACK_S, cut at run time to what is
left of the budget; REPORT_S is kept for nvidia-smi, the report and the pack.
"""
import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

BUDGET_S = 480  # the whole check, machine start aside: CI fails a plan over it
REPORT_S = 40
BINARY_START_S = 3.0
SETUP_S = 0.03
HOST_FILL_S_PER_GB = 1.0
TRANSFER_S_PER_GB = 0.1
VALIDATE_S_PER_GB = 2.0
WARMUP_S = 0.05
CALL_S = 0.02
SANITIZER_START_S = 5.0
SANITIZER_CASE_S = 0.15
SANITIZER_SLOWDOWN = 30.0
LIMIT_FACTOR = 1.5
LIMIT_SLACK_S = 10.0

# The measurements in the order they matter: bench_peak first (its ceilings feed the others'
# pct_ceiling), then the headline families.
BENCH_ORDER = ["bench_peak", "bench_matmul", "bench_copy", "bench_strided", "bench_convert", "bench_broadcast",
               "bench_backward", "bench_collectives"]
SANITIZER_FLAGS = ["--disable-blocking-kernel", "--hot"]


def describe(binary, suite):
    """The --describe document of `binary --suite=suite`; None where the binary has no such suite;
    a one-line string saying why where it could not describe itself (it cannot start: a library
    missing, say)."""
    try:
        proc = subprocess.run([str(binary), f"--suite={suite}", "--describe"], capture_output=True, text=True,
                              timeout=120)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"--suite={suite} --describe: {error}"
    if proc.returncode == 2 and f"has no {suite} suite" in proc.stderr:
        return None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        return f"--suite={suite} --describe: exit {proc.returncode}: {last}"
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return f"--suite={suite} --describe: not JSON"


def flag(args, name, default):
    value = default
    for arg in args:
        if arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


def seconds(text):
    """--benchmark_min_time's value ("0.05", "0.05s"); an iteration count ("10x") counts as 0 s."""
    return 0.0 if text.endswith("x") else float(text.rstrip("s"))


def case_seconds(case, min_time, repetitions, interleaved, sanitizer=False):
    gb = 0.0 if case.get("sampled") else 1e-9  # filled on the device, validated by samples: no host work
    slowdown = SANITIZER_SLOWDOWN if sanitizer else 1.0
    setup = SETUP_S + case["operand_bytes"] * gb * (HOST_FILL_S_PER_GB + TRANSFER_S_PER_GB)
    validation = case["output_bytes"] * gb * (TRANSFER_S_PER_GB + VALIDATE_S_PER_GB)
    warmup = min(WARMUP_S, min_time) * slowdown
    timed = repetitions * (min_time * slowdown + CALL_S)
    return setup * (repetitions if interleaved else 1) + validation + warmup + timed + (SANITIZER_CASE_S if sanitizer else 0)


def binary_seconds(doc, sanitizer=False):
    args = doc["suites"][doc["suite"]]["args"]
    min_time = seconds(flag(args, "--benchmark_min_time", "0.5"))
    repetitions = int(flag(args, "--benchmark_repetitions", "1"))
    interleaved = flag(args, "--benchmark_enable_random_interleaving", "false") == "true"
    start = BINARY_START_S + (SANITIZER_START_S if sanitizer else 0.0)
    cuda = [c for c in doc["cases"] if c["device"].startswith("cuda")]
    return start + sum(case_seconds(c, min_time, repetitions, interleaved, sanitizer) for c in cuda), len(cuda)


def limit(planned):
    return math.ceil(LIMIT_FACTOR * planned + LIMIT_SLACK_S)


def plan(bin_dir):
    """[(kind, binary, suite, cases, planned_s, limit_s, extra flags)], in run order."""
    bin_dir = Path(bin_dir)
    def binaries(prefix):
        return sorted(p.name for p in bin_dir.iterdir() if p.name.startswith(prefix) and p.is_file()
                      and os.access(p, os.X_OK))

    benches = binaries("bench_")
    ordered = [b for b in BENCH_ORDER if b in benches] + [b for b in benches if b not in BENCH_ORDER]
    docs = {}
    for suite in ("smoke", "gpu", "sync"):
        for name in ordered:
            docs[name, suite] = describe(bin_dir / name, suite)
    steps = []

    def add(kind, name, suite, sanitizer=False, flags=()):
        doc = docs[name, suite]
        if doc is None:
            steps.append((kind, name, suite, 0, 0.0, 0, "no " + suite + " suite"))
            return
        if isinstance(doc, str):
            steps.append((kind, name, suite, 0, 0.0, 0, "ERROR: " + doc))
            return
        planned, count = binary_seconds(doc, sanitizer)
        steps.append((kind, name, suite, count, planned, limit(planned), " ".join(flags)))

    for name in ordered:
        add("smoke", name, "smoke")
    for name in ordered:
        add("bench", name, "gpu")
    for name in ordered:
        add("memcheck", name, "smoke", True, SANITIZER_FLAGS)
    for tool in ("racecheck", "synccheck"):
        for name in ordered:
            if docs[name, "sync"] is not None and not isinstance(docs[name, "sync"], str):
                add(tool, name, "sync", True, SANITIZER_FLAGS)
    for test in binaries("test_"):
        steps.append(("tests", test, "-", 0, 0.0, 0, "in the time left"))
    return steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bin_dir")
    parser.add_argument("--budget", type=float, default=BUDGET_S)
    parser.add_argument("--steps", action="store_true", help="tab-separated lines for gpu_check.sh")
    parser.add_argument("--table", help="with --steps: write the table into this file too")
    options = parser.parse_args()
    if not Path(options.bin_dir).is_dir():
        print(f"gpu_plan: no folder {options.bin_dir}", file=sys.stderr)
        return 2
    steps = plan(options.bin_dir)
    total = sum(s[4] for s in steps) + REPORT_S
    errors = [s for s in steps if s[6].startswith("ERROR: ")]
    lines = [f"{'step':<10} {'binary':<20} {'suite':<6} {'cases':>5} {'plan s':>7} {'limit s':>7}"]
    for kind, name, suite, count, planned, step_limit, extra in steps:
        note = f"  ({extra})" if extra and not extra.startswith("--") else ""
        lines.append(f"{kind:<10} {name:<20} {suite:<6} {count:>5} {planned:>7.1f} {step_limit:>7}{note}")
    lines.append(f"{'report':<10} {'nvidia-smi, report, pack':<34} {REPORT_S:>7.1f}")
    lines.append(f"total: {total:.1f} s planned of a {options.budget:.0f} s budget (machine start not counted)"
                 + ("" if total <= options.budget else f": OVER by {total - options.budget:.1f} s")
                 + (f"; {len(errors)} steps cannot be planned" if errors else ""))
    table = "\n".join(lines) + "\n"
    if options.steps:
        for kind, name, suite, count, planned, step_limit, extra in steps:
            print("\t".join([kind, name, suite, str(count), f"{planned:.1f}", str(step_limit), extra or "-"]))
        print(f"total\t-\t-\t-\t{total:.1f}\t{int(options.budget)}\t-")
        if options.table:
            Path(options.table).write_text(table)
        return 0
    sys.stdout.write(table)
    return 0 if total <= options.budget and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
