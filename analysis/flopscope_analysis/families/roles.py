"""What a case is to the report (its role) and which measured ceiling it is held against.

Role: "own", "vendor", "reference", "baseline" (CONTRACTS.md) or "peer" (PyTorch's
figures, torch_beside.json), as the binary's context (schema
2) gives it on every case (load.py's Case.role, from the kernel table's row). A file of an older
binary (schema 1) says no role: its cases are "unknown" (never guessed from variant names), and
the report says what it could not know (RunFiles' limitations).

Ceiling: Case.ceiling_ref (kind, name) where the context gives it; else a copy ceiling for a
memory-bound case that moves two streams (copies, views, conversions), triad for a broadcast op
(three streams), the compute mode's ceiling for a compute-bound case. A memory-bound case whose
bytes fit in a cache level of its device is marked "in L2" (or L1d, L3) instead of a percentage
of a DRAM ceiling it can exceed by 3x."""

from __future__ import annotations

from typing import Optional

from ..load import Case, Device

UNKNOWN = "unknown"  # the role of a case from a schema-1 file
THREE_STREAM_FAMILIES = {"broadcast"}
CACHE_ORDER = ("l1d", "l1", "l2", "l3")


def role(case: Case) -> str:
    given = getattr(case, "role", None)
    return str(given) if given else UNKNOWN


def cache_level(case: Case, device: Optional[Device]) -> Optional[str]:
    """The smallest cache level of the device that holds the case's bytes (memory-bound cases
    only), e.g. 'L2'; None where it does not fit or the sizes are unknown."""
    if device is None or case.bound != "memory" or not case.bytes:
        return None
    caches = device.caches
    for level in sorted(caches, key=lambda k: CACHE_ORDER.index(k) if k in CACHE_ORDER else 99):
        if case.bytes <= caches[level]:
            return level.upper()
    return None


def ceiling_of(case: Case, device: Optional[Device]) -> Optional[tuple[str, float]]:
    """(name, value per second) of the measured ceiling the case is held against, else None."""
    if device is None:
        return None
    ref = getattr(case, "ceiling_ref", None)
    if ref:  # the context's typed ceiling, where the device's ceilings file has it
        kind, name = ref
        table = device.memory_ceilings if kind == "memory" else device.compute_ceilings
        if name in table:
            return (str(name) if kind == "memory" else f"{name} FMA", table[name])
    if case.bound == "memory":
        three = case.name.family in THREE_STREAM_FAMILIES and role(case) != "baseline"
        name = "triad" if three else "copy"
        value = device.memory_ceilings.get(name)
        return (name, value) if value else None
    mode = case.compute_mode
    value = device.compute_ceilings.get(mode) if mode else None
    return (f"{mode} FMA", value) if value else None


def pct_of_ceiling(case: Case, device: Optional[Device]) -> Optional[float]:
    """The case's rate as a percentage of ceiling_of(); None in cache or without a ceiling."""
    if cache_level(case, device):
        return None
    ceiling = ceiling_of(case, device)
    if not ceiling or not case.rate:
        return None
    return 100 * case.rate / ceiling[1]


def ceiling_cell(case: Case, device: Optional[Device]) -> str:
    """'94.1% copy', 'in L2', or the benchmark's own % ceiling where no ceiling is known."""
    level = cache_level(case, device)
    if level:
        return f"in {level}"
    ceiling = ceiling_of(case, device)
    pct = pct_of_ceiling(case, device)
    if ceiling and pct is not None:
        return f"{pct:.1f}% {ceiling[0]}"
    return f"{case.pct_ceiling:.1f}%" if case.pct_ceiling is not None else "—"
