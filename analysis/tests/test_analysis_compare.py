"""compare: p-values against Google Benchmark's own tools/compare.py (Debian's libbenchmark-tools),
verdicts on synthetic runs with known shifts and noise, exact accounting, exit codes, and the
committed fixture pair (fixtures/compare_base, fixtures/compare_new)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli
from flopscope_analysis.compare import (NOISY, SAME, SLOWER, FASTER, compare_runs, relative_change,
                                        smallest_pvalue, utest_pvalue, verdict)
from flopscope_analysis.load import load_source
from flopscope_analysis.names import strip_gbench_suffixes

sys.path.insert(0, str(FIXTURES))
import make_fixtures  # noqa: E402

GBENCH_TOOLS = Path("/usr/share/benchmark")
BASE, NEW = FIXTURES / "compare_base", FIXTURES / "compare_new"


@pytest.fixture(scope="module")
def gbench_report():
    """Google Benchmark's gbench/report.py, as compare.py imports it."""
    if not (GBENCH_TOOLS / "gbench" / "report.py").is_file():
        pytest.skip("libbenchmark-tools is not installed (scripts/setup.sh installs it)")
    sys.path.insert(0, str(GBENCH_TOOLS))
    try:
        from gbench import report
    finally:
        sys.path.remove(str(GBENCH_TOOLS))
    return report


def compare_py_pvalues(report, base_path: Path, new_path: Path) -> dict[str, float]:
    """case name -> compare.py's time_pvalue, where compare.py ran its U test."""
    diff = report.get_difference_report(json.loads(base_path.read_text()),
                                        json.loads(new_path.read_text()), utest=True)
    return {strip_gbench_suffixes(d["name"]): float(d["utest"]["time_pvalue"])
            for d in diff if d["utest"]}


# ---------------------------------------------------------------------------------------------
# p-values: the same numbers as compare.py


@pytest.mark.parametrize("run0, run1, tested", [("test1_run1", "test1_run2", 0), ("test3_run0", "test3_run1", 2),
                                                ("test4_run0", "test4_run1", 0)])
def test_pvalues_of_google_benchmarks_own_inputs(gbench_report, run0, run1, tested):
    """Every partition of compare.py: our p-value where it has one, none where it has too few
    repetitions (test1 and test4 have one repetition a case)."""
    inputs = GBENCH_TOOLS / "gbench" / "Inputs"
    j0, j1 = (json.loads((inputs / f"{name}.json").read_text()) for name in (run0, run1))
    expected = {d["name"]: d["utest"] for d in gbench_report.get_difference_report(j0, j1, utest=True)}
    compared = 0
    for lhs, rhs in gbench_report.partition_benchmarks(j0, j1):
        name = lhs[0]["name"]
        ours = utest_pvalue([e["real_time"] for e in lhs], [e["real_time"] for e in rhs])
        if expected.get(name):
            assert ours == expected[name]["time_pvalue"], name
            compared += 1
        else:
            assert min(len(lhs), len(rhs)) < 2 and ours is None, name
    assert compared == tested


def test_pvalues_that_google_benchmark_documents(gbench_report):
    """The literal p-values of gbench/report.py's own unit test (test3_run0 against test3_run1)."""
    inputs = GBENCH_TOOLS / "gbench" / "Inputs"
    j0, j1 = (json.loads((inputs / f"test3_run{i}.json").read_text()) for i in (0, 1))
    times = {}
    for lhs, rhs in gbench_report.partition_benchmarks(j0, j1):
        times[lhs[0]["name"]] = ([e["real_time"] for e in lhs], [e["real_time"] for e in rhs])
    assert utest_pvalue(*times["BM_Two"]) == 1.0
    assert utest_pvalue(*times["short"]) == 0.7670968684102772
    assert utest_pvalue(*times["BM_One"]) is None  # one repetition a side: no test


def ran_on_both_sides(expected: dict, result) -> dict:
    """compare.py also tests the error entries of skipped and failed cases (real_time 0); we
    compare the cases that ran on both sides: the rest must be exactly those that did not."""
    ours = {p.name: p.pvalue for p in result.pairs}
    others = {name for name, _ in result.not_compared} | {str(n.name) for _, n in result.failed_in_new}
    assert set(expected) - set(ours) <= others
    return {name: p for name, p in expected.items() if name in ours}


