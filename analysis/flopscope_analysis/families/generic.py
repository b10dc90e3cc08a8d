"""The generic results table: one row per case that ran, with what every flopscope case carries
(time, FLOP/s, bytes/s, intensity, % of peak and of its ceiling, the 95% CI of the median).
Every family gets it unless its module gives another table."""

from __future__ import annotations

from typing import Optional

from .. import fmt, tables
from ..load import Case, Device
from ..stats import RESOLVED_WITHIN, MedianCI, median_ci
from .roles import ceiling_cell

NOISY_MARK = "⚠ unresolved"  # the 95% CI of the median is wider than +-3%, or cannot be had

RESULT_HEADER = ["variant", "dtype", "shape", "bytes/iter", "bound", "median time", "GFLOP/s",
                 "GB/s", "FLOP/byte", "% peak", "% ceiling", "95% CI"]


def case_ci(case: Case) -> Optional[MedianCI]:
    """The harness's CI of the median where the JSON has it (the median aggregate's ci_low,
    ci_high: the stopping rule decided on it), else the same interval from the samples."""
    if case.ci_s is not None and case.real_time_s:
        low, high = case.ci_s
        return MedianCI(case.real_time_s, low, high, case.ci_coverage or 0.0, len(case.samples) or case.repetitions)
    return median_ci([s.real_time_s for s in case.samples])


def unresolved(case: Case) -> bool:
    """Whether the case's median is marked: the harness said so (its stopping rule reached 20
    repetitions without a CI within +-3%), else the samples' CI is wider than +-3%."""
    if case.resolved is not None:
        return not case.resolved
    ci = case_ci(case)
    return ci is not None and ci.half_width > RESOLVED_WITHIN


def cv_cell(case: Case) -> str:
    """The 95% order-statistic CI of the case's median time against the median ('-1.2/+2.0%'),
    with the coverage that its samples reach where it is under 95% (3 runs: 75%); marked where
    it is wider than +-3%; '— (1 run)' without repetitions."""
    ci = case_ci(case)
    if ci is None:
        return f"{fmt.MISSING} (1 run)" if case.repetitions <= 1 else fmt.MISSING
    text = ci.text()
    return f"{text} {NOISY_MARK}" if unresolved(case) else text


def result_row(case: Case, device: Optional[Device] = None) -> list[str]:
    return [
        case.name.variant,
        case.name.dtype,
        case.name.shape_text(),
        fmt.size(case.bytes),
        case.bound + (f" ({case.compute_mode})" if case.compute_mode else ""),
        fmt.duration(case.real_time_s),
        fmt.giga(case.flops_per_second),
        fmt.giga(case.bytes_per_second),
        "∞ (no bytes)" if case.moves_no_bytes else fmt.intensity(case.intensity),
        fmt.percent(case.pct_peak),
        ceiling_cell(case, device),
        cv_cell(case),
    ]


def generic_table(cases: list[Case], device: Optional[Device] = None) -> list[str]:
    return tables.markdown(RESULT_HEADER, [result_row(c, device) for c in cases])
