"""The convert family (bench_convert): besides the generic table, a section that sets each
conversion against a copy of the same array: the measured copy ceiling and, preferably, the
f32->f32 copy that bench_convert timed in the same process."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .. import fmt, tables
from ..load import Case, Run, device_order
from .base import Family
from .beside import named_copy
from .generic import cv_cell

CONVERSION_NOTE = (
    "Bytes are read plus written, n x (size(from) + size(to)), as for copy (2 x 4n for f32). "
    "A core whose reads alone limit it converts f32->16-bit at 6/8 = 75% of its copy figure "
    "(the same source, half the output); above 75%, copy was also held back by its writes. "
    "`% copy ceiling` is against bench_peak's measured copy; `% copy, same n` against an f32 "
    "copy of the same element count: bench_convert's f32->f32 baseline, timed in the same "
    "process with the repetitions interleaved, where the run has it (on a shared machine, "
    "bandwidth drifts between processes), else the fastest in the run (bench_copy).")


def _best_conversions_and_copies(run: Run):
    """(device, dtype, n) -> the fastest conversion case, and (file, device, n) -> the fastest
    f32 copy (bench_copy's copy/*/f32 and bench_convert's convert/copy/f32->f32 baseline)."""
    best: dict[tuple[str, str, int], Case] = {}
    copies: dict[tuple[Path, str, int], Case] = {}
    for case in run.cases:
        n = case.name.shape_dict().get("n")
        if not case.ok or n is None or case.bytes_per_second is None:
            continue
        family, dtype = case.name.family, case.name.dtype
        if (family, dtype) in (("copy", "f32"), ("convert", "f32->f32")):  # bench_convert's baseline is a copy
            key, slot = (case.file, case.name.device, n), copies
        elif family == "convert":
            key, slot = (case.name.device, dtype, n), best
        else:
            continue
        if key not in slot or case.bytes_per_second > slot[key].bytes_per_second:
            slot[key] = case
    return best, copies


def _copy_beside(copies, case: Case, device_id: str, n: int) -> Optional[Case]:
    """The copy a conversion is set against: the one timed in its own process (bench_convert's
    convert/copy baseline, the one the binary names), never one of another binary (bandwidth
    drifts between processes)."""
    if case.beside is not None:
        return named_copy(copies.values(), case)
    return copies.get((case.file, device_id, n))


def conversion_section(run: Run) -> list[str]:
    """Each conversion (its best variant per dtype pair and n) against the device's copy."""
    best, copies = _best_conversions_and_copies(run)
    if not best:
        return []
    rows = []
    for (device_id, dtype, n), case in sorted(best.items(), key=lambda kv: (device_order(kv[0][0]), kv[0])):
        device = run.devices.get(device_id)
        ceiling = device.memory_ceilings.get("copy") if device else None
        copy = _copy_beside(copies, case, device_id, n)
        rate = case.bytes_per_second
        rows.append([device_id, dtype, f"n={n}", case.name.variant, fmt.giga(rate),
                     fmt.percent(100 * rate / ceiling) if ceiling else fmt.MISSING,
                     f"{fmt.percent(100 * rate / copy.bytes_per_second)} ({copy.name.family}/{copy.name.variant}, "
                     f"{fmt.giga(copy.bytes_per_second)} GB/s)" if copy else fmt.MISSING,
                     cv_cell(case)])
    lines = ["## Conversions against copy", "", CONVERSION_NOTE, ""]
    lines += tables.markdown(["device", "conversion", "shape", "best variant", "GB/s",
                              "% copy ceiling", "% copy, same n", "95% CI"], rows)
    return lines + [""]


FAMILY = Family("convert", sections=conversion_section)