def test_pvalues_of_the_committed_fixtures_match_compare_py(gbench_report):
    expected = compare_py_pvalues(gbench_report, BASE / "bench_copy.json", NEW / "bench_copy.json")
    result = compare_runs(load_source(BASE), load_source(NEW))
    ours = {p.name: p.pvalue for p in result.pairs}
    assert len(ours) == 6 and ours == ran_on_both_sides(expected, result)


def test_pvalues_of_a_perturbed_fixture_run_match_compare_py(gbench_report, tmp_path):
    """run_cpu (3 repetitions, times in ns and us) against a copy with other times per case."""
    new_dir = tmp_path / "new"
    new_dir.mkdir()
    for name in ("bench_copy.json", "bench_peak.json"):
        data = json.loads((FIXTURES / "run_cpu" / name).read_text())
        for i, e in enumerate(data["benchmarks"]):
            if e["run_type"] == "iteration" and not e.get("error_occurred"):
                e["real_time"] *= (1.0, 1.3, 0.9, 1.05)[(i + e["family_index"]) % 4]
        (new_dir / name).write_text(json.dumps(data))
    result = compare_runs(load_source(FIXTURES / "run_cpu"), load_source(new_dir))
    ours = {p.name: p.pvalue for p in result.pairs}
    expected = {}
    for name in ("bench_copy.json", "bench_peak.json"):
        expected.update(compare_py_pvalues(gbench_report, FIXTURES / "run_cpu" / name, new_dir / name))
    assert len(ours) == 12 and ours == ran_on_both_sides(expected, result)
    assert len(set(ours.values())) > 1  # the perturbation made different p-values


def test_relative_change_is_compare_pys(gbench_report):
    for old, new in ((10, 9), (9, 10), (0, 0), (0, 5), (8, 4.54)):
        assert relative_change(old, new) == gbench_report.calculate_change(old, new)


# ---------------------------------------------------------------------------------------------
# Verdicts


def write_run(path: Path, cases, failed=(), key=None) -> Path:
    """A run directory with one bench_copy.json of the given copy cases (make_fixtures.copy_file)."""
    data = make_fixtures.copy_file(cases, failed)
    if key:
        context = json.loads(data["context"]["flopscope"])
        context["devices"]["cpu"]["key"] = key
        data["context"]["flopscope"] = json.dumps(context)
    path.mkdir(parents=True)
    (path / "bench_copy.json").write_text(json.dumps(data))
    return path


def one_case(tmp_path, reps, base_cv, new_cv, factor, new_bytes=8192):
    name = "copy/simd/f32/cpu/n=1024"
    base = write_run(tmp_path / "base", [(name, make_fixtures.pattern(1e-6, base_cv, reps), 8192)])
    new = write_run(tmp_path / "new", [(name, [factor * t for t in make_fixtures.pattern(1e-6, new_cv, reps)],
                                        new_bytes)])
    return compare_runs(load_source(base), load_source(new))


@pytest.mark.parametrize("reps", [2, 3, 5, 9])
def test_ten_percent_slower_with_one_percent_noise_is_slower(tmp_path, reps):
    result = one_case(tmp_path, reps, 0.01, 0.01, 1.10)
    (pair,) = result.pairs
    assert pair.verdict == SLOWER and pair.change == pytest.approx(0.10)
    assert result.exit_code == 1 and result.regressions == [pair]


@pytest.mark.parametrize("reps", [2, 3, 5, 9])
def test_one_percent_change_with_ten_percent_noise_is_same(tmp_path, reps):
    result = one_case(tmp_path, reps, 0.10, 0.10, 1.01)
    assert [p.verdict for p in result.pairs] == [SAME] and result.exit_code == 0


@pytest.mark.parametrize("reps", [2, 9])
def test_ten_percent_faster_is_faster_and_passes(tmp_path, reps):
    result = one_case(tmp_path, reps, 0.01, 0.01, 0.90)
    assert [p.verdict for p in result.pairs] == [FASTER] and result.exit_code == 0


def test_slower_within_the_threshold_passes(tmp_path):
    result = one_case(tmp_path, 5, 0.005, 0.005, 1.03)
    assert [p.verdict for p in result.pairs] == [SLOWER] and result.exit_code == 0
    strict = compare_runs(result.base, result.new, threshold=0.02)
    assert strict.exit_code == 1


def test_a_noisy_case_is_noisy_and_never_gates(tmp_path):
    result = one_case(tmp_path, 9, 0.08, 0.08, 1.30)
    (pair,) = result.pairs
    assert pair.pvalue < 0.05 and pair.verdict == NOISY and result.exit_code == 0


