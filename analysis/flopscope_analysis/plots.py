"""The plot that every family gets, and the helpers that the families' plots share (PNG,
matplotlib's Agg backend):

- roofline_<device>.png: FLOP/s against intensity, log-log, with the theoretical roofs (solid)
  and the measured ceilings (dashed), every case that ran at its intensity; beside it, the cases
  with no FLOPs (intensity 0, which a log axis cannot show) as achieved bandwidth against the
  memory roofs. See ROOFLINE_CAPTION.

A family's own plots live in its module (families/copy.py: bandwidth against size). Only cases
that ran (status ok) are drawn; skipped and failed cases never are.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from . import fmt  # noqa: E402
from .atomic import write_atomic  # noqa: E402
from .load import Case, Device, Run  # noqa: E402

ROOFLINE_CAPTION = (
    "Left: attainable FLOP/s against arithmetic intensity (FLOP per byte moved), log-log. "
    "Solid lines are the theoretical roofs (peak memory bandwidth × intensity, capped by each "
    "compute mode's peak); dashed lines are flopscope's measured ceilings (copy and triad "
    "bandwidth, and each mode's measured peak). Each result sits at its intensity, coloured by "
    "the compute mode whose peak applies to it; a hollow marker is an unresolved case (95% CI of "
    "its median wider than ±3%, or not reachable with its repetitions); a case "
    "that moves no bytes (intensity ∞) is drawn as ▶ at the right edge. "
    "Right: cases with no FLOPs (copies) have intensity 0, which a log axis cannot place; on a "
    "roofline they sit on the memory roof as intensity → 0, so their achieved bandwidth is shown "
    "against the same memory roofs (theoretical solid, measured dashed), one column per family "
    "with its variants side by side, coloured by the bytes moved per iteration; points above the "
    "memory roof are cache-resident sizes."
)
_MODE_ORDER = ["f64", "f32", "tf32", "f16", "bf16", "f8", "f8e4m3", "f8e5m2", "i8"]
PALETTE = plt.get_cmap("tab10").colors
MEMORY_COLOR = "black"


def mode_color(mode: Optional[str]) -> tuple:
    if mode is None:
        return (0.4, 0.4, 0.4)
    if mode in _MODE_ORDER:
        return PALETTE[_MODE_ORDER.index(mode) % len(PALETTE)]
    return PALETTE[(len(_MODE_ORDER) + sum(map(ord, mode))) % len(PALETTE)]


def device_slug(device_id: str) -> str:
    return device_id.replace(":", "_")


def save(fig, path: Path) -> Path:
    """Writes the figure as a PNG (atomically) and closes it."""
    write_atomic(path, lambda out: fig.savefig(out, format="png", dpi=110, bbox_inches="tight"))
    plt.close(fig)
    return path


def unresolved(case: Case) -> bool:
    """The 95% CI of the case's median is wider than +-3% (or its samples cannot reach 95%)."""
    from .stats import median_ci

    ci = median_ci([s.real_time_s for s in case.samples])
    return ci is not None and not ci.resolved


def scatter(ax, xs, ys, color, noisy, marker="o", **kw):
    """Points in a colour; hollow where `noisy` (callers pass unresolved(case))."""
    ax.scatter(xs, ys, marker=marker, s=36, zorder=3,
               facecolors="none" if noisy else color, edgecolors=color, linewidths=1.3, **kw)


def _has_flops(case: Case) -> bool:
    return bool(case.flops) and case.flops_per_second is not None


