"""Every figure of the report of the committed default-suite run is readable, as matplotlib's
renderer draws it: no two texts overlap, legends of at most 12 entries drawn differently, every
panel titled and every axis label with its unit (plots.layout_problems). The checker itself is
tested on figures made to break each rule."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flopscope_analysis import plots
from flopscope_analysis.load import load_run
from flopscope_analysis.report import write_report

DEFAULT_RUN = Path(__file__).resolve().parents[2] / "results" / "reports" / "cpu-amd-epyc-2026-12-04"


def test_every_figure_of_the_default_run_is_readable(tmp_path, monkeypatch):
    problems: dict[str, list[str]] = {}
    save = plots.save

    def checked(fig, path):
        problems[path.name] = plots.layout_problems(fig)
        return save(fig, path)

    monkeypatch.setattr(plots, "save", checked)
    run_dir = tmp_path / "run"
    shutil.copytree(DEFAULT_RUN, run_dir, ignore=shutil.ignore_patterns("plots", "report.md"))
    write_report(load_run(run_dir), run_dir)
    # A schema-1 run says no roles (issue 21: never guessed from names), so its copy baselines are
    # not known and the strided ratio plot, which needs them, is not drawn.
    assert {"roofline_cpu.png", "matmul_size_cpu.png", "backward_cpu.png", "broadcast_cpu.png",
            "copy_bandwidth_cpu.png", "strided_step_cpu.png"} <= set(problems)
    assert {name: found for name, found in problems.items() if found} == {}


def _figure():
    fig, ax = plots.plt.subplots(figsize=(4, 3))
    ax.plot([1, 2], [1, 2], label="a")
    ax.set_title("t (GB/s)")
    ax.set_xlabel("x (B)")
    ax.set_ylabel("y (GB/s)")
    return fig, ax


def test_the_checker_passes_a_clean_figure():
    fig, ax = _figure()
    ax.legend()
    assert plots.layout_problems(fig) == []
    plots.plt.close(fig)


@pytest.mark.parametrize("breaks, expected", [
    (lambda fig, ax: (ax.text(1.5, 1.5, "first label"), ax.text(1.5, 1.5, "second label")),
     "text 'first label' overlaps 'second label'"),
    (lambda fig, ax: [ax.plot([1, 2], [i, i], label=f"l{i}") for i in range(13)] and ax.legend(),
     "legend of 14 entries (at most 12)"),
    (lambda fig, ax: (ax.plot([1, 2], [2, 1], color="C0", label="b"), ax.legend()),
     "legend entries drawn alike"),
    (lambda fig, ax: ax.set_title(""), "a panel without a title"),
    (lambda fig, ax: ax.set_ylabel("GFLOP/s"), "axis label without a unit: 'GFLOP/s'"),
])
def test_the_checker_finds_each_problem(breaks, expected):
    fig, ax = _figure()
    breaks(fig, ax)
    assert expected in plots.layout_problems(fig)
    plots.plt.close(fig)
