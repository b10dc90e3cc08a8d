"""The matmul family (bench_matmul): its own results table with the accuracy of each dtype, a
"dtype trade-off" section (speed, % of peak and error of the best variant of each compute mode,
shape by shape), the cost of a transposed operand (NT and TN against NN), and a plot per device
of GFLOP/s against size for each mode and variant, with the mode's theoretical peak (solid) and
measured ceiling (dashed) across. Every matmul case is also on the roofline (plots.roofline).

What the JSON carries and this module reads (bench/bench_matmul.cpp): names
matmul/<variant>/<mode>/<device>/m=,n=,k=/layout=NN|NT|TN[/model=..,site=..]; counters flops,
flops_per_second, pct_peak_flops, pct_ceiling_flops, max_rel_error, mean_rel_error (against the
f64 product of the unrounded inputs); the label's out=, emulated, library= and a vendor's
algorithm words."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import NamedTuple, Optional

from .. import fmt, plots, tables
from ..load import Case, Device, Run, device_order
from .base import Family, Plot
from .beside import Judged, judge, peer_key, peers_of, ratio_cell
from .generic import cv_cell
from .roles import ceiling_cell, role

# Compute modes from widest to narrowest: the order of the trade-off table.
MODE_ORDER = ["f64", "f32", "tf32", "f16", "bf16", "f8e4m3", "f8e4m3_e5m2", "f8e5m2_e4m3", "f8e5m2"]

TABLE_HEADER = ["variant", "mode", "shape", "layout", "median time", "GFLOP/s", "% peak", "% ceiling",
                "max rel. error", "mean rel. error", "label", "95% CI"]

TRADE_OFF_NOTE = (
    "Per shape (NN layout), the fastest variant of each compute mode that ran: its GFLOP/s, its "
    "fraction of the mode's theoretical peak, its speed against the fastest f32 case of the same "
    "shape, and the accuracy the mode buys: the largest and the mean relative error of C against "
    "the f64 product of the inputs before they were rounded to the mode's dtype. `emulated` "
    "variants decode a narrow dtype to f32 and multiply at the f32 rate: their speed is not the "
    "narrow type's. Each case was validated against its own bound before it was timed.")

LAYOUT_NOTE = (
    "What a transposed operand costs: the median time of NT (B read as the transposed view of an "
    "n x k array) and TN (A as the transposed view of a k x m array) against NN, for the same "
    "variant, mode and shape in the same run; above 1.00 the view is slower than making it "
    "contiguous would let the kernel be.")

VENDORS_NOTE = (
    "Square matmuls, NN layout: each own variant of a compute mode (emulated ones left out) against "
    "the fastest vendor of that mode at the same size, timed in the same process with the "
    "repetitions interleaved (`own / vendor`: the median of the round-by-round ratios; above "
    "1.00x the own kernel is faster), and, where PyTorch is "
    "installed, torch.mm of the same size and dtype (torch_beside.json: PyTorch in another "
    "process of the same run, all cores, inputs in memory). `kernel` is what ran: the ISA and "
    "micro-tile from the case's label. `target` (on the CPU, the fastest own variant of the sizes "
    "that flopscope sets its own kernels a goal for): met where the 95% CI of the median of the repetition-by-"
    "repetition ratio to the vendor (taken in turn seconds apart, so that the host's drift divides "
    "out) lies at or above the target, missed where it lies below, within noise where it "
    "straddles it.")

# The targets of issue 25 ("own CPU kernels at the limit") for square NN matmuls on the CPU: per
# compute mode, the sizes n (None: every size) where the fastest own variant should reach
# `ratio` times the fastest vendor of the mode (f32: the faster of oneDNN and OpenBLAS; bf16:
# oneDNN, the one vendor with a bf16 GEMM here). The table's "target" column judges them
# (beside.judge); PyTorch, timed in another process, is only set beside.
TARGETS = {"f32": ((1024, 2048, 4096), 0.95), "bf16": (None, 0.95)}

PLOT_CAPTION = (
    "GFLOP/s of each variant against the size of square matmuls (NN layout; the x axis is n for "
    "m = n = k), log-log, one panel per dtype; each variant has its own colour, line and marker "
    "in every panel. A solid dark line is a compute mode's theoretical peak, the dashed one of the "
    "same colour its measured ceiling (bench_peak).")


def _dims(case: Case) -> tuple[int, int, int]:
    shape = case.name.shape_dict()
    return shape.get("m", 0), shape.get("n", 0), shape.get("k", 0)


def _extra(case: Case, key: str, default: str = "") -> str:
    return dict(case.name.extras).get(key, default)


def _layout(case: Case) -> str:
    return _extra(case, "layout", "NN")


def _shape_key(case: Case) -> str:
    m, n, k = _dims(case)
    site = _extra(case, "site")
    return f"m={m},n={n},k={k}" + (f" ({_extra(case, 'model')} {site})" if site else "")


def _mode_rank(mode: str) -> int:
    return MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER)


def _label_words(case: Case) -> str:
    """The label beyond bound= and compute=: out=, emulated, library=, a vendor's choice."""
    return " ".join(f"{k}={v}" if v else k for k, v in case.label.items() if k not in ("bound", "compute"))