def roofline(run: Run, device_id: str, path: Path) -> Optional[Path]:
    """Writes the roofline of one device; None when the device has no case that ran."""
    device = run.devices.get(device_id, Device(device_id, {}))
    cases = [c for c in run.cases if c.ok and c.name.device == device_id]
    flop_cases = [c for c in cases if _has_flops(c)]
    zero_flop_cases = [c for c in cases if not _has_flops(c) and c.bytes_per_second is not None]
    if not flop_cases and not zero_flop_cases:
        return None

    peaks = {m: p["flops_per_second"] for m, p in device.compute_peaks.items()}
    bw = device.memory_peak
    measured_bw = device.memory_ceilings
    measured_compute = device.compute_ceilings

    if zero_flop_cases:
        fig, (ax, axz) = plt.subplots(1, 2, figsize=(13, 5.5),
                                      gridspec_kw={"width_ratios": [3, 1.6], "wspace": 0.35})
    else:
        fig, ax = plt.subplots(figsize=(9, 5.5))
        axz = None

    # x range: the cases' intensities and the ridge points, with a margin.
    xs = [c.intensity for c in flop_cases if not c.moves_no_bytes
          and c.intensity is not None and math.isfinite(c.intensity) and c.intensity > 0]
    bandwidths = [b for b in [bw, *measured_bw.values()] if b]
    for top in [*peaks.values(), *measured_compute.values()]:
        xs += [top / b for b in bandwidths]
    lo = min(xs) / 4 if xs else 1 / 16
    hi = max(xs) * 4 if xs else 1024
    lo, hi = min(lo, 1 / 16), max(hi, 16)
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]

    handles = []
    tops = [*peaks.values(), *measured_compute.values()]
    if bw:
        for mode, peak in sorted(peaks.items(), key=lambda kv: kv[1]):
            ax.plot(grid, [min(peak, bw * x) / 1e9 for x in grid], color=mode_color(mode), lw=1.8)
        if not peaks:
            ax.plot(grid, [bw * x / 1e9 for x in grid], color=MEMORY_COLOR, lw=1.8)
        handles.append(Line2D([], [], color=MEMORY_COLOR, lw=1.8,
                              label=f"theoretical memory {fmt.rate(bw, 'B/s')}"))
    else:
        for mode, peak in peaks.items():
            ax.axhline(peak / 1e9, color=mode_color(mode), lw=1.8)
    for mode, peak in sorted(peaks.items(), key=lambda kv: -kv[1]):
        handles.append(Line2D([], [], color=mode_color(mode), lw=1.8,
                              label=f"peak {mode} {fmt.rate(peak, 'FLOP/s')}"))
    # Measured roofs: each memory ceiling's slope up to the highest compute roof, and each
    # compute ceiling from where it meets the highest measured bandwidth (or across, without one).
    top = max(tops) if tops else None
    for kind, b in sorted(measured_bw.items()):
        ls = "--" if kind == "copy" else "-."
        ax.plot(grid, [b * x / 1e9 if top is None or b * x <= top else float("nan") for x in grid],
                color=MEMORY_COLOR, lw=1.2, ls=ls)
        handles.append(Line2D([], [], color=MEMORY_COLOR, lw=1.2, ls=ls,
                              label=f"measured {kind} {fmt.rate(b, 'B/s')}"))
    b_max = max(measured_bw.values()) if measured_bw else None
    for mode, c in sorted(measured_compute.items(), key=lambda kv: -kv[1]):
        ax.plot(grid, [c / 1e9 if b_max is None or b_max * x >= c else float("nan") for x in grid],
                color=mode_color(mode), lw=1.2, ls="--")
        handles.append(Line2D([], [], color=mode_color(mode), lw=1.2, ls="--",
                              label=f"measured {mode} {fmt.rate(c, 'FLOP/s')}"))

    seen_modes = set()
    for case in flop_cases:
        x = case.intensity
        marker = "o"
        if case.moves_no_bytes or (x is not None and math.isinf(x)):
            x, marker = hi / 1.5, ">"
        elif x is None or math.isnan(x) or x <= 0:
            continue  # FLOPs but no usable intensity: in the table, not on the roofline
        scatter(ax, [x], [case.flops_per_second / 1e9], mode_color(case.compute_mode),
                 unresolved(case), marker=marker)
        seen_modes.add(case.compute_mode)
    for mode in sorted(seen_modes, key=lambda m: m or ""):
        handles.append(Line2D([], [], ls="", marker="o", color=mode_color(mode),
                              label=f"results, compute {mode}" if mode else "results, compute mode not labelled"))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    if not flop_cases and not tops and not bandwidths:
        ax.text(0.5, 0.5, "no peaks or ceilings in the context", transform=ax.transAxes,
                ha="center")
    elif not flop_cases:
        ax.text(0.02, 0.97, "no case with FLOPs on this device", transform=ax.transAxes,
                va="top", fontsize=9)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)" + (
        "\n(no theoretical memory bandwidth in the context: the theoretical roofs are compute only)"
        if not bw and peaks else ""))
    ax.set_ylabel("attainable (GFLOP/s)")
    ax.set_title(f"Roofline: {device.name} ({device_id}), GFLOP/s", fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    if handles:
        ax.legend(handles=handles, fontsize=7, loc="lower right")

    if axz is not None:
        # one column per family (a label per variant smeared 40 names into each other), its
        # variants side by side within it
        labels = sorted({c.name.family for c in zero_flop_cases})
        variants = {f: sorted({c.name.variant for c in zero_flop_cases if c.name.family == f}) for f in labels}
        sizes = [c.bytes for c in zero_flop_cases if c.bytes]
        norm = matplotlib.colors.LogNorm(vmin=min(sizes), vmax=max(max(sizes), min(sizes) * 2)) \
            if sizes else None
        cmap = plt.get_cmap("viridis")
        for case in zero_flop_cases:
            names = variants[case.name.family]
            offset = (names.index(case.name.variant) + 0.5) / len(names) - 0.5
            i = labels.index(case.name.family) + 0.8 * offset
            color = cmap(norm(case.bytes)) if norm and case.bytes else (0.4, 0.4, 0.4)
            scatter(axz, [i], [case.bytes_per_second / 1e9], color, unresolved(case))
        if bw:
            axz.axhline(bw / 1e9, color=MEMORY_COLOR, lw=1.8, label="theoretical")
        for kind, b in sorted(measured_bw.items()):
            axz.axhline(b / 1e9, color=MEMORY_COLOR, lw=1.2, ls="--" if kind == "copy" else "-.",
                        label=f"measured {kind}")
        if bw or measured_bw:
            axz.legend(fontsize=7, loc="best")
        axz.set_yscale("log")
        axz.set_xticks(range(len(labels)))
        axz.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
        axz.set_xlabel("family (its variants side by side)")
        axz.set_xlim(-0.6, len(labels) - 0.4)
        axz.set_ylabel("achieved bandwidth (GB/s)")
        axz.set_title("intensity 0 (no FLOPs): bandwidth (GB/s)", fontsize=11)
        axz.grid(True, axis="y", which="major", alpha=0.3)
        if norm:
            mappable = matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap)
            bar = fig.colorbar(mappable, ax=axz, pad=0.02)
            bar.set_label("bytes moved per iteration (B)", fontsize=8)
    return save(fig, path)


