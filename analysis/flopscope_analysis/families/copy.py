"""The copy family (bench_copy): besides the generic table, a plot per device of bandwidth
against size, with the cache levels and the copy ceiling."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .. import fmt, plots
from ..load import Case, Device, Run
from .base import Family, Plot

COPY_CAPTION = (
    "Achieved bandwidth of the copy family (bytes_per_second: source read + destination written) "
    "against bytes moved per iteration, which for a copy is also its working set (source + "
    "destination), log2; bandwidth on a log axis. Dotted vertical lines are the cache sizes from the run's context (per "
    "instance as reported: a copy threaded over several cores fits in the sum of their private "
    "caches); the dashed horizontal line is the measured copy ceiling, the solid one the "
    "theoretical memory bandwidth. Hollow markers are unresolved cases (95% CI of the median wider than ±3%, or not reachable with the repetitions)."
)


def copy_bandwidth(run: Run, device_id: str, path: Path) -> Optional[Path]:
    """Writes the copy-bandwidth-against-size plot of one device; None without copy results."""
    device = run.devices.get(device_id, Device(device_id, {}))
    cases = [c for c in run.cases if c.ok and c.name.family == "copy" and c.name.device == device_id
             and c.bytes and c.bytes_per_second is not None]
    if not cases:
        return None
    fig, ax = plots.plt.subplots(figsize=(10, 5.5))
    lines: dict[tuple[str, str, tuple], list[Case]] = {}
    for case in cases:
        lines.setdefault((case.name.variant, case.name.dtype, case.name.extras), []).append(case)
    for i, (key, group) in enumerate(sorted(lines.items())):
        group.sort(key=lambda c: c.bytes)
        color = plots.PALETTE[i % len(plots.PALETTE)]
        variant, dtype, extras = key
        label = f"{variant}/{dtype}" + "".join(f"/{k}={v}" for k, v in extras)
        ax.plot([c.bytes for c in group], [c.bytes_per_second / 1e9 for c in group],
                color=color, lw=1.4, label=label)
        for noisy in (False, True):
            pts = [c for c in group if plots.unresolved(c) == noisy]
            if pts:
                plots.scatter(ax, [c.bytes for c in pts], [c.bytes_per_second / 1e9 for c in pts],
                              color, noisy)
    ax.set_xscale("log", base=2)
    caches = device.caches
    for level in ("l1d", "l1", "l2", "l3"):
        if level in caches:
            ax.axvline(caches[level], color="gray", ls=":", lw=1.2)
            ax.text(caches[level], 0.99, f" {level[:1].upper()}{level[1:]} {fmt.size(caches[level])}",
                    transform=ax.get_xaxis_transform(), fontsize=8, color="gray", ha="left", va="top")
    copy_ceiling = device.memory_ceilings.get("copy")
    if copy_ceiling:
        ax.axhline(copy_ceiling / 1e9, color=plots.MEMORY_COLOR, ls="--", lw=1.2,
                   label=f"measured copy ceiling {fmt.rate(copy_ceiling, 'B/s')}")
    if device.memory_peak:
        ax.axhline(device.memory_peak / 1e9, color=plots.MEMORY_COLOR, lw=1.2,
                   label=f"theoretical memory {fmt.rate(device.memory_peak, 'B/s')}")
    ax.set_yscale("log")  # L1-resident copies run 10-100x faster than DRAM ones
    ax.set_xlabel("bytes moved per iteration = working set (source + destination), log2")
    ax.set_ylabel("GB/s (log)")
    ax.set_title(f"Copy bandwidth against size: {device.name} ({device_id})", fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return plots.save(fig, path)


def copy_plots(run: Run, device_id: str, plots_dir: Path) -> list[Plot]:
    path = copy_bandwidth(run, device_id, plots_dir / f"copy_bandwidth_{plots.device_slug(device_id)}.png")
    return [Plot("Copy bandwidth against size", path, COPY_CAPTION)] if path else []


FAMILY = Family("copy", plots=copy_plots)
