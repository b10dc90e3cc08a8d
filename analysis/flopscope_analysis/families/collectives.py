"""The collectives family (bench_collectives, under mpirun): a table per device with nccl-tests'
columns (size, time, algbw, busbw, #wrong, out-of-place and in-place), a plot of busbw against
size per collective with the link's limit, and a section with each collective's best busbw
against that limit.

busbw = algbw x factor (lib/comm.hpp, Note [algbw and busbw]) is comparable with the link's peak
whatever the rank count. The link's limit here: on the CPU (ranks sharing memory) the measured
copy ceiling / 2, since a shared-memory transfer reads and writes each byte once and a copy's
bytes_per_second counts both; a GPU's NVLink/PCIe limit is not in the run's context, so no line
is drawn for it.

Beside MPI: torch.distributed's gloo all-reduce (torch_gloo.json, role baseline, written by
scripts/checks/gloo_allreduce.py in the suite), in the same table, each case next to the baseline
of its collective, dtype, op, placement, ranks and size with the ratio of their busbw. And a
data-parallel step's communication against its compute: account/train_busbw.json, what
`flopscope account train --busbw RUN_DIR --json` computed from this run's all_reduce (lib's
comm accounting; analysis/FORMAT.md), shown as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from .. import fmt, plots, tables
from ..errors import AnalysisError
from ..load import Case, Device, Run, device_order, read_json
from .base import Family, Plot
from .generic import cv_cell
from .roles import role

ACCOUNT_FILE = Path("account") / "train_busbw.json"

HEADER = ["collective", "variant", "dtype", "op", "place", "ranks", "count", "size", "median time",
          "algbw GB/s", "busbw GB/s", "#wrong", "cv", "busbw ÷ baseline"]

PLOT_CAPTION = (
    "Bus bandwidth (busbw = algbw x the nccl-tests factor: 2(n-1)/n for all_reduce, (n-1)/n for "
    "all_gather, reduce_scatter and all_to_all, 1 for broadcast, reduce and send_recv) against the "
    "collective's size (nccl-tests' size: the whole buffer), log2 and log axes, one panel per "
    "collective, solid out of place, dashed in place. The horizontal line is the link's limit: "
    "on the CPU, half the measured copy ceiling (a shared-memory transfer reads and writes each "
    "byte once); none where the run does not know it. Hollow markers are noisy cases (cv > 5%).")


def _extra(case: Case, key: str, default: str = "") -> str:
    return dict(case.name.extras).get(key, default)


def _cases(run_or_cases, device_id: Optional[str] = None) -> list[Case]:
    cases = run_or_cases.cases if isinstance(run_or_cases, Run) else run_or_cases
    return [c for c in cases if c.ok and c.name.family == "collectives" and c.counter("busbw") is not None
            and (device_id is None or c.name.device == device_id)]


def _peer_key(case: Case) -> tuple:
    """What two variants share to stand side by side: collective, dtype, op, placement, ranks, size."""
    return (case.name.device, _extra(case, "coll"), case.name.dtype, _extra(case, "op"), _extra(case, "place"),
            _extra(case, "ranks"), case.name.shape_dict().get("n", 0))


def _sort_key(case: Case):
    coll, dtype, op, place, ranks, n = _peer_key(case)[1:]
    return (coll, dtype, op, place, ranks, n, role(case) == "baseline", case.name.variant)


def _ratio_cell(case: Case, baselines: dict[tuple, Case]) -> str:
    """'1.52x gloo': the case's busbw over its baseline's (another variant, same peer key)."""
    other = baselines.get(_peer_key(case))
    if other is None or other is case or not other.counter("busbw"):
        return fmt.MISSING
    return f"{case.counter('busbw') / other.counter('busbw'):.2f}x {other.name.variant}"


def link_limit(device: Device) -> Optional[tuple[float, str]]:
    """The busbw a device's link allows, and what it is; None where the run does not know it."""
    copy = device.memory_ceilings.get("copy")
    if device.kind == "cpu":
        if copy:
            return copy / 2, f"shared memory: measured copy ceiling / 2 = {fmt.rate(copy / 2, 'B/s')}"
        if device.memory_peak:
            return device.memory_peak / 2, f"shared memory: theoretical memory / 2 = {fmt.rate(device.memory_peak / 2, 'B/s')}"
    return None


