"""A paired A/B timing comparison: the same cases of two builds, run on one machine interleaved
block by block (A B, B A, ...), so that what drifts on a shared machine (the memory bandwidth of
this VM switches between ~47 and ~65 GB/s for seconds at a time) falls on both sides alike; then
compare's statistics (U test, minimum repetitions, basis per verdict) with AB_THRESHOLD. Only this
pairing may fail on timing: a timing regression against a baseline from another machine or
another moment never does (gate).

What runs is the suite AB_SUITE (`--suite=quick`) of every bench binary the two builds share: the
flags are the binary's own data, as in scripts/run_suite.py; `--benchmark_repetitions` is given
explicitly, a fixed count. A process per case would cost each case the binary's start-up (its
clock measurement, 1-2 s) 2 x AB_ROUNDS times, so the cases go in blocks of AB_BLOCK: one process
runs a block's cases on one side, the other side's process the same block next. bench_collectives
runs here without mpirun, so its cases are named skips ("needs 2 ranks"), listed as not compared.

Note [rounds are blocks]: a process's repetitions share the machine's state of that moment, and
the state moves between rounds (another process compiling, the bandwidth switching). Each
round's level, the geometric mean of its A and B medians, is divided out of both sides' samples
of that round (`normalise_rounds`; the whole run's level is kept): what is left is the change
between the builds, which is the same in every round, and the noise within a round. Pooling the
raw samples instead lets a drift between rounds widen both sides' spread until a real 20% change
reads as "within cv", and lets one slow round make a side look slower.

`flopscope-analysis ab --a BUILD --b BUILD [--filter REGEX]` runs two builds (a build directory:
its bench_* binaries, paired by name; or two binaries); scripts/ab.sh BASE_REF builds the merge
base and HEAD in separate git worktrees and calls it."""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

from .compare import FASTER, NOISY, SLOWER, Comparison, compare_runs, relative_change
from .errors import AnalysisError
from .load import load_run
from .names import strip_gbench_suffixes

AB_THRESHOLD = 0.10  # a paired slowdown beyond 10% fails (the one place this is set)
AB_SUITE = "quick"  # the suite both builds run (each binary's own flags for it)
AB_ROUNDS = 3  # A B pairs per block
AB_REPETITIONS = 3  # repetitions a side per round: 9 a side in all, enough for the U test
AB_BLOCK = 8  # cases per process: fewer start-ups, against a coarser interleaving


class NothingInCommon(AnalysisError):
    """The two builds share no case to compare (a base older than the suite, a filter)."""


def bench_binaries(build: Path) -> list[Path]:
    """A build's bench binaries: `build` itself where it is a file, else the bench_* executables
    in build/bench (a CMake build directory) or in build."""
    if build.is_file():
        return [build]
    folder = build / "bench" if (build / "bench").is_dir() else build
    found = sorted(p for p in folder.glob("bench_*") if p.is_file() and os.access(p, os.X_OK))
    if not found:
        raise AnalysisError(f"{build}: no bench_* binary (build the bench targets first)")
    return found