def _error(case: Case, key: str) -> str:
    value = case.counter(key)
    return f"{value:.2e}" if value is not None else fmt.MISSING


def matmul_table(cases: list[Case], device: Optional[Device] = None) -> list[str]:
    rows = []
    for c in sorted(cases, key=lambda c: (_mode_rank(c.name.dtype), _dims(c), _layout(c), c.name.variant)):
        rows.append([c.name.variant, c.name.dtype, _shape_key(c), _layout(c), fmt.duration(c.real_time_s),
                     fmt.giga(c.flops_per_second), fmt.percent(c.pct_peak), ceiling_cell(c, device),
                     _error(c, "max_rel_error"), _error(c, "mean_rel_error"), _label_words(c), cv_cell(c)])
    return tables.markdown(TABLE_HEADER, rows)


def _matmul_cases(run: Run) -> list[Case]:
    return [c for c in run.cases if c.ok and c.name.family == "matmul" and c.flops_per_second]


def trade_off_section(run: Run) -> list[str]:
    """The fastest variant of each mode per (device, shape), NN layout."""
    best: dict[tuple[str, str], dict[str, Case]] = defaultdict(dict)
    for c in _matmul_cases(run):
        if _layout(c) != "NN" or role(c) == "peer":
            continue
        slot = best[(c.name.device, _shape_key(c))]
        mode = c.name.dtype
        if mode not in slot or c.flops_per_second > slot[mode].flops_per_second:
            slot[mode] = c
    rows = []
    # Shapes by their sizes (256 before 1024), not by their text.
    for (device_id, shape), modes in sorted(best.items(),
                                            key=lambda kv: (device_order(kv[0][0]), _dims(next(iter(kv[1].values()))))):
        f32 = modes.get("f32")
        for mode, c in sorted(modes.items(), key=lambda kv: _mode_rank(kv[0])):
            speedup = f"{c.flops_per_second / f32.flops_per_second:.2f}x" if f32 else fmt.MISSING
            rows.append([device_id, shape, mode, c.name.variant + (" (emulated)" if "emulated" in c.label else ""),
                         fmt.giga(c.flops_per_second), fmt.percent(c.pct_peak), speedup,
                         _error(c, "max_rel_error"), _error(c, "mean_rel_error")])
    if not rows:
        return []
    lines = ["## Matmul: what each dtype buys", "", TRADE_OFF_NOTE, ""]
    lines += tables.markdown(["device", "shape", "mode", "fastest variant", "GFLOP/s", "% peak", "vs f32",
                              "max rel. error", "mean rel. error"], rows)
    return lines + [""]