def collectives_table(cases: list[Case], device=None) -> list[str]:
    rows = []
    ran = _cases(cases)
    baselines = {_peer_key(c): c for c in ran if role(c) == "baseline"}
    for c in sorted(ran, key=_sort_key):
        rows.append([_extra(c, "coll"), c.name.variant, c.name.dtype, _extra(c, "op", fmt.MISSING),
                     _extra(c, "place"), _extra(c, "ranks"), c.name.shape_dict().get("n"), fmt.size(c.bytes),
                     fmt.duration(c.real_time_s), fmt.giga(c.counter("algbw")), fmt.giga(c.counter("busbw")),
                     f"{c.counter('wrong') or 0:.0f}", cv_cell(c), _ratio_cell(c, baselines)])
    return tables.markdown(HEADER, rows)


def baseline_skip_lines(run: Run) -> list[str]:
    """One line per baseline variant of which no case ran, with its reason (gloo without PyTorch)."""
    reasons: dict[str, set[str]] = {}
    ran = {c.name.variant for c in _cases(run)}
    for c in run.cases:
        if c.name.family == "collectives" and c.status == "skipped" and role(c) == "baseline" \
                and c.name.variant not in ran:
            reasons.setdefault(c.name.variant, set()).add(c.reason)
    return [f"- {variant} beside MPI: skipped: {'; '.join(sorted(why))}" for variant, why in sorted(reasons.items())]


def _account(run: Run) -> Optional[dict[str, Any]]:
    path = Path(run.source) / ACCOUNT_FILE
    if not path.is_file():
        return None
    try:
        data = read_json(path)
    except AnalysisError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("stages"), list) else None


def step_section(run: Run) -> list[str]:
    """A data-parallel step's communication against its compute (account/train_busbw.json)."""
    data = _account(run)
    if data is None:
        return []
    lines = ["## Collectives: a data-parallel step's communication against its compute", "",
             f"`flopscope account train --busbw {run.source.name}` (lib's comm accounting): {data.get('model')}, "
             f"{data.get('parameters'):,} parameters, {data.get('dtype')} gradients, {data.get('ranks')} ranks at "
             f"busbw {fmt.giga(data.get('busbw'))} GB/s ({data.get('busbw_source')}); compute "
             f"{fmt.duration(data.get('compute_seconds'))} per step ({data.get('compute_source')}). The busbw is "
             "this run's all_reduce at its largest size, applied to the ring algorithm at the model's rank count "
             "(busbw does not depend on it); on a CPU run it is shared memory between 2 processes, so the table "
             "reads as: GPUs linked as fast as this machine's ranks.", ""]
    rows = []
    for stage in data["stages"]:
        colls = " + ".join(f"{c.get('collective')} of {c.get('what')}" for c in stage.get("collectives", [])) or "none"
        rows.append([stage.get("sharding"), colls, fmt.size(stage.get("link_bytes")),
                     fmt.duration(stage.get("comm_seconds")), fmt.duration(data.get("compute_seconds")),
                     fmt.duration(stage.get("step_seconds_serial")), fmt.duration(stage.get("step_seconds_overlapped")),
                     fmt.fraction_percent(stage.get("comm_fraction_serial"))])
    lines += tables.markdown(["sharding", "collectives", "per rank's link", "comm", "compute", "step, serial",
                              "step, overlapped", "comm share, serial"], rows)
    return lines + [""]


def collectives_sections(run: Run) -> list[str]:
    return best_busbw_section(run) + step_section(run)


