"""What a family module gives the report: its results table, its own report sections and its
plots. Every field has a default, so a module sets only what its family adds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..load import Case, Run
from .beside import Judged
from .generic import generic_table


@dataclass(frozen=True)
class Plot:
    """One figure written for the report: its heading ("Copy bandwidth against size"), the PNG
    and the caption printed under it."""

    heading: str
    path: Path
    caption: str


def no_sections(run: Run) -> list[str]:
    return []


def no_plots(run: Run, device_id: str, plots_dir: Path) -> list[Plot]:
    return []


def no_targets(run: Run) -> list[tuple[str, Judged]]:
    return []


@dataclass(frozen=True)
class Family:
    """A family's part of the report.

    table(cases, device): Markdown lines of the results table of one device's cases that ran
        (device: the run's Device, for its ceilings and caches; None where unknown).
    sections(run): Markdown lines of the family's own sections ("## ..."), after the results.
    plots(run, device_id, plots_dir): the figures of one device, written under plots_dir.
    targets(run): the goals the family's own kernels have in this run, each judged (beside.judge),
        with what it is about ("transpose f32 m=8192,n=8192"): the headline counts them.
    """

    name: str
    table: Callable[..., list[str]] = generic_table
    sections: Callable[[Run], list[str]] = no_sections
    plots: Callable[[Run, str, Path], list[Plot]] = no_plots
    targets: Callable[[Run], list[tuple[str, Judged]]] = no_targets