def layout_section(run: Run) -> list[str]:
    by_key: dict[tuple[str, str, str, str], dict[str, Case]] = defaultdict(dict)
    for c in _matmul_cases(run):
        by_key[(c.name.device, c.name.dtype, _shape_key(c), c.name.variant)][_layout(c)] = c
    rows = []
    for (device_id, mode, shape, variant), layouts in sorted(
            by_key.items(),
            key=lambda kv: (device_order(kv[0][0]), _mode_rank(kv[0][1]), _dims(next(iter(kv[1].values()))), kv[0][3])):
        nn = layouts.get("NN")
        if not nn or len(layouts) < 2 or not nn.real_time_s:
            continue

        def ratio(layout: str) -> str:
            other = layouts.get(layout)
            return f"{other.real_time_s / nn.real_time_s:.2f}" if other and other.real_time_s else fmt.MISSING

        rows.append([device_id, mode, shape, variant, fmt.duration(nn.real_time_s), ratio("NT"), ratio("TN")])
    if not rows:
        return []
    lines = ["## Matmul: what a transposed operand costs", "", LAYOUT_NOTE, ""]
    lines += tables.markdown(["device", "mode", "shape", "variant", "NN time", "NT / NN", "TN / NN"], rows)
    return lines + [""]


class VendorGroup(NamedTuple):
    """Square NN matmuls of one (device, mode, n): the own variants (emulated ones left out) by
    name, the fastest of them, the fastest vendor, PyTorch's case of the size, and the fastest
    own variant's target judged (_judge_target; None where TARGETS names none)."""

    key: tuple[str, str, int]
    owns: list[Case]
    fastest: Optional[Case]
    vendor: Optional[Case]
    torch: Optional[Case]
    target: Optional[Judged]


def _vendor_groups(run: Run) -> list[VendorGroup]:
    """The groups, in a reader's order."""
    groups: dict[tuple[str, str, int], list[Case]] = defaultdict(list)
    for c in _matmul_cases(run):
        m, n, k = _dims(c)
        if _layout(c) == "NN" and m == n == k and not _extra(c, "site") and role(c) in ("own", "vendor"):
            groups[(c.name.device, c.name.dtype, n)].append(c)
    peers = peers_of(run, "matmul")
    out = []
    for key, group in sorted(groups.items(), key=lambda kv: (device_order(kv[0][0]), _mode_rank(kv[0][1]), kv[0][2])):
        vendor = max((c for c in group if role(c) == "vendor"), key=lambda c: c.flops_per_second, default=None)
        owns = sorted((c for c in group if role(c) == "own" and "emulated" not in c.label), key=lambda c: c.name.variant)
        fastest = max(owns, key=lambda c: c.flops_per_second, default=None)
        out.append(VendorGroup(key, owns, fastest, vendor, peers.get(peer_key(group[0])),
                               _judge_target(*key, fastest, vendor)))
    return out


def _judge_target(device_id: str, mode: str, n: int, own: Optional[Case], vendor: Optional[Case]) -> Optional[Judged]:
    """The fastest own variant's target (TARGETS) at this mode and size on the CPU; else None."""
    sizes, ratio = TARGETS.get(mode, ((), 0.0))
    if not own or not device_id.startswith("cpu") or (sizes is not None and n not in sizes):
        return None
    return judge(f">= {ratio:.2f}x vendor", own, vendor, "flops_per_second", ratio, percent=False)


def targets(run: Run) -> list[tuple[str, Judged]]:
    """The CPU matmuls that TARGETS names, judged."""
    return [(f"matmul {g.key[1]} {g.key[2]}^3", g.target) for g in _vendor_groups(run) if g.target]


def vendors_section(run: Run) -> list[str]:
    """Own against the fastest vendor of each mode and against PyTorch, square NN matmuls."""
    has_peers = bool(peers_of(run, "matmul"))
    rows = []
    for (device_id, mode, n), owns, fastest, vendor, torch, target in _vendor_groups(run):
        for own in owns:
            kernel = " ".join(f"{key}={own.label[key]}" for key in ("isa", "ukr") if own.label.get(key))
            rows.append([device_id, mode, str(n), own.name.variant, kernel or fmt.MISSING,
                         fmt.giga(own.flops_per_second),
                         f"{vendor.name.variant} {fmt.giga(vendor.flops_per_second)}" if vendor else fmt.MISSING,
                         ratio_cell(own, vendor, "flops_per_second"),
                         target.text if target and own is fastest else ""]
                        + ([fmt.giga(torch.flops_per_second) if torch else fmt.MISSING,
                            f"{own.flops_per_second / torch.flops_per_second:.2f}x" if torch else fmt.MISSING]
                           if has_peers else []))
    if not rows:
        return []
    lines = ["## Matmul: own kernels against the vendors" + (" and PyTorch" if has_peers else ""), "", VENDORS_NOTE, ""]
    lines += tables.markdown(["device", "mode", "n", "own variant", "kernel", "GFLOP/s", "fastest vendor (GFLOP/s)",
                              "own / vendor", "target"] + (["torch.mm GFLOP/s", "own / torch"] if has_peers else []), rows)
    return lines + [""]


