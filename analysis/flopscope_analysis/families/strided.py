"""The strided family (bench_strided): `.contiguous()` of views. Besides the generic table, the
section "What contiguity costs" (each view against the contiguous copy of as many elements timed
in the same process, own kernels beside the vendor's), and two plots per device: the
strided/contiguous bandwidth ratio against size per view kind, and the bandwidth of a slice
x[:, ::k] against k beside what lib's cache-line model predicts.

What the JSON carries and this module reads (bench/bench_strided.cpp): names
strided/<variant>/<dtype>/<device>/<source shape>/view=<kind>[/step=k][/perm=...] and the
baselines strided/copy/<dtype>/<device>/n=<elements>; counters bytes (each element read once, an
expanded source once, the result written once), bytes_touched (the whole lines those lie in) and
elements."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import NamedTuple, Optional

from .. import fmt, plots, tables
from ..load import Case, Device, Run, device_order
from .base import Family, Plot
from .beside import (Judged, cases_of, copies_of, copy_beside, judge, median_in_rounds, peer_key, peers_of,
                     ratio_cell, same_round_ratio)

# The vendor's variants (oneDNN's reorder, what PyTorch uses on the CPU; cuBLAS's geam) are those
# whose role is "vendor" in the binary's context (schema 2); a schema-1 file has no roles.
VIEW_ORDER = ["transpose", "split_heads", "merge_heads", "permute", "slice", "expand_row", "expand_col"]

COST_NOTE = (
    "Per view, dtype and shape: the fastest own variant and the vendor's (oneDNN's reorder on the "
    "CPU, cuBLAS's geam on a GPU) as a fraction of the bandwidth of a contiguous copy of as many "
    "elements, timed in the same process with the repetitions interleaved. Bytes are logical: "
    "each element of the view read once (an expanded source once) and the result written once, "
    "so 100% means the view costs what a copy of its bytes costs. `touched / bytes` is lib's "
    "cache-line model: the whole 64-byte lines (32-byte sectors on a GPU) the view and the result "
    "lie in, over the logical bytes; above 1.00 the access pattern itself wastes bandwidth (a "
    "slice's step), and no kernel can reach 100%. `copy GB/s` is the copy's median over the "
    "rounds of the stopping rule that the own variant ran in too; `% copy` and `own / vendor` are "
    "the medians of the round-by-round ratios (below), so that a row reads as its target does "
    "even where one case stopped early and the other ran on through a change of the host's "
    "bandwidth. `target` (on the CPU, the views that flopscope "
    "sets its own kernels a goal for): met where the 95% CI of the median of the repetition-by-"
    "repetition ratio (own's k-th repetition over the copy's or vendor's, taken in turn seconds "
    "apart, so that the host's drift divides out) lies at or above the target, missed where it "
    "lies below, within noise where it straddles it.")

RATIO_CAPTION = (
    "Bandwidth of the fastest own variant of each view kind and dtype as a fraction of the "
    "contiguous copy of as many elements timed in the same process, against the bytes the view "
    "moves (log2). 1.0 (the dashed line) is a view that costs no more than a copy. Hollow markers "
    "are unresolved cases (95% CI of the median wider than ±3%).")

STEP_CAPTION = (
    "Bandwidth (logical bytes: the slice's elements read, the result written) of x[:, ::k] made "
    "contiguous, per variant, against the step k. The black dashed line is lib's cache-line "
    "model: the same-process copy's bandwidth times bytes / bytes_touched, i.e. a machine that "
    "moves whole lines at copy speed. Hollow markers are unresolved cases (95% CI of the median wider than ±3%).")


# The targets of issue 25 ("own CPU kernels at the limit"), one row per view: view kind, dtype and
# source shape (None: any), what the fastest own variant is set against ("copy": the same-process
# copy's bandwidth; "vendor": the vendor's variant's) and the ratio it should reach. The table's
# "target" column says, for the rows they name, whether the run met them (beside.judge).
TARGETS = [
    ("transpose", "f32", "m=8192,n=8192", "copy", 0.70),
    ("transpose", "f32", "m=4096,n=4096", "copy", 0.70),
    ("transpose", "f32", "m=4095,n=4097", "copy", 0.60),
    ("transpose", "bf16", "m=8192,n=8192", "copy", 0.60),
    ("split_heads", None, None, "copy", 0.90),
    ("merge_heads", None, None, "copy", 0.90),
    ("slice", None, None, "vendor", 1.00),
]


def judge_target(view: str, dtype: str, shape: str, own: Optional[Case], vendor: Optional[Case],
                 copy: Optional[Case]) -> Optional[Judged]:
    """The row's target judged (beside.judge), for a row that TARGETS names; else None."""
    kind = view.split(" ")[0]
    for t_view, t_dtype, t_shape, against, ratio in TARGETS:
        if t_view != kind or t_dtype not in (None, dtype) or t_shape not in (None, shape):
            continue
        base = copy if against == "copy" else vendor
        goal = f">= {100 * ratio:.0f}% copy" if against == "copy" else f">= {ratio:.2f}x vendor"
        return judge(goal, own, base, "bytes_per_second", ratio, percent=against == "copy")
    return None


