"""The registry of family modules: what the report says about each op family beyond what every
family gets (the results table and the roofline).

A family module (copy.py, convert.py, peak.py, ...) defines FAMILY = Family(name, ...) with its
report sections and plots and is listed in MODULES below; a family without a module gets the
generic results table (generic.py). The report grows by adding a module, not by editing
report.py.
"""

from __future__ import annotations

from ..load import Run
from . import backward, broadcast, collectives, convert, copy, matmul, peak, strided
from .base import Family, Plot
from .generic import NOISY_MARK, cv_cell, generic_table, result_row

MODULES = (backward, broadcast, collectives, convert, copy, matmul, peak, strided)
REGISTRY: dict[str, Family] = {module.FAMILY.name: module.FAMILY for module in MODULES}

__all__ = ["Family", "Plot", "REGISTRY", "NOISY_MARK", "cv_cell", "family", "families_in",
           "generic_table", "result_row"]


def family(name: str) -> Family:
    """The registered family of that name, else one with the generic table only."""
    return REGISTRY.get(name) or Family(name)


def families_in(run: Run) -> list[Family]:
    """The families of the cases that ran, in name order."""
    return [family(name) for name in sorted({c.name.family for c in run.cases if c.ok})]