def test_one_repetition_is_noisy(tmp_path):
    result = one_case(tmp_path, 1, 0.0, 0.0, 1.10)
    (pair,) = result.pairs
    assert pair.pvalue is None and pair.verdict == NOISY and result.exit_code == 0


def test_not_significant_with_enough_repetitions_is_same(tmp_path):
    """5% slower with 4.5% noise, 9 repetitions: beyond the noise, but the U test says the
    samples overlap too much (p >= 0.05)."""
    result = one_case(tmp_path, 9, 0.045, 0.045, 1.05)
    (pair,) = result.pairs
    assert pair.change > 0.045 and pair.pvalue >= 0.05
    assert pair.verdict == SAME and result.exit_code == 0


def test_smallest_pvalues():
    assert smallest_pvalue(2, 2) == pytest.approx(1 / 3)
    assert smallest_pvalue(3, 3) == pytest.approx(0.1)
    assert smallest_pvalue(4, 4) == pytest.approx(2 / 70)  # the first that can be significant


@pytest.mark.parametrize("args, expected", [
    ((0.04, 0.05, 0.001, 9, 9, False), SAME),  # within the noise, however significant
    ((0.10, 0.01, None, 1, 9, False), NOISY),  # one repetition on a side
    ((0.10, 0.01, 0.20, 9, 9, False), SAME),  # not significant where it could be
    ((0.10, 0.01, 0.33, 2, 2, False), SLOWER),  # 2 against 2 cannot be significant: noise decides
    ((0.10, 0.06, 0.001, 9, 9, True), NOISY),  # cv above 5%
    ((-0.10, 0.01, 0.001, 9, 9, False), FASTER),
    ((0.10, 0.01, 0.33, 2, 2, False, 0.05), NOISY),  # within 3 run-to-run spreads of its binary
    ((0.10, 0.01, 0.001, 9, 9, False, 0.05), NOISY),  # significant inside one run, not between runs
    ((0.20, 0.01, 0.33, 2, 2, False, 0.05), SLOWER),  # beyond them
])
def test_verdict_rules_in_order(args, expected):
    assert verdict(*args) == expected


def drifted(tmp_path, factors, reps=2, cv=0.01):
    """BASE and NEW runs of len(factors) copy cases with tight repetitions, NEW's times of case i
    multiplied by factors[i]."""
    names = [f"copy/simd/f32/cpu/n={1024 << i}" for i in range(len(factors))]
    base = write_run(tmp_path / "base", [(n, make_fixtures.pattern(1e-6, cv, reps), 8192) for n in names])
    new = write_run(tmp_path / "new", [(n, [f * t for t in make_fixtures.pattern(1e-6, cv, reps)], 8192)
                                       for n, f in zip(names, factors)])
    return compare_runs(load_source(base), load_source(new))


# Two runs of one commit on a shared machine: every case of the binary moved by up to +-20% (what
# two quick runs on the 2-core VMs show), each with tight repetitions.
DRIFT = [0.82, 1.18, 0.95, 1.06, 0.88, 1.12, 1.0, 0.91, 1.09, 1.2, 0.85, 1.03]


def test_run_to_run_drift_of_a_binary_is_noisy_not_a_regression(tmp_path):
    result = drifted(tmp_path, DRIFT)
    # changes -0.18 .. +0.20, median +0.015, median absolute deviation 0.105: 1.4826 x 0.105
    assert result.spreads["bench_copy"] == pytest.approx(0.15567, abs=1e-4)
    assert {p.verdict for p in result.pairs} <= {SAME, NOISY} and result.exit_code == 0
    done = run_cli("compare", tmp_path / "base", tmp_path / "new")
    assert done.returncode == 0 and "run-to-run spread per binary" in done.stdout and "bench_copy 15.6%" in done.stdout


def test_one_case_slower_among_drifting_ones_is_slower(tmp_path):
    factors = [0.98, 1.02, 0.99, 1.01, 1.0, 0.97, 1.03, 1.0, 0.99, 1.01, 1.0, 1.40]
    result = drifted(tmp_path, factors)
    verdicts = {p.name: p.verdict for p in result.pairs}
    assert verdicts.pop("copy/simd/f32/cpu/n=2097152") == SLOWER and result.exit_code == 1
    assert set(verdicts.values()) <= {SAME, NOISY, SLOWER, FASTER}