def matmul_sections(run: Run) -> list[str]:
    return vendors_section(run) + trade_off_section(run) + layout_section(run)


def size_plot(run: Run, device_id: str, path: Path) -> Optional[Path]:
    """GFLOP/s against n for square NN cases, one line per (mode, variant); None without any."""
    device = run.devices.get(device_id, Device(device_id, {}))
    cases = [c for c in _matmul_cases(run) if c.name.device == device_id and _layout(c) == "NN"
             and len(set(_dims(c))) == 1 and not _extra(c, "site")]
    if not cases:
        return None
    lines: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for c in cases:
        lines[(c.name.dtype, c.name.variant)].append(c)
    # one panel per dtype: a legend of its variants and its roofs, never 29 entries in one
    modes = sorted({mode for mode, _ in lines}, key=_mode_rank)
    cols = min(3, len(modes))
    rows = (len(modes) + cols - 1) // cols
    fig, axes = plots.plt.subplots(rows, cols, figsize=(5.2 * cols, 4.2 * rows), squeeze=False)
    styles = ["-", "--", "-.", ":"]
    markers = ["o", "s", "^", "D", "v", "P", "X", "*"]
    variants = sorted({v for _, v in lines})
    peaks, ceilings = device.compute_peaks, device.compute_ceilings
    for index, mode in enumerate(modes):
        ax = axes[index // cols][index % cols]
        for (m, variant), group in sorted(lines.items()):
            if m != mode:
                continue
            group.sort(key=lambda c: _dims(c)[0])
            k = variants.index(variant)
            color = plots.PALETTE[k % len(plots.PALETTE)]
            ax.plot([_dims(c)[0] for c in group], [c.flops_per_second / 1e9 for c in group], color=color,
                    ls=styles[k % len(styles)], marker=markers[k % len(markers)], lw=1.3, ms=5,
                    mfc="none", label=variant)
        compute = {c.compute_mode for c in cases if c.name.dtype == mode and c.compute_mode}
        for j, cm in enumerate(sorted(compute)):
            roof = ("black", "dimgray", "saddlebrown")[j % 3]
            if cm in peaks:
                ax.axhline(peaks[cm]["flops_per_second"] / 1e9, color=roof, lw=1.6, alpha=0.6,
                           label=f"peak {cm} {fmt.rate(peaks[cm]['flops_per_second'], 'FLOP/s')}")
            if cm in ceilings:
                ax.axhline(ceilings[cm] / 1e9, color=roof, lw=1.1, ls=(0, (5, 2)), alpha=0.8,
                           label=f"measured {cm} {fmt.rate(ceilings[cm], 'FLOP/s')}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("n (m = n = k, elements)")
        ax.set_ylabel("achieved (GFLOP/s)")
        ax.set_title(f"{mode}: GFLOP/s against size", fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    for index in range(len(modes), rows * cols):
        axes[index // cols][index % cols].set_visible(False)
    fig.suptitle(f"Matmul against size: {device.name} ({device_id})", fontsize=11)
    fig.tight_layout()
    return plots.save(fig, path)


def matmul_plots(run: Run, device_id: str, plots_dir: Path) -> list[Plot]:
    path = size_plot(run, device_id, plots_dir / f"matmul_size_{plots.device_slug(device_id)}.png")
    return [Plot("Matmul GFLOP/s against size", path, PLOT_CAPTION)] if path else []


FAMILY = Family("matmul", table=matmul_table, sections=matmul_sections, plots=matmul_plots, targets=targets)