def best_busbw_section(run: Run) -> list[str]:
    rows = []
    for device_id in sorted({c.name.device for c in _cases(run)}, key=device_order):
        device = run.devices.get(device_id, Device(device_id, {}))
        limit = link_limit(device)
        best: dict[tuple, Case] = {}
        for c in _cases(run, device_id):
            key = (_extra(c, "coll"), c.name.variant, c.name.dtype, _extra(c, "place"), _extra(c, "ranks"))
            if key not in best or c.counter("busbw") > best[key].counter("busbw"):
                best[key] = c
        for key, c in sorted(best.items()):
            busbw = c.counter("busbw")
            rows.append([device_id, *key, fmt.size(c.bytes), fmt.giga(busbw),
                         fmt.percent(100 * busbw / limit[0]) if limit else fmt.MISSING])
    skips = baseline_skip_lines(run)
    if not rows:
        return ["## Collectives: best bus bandwidth", "", *skips, ""] if skips else []
    lines = ["## Collectives: best bus bandwidth", "",
             "Each collective's best busbw over the sizes that ran, and the size it came at, against the "
             "link's limit (on the CPU half the measured copy ceiling; unknown for a GPU's links).", ""]
    lines += tables.markdown(["device", "collective", "variant", "dtype", "place", "ranks", "at size",
                              "busbw GB/s", "% of link"], rows)
    return lines + ([""] + skips if skips else []) + [""]


def busbw_plot(run: Run, device_id: str, path: Path) -> Optional[Path]:
    cases = _cases(run, device_id)
    if not cases:
        return None
    device = run.devices.get(device_id, Device(device_id, {}))
    colls = sorted({_extra(c, "coll") for c in cases})
    columns = min(4, len(colls))
    rows = (len(colls) + columns - 1) // columns
    fig, axes = plots.plt.subplots(rows, columns, figsize=(4 * columns, 3.4 * rows), squeeze=False)
    limit = link_limit(device)
    for ax, coll in zip(axes.flat, colls):
        lines: dict[tuple, list[Case]] = {}
        for c in cases:
            if _extra(c, "coll") == coll:
                lines.setdefault((c.name.variant, c.name.dtype, _extra(c, "op"), _extra(c, "place")), []).append(c)
        for i, (key, group) in enumerate(sorted(lines.items())):
            group.sort(key=lambda c: c.bytes)
            color = plots.PALETTE[i % len(plots.PALETTE)]
            xs, ys = [c.bytes for c in group], [c.counter("busbw") / 1e9 for c in group]
            ax.plot(xs, ys, color=color, lw=1.3, ls="--" if key[3] == "in" else "-",
                    label="/".join(k for k in key if k))
            for noisy in (False, True):
                pts = [c for c in group if c.noisy == noisy]
                if pts:
                    plots.scatter(ax, [c.bytes for c in pts], [c.counter("busbw") / 1e9 for c in pts], color, noisy)
        if limit:
            ax.axhline(limit[0] / 1e9, color=plots.MEMORY_COLOR, lw=1.1, label="link limit")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(coll, fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(colls):]:
        ax.axis("off")
    fig.supxlabel("size (bytes), log2")
    fig.supylabel("busbw GB/s (log)")
    fig.suptitle(f"Collectives' bus bandwidth against size: {device.name} ({device_id})"
                 + (f"; {limit[1]}" if limit else ""), fontsize=10)
    return plots.save(fig, path)


def collectives_plots(run: Run, device_id: str, plots_dir: Path) -> list[Plot]:
    path = busbw_plot(run, device_id, plots_dir / f"collectives_busbw_{plots.device_slug(device_id)}.png")
    return [Plot("Collectives' bus bandwidth against size", path, PLOT_CAPTION)] if path else []


FAMILY = Family("collectives", table=collectives_table, sections=collectives_sections, plots=collectives_plots)
