"""The history of a machine's runs: `history add RUN_DIR` files a finished run as a bundle under
results/history/<machine key>/<date>-<commit>.json; `history plot` draws, per machine and
family, each case's rate over those runs in date order (one line per case, commits on the
x axis, noisy points hollow)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Optional

from . import plots
from .bundle import history_path, require_complete, write_bundle
from .errors import AnalysisError
from .load import Run, load_run, load_source



def add(run_dir: Path, history_dir: Path, overwrite: bool = False) -> Path:
    """Files the run; an entry of the same machine, date and commit is kept (an error) unless
    `overwrite`: a history that CI appends to must not lose a run by a second add."""
    run = load_run(run_dir)
    require_complete(run, "history entry")
    path = history_path(run, history_dir)
    if path.exists() and not overwrite:
        raise AnalysisError(f"{path} exists: this machine, date and commit are in the history "
                            "already (--overwrite replaces the entry)")
    return write_bundle(run, path)


def machine_runs(machine_dir: Path) -> list[Run]:
    """The history entries of one machine, oldest first."""
    runs = [load_source(p) for p in sorted(machine_dir.glob("*.json"))]
    return sorted(runs, key=lambda r: (r.date or "", r.id))


def _tick(run: Run) -> str:
    return f"{(run.git_commit or '?')[:10]}\n{(run.date or run.id)[:10]}"


def trend_series(runs: list[Run], family: str) -> dict[str, list[tuple[int, float, bool]]]:
    """'<variant>/.../<shape> (GB/s)' -> [(index of the run, rate in units of 1e9, noisy)] of
    each case of the family that ran, in the order of the runs."""
    series: dict[str, list[tuple[int, float, bool]]] = defaultdict(list)
    for x, run in enumerate(runs):
        for case in run.cases:
            if case.ok and case.name.family == family and case.rate:
                unit = "GB/s" if case.rate_unit == "B/s" else "GFLOP/s"
                label = f"{str(case.name).split('/', 1)[1]} ({unit})"
                series[label].append((x, case.rate / 1e9, case.noisy))
    return dict(sorted(series.items()))


def trend_plot(runs: list[Run], family: str, machine_key: str, path: Path) -> Path:
    """One family's cases: rate against the runs, in order; a hollow point is a noisy case."""
    fig, ax = plots.plt.subplots(figsize=(11, 6))
    colors = plots.plt.get_cmap("tab20").colors  # a family easily has more than 10 cases
    for i, (label, points) in enumerate(trend_series(runs, family).items()):
        color, style = colors[i % len(colors)], ("-", "--", ":")[i // len(colors) % 3]
        ax.plot([p[0] for p in points], [p[1] for p in points], color=color, ls=style, lw=1.2,
                label=label)
        for noisy in (False, True):
            chosen = [p for p in points if p[2] == noisy]
            if chosen:
                plots.scatter(ax, [p[0] for p in chosen], [p[1] for p in chosen], color, noisy)
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels([_tick(r) for r in runs], fontsize=7)
    ax.set_xlim(-0.5, len(runs) - 0.5)
    ax.set_yscale("log")
    ax.set_ylabel("rate of the case's bound: GB/s or GFLOP/s (log)")
    ax.set_xlabel("run (commit, date), oldest first; hollow: noisy (cv > 5%)")
    ax.set_title(f"{family} over commits: {machine_key}", fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return plots.save(fig, path)


def plot(history_dir: Path, out_dir: Optional[Path] = None) -> list[Path]:
    """Writes <out>/<machine key>/trend_<family>.png for every machine and family in the history
    (default out: the history directory itself, beside the entries)."""
    if not history_dir.is_dir():
        raise AnalysisError(f"{history_dir}: not a directory (`history add RUN_DIR` makes it)")
    machines = sorted(d for d in history_dir.iterdir() if d.is_dir() and any(d.glob("*.json")))
    if not machines:
        raise AnalysisError(f"{history_dir}: no history entries (`history add RUN_DIR` files one)")
    written = []
    for machine_dir in machines:
        runs = machine_runs(machine_dir)
        families = sorted({c.name.family for r in runs for c in r.cases if c.ok and c.rate})
        target = (out_dir or history_dir) / machine_dir.name
        written += [trend_plot(runs, family, machine_dir.name, target / f"trend_{family}.png")
                    for family in families]
    return written