def list_cases(binary: Path, extra: list[str]) -> list[str]:
    """The binary's cases in the suite, as Google Benchmark names them."""
    done = subprocess.run([str(binary), f"--suite={AB_SUITE}", "--benchmark_list_tests", *extra],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise AnalysisError(f"{binary} --suite={AB_SUITE} --benchmark_list_tests failed "
                            f"(exit {done.returncode}): {done.stderr.strip()[-200:]}")
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def _ere_escape(text: str) -> str:
    """`text` as a literal in a POSIX extended regex (Python's re.escape also escapes '-' and
    others, which std::regex's extended grammar refuses: 'f16\\->f32' is not a regex there)."""
    return re.sub(r"([.\[\](){}*+?|^$\\])", r"\\\1", text)


def _block_filter(cases: list[str]) -> str:
    """One filter for these cases that both the harness (names without Google Benchmark's
    suffixes) and Google Benchmark (names with them) match, and nothing else: POSIX extended
    syntax, as Google Benchmark compiles it."""
    bare = "|".join(_ere_escape(strip_gbench_suffixes(c)) for c in cases)
    return f"^({bare})(/iterations:[0-9]+)?(/(real|manual)_time)?$"


def _run_block(binary: Path, cases: list[str], repetitions: int, extra: list[str], out: Path) -> dict:
    cmd = [str(binary), f"--suite={AB_SUITE}", f"--benchmark_filter={_block_filter(cases)}",
           f"--benchmark_repetitions={repetitions}", f"--benchmark_out={out}",
           "--benchmark_out_format=json", *extra]
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0 or not out.is_file():
        raise AnalysisError(f"{binary} ({len(cases)} cases from {cases[0]}): exit {done.returncode}: "
                            f"{done.stderr.strip()[-200:]}")
    return json.loads(out.read_text())


def _planned(document: dict) -> tuple[dict, list]:
    """The flopscope context of a document (an object, or its JSON text) and its planned cases."""
    raw = document.get("context", {}).get("flopscope")
    context = json.loads(raw) if isinstance(raw, str) else raw
    return (context, context.get("cases", [])) if isinstance(context, dict) else ({}, [])


def _seconds(entry: dict) -> Optional[float]:
    value = entry.get("real_time")
    return float(value) if isinstance(value, (int, float)) and value > 0 and not entry.get("error_occurred") else None


def normalise_rounds(entries: dict[str, list[dict]]) -> None:
    """Note [rounds are blocks]: scales, in place, each case's entries of each round (their
    "ab_round") by the run's level over the round's level, so that a drift between rounds leaves
    the comparison; real_time and cpu_time are multiplied by the factor, the *_per_second
    counters divided, and the factor is kept as "ab_round_factor". A round in which a side has
    no timed repetition of the case is left as it is."""
    groups: dict[tuple[str, int], dict[str, list[dict]]] = {}
    for side, side_entries in entries.items():
        for entry in side_entries:
            key = (entry.get("run_name", entry.get("name")), entry["ab_round"])
            groups.setdefault(key, {}).setdefault(side, []).append(entry)
    levels: dict[tuple[str, int], float] = {}
    for key, sides in groups.items():
        medians = [statistics.median(t) for t in ([_seconds(e) for e in sides.get(side, []) if _seconds(e)]
                                                  for side in entries) if t]
        if len(medians) == len(entries):
            levels[key] = math.exp(statistics.fmean(math.log(m) for m in medians))
    by_case: dict[str, list[float]] = {}
    for (case, _), level in levels.items():
        by_case.setdefault(case, []).append(level)
    for key, level in levels.items():
        factor = math.exp(statistics.fmean(math.log(v) for v in by_case[key[0]])) / level
        for entry in (e for side in groups[key].values() for e in side):
            entry["ab_round_factor"] = factor
            for field in ("real_time", "cpu_time"):
                if isinstance(entry.get(field), (int, float)):
                    entry[field] *= factor
            for counter in [k for k in entry if k.endswith("_per_second")]:
                if isinstance(entry[counter], (int, float)):
                    entry[counter] /= factor


def _merged(documents: list[dict], entries: list[dict], rounds: int, repetitions: int) -> dict:
    """One document of a side: the first block's context with every block's planned cases, and
    every repetition of every round as one case's samples, numbered per case."""
    document = dict(documents[0])
    context, _ = _planned(document)
    if context:
        context = dict(context, cases=[row for d in documents for row in _planned(d)[1]])
        raw = document["context"]["flopscope"]
        document["context"] = dict(document["context"],
                                   flopscope=json.dumps(context) if isinstance(raw, str) else context)
    index: dict[str, int] = {}
    for entry in entries:
        name = entry.get("run_name", entry.get("name"))
        entry["repetition_index"] = index.get(name, 0)
        entry["repetitions"] = rounds * repetitions
        index[name] = entry["repetition_index"] + 1
    document["benchmarks"] = entries
    return document


def common_cases(binary_a: Path, binary_b: Path, pattern: str, extra: list[str]) -> list[str]:
    """The cases of the suite that both binaries list and `pattern` finds (in the name with or
    without Google Benchmark's suffixes), in B's order. A base binary that cannot list them (it
    predates the suite) has none."""
    try:
        cases_a = set(list_cases(binary_a, extra))
    except AnalysisError as error:
        print(f"ab: {binary_a.name}: the base lists no cases: {error}", file=sys.stderr)
        return []
    regex = re.compile(pattern)
    return [c for c in list_cases(binary_b, extra) if c in cases_a
            and (regex.search(c) or regex.search(strip_gbench_suffixes(c)))]


def run_pair(build_a: Path, build_b: Path, out_dir: Path, pattern: str = ".", rounds: int = AB_ROUNDS,
             repetitions: int = AB_REPETITIONS, extra: Optional[list[str]] = None,
             block: int = AB_BLOCK) -> tuple[Path, Path]:
    """Runs every case of the suite that both builds have (matching `pattern`), block by block:
    for each block of `block` cases, `rounds` pairs of one A process and one B process (A B, then
    B A) of `repetitions` repetitions each. Writes out_dir/a/<binary>.json and
    out_dir/b/<binary>.json and returns the two directories. Binaries are paired by name (two
    single binaries: with each other)."""
    extra = extra or []
    bins_a, bins_b = bench_binaries(build_a), bench_binaries(build_b)
    if build_a.is_file() and build_b.is_file():
        pairs = [(bins_a[0], bins_b[0])]
    else:
        by_name = {p.name: p for p in bins_a}
        pairs = [(by_name[p.name], p) for p in bins_b if p.name in by_name]
    plan = [(a, b, cases) for a, b in pairs if (cases := common_cases(a, b, pattern, extra))]
    if not plan:
        raise NothingInCommon(f"no case of the {AB_SUITE} suite matching {pattern!r} is in both "
                              f"{build_a} and {build_b}")
    blocks = [(a, b, cases[i:i + block]) for a, b, cases in plan for i in range(0, len(cases), block)]
    start = time.monotonic()
    dirs = {side: out_dir / side for side in ("a", "b")}
    with tempfile.TemporaryDirectory() as tmp:
        for binary_a, binary_b, _ in plan:
            documents: dict[str, list[dict]] = {"a": [], "b": []}
            entries: dict[str, list[dict]] = {"a": [], "b": []}
            mine = [(n, c) for n, (a, _, c) in enumerate(blocks) if a == binary_a]
            for number, cases in mine:
                for round_index in range(rounds):
                    # A B, then B A: a drift that moves steadily through the rounds falls on both
                    for side in (("a", "b") if round_index % 2 == 0 else ("b", "a")):
                        binary = binary_a if side == "a" else binary_b
                        doc = _run_block(binary, cases, repetitions, extra, Path(tmp) / f"{side}.json")
                        if round_index == 0:
                            documents[side].append(doc)
                        for entry in doc["benchmarks"]:
                            if entry.get("run_type") != "aggregate":
                                entries[side].append(dict(entry, ab_round=(number, round_index)))
                print(f"ab: block {number + 1}/{len(blocks)} ({binary_b.name}, {len(cases)} cases) done, "
                      f"{time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
            normalise_rounds(entries)
            for side in ("a", "b"):
                dirs[side].mkdir(parents=True, exist_ok=True)
                document = _merged(documents[side], entries[side], rounds, repetitions)
                (dirs[side] / f"{binary_a.name}.json").write_text(json.dumps(document))
    return dirs["a"], dirs["b"]


def round_changes(dir_a: Path, dir_b: Path) -> dict[str, list[float]]:
    """Per case (its name without Google Benchmark's suffixes), the change of each round: B's
    median time against A's in that round (normalising scales both alike, so it is as run)."""
    times: dict[tuple[str, tuple], dict[str, list[float]]] = {}
    for side, folder in (("a", dir_a), ("b", dir_b)):
        for path in sorted(folder.glob("*.json")):
            for entry in json.loads(path.read_text()).get("benchmarks", []):
                seconds = _seconds(entry)
                if seconds and "ab_round" in entry:
                    key = (strip_gbench_suffixes(entry.get("run_name", entry.get("name", ""))), tuple(entry["ab_round"]))
                    times.setdefault(key, {}).setdefault(side, []).append(seconds)
    changes: dict[str, list[float]] = {}
    for (name, _), sides in sorted(times.items()):
        if len(sides) == 2:
            changes.setdefault(name, []).append(relative_change(statistics.median(sides["a"]),
                                                                statistics.median(sides["b"])))
    return changes


def compare_pair(dir_a: Path, dir_b: Path, threshold: float = AB_THRESHOLD) -> Comparison:
    """compare's statistics on the paired run: timing gates (one machine, one moment); a side's
    cv does not make a case noisy, nor does the spread of the binary's cases (both are drift
    common to the two sides): the U test over the rounds' repetitions, each round's level
    divided out (Note [rounds are blocks]), decides. A slower or faster verdict must then show in
    every round (B against A, adjacent processes): where a round disagrees (a burst of load on one
    side of one or two rounds), the case is noisy, with the rounds' changes as its basis."""
    result = compare_runs(load_run(dir_a), load_run(dir_b), threshold, timing_gate=True, paired=True)
    changes = round_changes(dir_a, dir_b)
    for pair in result.pairs:
        rounds = changes.get(pair.name, [])
        sign = {SLOWER: 1, FASTER: -1}.get(pair.verdict)
        if sign and rounds and not all(sign * c > 0 for c in rounds):
            shown = ", ".join(f"{100 * c:+.0f}%" for c in rounds)
            pair.verdict, pair.basis = NOISY, f"rounds disagree ({shown}); {pair.basis}"
    return result
