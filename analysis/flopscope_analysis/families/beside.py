"""The contiguous copy that bench_strided and bench_broadcast time beside their cases, in the same
process (<family>/<its variant>/<dtype>/<device>/n=<elements>, role "baseline" in the binary's
context; a schema-1 file says no role, so none is found there), and how a case finds its own: the
one its binary names (the planned case's `beside`); in a file that names none, same file, device
and dtype, and n = the case's `elements` counter where it has one (a strided copy: the elements of
its result), else bytes / 2 / element size (a broadcast op: a copy of the same bytes). On a shared
machine bandwidth drifts between processes, so only this pairing makes a fair ratio; within a
process, a case and its copy share a block of the stopping rule's rounds (the planned `block`)
wherever the block's limits allow, and only then are their repetitions paired."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from .. import fmt
from ..load import Case, Run
from ..names import strip_gbench_suffixes
from ..stats import against_target, median_ci
from .roles import role

ELEMENT_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "f8e4m3": 1, "f8e5m2": 1}

CopyKey = tuple[Path, str, str, int]  # file, device, dtype, n


def copies_of(run: Run, family: str) -> dict[CopyKey, Case]:
    """The copy baselines of one family that ran, by (file, device, dtype, n)."""
    copies: dict[CopyKey, Case] = {}
    for c in run.cases:
        n = c.name.shape_dict().get("n")
        if c.ok and c.name.family == family and role(c) == "baseline" and n and c.bytes_per_second:
            copies[(c.file, c.name.device, c.name.dtype, n)] = c
    return copies


def copy_elements(case: Case) -> Optional[int]:
    """The n of the copy that `case` is set against."""
    elements = case.counter("elements")
    if elements:
        return int(elements)
    size = ELEMENT_BYTES.get(case.name.dtype)
    return int(case.bytes) // (2 * size) if size and case.bytes else None


def named_copy(copies: Iterable[Case], case: Case) -> Optional[Case]:
    """Among `copies`, the baseline that `case`'s binary says it is set against (its `beside`),
    from its own file; None where it names none or that one did not run."""
    if case.beside is None:
        return None
    return next((c for c in copies if c.file == case.file and strip_gbench_suffixes(c.run_name) == case.beside),
                None)


def copy_beside(copies: dict[CopyKey, Case], case: Case) -> Optional[Case]:
    """The copy `case` is set against: the baseline its binary names (the planned case's
    `beside`), in its own file; in a file that names none (older ones), the copy of its file,
    device and dtype with its element count (copy_elements)."""
    if case.beside is not None:
        return named_copy(copies.values(), case)
    n = copy_elements(case)
    return copies.get((case.file, case.name.device, case.name.dtype, n)) if n else None


def cases_of(run: Run, family: str) -> list[Case]:
    """The family's cases that ran, without the copy baselines and PyTorch's (peers_of)."""
    return [c for c in run.cases if c.ok and c.name.family == family and role(c) not in ("baseline", "peer")
            and c.bytes_per_second and c.real_time_s]


PeerKey = tuple[str, str, str, tuple, tuple]  # family, dtype, device, shape, extras: a name but its variant


def peer_key(case: Case) -> PeerKey:
    name = case.name
    return name.family, name.dtype, name.device, tuple(sorted(name.shape_dict().items())), tuple(name.extras)


def peers_of(run: Run, family: str) -> dict[PeerKey, Case]:
    """PyTorch's cases of the family that ran (torch_beside.json, role peer), by peer_key: a
    case finds its PyTorch figure by its own key."""
    return {peer_key(c): c for c in run.cases if c.ok and c.name.family == family and c.role == "peer"}


def timed_apart(a: Case, b: Case) -> bool:
    """Whether the two ran in different blocks of the stopping rule (where both files say), so
    that their k-th repetitions are minutes apart, not seconds."""
    return a.block is not None and b.block is not None and a.block != b.block


def paired_ratios(a: Case, b: Case, counter: str) -> list[float]:
    """a's `counter` (a rate: bytes_per_second, flops_per_second) over b's, repetition by
    repetition: the k-th repetitions of the two, wherever both have one. Under the stopping rule
    a block's cases take their k-th repetitions in turn, seconds apart (bench/harness/rounds.hpp),
    so a pair sees one level of the host's drift, which divides out; the spread of the ratios is
    then the cases' own noise, not the minutes of drift that separate one round from another."""
    if timed_apart(a, b):
        return []
    theirs = {s.index: s.counters.get(counter) for s in b.samples if s.index is not None}
    ratios = []
    for s in a.samples:
        mine, other = s.counters.get(counter), theirs.get(s.index) if s.index is not None else None
        if mine and other and mine > 0 and other > 0:
            ratios.append(mine / other)
    return ratios