def test_a_binary_slowed_alike_is_slower_not_hidden_by_the_spread(tmp_path):
    result = drifted(tmp_path, [1.2] * 12)
    assert result.spreads["bench_copy"] == pytest.approx(0.0, abs=1e-9)
    assert {p.verdict for p in result.pairs} == {SLOWER} and result.exit_code == 1


def test_too_few_cases_for_a_spread_judge_as_before(tmp_path):
    result = drifted(tmp_path, DRIFT[:7])
    assert result.spreads == {} and SLOWER in {p.verdict for p in result.pairs}


# ---------------------------------------------------------------------------------------------
# Accounting, failures, sides, machines


def test_an_accounting_change_fails_whatever_the_timing(tmp_path):
    result = one_case(tmp_path, 3, 0.01, 0.01, 1.0, new_bytes=16384)
    (pair,) = result.pairs
    assert pair.verdict == SAME and pair.accounting == ["bytes 8192 -> 16384"]
    assert result.exit_code == 1


def test_a_missing_accounting_counter_is_a_change(tmp_path):
    base = load_source(FIXTURES / "run_cpu")
    new = copy.deepcopy(base)
    case = next(c for c in new.cases if str(c.name) == "copy/simd/f32/cpu/n=65536")
    del case.counters["flops"]
    result = compare_runs(base, new)
    assert [(p.name, p.accounting) for p in result.accounting_failures] == [
        ("copy/simd/f32/cpu/n=65536", ["flops 0 -> —"])]


def test_the_committed_fixture_pair():
    result = compare_runs(load_source(BASE), load_source(NEW))
    verdicts = {p.name: p.verdict for p in result.pairs}
    assert verdicts == {
        "copy/simd/f32/cpu/n=1048576": SAME,
        "copy/simd/f32/cpu/n=67108864": SLOWER,
        "copy/memcpy/f32/cpu/n=1048576": SAME,
        "copy/memcpy/f32/cpu/n=67108864": FASTER,
        "copy/simd/f32/cpu/n=65536": SAME,
        "copy/simd/f32/cpu/n=1024": NOISY,
    }
    assert [p.name for p in result.accounting_failures] == ["copy/simd/f32/cpu/n=65536"]
    assert [str(n.name) for _, n in result.failed_in_new] == ["copy/simd/bf16/cpu/n=1048576"]
    assert result.only_base == ["copy/memcpy/f32/cpu/n=65536"]
    assert result.only_new == ["copy/memcpy/f32/cpu/n=4096"]
    assert [p.name for p in result.regressions] == ["copy/simd/f32/cpu/n=67108864"]
    slower = next(p for p in result.pairs if p.name == "copy/simd/f32/cpu/n=67108864")
    assert slower.change == pytest.approx(0.10) and slower.rate_change == pytest.approx(1 / 1.1 - 1)


def test_skipped_on_a_side_is_listed_not_failed(tmp_path):
    data = json.loads((FIXTURES / "run_cpu" / "bench_copy.json").read_text())
    for e in data["benchmarks"]:
        if e["run_name"].startswith("copy/simd/f32/cpu/n=65536/"):
            e.update(error_occurred=True, error_message="skipped: not enough memory")
    (tmp_path / "bench_copy.json").write_text(json.dumps(data))
    result = compare_runs(load_source(FIXTURES / "run_cpu" / "bench_copy.json"),
                          load_source(tmp_path / "bench_copy.json"))
    assert ("copy/simd/f32/cpu/n=65536", "skipped in NEW (not enough memory)") in result.not_compared
    assert result.exit_code == 0


def test_different_machines_never_gate_on_timing(tmp_path):
    name = "copy/simd/f32/cpu/n=1024"
    base = write_run(tmp_path / "base", [(name, make_fixtures.pattern(1e-6, 0.01, 3), 8192)])
    new = write_run(tmp_path / "new", [(name, make_fixtures.pattern(1.2e-6, 0.01, 3), 8192)], key="cpu-other")
    result = compare_runs(load_source(base), load_source(new))
    assert result.different_machines == "cpu: BASE cpu-intel-r-xeon-r-processor, NEW cpu-other"
    assert [p.verdict for p in result.pairs] == [SLOWER] and result.exit_code == 0
    changed = write_run(tmp_path / "changed", [(name, make_fixtures.pattern(1e-6, 0.01, 3), 4096)], key="cpu-other")
    assert compare_runs(load_source(base), load_source(changed)).exit_code == 1  # accounting still gates


# ---------------------------------------------------------------------------------------------
# The command: output, exit codes, --markdown, the checks of issue 13


