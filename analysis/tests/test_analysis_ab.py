"""The paired A/B comparison (`flopscope-analysis ab`) on a stand-in bench binary whose timings
drift by +-25% with the wall clock (fixtures/fake_bench.py): one case made 20% slower in B is
flagged, and only it; A against itself flags nothing, five times over; without pairing the
same drift would be a cross-run difference that gate never times. Builds pair their binaries by
name; a base that has no case of the suite is a named skip."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli
from flopscope_analysis.ab import AB_THRESHOLD, compare_pair, normalise_rounds, round_changes, run_pair
from flopscope_analysis.compare import SLOWER
from flopscope_analysis.errors import AnalysisError

FAKE = FIXTURES / "fake_bench.py"
SLOW_CASE = "copy/simd/f32/cpu/n=4096"


def slowed(tmp_path: Path, factor: float) -> Path:
    """A build B: the stand-in with one case `factor` times slower."""
    wrapper = tmp_path / "bench_b"
    wrapper.write_text(f"#!/bin/sh\nFAKE_SLOW={SLOW_CASE}={factor} exec {FAKE} \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return wrapper


def test_one_case_twenty_percent_slower_is_flagged_and_only_it(tmp_path):
    a, b = run_pair(FAKE, slowed(tmp_path, 1.2), tmp_path / "pair")
    result = compare_pair(a, b)
    assert [p.name for p in result.regressions] == [SLOW_CASE]
    (pair,) = result.regressions
    assert pair.verdict == SLOWER and pair.change == pytest.approx(0.2, abs=0.05)
    assert pair.basis.startswith("U test p=")  # 9 repetitions a side: the U test decides
    assert len(pair.base.samples) == len(pair.new.samples) == 9
    assert result.exit_code == 1 and AB_THRESHOLD == 0.10


@pytest.mark.parametrize("attempt", range(5))
def test_identical_builds_flag_nothing(tmp_path, attempt):
    result = compare_pair(*run_pair(FAKE, FAKE, tmp_path / "pair"))
    assert len(result.pairs) == 6 and result.regressions == [] and result.exit_code == 0


def test_the_cli_fails_on_the_slow_case_and_says_which(tmp_path):
    done = run_cli("ab", "--a", FAKE, "--b", slowed(tmp_path, 1.2), "--filter", "n=(1024|4096)/",
                   "--out", tmp_path / "pair", "--markdown", tmp_path / "ab.md")
    assert done.returncode == 1, done.stderr
    assert "FAIL: 1 case(s) slower by more than 10%" in done.stdout
    assert f"`{SLOW_CASE}`" in (tmp_path / "ab.md").read_text()


def test_no_common_case_is_one_line(tmp_path):
    with pytest.raises(AnalysisError, match="no case of the quick suite matching"):
        run_pair(FAKE, FAKE, tmp_path / "pair", pattern="nothing-matches")
    done = run_cli("ab", "--a", FAKE, "--b", FAKE, "--filter", "nothing-matches")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def build_dir(folder: Path, **binaries: str) -> Path:
    """A stand-in build directory: bench/<name> runs the given shell line."""
    (folder / "bench").mkdir(parents=True)
    for name, line in binaries.items():
        path = folder / "bench" / name
        path.write_text(f"#!/bin/sh\n{line}\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return folder


def test_builds_pair_their_binaries_by_name(tmp_path):
    a = build_dir(tmp_path / "a", bench_copy=f'exec {FAKE} "$@"', bench_old=f'exec {FAKE} "$@"')
    b = build_dir(tmp_path / "b", bench_copy=f'FAKE_SLOW={SLOW_CASE}=1.5 exec {FAKE} "$@"')
    dir_a, dir_b = run_pair(a, b, tmp_path / "pair", pattern="n=(1024|4096)$")
    assert sorted(p.name for p in dir_a.iterdir()) == ["bench_copy.json"]  # bench_old: not in B
    result = compare_pair(dir_a, dir_b)
    assert [p.name for p in result.pairs] == ["copy/simd/f32/cpu/n=1024", SLOW_CASE]
    assert [p.name for p in result.regressions] == [SLOW_CASE]


def test_a_base_without_the_suite_is_a_named_skip(tmp_path):
    """The whole suite with nothing in common (a base whose binaries predate --suite): exit 0
    and a line saying why, in the output and the Markdown; never a red run."""
    a = build_dir(tmp_path / "a", bench_copy="echo 'unknown flag --suite=quick' >&2; exit 2")
    b = build_dir(tmp_path / "b", bench_copy=f'exec {FAKE} "$@"')
    done = run_cli("ab", "--a", a, "--b", b, "--markdown", tmp_path / "ab.md")
    assert done.returncode == 0, done.stderr
    assert "ab: skipped: no case of the quick suite" in done.stdout
    assert "unknown flag --suite=quick" in done.stderr
    assert (tmp_path / "ab.md").read_text().startswith("*Paired timing skipped: no case")


def _entry(case: str, seconds: float, round_index: int) -> dict:
    return {"name": case, "run_name": case, "run_type": "iteration", "real_time": seconds * 1e9,
            "cpu_time": seconds * 1e9, "time_unit": "ns", "bytes_per_second": 1e9 / seconds,
            "ab_round": (0, round_index)}


def test_a_drift_between_rounds_is_divided_out():
    """Round 2 ran while the machine was 50% slower on both sides: after normalising, each
    round's A/B ratio (B 20% slower) is kept, the level between rounds is the same, and the
    rate follows the time."""
    drift = {0: 1.0, 1: 1.5, 2: 1.0}
    entries = {"a": [_entry("c", 1.0 * drift[r], r) for r in range(3) for _ in range(3)],
               "b": [_entry("c", 1.2 * drift[r], r) for r in range(3) for _ in range(3)]}
    normalise_rounds(entries)
    times = {side: [e["real_time"] / 1e9 for e in es] for side, es in entries.items()}
    assert len(set(round(t, 12) for t in times["a"])) == 1 and len(set(round(t, 12) for t in times["b"])) == 1
    assert times["b"][0] / times["a"][0] == pytest.approx(1.2)
    level = (1.0 * 1.2) ** 0.5 * 1.5 ** (1 / 3)  # the whole run's geometric level is kept
    assert (times["a"][0] * times["b"][0]) ** 0.5 == pytest.approx(level)
    assert all(e["bytes_per_second"] * e["real_time"] / 1e9 == pytest.approx(1e9) for e in entries["b"])


def _set_times(folder: Path, case: str, seconds: dict[int, list[float]]) -> None:
    """Gives `case`'s repetitions of each round these times (as run, after normalising)."""
    for path in folder.glob("*.json"):
        document = json.loads(path.read_text())
        entries = [e for e in document["benchmarks"] if e["run_name"].startswith(case + "/")]
        for entry in entries:
            this_round = [e for e in entries if e["ab_round"] == entry["ab_round"]]
            entry["real_time"] = 1e6 * seconds[entry["ab_round"][1]][this_round.index(entry)]
            entry["time_unit"] = "us"
        path.write_text(json.dumps(document))


def test_a_verdict_must_show_in_every_round(tmp_path):
    """B 50% slower in rounds 1 and 3 and a hair faster than A in round 2 (a burst of load on
    one side in two rounds): the U test over all 9 a side says slower (p=0.013), the rounds do
    not agree: noisy, with the rounds' changes as its basis. 50% slower in every round: slower."""
    a_times = {r: [1.0, 1.004, 1.008] for r in range(3)}
    for name, b_times, verdict in (
            ("burst", {0: [1.5, 1.51, 1.52], 1: [1.001, 1.003, 1.009], 2: [1.5, 1.51, 1.52]}, "noisy"),
            ("real", {r: [1.5, 1.51, 1.52] for r in range(3)}, SLOWER)):
        dir_a, dir_b = run_pair(FAKE, FAKE, tmp_path / name, pattern="n=4096$")
        _set_times(dir_a, SLOW_CASE, a_times)
        _set_times(dir_b, SLOW_CASE, b_times)
        (pair,) = compare_pair(dir_a, dir_b).pairs
        assert pair.verdict == verdict, pair.basis
        if verdict == "noisy":
            assert pair.basis.startswith("rounds disagree (+50%, -0%, +50%); U test p=0.0127")