def same_round_ratio(a: Case, b: Case, counter: str) -> Optional[float]:
    """a's `counter` over b's as the report shows it: the median of their paired ratios
    (paired_ratios: the figure a target's CI is about), where their repetitions pair; else the
    ratio of their medians. The stopping rule ends each case on its own: a transpose resolved in
    6 rounds beside a copy that went on to 20, its last 11 at the host's fast level, has a median
    over rounds the transpose never saw, and the medians' ratio (45%) would say what no round did
    (66% in each of the six)."""
    ratios = paired_ratios(a, b, counter)
    if ratios:
        return statistics.median(ratios)
    mine, theirs = a.counters.get(counter), b.counters.get(counter)
    return mine / theirs if mine and theirs and theirs > 0 else None


def ratio_cell(a: Optional[Case], b: Optional[Case], counter: str, percent: bool = False) -> str:
    """A table's ratio cell: '72.0%' (percent) or '1.50x', a's `counter` over b's by
    same_round_ratio; fmt.MISSING without both."""
    ratio = same_round_ratio(a, b, counter) if a and b else None
    if not ratio:
        return fmt.MISSING
    return fmt.percent(100 * ratio) if percent else f"{ratio:.2f}x"


def median_in_rounds(base: Case, case: Case, counter: str) -> Optional[float]:
    """base's median `counter` over the rounds that `case` ran in too (the repetitions of the
    same index, in one block): the copy's rate that a view's ratio is about; base's median of
    all its repetitions where none pair."""
    if not timed_apart(base, case):
        rounds = {s.index for s in case.samples if s.index is not None}
        values = [v for s in base.samples if s.index in rounds and (v := s.counters.get(counter)) and v > 0]
        if values:
            return statistics.median(values)
    return base.counters.get(counter)


@dataclass(frozen=True)
class Judged:
    """A target judged: its goal (">= 70% copy"), the verdict ("met", "missed", "within noise",
    or fmt.MISSING without a figure to judge by) and what it rests on ("CI 71.2-74.0%")."""

    goal: str
    verdict: str
    detail: str = ""

    @property
    def text(self) -> str:
        """'>= 70% copy: met, CI 71.2-74.0%', the report's target cell."""
        if not self.detail:
            return f"{self.goal}: {self.verdict}"
        joiner = " " if self.detail.startswith("(") else ", "
        return f"{self.goal}: {self.verdict}{joiner}{self.detail}"


def judge(goal: str, own: Optional[Case], base: Optional[Case], counter: str, target: float,
          percent: bool) -> Judged:
    """Whether own's rate over base's reaches `target`, by the 95% CI of the median of their
    paired ratios (paired_ratios; the coverage is said where fewer pairs allow no 95% interval);
    by the ratio of the medians where no two repetitions pair."""
    if not own or not base or not own.counters.get(counter) or not base.counters.get(counter):
        return Judged(goal, fmt.MISSING)
    ci = median_ci(paired_ratios(own, base, counter))
    if ci is None:
        ratio = own.counters[counter] / base.counters[counter]
        return Judged(goal, "met" if ratio >= target else "missed",
                      "(timed in different blocks: medians)" if timed_apart(own, base) else "(no paired repetitions)")

    def show(x: float) -> str:
        return f"{100 * x:.1f}" if percent else f"{x:.2f}"

    level = "CI" if ci.reaches_level else f"{100 * ci.coverage:.0f}% CI"
    return Judged(goal, against_target(ci, target), f"{level} {show(ci.low)}-{show(ci.high)}{'%' if percent else 'x'}")
