"""The broadcast family (bench_broadcast): elementwise add and mul with PyTorch's broadcasting.
Besides the generic table, the section "What broadcasting saves" (each pattern against the same
op on materialized, same-shape operands, and against a copy of the same bytes timed in the same
process, own kernels beside oneDNN's binary primitive) and a plot per device of the time of each
pattern beside its materialized twin.

What the JSON carries and this module reads (bench/bench_broadcast.cpp): names
broadcast/<variant>/<dtype>/<device>/<output shape>/op=<add|mul>/bcast=<td|d|bt1|outer|none> and
the baselines broadcast/copy/<dtype>/<device>/n=<elements>; counters flops (one per output
element) and bytes (each operand read once at its own size, the output written once)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Optional

from .. import fmt, plots, tables
from ..load import Case, Device, Run, device_order
from .base import Family, Plot
from .beside import cases_of, copies_of, copy_beside, ratio_cell
from .roles import role

# The vendor's variant (oneDNN's binary primitive) is the one whose role is "vendor" in the
# binary's context (schema 2); a schema-1 file has no roles. The role "reference" (lib's strided
# iterator in double) validates the others and is not set against them.
NOT_TIMED_AGAINST = {"reference"}  # roles
PATTERNS = {"td": "(B,T,D) op (T,D)", "d": "(B,T,D) op (D)", "bt1": "(B,T,D) op (B,T,1)",
            "outer": "(N,1) op (1,M)", "none": "materialized"}

SAVES_NOTE = (
    "Per pattern, op, dtype and shape: the fastest own variant (and oneDNN's binary primitive) "
    "as a fraction of the bandwidth of a contiguous copy of the same bytes timed in the same "
    "process, and its time against the same op on two materialized operands of the output's "
    "shape (`bcast=none`, the fastest variant of either kind). Bytes are each operand read once "
    "at its own size and the output written once, so a broadcast moves fewer bytes than its "
    "materialized twin: `bytes saved` is that difference, `time / materialized` what it buys. "
    "`% copy` and `own / vendor` are the medians of the ratios of repetitions taken in the same "
    "round of the stopping rule, seconds apart, so that the host's drift divides out.")

PLOT_CAPTION = (
    "Median time of the fastest own variant of each broadcast pattern beside the same op on "
    "materialized operands of the output's shape (log scale), per dtype and op.")


def _pattern(case: Case) -> str:
    return dict(case.name.extras).get("bcast", "?")


def _op(case: Case) -> str:
    return dict(case.name.extras).get("op", "?")


def _fastest(cases: list[Case]) -> Optional[Case]:
    return max(cases, key=lambda c: c.bytes_per_second, default=None)


def _groups(run: Run) -> dict[tuple, dict[str, list[Case]]]:
    """(device, dtype, op, shape) -> pattern -> the cases of every timed variant."""
    groups: dict[tuple, dict[str, list[Case]]] = defaultdict(lambda: defaultdict(list))
    for c in cases_of(run, "broadcast"):
        if role(c) not in NOT_TIMED_AGAINST:
            groups[(c.name.device, c.name.dtype, _op(c), c.name.dims_text())][_pattern(c)].append(c)
    return groups


def saves_section(run: Run) -> list[str]:
    copies = copies_of(run, "broadcast")
    rows = []
    for (device_id, dtype, op, shape), patterns in sorted(_groups(run).items(),
                                                           key=lambda kv: (device_order(kv[0][0]), kv[0][1:])):
        materialized = min(patterns.get("none", []), key=lambda c: c.real_time_s, default=None)
        for pattern in PATTERNS:
            if pattern not in patterns:
                continue
            own = _fastest([c for c in patterns[pattern] if c.role != "vendor"])
            vendor = _fastest([c for c in patterns[pattern] if c.role == "vendor"])
            reference = own or vendor
            copy = copy_beside(copies, reference)

            versus = (f"{reference.real_time_s / materialized.real_time_s:.2f}"
                      if materialized and pattern != "none" else fmt.MISSING)
            saved = (fmt.size(materialized.bytes - reference.bytes)
                     if materialized and pattern != "none" else fmt.MISSING)
            rows.append([device_id, dtype, op, shape, PATTERNS[pattern], fmt.size(reference.bytes), saved,
                         f"{own.name.variant} {fmt.giga(own.bytes_per_second)}" if own else fmt.MISSING,
                         ratio_cell(own, copy, "bytes_per_second", percent=True),
                         f"{vendor.name.variant} {fmt.giga(vendor.bytes_per_second)}" if vendor else fmt.MISSING,
                         ratio_cell(vendor, copy, "bytes_per_second", percent=True),
                         ratio_cell(own, vendor, "bytes_per_second"),
                         versus])
    if not rows:
        return []
    lines = ["## What broadcasting saves", "", SAVES_NOTE, ""]
    lines += tables.markdown(["device", "dtype", "op", "output shape", "pattern", "bytes/iter", "bytes saved",
                              "fastest own (GB/s)", "% copy", "vendor (GB/s)", "% copy", "own / vendor",
                              "time / materialized"], rows)
    return lines + [""]


def time_plot(run: Run, device_id: str, path: Path) -> Optional[Path]:
    bars: list[tuple[str, float, bool]] = []  # label, seconds, materialized
    for (device, dtype, op, shape), patterns in sorted(_groups(run).items()):
        if device != device_id:
            continue
        for pattern in PATTERNS:
            own = _fastest([c for c in patterns.get(pattern, []) if c.role != "vendor"])
            if own:
                bars.append((f"{dtype} {op} {shape} {PATTERNS[pattern]}", own.real_time_s, pattern == "none"))
    if not bars:
        return None
    device = run.devices.get(device_id, Device(device_id, {}))
    # horizontal bars: each label on one line, readable however many there are
    fig, ax = plots.plt.subplots(figsize=(9, max(3.5, 0.32 * len(bars) + 1.5)))
    ys = list(range(len(bars)))[::-1]
    colors = [plots.PALETTE[1] if materialized else plots.PALETTE[0] for _, _, materialized in bars]
    ax.barh(ys, [seconds * 1e6 for _, seconds, _ in bars], color=colors, height=0.7)
    ax.set_yticks(ys, [label for label, _, _ in bars], fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel("median time (µs, log)")
    ax.set_title(f"Broadcast against materialized operands (µs): {device.name} ({device_id})", fontsize=11)
    ax.grid(True, axis="x", alpha=0.3)
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=plots.PALETTE[0], label="broadcast operand (a view)"),
                       Patch(color=plots.PALETTE[1], label="both operands materialized")],
              fontsize=8, loc="lower right")
    fig.tight_layout()
    return plots.save(fig, path)


def broadcast_plots(run: Run, device_id: str, plots_dir: Path) -> list[Plot]:
    path = time_plot(run, device_id, plots_dir / f"broadcast_{plots.device_slug(device_id)}.png")
    return [Plot("Broadcast against materialized operands", path, PLOT_CAPTION)] if path else []


FAMILY = Family("broadcast", sections=saves_section, plots=broadcast_plots)
