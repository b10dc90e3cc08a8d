"""The generic results table: one row per case that ran, with what every flopscope case carries
(time, FLOP/s, bytes/s, intensity, % of peak and ceiling, cv). Every family gets it unless its
module gives another table."""

from __future__ import annotations

from .. import fmt, tables
from ..load import Case

NOISY_MARK = "⚠ noisy"

RESULT_HEADER = ["variant", "dtype", "shape", "bytes/iter", "bound", "median time", "GFLOP/s",
                 "GB/s", "FLOP/byte", "% peak", "% ceiling", "cv"]


def cv_cell(case: Case) -> str:
    """The case's cv as a percentage, marked when noisy; '— (1 run)' without repetitions."""
    if case.cv is None:
        return f"{fmt.MISSING} (1 run)" if case.repetitions <= 1 else fmt.MISSING
    text = fmt.fraction_percent(case.cv)
    return f"{text} {NOISY_MARK}" if case.noisy else text


def result_row(case: Case) -> list[str]:
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
        fmt.percent(case.pct_ceiling),
        cv_cell(case),
    ]


def generic_table(cases: list[Case]) -> list[str]:
    return tables.markdown(RESULT_HEADER, [result_row(c) for c in cases])
