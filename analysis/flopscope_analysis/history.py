"""The history of a machine's runs: `history add RUN_DIR` files a finished run as a bundle under
results/history/<machine key>/<date>-<commit>.json; `history plot` draws, per machine, one small
panel per headline case (`headline_cases`) with its rate over those runs in date order and the
commits where compare's judge found a change from the entry before marked, and per family each
case's rate (one line per case, noisy points hollow). An entry this analysis cannot read (an
older bundle schema, a damaged file) is skipped with a line naming it.

CI keeps the history as an artifact chain (.github/workflows/bench.yml): each run on main
downloads the previous main run's `flopscope-history` artifact, adds its own run and uploads
it again, as benchmark-action/github-action-benchmark keeps its data outside the code."""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Optional

from . import plots
from .bundle import history_path, require_complete, write_bundle
from .compare import DEFAULT_THRESHOLD, FASTER, SLOWER, compare_cases
from .errors import AnalysisError
from .families.roles import cache_level, role
from .load import Case, Run, load_run, load_source

PANEL_COLUMNS = 3


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
    """The history entries of one machine that this analysis reads, oldest first; each other
    one (an older bundle schema, a damaged file) is skipped with a line on stderr naming it."""
    runs = []
    for path in sorted(machine_dir.glob("*.json")):
        try:
            runs.append(load_source(path))
        except AnalysisError as error:
            print(f"history: skipped: {error}", file=sys.stderr)  # the error names the file
    return sorted(runs, key=lambda r: (r.date or "", r.id))


def headline_cases(run: Run) -> list[str]:
    """The headline case of each family and device of `run` (its newest entry): the own case
    out of cache (else any own case) with the highest rate, as the report's headline table picks
    its best own case; the ceilings' family (peak) is left out."""
    best: dict[tuple[str, str], Case] = {}
    for case in run.cases:
        if not (case.ok and case.rate and role(case) == "own" and case.name.family != "peak"):
            continue
        key = (case.name.family, case.name.device)
        in_cache = cache_level(case, run.devices.get(case.name.device)) is not None
        rank = (not in_cache, case.rate)
        if key not in best or rank > (cache_level(best[key], run.devices.get(key[1])) is None, best[key].rate):
            best[key] = case
    return [str(best[key].name) for key in sorted(best)]


def change_points(runs: list[Run], name: str, threshold: float = DEFAULT_THRESHOLD) -> dict[int, str]:
    """{index of a run: slower or faster} where compare's judge (U test, cv, minimum repetitions)
    finds the case changed beyond `threshold` from the entry before that ran it."""
    marks: dict[int, str] = {}
    previous: Optional[Case] = None
    for x, run in enumerate(runs):
        case = next((c for c in run.cases if str(c.name) == name and c.ok), None)
        if case is None:
            continue
        if previous is not None:
            pair = compare_cases(name, previous, case)
            if pair.verdict in (SLOWER, FASTER) and abs(pair.change) > threshold:
                marks[x] = pair.verdict
        previous = case
    return marks


def headline_plot(runs: list[Run], machine_key: str, path: Path) -> Optional[Path]:
    """One small panel per headline case of the newest entry: its rate over the runs, a marker
    where a change was detected (down: slower, up: faster); None where no case has a rate."""
    names = headline_cases(runs[-1])
    if not names:
        return None
    columns = min(PANEL_COLUMNS, len(names))
    rows = math.ceil(len(names) / columns)
    fig, axes = plots.plt.subplots(rows, columns, figsize=(4.2 * columns, 2.9 * rows + 0.4), squeeze=False)
    for ax, name in zip(axes.flat, names):
        points = [(x, c) for x, run in enumerate(runs) for c in run.cases if str(c.name) == name and c.ok and c.rate]
        unit = "GB/s" if points[-1][1].rate_unit == "B/s" else "GFLOP/s"
        xs, ys = [p[0] for p in points], [p[1].rate / 1e9 for p in points]
        ax.plot(xs, ys, color="tab:blue", lw=1.2, marker="o", ms=3)
        for x, verdict in change_points(runs, name).items():
            y = next(v for u, v in zip(xs, ys) if u == x)
            ax.plot([x], [y], ls="none", marker="v" if verdict == SLOWER else "^", ms=9,
                    color="tab:red" if verdict == SLOWER else "tab:green")
        ax.set_title(name, fontsize=7)
        ax.set_ylabel(f"rate ({unit})", fontsize=8)
        ax.set_ylim(0, max(ys) * 1.15)
        ax.set_xlim(-0.5, len(runs) - 0.5)
        ax.set_xticks(range(len(runs)))
        step = max(1, math.ceil(len(runs) / 6))  # at most 6 commit labels a panel
        ax.set_xticklabels([(r.git_commit or "?")[:7] if i % step == 0 or i == len(runs) - 1 else ""
                            for i, r in enumerate(runs)], fontsize=6)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    fig.suptitle(f"headline cases over commits, oldest first: {machine_key}\nred down, green up: "
                 f"compare's judge found a change beyond {100 * DEFAULT_THRESHOLD:g}% from the entry before",
                 fontsize=8)
    fig.tight_layout()
    return plots.save(fig, path)


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
    """Writes <out>/<machine key>/headline.png and trend_<family>.png for every machine and family
    in the history (default out: the history directory itself, beside the entries)."""
    if not history_dir.is_dir():
        raise AnalysisError(f"{history_dir}: not a directory (`history add RUN_DIR` makes it)")
    machines = sorted(d for d in history_dir.iterdir() if d.is_dir() and any(d.glob("*.json")))
    if not machines:
        raise AnalysisError(f"{history_dir}: no history entries (`history add RUN_DIR` files one)")
    written = []
    for machine_dir in machines:
        runs = machine_runs(machine_dir)
        families = sorted({c.name.family for r in runs for c in r.cases if c.ok and c.rate})
        if not runs:
            continue
        target = (out_dir or history_dir) / machine_dir.name
        headline = headline_plot(runs, machine_dir.name, target / "headline.png")
        written += [headline] if headline else []
        written += [trend_plot(runs, family, machine_dir.name, target / f"trend_{family}.png")
                    for family in families]
    return written