MAX_LEGEND_ENTRIES = 12


def layout_problems(fig) -> list[str]:
    """What makes a figure hard to read, as drawn by matplotlib's renderer: texts whose bounding
    boxes overlap (tick labels, titles, labels, annotations, legend texts), a legend of more than
    MAX_LEGEND_ENTRIES entries or with two entries drawn alike, a panel without a title, an axis
    label without a unit in parentheses."""
    from matplotlib.text import Text

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    problems = []
    # tick labels: only those of ticks inside the view (matplotlib keeps labels of ticks outside
    # it, which it does not draw)
    tick_labels, shown = set(), []
    for ax in fig.axes:
        for axis, (lo, hi) in ((ax.xaxis, sorted(ax.get_xlim())), (ax.yaxis, sorted(ax.get_ylim()))):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                for label in (tick.label1, tick.label2):
                    tick_labels.add(id(label))
                    loc = tick.get_loc()
                    if loc is not None and lo <= loc <= hi and label.get_visible():
                        shown.append(label)
    texts = [t for t in fig.findobj(Text) if id(t) not in tick_labels] + shown
    texts = [t for t in texts if t.get_visible() and t.get_text().strip()]
    boxes = []
    for t in texts:
        try:
            box = t.get_window_extent(renderer)
        except RuntimeError:
            continue
        if box.width > 0 and box.height > 0:
            boxes.append((t, box.expanded(0.98, 0.95)))  # a hair of slack: touching is fine
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            if box_a.overlaps(box_b):
                problems.append(f"text {a.get_text()!r} overlaps {b.get_text()!r}")
    for ax in fig.axes:
        if not ax.get_visible() or not ax.has_data() or hasattr(ax, "_colorbar"):
            continue
        if not ax.get_title():
            problems.append("a panel without a title")
        for label in (ax.get_xlabel(), ax.get_ylabel()):
            if label and "(" not in label:
                problems.append(f"axis label without a unit: {label!r}")
        legend = ax.get_legend()
        if legend is not None:
            handles = legend.legend_handles if hasattr(legend, "legend_handles") else legend.legendHandles
            if len(handles) > MAX_LEGEND_ENTRIES:
                problems.append(f"legend of {len(handles)} entries (at most {MAX_LEGEND_ENTRIES})")
            styles = [_style(h) for h in handles]
            if len(set(styles)) < len(styles):
                problems.append("legend entries drawn alike")
    return problems


def _style(handle) -> tuple:
    """What tells a legend entry's handle from another's: colours, line style, marker, hatch."""
    keys = []
    for getter in ("get_color", "get_linestyle", "get_marker", "get_facecolor", "get_edgecolor",
                   "get_hatch", "get_markerfacecolor"):
        fn = getattr(handle, getter, None)
        if fn is not None:
            value = fn()
            if getter != "get_linestyle" and getter != "get_marker" and getter != "get_hatch":
                try:
                    value = matplotlib.colors.to_rgba_array(value).round(3)
                except (ValueError, TypeError):
                    pass
            keys.append(str(value.tolist() if hasattr(value, "tolist") else value))
    return tuple(keys)