def view_key(case: Case) -> str:
    """'transpose', 'slice step=4', 'permute perm=0.2.3.1': the view a case makes contiguous."""
    extras = dict(case.name.extras)
    view = extras.pop("view", "?")
    return " ".join([view] + [f"{k}={v}" for k, v in extras.items()])


def _view_rank(case: Case) -> tuple:
    view = dict(case.name.extras).get("view", "")
    step = dict(case.name.extras).get("step", "0")
    return (VIEW_ORDER.index(view) if view in VIEW_ORDER else len(VIEW_ORDER), int(step) if step.isdigit() else 0)


def _fastest(cases: list[Case]) -> Optional[Case]:
    return max(cases, key=lambda c: c.bytes_per_second, default=None)


class ViewRow(NamedTuple):
    """One row of "What contiguity costs": the key (device, view, dtype, shape), the fastest own
    variant, the vendor's, the one of them that ran (own first), the copy of its process, and
    the row's target judged (judge_target; None where TARGETS names none, or off the CPU)."""

    key: tuple
    own: Optional[Case]
    vendor: Optional[Case]
    reference: Case
    copy: Optional[Case]
    target: Optional[Judged]


def _view_rows(run: Run) -> list[ViewRow]:
    """The rows, in a reader's order."""
    groups: dict[tuple, list[Case]] = defaultdict(list)
    for c in cases_of(run, "strided"):
        groups[(c.name.device, view_key(c), c.name.dtype, c.name.dims_text())].append(c)
    copies = copies_of(run, "strided")
    rows = []
    for key, group in sorted(groups.items(), key=lambda kv: (device_order(kv[0][0]), _view_rank(kv[1][0]),
                                                             kv[0][2], kv[1][0].bytes)):
        device_id, view, dtype, shape = key
        own = _fastest([c for c in group if c.role != "vendor"])
        vendor = _fastest([c for c in group if c.role == "vendor"])
        reference = own or vendor
        copy = copy_beside(copies, reference)
        target = judge_target(view, dtype, shape, own, vendor, copy) if device_id.startswith("cpu") else None
        rows.append(ViewRow(key, own, vendor, reference, copy, target))
    return rows


def targets(run: Run) -> list[tuple[str, Judged]]:
    """The CPU views that TARGETS names, judged."""
    return [(" ".join(row.key[1:]), row.target) for row in _view_rows(run) if row.target]


def cost_section(run: Run) -> list[str]:
    """What contiguity costs: per (device, view, dtype, shape), own and vendor against the copy."""
    peers = peers_of(run, "strided")
    rows = []
    for (device_id, view, dtype, shape), own, vendor, reference, copy, target in _view_rows(run):
        touched = reference.counter("bytes_touched")
        rows.append([device_id, view, dtype, shape, fmt.size(reference.bytes),
                     f"{touched / reference.bytes:.2f}" if touched else fmt.MISSING,
                     fmt.giga(median_in_rounds(copy, reference, "bytes_per_second")) if copy else fmt.MISSING,
                     f"{own.name.variant} {fmt.giga(own.bytes_per_second)}" if own else fmt.MISSING,
                     ratio_cell(own, copy, "bytes_per_second", percent=True),
                     f"{vendor.name.variant} {fmt.giga(vendor.bytes_per_second)}" if vendor else fmt.MISSING,
                     ratio_cell(vendor, copy, "bytes_per_second", percent=True),
                     ratio_cell(own, vendor, "bytes_per_second"),
                     target.text if target else ""]
                    + _torch_cells(own, peers.get(peer_key(reference))) * bool(peers))
    if not rows:
        return []
    lines = ["## What contiguity costs", "", COST_NOTE, ""]
    lines += tables.markdown(["device", "view", "dtype", "source shape", "bytes/iter", "touched / bytes",
                              "copy GB/s", "fastest own (GB/s)", "% copy", "vendor (GB/s)", "% copy",
                              "own / vendor", "target"] + ["PyTorch (GB/s)", "own / PyTorch"] * bool(peers), rows)
    return lines + [""]


def _torch_cells(own: Optional[Case], torch: Optional[Case]) -> list[str]:
    """PyTorch's y.copy_(view) of the same view (torch_beside.json; another process, same run)."""
    if not torch:
        return [fmt.MISSING, fmt.MISSING]
    return [fmt.giga(torch.bytes_per_second),
            f"{own.bytes_per_second / torch.bytes_per_second:.2f}x" if own else fmt.MISSING]