def raised(tmp_path, factor: float, case: str = "copy/simd/f32/cpu/n=67108864/real_time") -> Path:
    """A copy of run_cpu with one case's times (every repetition and aggregate) multiplied."""
    run = tmp_path / "raised"
    run.mkdir(parents=True)
    for name in ("bench_copy.json", "bench_peak.json"):
        data = json.loads((FIXTURES / "run_cpu" / name).read_text())
        for e in data["benchmarks"]:
            if e["run_name"] == case and e.get("aggregate_name") != "cv":
                e["real_time"] *= factor
                e["cpu_time"] *= factor
        (run / name).write_text(json.dumps(data))
    return run


def test_the_same_run_compares_as_same():
    done = run_cli("compare", FIXTURES / "run_cpu", FIXTURES / "run_cpu")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "12 compared: 12 same, 0 faster, 0 slower, 0 noisy; 0 accounting change(s); 0 failed in NEW; " \
           "0 slower by more than 5%" in lines
    assert lines[-1] == "OK: no regression"


def test_a_case_twenty_percent_slower_with_tight_repetitions_fails(tmp_path):
    done = run_cli("compare", FIXTURES / "run_cpu", raised(tmp_path, 1.2))
    assert done.returncode == 1, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("  copy/simd/f32/cpu/n=67108864 "))
    assert " slower >5% " in row and "+20.0%" in row
    assert done.stdout.splitlines()[-1] == "FAIL: 1 case(s) slower by more than 5%"
    assert run_cli("compare", FIXTURES / "run_cpu", raised(tmp_path / "x", 1.2),
                   "--threshold", "25%").returncode == 0
    assert run_cli("compare", FIXTURES / "run_cpu", raised(tmp_path / "y", 1.2),
                   "--no-timing-gate").returncode == 0


def test_a_changed_flops_counter_fails(tmp_path):
    run = tmp_path / "changed"
    run.mkdir()
    (run / "bench_copy.json").write_text((FIXTURES / "run_cpu" / "bench_copy.json").read_text())
    data = json.loads((FIXTURES / "run_cpu" / "bench_peak.json").read_text())
    for e in data["benchmarks"]:
        if e["run_name"] == "peak/fma/f64/cpu/n=1024/threads=2/real_time":
            e["flops"] *= 2
    (run / "bench_peak.json").write_text(json.dumps(data))
    done = run_cli("compare", FIXTURES / "run_cpu", run)
    assert done.returncode == 1
    assert "  peak/fma/f64/cpu/n=1024/threads=2: flops 4096000 -> 8192000" in done.stdout.splitlines()
    assert done.stdout.splitlines()[-1] == "FAIL: 1 accounting change(s)"


def test_markdown_summary(tmp_path):
    out = tmp_path / "summary.md"
    done = run_cli("compare", BASE, NEW, "--markdown", out)
    assert done.returncode == 1
    text = out.read_text(encoding="utf-8")
    assert text.startswith("## flopscope compare: FAIL: 1 accounting change(s), 1 case(s) failed in NEW, "
                           "1 case(s) slower by more than 5%\n")
    assert "| `copy/simd/f32/cpu/n=67108864` | 49.7 ms | 54.7 ms | +10.0% | 10.8 GB/s | 9.82 GB/s |" in text
    assert "- `copy/simd/f32/cpu/n=65536`: bytes 524288 -> 1048576" in text
    assert "### Only in NEW (1)\n\n- `copy/memcpy/f32/cpu/n=4096`" in text


def test_single_files_and_directories_compare_alike():
    files = run_cli("compare", BASE / "bench_copy.json", NEW / "bench_copy.json")
    dirs = run_cli("compare", BASE, NEW)
    assert files.returncode == dirs.returncode == 1
    assert files.stdout.splitlines()[2:] == dirs.stdout.splitlines()[2:]  # the same but the names


def check_one_line_error(done, *expected):
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("flopscope-analysis: error: "), done.stderr
    assert "Traceback" not in done.stderr
    for text in expected:
        assert text in lines[0], lines[0]


