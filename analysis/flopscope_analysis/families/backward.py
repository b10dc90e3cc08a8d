"""The backward family (bench_backward): a linear layer and the lecture's deep linear MLP, forward,
backward and a training step. Besides the generic table, the section "Backward against forward"
(per device, dtype, net, shape and variant: the three passes' times, the measured bwd/fwd time
ratio beside the FLOP ratio, and each pass's MFU) and a plot per device of the measured ratio
against the FLOP ratio.

What the JSON carries and this module reads (bench/bench_backward.cpp): names
backward/<variant>/<dtype>/<device>/<shape>/net=<linear|mlp>/pass=<fwd|bwd|step>[/opt=<optimizer>];
counters flops (PyTorch's convention: the matmuls), full_flops (with the optimizer's), flop_ratio
(the pass's FLOPs over the forward's) and pct_peak_flops (the pass's MFU against the peak of its
compute mode)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Optional

from .. import fmt, plots, tables
from ..load import Case, Device, Run, device_order
from .base import Family, Plot
from .beside import cases_of

RATIO_NOTE = (
    "Per device, dtype, network, shape and matmul variant, the three passes timed in one process: "
    "forward, backward (dW and, but for a network's first layer, dX) and a training step (forward, "
    "backward and the optimizer's update). `bwd / fwd` is the measured time ratio, `FLOPs` the "
    "ratio the FLOP count predicts (2.0 for a layer inside a network, (2L - 1) / L for an L-layer "
    "Cruncher, whose first layer computes no dX). MFU is each pass's FLOPs (PyTorch's convention) "
    "per second against the device's theoretical peak for the dtype's math. A ratio above the FLOP "
    "ratio is what the backward's transposed operands (Xᵀ·dY, dY·Wᵀ) and mixed precision's extra "
    "roundings cost; the step's excess over fwd + bwd is the optimizer's update.")

PLOT_CAPTION = (
    "Measured backward/forward time ratio per network, dtype and variant (bars) against the ratio "
    "of their FLOP counts (black marks).")


def _extra(case: Case, key: str) -> str:
    return dict(case.name.extras).get(key, "?")


def _groups(run: Run) -> dict[tuple, dict[str, Case]]:
    """(device, dtype, net, shape, variant) -> pass (fwd, bwd, step/<opt>) -> case."""
    groups: dict[tuple, dict[str, Case]] = defaultdict(dict)
    for c in cases_of(run, "backward"):
        key = (c.name.device, c.name.dtype, _extra(c, "net"), c.name.dims_text(), c.name.variant)
        passname = _extra(c, "pass")
        if passname == "step":
            passname = f"step/{_extra(c, 'opt')}"
        groups[key][passname] = c
    return groups


def _ratio(passes: dict[str, Case]) -> tuple[Optional[float], Optional[float]]:
    """Measured bwd/fwd time ratio and the FLOP ratio (from the bwd case's counter)."""
    fwd, bwd = passes.get("fwd"), passes.get("bwd")
    if not fwd or not bwd:
        return None, None
    return bwd.real_time_s / fwd.real_time_s, bwd.counter("flop_ratio")


def _sorted(run: Run):
    return sorted(_groups(run).items(), key=lambda kv: (device_order(kv[0][0]), kv[0][1:]))


def ratio_section(run: Run) -> list[str]:
    rows = []
    for (device_id, dtype, net, shape, variant), passes in _sorted(run):
        measured, flop_ratio = _ratio(passes)
        steps = sorted(p for p in passes if p.startswith("step/"))
        step_cells = "; ".join(f"{p[5:]} {fmt.duration(passes[p].real_time_s)}" for p in steps) or fmt.MISSING
        step_mfu = "; ".join(fmt.percent(passes[p].counter("pct_peak_flops")) for p in steps) or fmt.MISSING

        def time(p: str) -> str:
            return fmt.duration(passes[p].real_time_s) if p in passes else fmt.MISSING

        def mfu(p: str) -> str:
            return fmt.percent(passes[p].counter("pct_peak_flops")) if p in passes else fmt.MISSING

        rows.append([device_id, dtype, net, shape, variant, time("fwd"), time("bwd"), step_cells,
                     f"{measured:.2f}" if measured else fmt.MISSING,
                     f"{flop_ratio:.2f}" if flop_ratio else fmt.MISSING, mfu("fwd"), mfu("bwd"), step_mfu])
    if not rows:
        return []
    lines = ["## Backward against forward", "", RATIO_NOTE, ""]
    lines += tables.markdown(["device", "dtype", "net", "shape", "variant", "fwd", "bwd", "step", "bwd / fwd",
                              "FLOPs", "MFU fwd", "MFU bwd", "MFU step"], rows)
    return lines + [""]


def ratio_plot(run: Run, device_id: str, path: Path) -> Optional[Path]:
    bars: list[tuple[str, float, float]] = []
    for (device, dtype, net, shape, variant), passes in _sorted(run):
        measured, flop_ratio = _ratio(passes)
        if device == device_id and measured and flop_ratio:
            bars.append((f"{net} {shape} {dtype} {variant}", measured, flop_ratio))
    if not bars:
        return None
    device = run.devices.get(device_id, Device(device_id, {}))
    # horizontal bars: each case's name on one line of its own, however many cases there are
    fig, ax = plots.plt.subplots(figsize=(9, max(3.5, 0.32 * len(bars) + 1.5)))
    ys = list(range(len(bars)))[::-1]
    ax.barh(ys, [measured for _, measured, _ in bars], color=plots.PALETTE[0], height=0.7,
            label="measured bwd / fwd time")
    ax.scatter([ratio for _, _, ratio in bars], ys, color="black", marker="|", s=200, zorder=3,
               label="bwd / fwd FLOPs")
    ax.set_yticks(ys, [label for label, _, _ in bars], fontsize=7)
    ax.set_xlabel("backward / forward (ratio, x)")
    ax.set_xlim(0, 1.35 * max(max(m, r) for _, m, r in bars))  # room on the right for the legend
    ax.set_title(f"Backward against forward: {device.name} ({device_id})", fontsize=11)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return plots.save(fig, path)


def backward_plots(run: Run, device_id: str, plots_dir: Path) -> list[Plot]:
    path = ratio_plot(run, device_id, plots_dir / f"backward_{plots.device_slug(device_id)}.png")
    return [Plot("Backward against forward", path, PLOT_CAPTION)] if path else []


FAMILY = Family("backward", sections=ratio_section, plots=backward_plots)
