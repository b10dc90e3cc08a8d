"""A paired A/B timing comparison: the same cases of two builds of a bench binary, run on one
machine interleaved case by case (A B A B ...), so that what drifts on a shared machine (the
memory bandwidth of this VM switches between ~47 and ~65 GB/s for seconds at a time) falls on
both sides alike; then compare's statistics (U test, minimum repetitions, basis per verdict) with
AB_THRESHOLD. Only this pairing may fail on timing: a timing regression against a baseline from
another machine or another moment never does (gate).

`flopscope-analysis ab --a BIN --b BIN [--filter REGEX]` runs two binaries; scripts/ab.sh
BASE_REF builds the merge base and HEAD in separate git worktrees and calls it."""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from .compare import Comparison, compare_runs
from .errors import AnalysisError
from .load import load_run

AB_THRESHOLD = 0.10  # a paired slowdown beyond 10% fails (the one place this is set)
AB_ROUNDS = 3  # A B pairs per case
AB_REPETITIONS = 3  # repetitions a side per round: 9 a side in all, enough for the U test


def list_cases(binary: Path, pattern: str, extra: list[str]) -> list[str]:
    done = subprocess.run([str(binary), "--benchmark_list_tests", f"--benchmark_filter={pattern}", *extra],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise AnalysisError(f"{binary} --benchmark_list_tests failed: {done.stderr.strip()[:200]}")
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def _run_one(binary: Path, case: str, repetitions: int, extra: list[str], out: Path) -> list[dict]:
    # the harness checks a filter against names without Google Benchmark's /real_time suffix,
    # Google Benchmark against names with it: this one matches both
    bare = case.removesuffix("/real_time")
    cmd = [str(binary), f"--benchmark_filter=^{re.escape(bare)}(/real_time)?$",
           f"--benchmark_repetitions={repetitions}",
           f"--benchmark_out={out}", "--benchmark_out_format=json", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not out.is_file():
        raise AnalysisError(f"{binary.name} {case}: exit {done.returncode}: {done.stderr.strip()[-200:]}")
    return json.loads(out.read_text())


def run_pair(binary_a: Path, binary_b: Path, out_dir: Path, pattern: str = ".", rounds: int = AB_ROUNDS,
             repetitions: int = AB_REPETITIONS, extra: Optional[list[str]] = None) -> tuple[Path, Path]:
    """Runs every case that both binaries list (matching `pattern`) A B A B ...: for each case,
    `rounds` pairs of one A run and one B run of `repetitions` repetitions. Writes
    out_dir/a/<binary>.json and out_dir/b/<binary>.json (every repetition of every round as
    one case's samples) and returns the two directories."""
    extra = extra or []
    cases_a, cases_b = list_cases(binary_a, pattern, extra), list_cases(binary_b, pattern, extra)
    common = [c for c in cases_a if c in set(cases_b)]
    if not common:
        raise AnalysisError(f"no case matching {pattern!r} is in both {binary_a} and {binary_b}")
    sides = {"a": binary_a, "b": binary_b}
    documents: dict[str, dict] = {}
    entries: dict[str, list[dict]] = {"a": [], "b": []}
    with tempfile.TemporaryDirectory() as tmp:
        for case in common:
            for round_index in range(rounds):
                # A B, then B A: a drift that moves steadily through the rounds falls on both
                for side in (("a", "b") if round_index % 2 == 0 else ("b", "a")):
                    binary = sides[side]
                    doc = _run_one(binary, case, repetitions, extra, Path(tmp) / f"{side}.json")
                    documents.setdefault(side, doc)
                    entries[side] += [e for e in doc["benchmarks"] if e.get("run_type") != "aggregate"]
    dirs = []
    for side in ("a", "b"):
        folder = out_dir / side
        folder.mkdir(parents=True, exist_ok=True)
        for i, entry in enumerate(entries[side]):
            entry["repetition_index"] = i
            entry["repetitions"] = rounds * repetitions
        document = dict(documents[side], benchmarks=entries[side])
        (folder / f"{binary_a.name}.json").write_text(json.dumps(document))
        dirs.append(folder)
    return dirs[0], dirs[1]


def compare_pair(dir_a: Path, dir_b: Path, threshold: float = AB_THRESHOLD) -> Comparison:
    """compare's statistics on the paired run: timing gates (one machine, one moment); a side's
    cv does not make a case noisy, nor does the spread of the binary's cases (both are drift
    common to the two sides): the U test over the rounds' repetitions decides."""
    return compare_runs(load_run(dir_a), load_run(dir_b), threshold, timing_gate=True, paired=True)
