"""Bundles (baselines and history entries), CI's gate against results/baselines/, and the
history of a machine's runs."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli
from flopscope_analysis import runstatus
from flopscope_analysis.compare import compare_runs
from flopscope_analysis.history import machine_runs, trend_series
from flopscope_analysis.load import load_run, load_source

sys.path.insert(0, str(FIXTURES))
import make_fixtures as fixtures  # noqa: E402

KEY = "cpu-intel-r-xeon-r-processor"
PNG = b"\x89PNG\r\n\x1a\n"


def edit_run(src: Path, dst: Path, *, date=None, commit=None, key=None, scale=None, flops_of=None,
             roles=False) -> Path:
    """A copy of a fixture run with its context date, commit or CPU key changed, every time of
    the copy cases multiplied by `scale`, the flops counter of one case doubled, or (roles) its
    context made schema 2 with its variants' roles, as today's binaries write it."""
    dst.mkdir(parents=True)
    for path in sorted(src.glob("*.json")):
        data = json.loads(path.read_text())
        context = json.loads(data["context"]["flopscope"])
        if commit:
            context["build"]["git_commit"] = commit
        if key:
            context["devices"]["cpu"]["key"] = key
        data["context"]["flopscope"] = json.dumps(context)
        if date:
            data["context"]["date"] = date
        if roles:
            data["context"] = fixtures.with_roles(data["context"], [e["run_name"] for e in data["benchmarks"]])
        for e in data["benchmarks"]:
            if scale and e["run_name"].startswith("copy/") and e.get("aggregate_name") != "cv":
                e["real_time"] *= scale
                if "bytes_per_second" in e:
                    e["bytes_per_second"] /= scale
            if flops_of and e["run_name"].startswith(flops_of + "/"):
                e["flops"] = 2 * e["flops"] + 1
        (dst / path.name).write_text(json.dumps(data))
    return dst


# ---------------------------------------------------------------------------------------------
# baseline


def test_baseline_is_the_run_in_one_file(tmp_path):
    done = run_cli("baseline", FIXTURES / "run_cpu", "--out", tmp_path / "baselines")
    assert done.returncode == 0, done.stderr
    path = tmp_path / "baselines" / f"{KEY}.json"
    assert done.stdout.strip() == str(path)
    document = json.loads(path.read_text())
    assert document["flopscope_bundle"] == 1 and document["machine_key"] == KEY
    assert document["run_id"] == "run_cpu" and document["git_commit"] == "9248cb2"
    for name in ("bench_copy.json", "bench_peak.json"):  # every file, as written
        assert document["files"][name] == json.loads((FIXTURES / "run_cpu" / name).read_text())
    baseline, run = load_source(path), load_run(FIXTURES / "run_cpu")
    assert [str(c.name) for c in baseline.cases] == [str(c.name) for c in run.cases]
    assert [c.samples for c in baseline.cases] == [c.samples for c in run.cases]
    result = compare_runs(baseline, run)
    assert len(result.pairs) == 12 and {p.verdict for p in result.pairs} == {"same"}
    # one benchmark entry per line, so that a committed baseline diffs line by line
    assert sum(line.startswith('    {"name": ') for line in path.read_text().splitlines()) == \
        sum(len(json.loads((FIXTURES / "run_cpu" / n).read_text())["benchmarks"])
            for n in ("bench_copy.json", "bench_peak.json"))


def test_an_incomplete_run_makes_no_baseline(fixture_dir, tmp_path):
    run_dir = fixture_dir("run_cpu")
    runstatus.write(run_dir, runstatus.INTERRUPTED, binaries=["bench_peak", "bench_copy"], finished=["bench_peak"])
    done = run_cli("baseline", run_dir, "--out", tmp_path / "b")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "interrupted" in done.stderr and "an incomplete run makes no baseline" in done.stderr
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("out", ["/proc/nope", "/dev/null", "{tmp}/file"])
def test_unwritable_baseline_directory(tmp_path, out):
    (tmp_path / "file").write_text("a file")
    done = run_cli("baseline", FIXTURES / "run_cpu", "--out", out.format(tmp=tmp_path))
    assert done.returncode == 2, done.stdout
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"flopscope-analysis: error: {out.format(tmp=tmp_path)}")
    if out != "/proc/nope":
        assert "cannot be a directory (a file is in the way)" in done.stderr


def test_a_bundle_of_another_schema_is_an_error(tmp_path):
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"flopscope_bundle": 7, "files": {}}))
    done = run_cli("summary", path)
    assert done.returncode == 2 and "bundle schema is 7" in done.stderr


# ---------------------------------------------------------------------------------------------
# gate (.ci/run)


def baseline(run_dir: Path, out: Path) -> Path:
    assert run_cli("baseline", run_dir, "--out", out).returncode == 0
    return out


def gate(run_dir, baselines, *args):
    return run_cli("gate", run_dir, "--baselines", baselines, *args)


def test_gate_without_any_baseline_says_so_and_passes(tmp_path):
    done = gate(FIXTURES / "run_cpu", tmp_path / "none", "--markdown", tmp_path / "gate.md")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "flopscope gate: OK"
    assert lines[1] == f"no baseline for this machine ({KEY}) in {tmp_path / 'none'}: timing is not compared"
    assert lines[2].startswith("no baseline committed at all: accounting is not checked either")
    assert (tmp_path / "gate.md").read_text(encoding="utf-8").startswith("# flopscope gate: OK\n")


def test_gate_against_the_machines_baseline(tmp_path):
    baselines = baseline(FIXTURES / "run_cpu", tmp_path / "baselines")
    same = gate(FIXTURES / "run_cpu", baselines)
    assert same.returncode == 0, same.stdout
    assert f"baseline of this machine: {baselines / (KEY + '.json')} (timing is a report only)" in same.stdout
    slower = edit_run(FIXTURES / "run_cpu", tmp_path / "slower", scale=1.2)
    report_only = gate(slower, baselines)
    assert report_only.returncode == 0, report_only.stdout
    assert "slower >5%" in report_only.stdout  # shown, not gating
    strict = gate(slower, baselines, "--strict-timing")
    assert strict.returncode == 1 and strict.stdout.splitlines()[0] == f"flopscope gate: FAIL against {KEY}.json"
    changed = edit_run(FIXTURES / "run_cpu", tmp_path / "changed", flops_of="peak/fma/f32/cpu/n=1024/threads=2")
    assert gate(changed, baselines).returncode == 1


def test_gate_on_a_machine_without_baseline_checks_accounting_against_the_others(tmp_path):
    baselines = baseline(FIXTURES / "run_cpu", tmp_path / "baselines")
    elsewhere = edit_run(FIXTURES / "run_cpu", tmp_path / "elsewhere", key="cpu-other", scale=1.5)
    done = gate(elsewhere, baselines, "--strict-timing")
    assert done.returncode == 0, done.stdout  # slower, but another machine: timing never gates
    assert "no baseline for this machine (cpu-other)" in done.stdout
    assert "accounting is checked against the 1 baseline(s) of other machines" in done.stdout
    assert "DIFFERENT MACHINES" in done.stdout
    changed = edit_run(FIXTURES / "run_cpu", tmp_path / "changed", key="cpu-other",
                       flops_of="peak/fma/f64/cpu/n=1024/threads=2")
    failed = gate(changed, baselines)
    assert failed.returncode == 1
    assert "  peak/fma/f64/cpu/n=1024/threads=2: flops 4096000 -> 8192001" in failed.stdout.splitlines()


def test_gate_of_a_file_that_is_no_bundle_in_baselines_is_an_error(tmp_path):
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    (baselines / "notes.json").write_text("[]")
    done = gate(FIXTURES / "run_cpu", baselines)
    assert done.returncode == 2 and "notes.json" in done.stderr and len(done.stderr.splitlines()) == 1


# ---------------------------------------------------------------------------------------------
# history


def test_history_add_files_by_machine_date_and_commit(tmp_path):
    history = tmp_path / "history"
    done = run_cli("history", "add", FIXTURES / "run_cpu", "--history", history)
    assert done.returncode == 0, done.stderr
    path = history / KEY / "20261202120000-9248cb2.json"
    assert done.stdout.strip() == str(path)
    assert [str(c.name) for c in load_source(path).cases] == \
        [str(c.name) for c in load_run(FIXTURES / "run_cpu").cases]
    before = path.read_bytes()
    again = run_cli("history", "add", FIXTURES / "run_cpu", "--history", history)
    assert again.returncode == 2 and "exists" in again.stderr and "--overwrite" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1 and path.read_bytes() == before
    path.write_text("{}")  # a damaged entry: --overwrite replaces it
    forced = run_cli("history", "add", FIXTURES / "run_cpu", "--history", history, "--overwrite")
    assert forced.returncode == 0 and path.read_bytes() == before


def test_history_plot_draws_each_cases_rate_over_commits(tmp_path):
    history = tmp_path / "history"
    runs = [edit_run(FIXTURES / "run_cpu", tmp_path / "r2", date="2026-12-05T09:00:00+00:00",
                     commit="bbbbbbb", scale=2.0, roles=True),
            FIXTURES / "run_cpu"]  # added out of order: the plot follows the dates
    for run in runs:
        assert run_cli("history", "add", run, "--history", history).returncode == 0
    ordered = machine_runs(history / KEY)
    assert [r.git_commit for r in ordered] == ["9248cb2", "bbbbbbb"]
    series = trend_series(ordered, "copy")
    first = load_run(FIXTURES / "run_cpu")
    rate = {str(c.name): c.bytes_per_second for c in first.cases if c.ok}
    assert series["simd/f32/cpu/n=67108864 (GB/s)"] == [
        (0, rate["copy/simd/f32/cpu/n=67108864"] / 1e9, False),
        (1, rate["copy/simd/f32/cpu/n=67108864"] / 2e9, False)]
    assert [p[2] for p in series["simd/f32/cpu/n=1024 (GB/s)"]] == [True, True]  # noisy: hollow
    assert set(series) == {f"{str(c.name).split('/', 1)[1]} (GB/s)" for c in first.cases
                           if c.ok and c.name.family == "copy"}
    done = run_cli("history", "plot", "--history", history)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(history / KEY / name) for name in
                                   ("headline.png", "trend_copy.png", "trend_peak.png")]
    for name in ("trend_copy.png", "trend_peak.png"):
        assert (history / KEY / name).read_bytes().startswith(PNG)


def test_history_errors(tmp_path, fixture_dir):
    empty = run_cli("history", "plot", "--history", tmp_path / "nope")
    assert empty.returncode == 2 and "not a directory" in empty.stderr
    (tmp_path / "h").mkdir()
    none = run_cli("history", "plot", "--history", tmp_path / "h")
    assert none.returncode == 2 and "no history entries" in none.stderr
    run_dir = fixture_dir("single")
    runstatus.write(run_dir, runstatus.RUNNING)
    incomplete = run_cli("history", "add", run_dir, "--history", tmp_path / "h")
    assert incomplete.returncode == 2 and "an incomplete run makes no history entry" in incomplete.stderr
    shutil.rmtree(run_dir)


def test_history_plot_marks_the_commit_where_a_headline_case_changed(tmp_path):
    """Five entries of one machine; from the fourth on the copy cases take 1.6x the time: the
    headline panel of copy marks the fourth entry (compare's judge, slower) and no other; an
    entry of an older bundle schema is skipped with a line naming it; the figure passes
    plots.layout_problems."""
    from flopscope_analysis import plots
    from flopscope_analysis.families.roles import cache_level, role
    from flopscope_analysis.history import change_points, headline_cases, headline_plot

    history = tmp_path / "history"
    scales = [1.0, 1.0, 1.0, 1.6, 1.6]
    for i, scale in enumerate(scales):
        run = edit_run(FIXTURES / "run_cpu", tmp_path / f"r{i}", date=f"2026-12-0{i + 1}T09:00:00+00:00",
                       commit=f"c{i}00000", scale=scale, roles=True)
        assert run_cli("history", "add", run, "--history", history).returncode == 0
    old = history / KEY / "20261130000000-old.json"
    old.write_text(json.dumps({"flopscope_bundle": 0, "files": {}}))
    runs = machine_runs(history / KEY)
    assert [r.git_commit for r in runs] == [f"c{i}00000" for i in range(5)]
    names = headline_cases(runs[-1])
    (copy_case,) = [n for n in names if n.startswith("copy/")]
    device = runs[-1].devices["cpu"]
    out_of_cache = [c for c in runs[-1].cases if c.ok and c.name.family == "copy" and c.rate
                    and role(c) == "own" and cache_level(c, device) is None]
    assert copy_case == str(max(out_of_cache, key=lambda c: c.rate).name)
    assert change_points(runs, copy_case) == {3: "slower"}
    fig_path = headline_plot(runs, KEY, tmp_path / "headline.png")
    assert fig_path.read_bytes().startswith(PNG)
    done = run_cli("history", "plot", "--history", history)
    assert done.returncode == 0, done.stderr
    assert f"history: skipped: {old}: bundle schema is 0" in done.stderr
    assert done.stdout.split()[0] == str(history / KEY / "headline.png")
    captured = []
    real_save = plots.save
    plots.save = lambda fig, path: captured.append(plots.layout_problems(fig)) or real_save(fig, path)
    try:
        headline_plot(runs, KEY, tmp_path / "again.png")
    finally:
        plots.save = real_save
    assert captured == [[]]