@pytest.mark.parametrize("args, expected", [
    (["compare", "{tmp}/nope", str(NEW)], ["nope", "no such file or directory"]),
    (["compare", str(BASE), "{tmp}/bad.json"], ["bad.json", "not JSON"]),
    (["compare", str(BASE), "{tmp}/empty"], ["no results"]),
    (["compare", str(BASE), str(NEW), "--threshold", "abc"], ["'abc' is not a percentage"]),
    (["compare", str(BASE), str(NEW), "--threshold", "-5"], ["'-5' is not a percentage >= 0"]),
    (["compare", str(BASE), str(NEW), "--threshold", "nan"], ["'nan' is not a percentage >= 0"]),
    (["compare", str(BASE), str(NEW), "--markdown", "/proc/nope/summary.md"], ["/proc/nope"]),
    (["compare", str(BASE), str(NEW), "--markdown", "/dev/null"], ["/dev/null", "not a regular file"]),
    (["compare", str(BASE), str(NEW), "--markdown", "{tmp}"], ["not a regular file"]),
    (["compare", str(BASE)], ["the following arguments are required: NEW"]),
])
def test_bad_input_is_one_line(tmp_path, args, expected):
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "empty").mkdir()
    check_one_line_error(run_cli(*[a.format(tmp=tmp_path) for a in args]), *expected)


def test_the_same_case_in_two_files_of_a_run_is_an_error(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    for name in ("bench_copy.json", "bench_copy2.json"):
        (run / name).write_text((BASE / "bench_copy.json").read_text())
    check_one_line_error(run_cli("compare", BASE, run), "in both bench_copy.json and bench_copy2.json")


# ---------------------------------------------------------------------------------------------
# The size and order of the output on whole default-suite runs (the committed report JSONs)

REPORTS = Path(__file__).resolve().parents[2] / "results" / "reports"
DEFAULT_RUN = REPORTS / "cpu-amd-epyc-2026-12-04"


def scaled_run(tmp_path: Path, factor: float, flops_factor: float = 1.0) -> Path:
    """A copy of the committed default-suite run with every time multiplied by `factor` and every
    flops counter by `flops_factor`."""
    run = tmp_path / f"scaled-{factor}-{flops_factor}"
    run.mkdir(parents=True)
    for path in sorted(DEFAULT_RUN.glob("bench_*.json")):
        data = json.loads(path.read_text())
        for e in data["benchmarks"]:
            if e.get("aggregate_name") != "cv":
                for key in ("real_time", "cpu_time"):
                    if key in e:
                        e[key] *= factor
            for key in ("flops", "bytes"):
                if key in e:
                    e[key] *= flops_factor
        (run / path.name).write_text(json.dumps(data))
    return run


def test_markdown_of_a_default_suite_comparison_stays_under_the_limit(tmp_path):
    """Every case of the default suite slower by 30% and with changed counts: hundreds of rows of
    failures, cut to stay under 60,000 characters with a pointer to the full list; the text output
    keeps them all."""
    new = scaled_run(tmp_path, 1.3, 2.0)
    out = tmp_path / "compare.md"
    done = run_cli("compare", DEFAULT_RUN, new, "--markdown", out, "--full", "https://example.org/artifact")
    assert done.returncode == 1, done.stderr
    text = out.read_text(encoding="utf-8")
    assert len(text) < 60_000
    assert "more case(s) left out; the full comparison: https://example.org/artifact." in text
    sections = [line for line in text.splitlines() if line.startswith("### ")]
    assert sections[0].startswith("### Accounting changes")
    accounting = int(sections[0].rsplit("(", 1)[1].rstrip(")"))
    assert accounting > 200
    listed = [line for line in done.stdout.splitlines() if line.startswith("  ") and (": flops " in line or ": bytes " in line)]
    assert len(listed) == accounting  # the text output is not cut


def test_a_default_suite_compared_with_itself_is_short(tmp_path):
    """Skipped cases are counts per reason, unchanged cases a count: no row per case."""
    out = tmp_path / "compare.md"
    done = run_cli("compare", DEFAULT_RUN, DEFAULT_RUN, "--markdown", out)
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 40 and "left out" not in text
    assert "### Same (" in text and "case(s): skipped in both" in text


def test_a_verdict_names_the_test_that_made_it(tmp_path):
    """A p-value is shown beside a verdict only where the U test made it."""
    few = one_case(tmp_path / "a", 3, 0.01, 0.01, 1.10).pairs[0]
    assert few.verdict == SLOWER and "cannot reach p<0.05" in few.basis and "p=" not in few.basis
    many = one_case(tmp_path / "b", 9, 0.01, 0.01, 1.10).pairs[0]
    assert many.verdict == SLOWER and many.basis == f"U test p={many.pvalue:.3g}"
    overlap = one_case(tmp_path / "c", 9, 0.045, 0.045, 1.05).pairs[0]
    assert overlap.verdict == SAME and overlap.basis.startswith("U test p=")
