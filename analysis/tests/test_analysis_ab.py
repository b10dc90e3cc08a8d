"""The paired A/B comparison (`flopscope-analysis ab`) on a stand-in bench binary whose timings
drift by +-25% with the wall clock (fixtures/fake_bench.py): one case made 20% slower in B is
flagged, and only it; A against itself flags nothing, five times over; without pairing the
same drift would be a cross-run difference that gate never times."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli
from flopscope_analysis.ab import AB_THRESHOLD, compare_pair, run_pair
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
    with pytest.raises(AnalysisError, match="no case matching"):
        run_pair(FAKE, FAKE, tmp_path / "pair", pattern="nothing-matches")
    done = run_cli("ab", "--a", FAKE, "--b", FAKE, "--filter", "nothing-matches")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