def ratio_plot(run: Run, device_id: str, path: Path) -> Optional[Path]:
    """Best own variant / same-process copy against bytes, one line per (view kind, dtype)."""
    copies = copies_of(run, "strided")
    best: dict[tuple, Case] = {}
    for c in cases_of(run, "strided"):
        if c.name.device != device_id or c.role == "vendor" or not copy_beside(copies, c):
            continue
        key = (view_key(c), c.name.dtype, c.name.dims_text())
        if key not in best or c.bytes_per_second > best[key].bytes_per_second:
            best[key] = c
    if not best:
        return None
    lines: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for (view, dtype, _), c in best.items():
        lines[(view, dtype)].append(c)
    device = run.devices.get(device_id, Device(device_id, {}))
    fig, ax = plots.plt.subplots(figsize=(10, 5.5))
    for i, ((view, dtype), group) in enumerate(sorted(lines.items())):
        group.sort(key=lambda c: c.bytes)
        # Past the palette's colours, another line style and marker: a view of one size is a
        # single point, whose line style a reader cannot see.
        color = plots.PALETTE[i % len(plots.PALETTE)]
        cycle = i // len(plots.PALETTE) % 3
        marker = ("o", "s", "^")[cycle]
        ratios = [same_round_ratio(c, copy_beside(copies, c), "bytes_per_second") or 0.0 for c in group]
        ax.plot([c.bytes for c in group], ratios, color=color, lw=1.3, ls=("-", "--", ":")[cycle],
                marker=marker, markersize=6, markerfacecolor="none", label=f"{view} {dtype}")
        for noisy in (False, True):
            points = [(c.bytes, r) for c, r in zip(group, ratios) if plots.unresolved(c) == noisy]
            if points:
                plots.scatter(ax, [p[0] for p in points], [p[1] for p in points], color, noisy, marker=marker)
    ax.axhline(1.0, color="black", ls="--", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes moved per iteration (B, log scale)")
    ax.set_ylabel("bandwidth / same-process copy (ratio, x)")
    ax.set_title(f"What contiguity costs (bandwidth / copy): {device.name} ({device_id})", fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return plots.save(fig, path)


def step_plot(run: Run, device_id: str, path: Path) -> Optional[Path]:
    """GB/s of each slice variant against k, with the cache-line model's prediction."""
    copies = copies_of(run, "strided")
    lines: dict[tuple[str, str, str], list[Case]] = defaultdict(list)
    for c in cases_of(run, "strided"):
        extras = dict(c.name.extras)
        if c.name.device == device_id and extras.get("view") == "slice" and extras.get("step", "").isdigit():
            lines[(c.name.variant, c.name.dtype, c.name.dims_text())].append(c)
    if not lines:
        return None
    step = lambda c: int(dict(c.name.extras)["step"])  # noqa: E731
    device = run.devices.get(device_id, Device(device_id, {}))
    fig, ax = plots.plt.subplots(figsize=(9, 5.5))
    model: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    for i, ((variant, dtype, shape), group) in enumerate(sorted(lines.items())):
        group.sort(key=step)
        color = plots.PALETTE[i % len(plots.PALETTE)]
        ax.plot([step(c) for c in group], [c.bytes_per_second / 1e9 for c in group], color=color, lw=1.3,
                label=f"{variant} {dtype} {shape}")
        for noisy in (False, True):
            points = [c for c in group if plots.unresolved(c) == noisy]
            if points:
                plots.scatter(ax, [step(c) for c in points], [c.bytes_per_second / 1e9 for c in points], color, noisy)
        for c in group:
            copy, touched = copy_beside(copies, c), c.counter("bytes_touched")
            if copy and touched:
                model[(dtype, shape)][step(c)] = copy.bytes_per_second * c.bytes / touched / 1e9
    for (dtype, shape), points in sorted(model.items()):
        ks = sorted(points)
        ax.plot(ks, [points[k] for k in ks], color="black", ls="--", lw=1.2,
                label=f"cache-line model {dtype} {shape}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("slice step k (x[:, ::k])")
    ax.set_ylabel("GB/s (logical bytes)")
    ax.set_title(f"Slice bandwidth against step: {device.name} ({device_id})", fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return plots.save(fig, path)


def strided_plots(run: Run, device_id: str, plots_dir: Path) -> list[Plot]:
    slug = plots.device_slug(device_id)
    figures = [("Strided copies against the contiguous copy", ratio_plot(run, device_id, plots_dir / f"strided_ratio_{slug}.png"),
                RATIO_CAPTION),
               ("Slice bandwidth against step", step_plot(run, device_id, plots_dir / f"strided_step_{slug}.png"),
                STEP_CAPTION)]
    return [Plot(heading, path, caption) for heading, path, caption in figures if path]


FAMILY = Family("strided", sections=cost_section, plots=strided_plots, targets=targets)
