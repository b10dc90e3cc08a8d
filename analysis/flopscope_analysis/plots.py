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
    "the compute mode whose peak applies to it; a hollow marker is a noisy case (cv > 5%); a case "
    "that moves no bytes (intensity ∞) is drawn as ▶ at the right edge. "
    "Right: cases with no FLOPs (copies) have intensity 0, which a log axis cannot place; on a "
    "roofline they sit on the memory roof as intensity → 0, so their achieved bandwidth is shown "
    "against the same memory roofs (theoretical solid, measured dashed), coloured by the bytes "
    "moved per iteration; points above the memory roof are cache-resident sizes."
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


def scatter(ax, xs, ys, color, noisy, marker="o", **kw):
    """Points in a colour; hollow where noisy (cv above 5%)."""
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
                                      gridspec_kw={"width_ratios": [3, 1.6]})
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
                 case.noisy, marker=marker)
        seen_modes.add(case.compute_mode)
    for mode in sorted(seen_modes, key=lambda m: m or ""):
        handles.append(Line2D([], [], ls="", marker="o", color=mode_color(mode),
                              label=f"results, compute={mode or '?'}"))
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
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"Roofline: {device.name} ({device_id})", fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    if handles:
        ax.legend(handles=handles, fontsize=7, loc="lower right")

    if axz is not None:
        labels = sorted({f"{c.name.family}/{c.name.variant}/{c.name.dtype}" for c in zero_flop_cases})
        sizes = [c.bytes for c in zero_flop_cases if c.bytes]
        norm = matplotlib.colors.LogNorm(vmin=min(sizes), vmax=max(max(sizes), min(sizes) * 2)) \
            if sizes else None
        cmap = plt.get_cmap("viridis")
        for case in zero_flop_cases:
            i = labels.index(f"{case.name.family}/{case.name.variant}/{case.name.dtype}")
            color = cmap(norm(case.bytes)) if norm and case.bytes else (0.4, 0.4, 0.4)
            scatter(axz, [i], [case.bytes_per_second / 1e9], color, case.noisy)
        if bw:
            axz.axhline(bw / 1e9, color=MEMORY_COLOR, lw=1.8, label="theoretical")
        for kind, b in sorted(measured_bw.items()):
            axz.axhline(b / 1e9, color=MEMORY_COLOR, lw=1.2, ls="--" if kind == "copy" else "-.",
                        label=f"measured {kind}")
        if bw or measured_bw:
            axz.legend(fontsize=7, loc="best")
        axz.set_yscale("log")
        axz.set_xticks(range(len(labels)))
        axz.set_xticklabels(labels, rotation=45, ha="right", fontsize=8)
        axz.set_xlim(-0.6, len(labels) - 0.4)
        axz.set_ylabel("achieved GB/s")
        axz.set_title("intensity 0 (no FLOPs): bandwidth", fontsize=11)
        axz.grid(True, axis="y", which="major", alpha=0.3)
        if norm:
            mappable = matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap)
            bar = fig.colorbar(mappable, ax=axz, pad=0.02)
            bar.set_label("bytes moved per iteration", fontsize=8)
    return save(fig, path)
