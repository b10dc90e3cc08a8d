"""compare BASE NEW: case by case, did NEW get slower, faster, or stay the same, and did what a
case counts change?

Cases are matched by name (the grammar). For each case that ran on both sides:

- time: the median real_time of each side (the case's median entry, FORMAT.md) and the relative
  change (NEW - BASE) / BASE, as Google Benchmark's tools/compare.py computes it (positive:
  slower); the rate of the case's bound on each side.
- p-value: the two-sided Mann-Whitney U test over the repetitions' real_time, the very call of
  compare.py (gbench/report.py: scipy.stats.mannwhitneyu(base, new, alternative='two-sided')),
  where both sides have at least 2 repetitions (compare.py's UTEST_MIN_REPETITIONS).
- verdict (`verdict()`): same, faster, slower or noisy.
- run-to-run spread (`run_to_run_spread()`): a case's repetitions are timed in one process, so
  their cv and U test see the noise inside a run, not how much two runs of the same binary differ
  (a shared machine's load, where the process landed): on the 2-core VMs two quick runs of one
  commit differ by a robust 6-23% per binary while each case's cv is 1-5%. Per binary, the robust
  standard deviation of its cases' changes is that spread; a change within SPREAD_K of them is
  `noisy`, not a regression. A single case that moved while the others stayed (a real regression
  of one kernel) has a spread near 0 and is judged as before; a whole binary slowed alike has a
  small spread too, and is slower.
- accounting: the `flops` and `bytes` counters must be equal; a difference is a failure whatever
  the timing says (a count is a property of the code, not of the machine).

A case that ran in BASE and failed validation in NEW is a failure too. Cases on one side only,
or skipped on a side, are listed. The exit code is 1 when there is a failure, or a `slower`
verdict beyond the threshold while timing gates (same machine, and not --no-timing-gate), else 0.
Runs from different machines (their devices' keys differ) are compared, said so at the top,
and never gated on timing.
"""

from __future__ import annotations

import math
import statistics
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

from . import fmt, tables
from .errors import AnalysisError
from .load import NOISY_CV, Case, Run

ALPHA = 0.05  # compare.py's default --alpha
UTEST_MIN_REPETITIONS = 2  # compare.py (gbench/report.py) runs the U test from 2 repetitions a side
DEFAULT_THRESHOLD = 0.05  # a slower verdict beyond 5% is a regression
SAME, FASTER, SLOWER, NOISY = "same", "faster", "slower", "noisy"
ACCOUNTING_COUNTERS = ("flops", "bytes")
SPREAD_MIN_CASES = 8  # a binary's run-to-run spread needs at least this many cases on both sides
SPREAD_K = 3.0  # a change within 3 run-to-run spreads of its binary is noisy


def relative_change(old: float, new: float) -> float:
    """compare.py's calculate_change: (new - old) / |old| (0 when both are 0)."""
    if old == 0 and new == 0:
        return 0.0
    if old == 0:
        return (new - old) / ((old + new) / 2)
    return (new - old) / abs(old)


def _mannwhitneyu(base: list[float], new: list[float]) -> float:
    from scipy.stats import mannwhitneyu

    with warnings.catch_warnings():  # scipy warns where every value ties; the p-value stands
        warnings.simplefilter("ignore")
        return float(mannwhitneyu(base, new, alternative="two-sided").pvalue)


def utest_pvalue(base: list[float], new: list[float]) -> Optional[float]:
    """The p-value of compare.py's U test of two samples; None with fewer than 2 values a side."""
    if min(len(base), len(new)) < UTEST_MIN_REPETITIONS:
        return None
    return _mannwhitneyu(base, new)


@lru_cache(maxsize=None)
def smallest_pvalue(n_base: int, n_new: int) -> float:
    """The smallest p-value the U test can give with these repetition counts (samples that do
    not overlap at all): 2 against 2 gives 1/3, 3 against 3 gives 0.1, 4 against 4 gives 0.029."""
    return _mannwhitneyu([float(i) for i in range(n_base)], [float(n_base + i) for i in range(n_new)])


def cv_of(case: Case) -> Optional[float]:
    """The case's cv of real_time: its cv aggregate, else computed from its samples."""
    if case.cv is not None:
        return case.cv
    times = [s.real_time_s for s in case.samples]
    if len(times) < 2 or statistics.mean(times) == 0:
        return None
    return statistics.stdev(times) / statistics.mean(times)


def run_to_run_spread(changes: list[float]) -> Optional[float]:
    """The robust standard deviation (1.4826 x the median absolute deviation from the median) of
    the relative changes of one binary's cases; None with fewer than SPREAD_MIN_CASES of them."""
    if len(changes) < SPREAD_MIN_CASES:
        return None
    middle = statistics.median(changes)
    return 1.4826 * statistics.median(abs(c - middle) for c in changes)


def judge(change: float, noise: Optional[float], pvalue: Optional[float], n_base: int,
          n_new: int, noisy: bool, spread: Optional[float] = None) -> tuple[str, str]:
    """(verdict, basis): same, faster, slower or noisy, and the one rule that decided it, in
    this order:

    1. same: the change is within the noise of both sides (|change| <= the larger cv);
    2. noisy: fewer than 2 repetitions on a side (no cv, no U test: nothing to judge by);
    3. same: the U test is not significant (p >= 0.05), where these repetition counts can reach
       significance at all (from 4 against 4; with fewer, the change beyond the noise decides);
    4. noisy: a side's cv is above 5% (the case is marked noisy: not to be trusted);
    5. noisy: the change is within SPREAD_K run-to-run spreads of its binary (`spread`, None
       where unknown): the two runs differ that much anyway;
    6. slower or faster, by the sign of the change of time.

    The basis names the test behind the verdict, so a p-value is shown only where the U test
    decided (rules 3 and 6 with enough repetitions), never beside a verdict it did not make.
    """
    if abs(change) <= (noise or 0.0):
        return SAME, f"within cv {100 * (noise or 0.0):.1f}%"
    if min(n_base, n_new) < UTEST_MIN_REPETITIONS or pvalue is None:
        return NOISY, f"{n_base} v {n_new} repetitions: nothing to test"
    can_decide = smallest_pvalue(n_base, n_new) < ALPHA
    if can_decide and pvalue >= ALPHA:
        return SAME, f"U test p={pvalue:.3g}"
    if noisy:
        return NOISY, f"cv {100 * (noise or 0.0):.1f}% > {100 * NOISY_CV:g}%"
    if spread is not None and abs(change) <= SPREAD_K * spread:
        return NOISY, f"within {SPREAD_K:g}x run-to-run spread {100 * spread:.1f}%"
    judged = SLOWER if change > 0 else FASTER
    if can_decide:
        return judged, f"U test p={pvalue:.3g}"
    return judged, (f"beyond cv {100 * (noise or 0.0):.1f}% ({n_base} v {n_new} repetitions: "
                    f"the U test cannot reach p<{ALPHA:g})")


def verdict(change: float, noise: Optional[float], pvalue: Optional[float], n_base: int,
            n_new: int, noisy: bool, spread: Optional[float] = None) -> str:
    """The verdict of `judge()` without its basis."""
    return judge(change, noise, pvalue, n_base, n_new, noisy, spread)[0]


def _count(value: Optional[float]) -> str:
    """A counter exactly as written: 524288, 1.5, — when missing."""
    if value is None:
        return fmt.MISSING
    return str(int(value)) if value.is_integer() else repr(value)


def accounting_changes(base: Case, new: Case) -> list[str]:
    """'flops 4096 -> 8192' for each accounting counter that differs (a missing one differs)."""
    changes = []
    for key in ACCOUNTING_COUNTERS:
        old, now = base.counter(key), new.counter(key)
        same = old == now or (old is not None and now is not None and math.isnan(old) and math.isnan(now))
        if not same:
            changes.append(f"{key} {_count(old)} -> {_count(now)}")
    return changes


@dataclass
class Pair:
    """One case that ran on both sides."""

    name: str
    base: Case
    new: Case
    change: float  # relative change of the median time, NEW against BASE (positive: slower)
    pvalue: Optional[float]
    verdict: str
    accounting: list[str]  # the accounting counters that differ
    basis: str = ""  # the rule of judge() that decided the verdict ("U test p=0.003", ...)

    @property
    def rate_change(self) -> Optional[float]:
        if self.base.rate and self.new.rate is not None:
            return self.new.rate / self.base.rate - 1
        return None


def median_change(base: Case, new: Case) -> float:
    return relative_change(base.real_time_s or 0.0, new.real_time_s or 0.0)


def compare_cases(name: str, base: Case, new: Case, spread: Optional[float] = None,
                  paired: bool = False) -> Pair:
    """One case of both sides; `spread` is its binary's run-to-run spread (None: unknown).
    `paired`: the sides ran interleaved (ab), so drift within a side is common to both and its
    cv does not make the case noisy; the U test decides."""
    base_times = [s.real_time_s for s in base.samples]
    new_times = [s.real_time_s for s in new.samples]
    change = median_change(base, new)
    noises = [cv for cv in (cv_of(base), cv_of(new)) if cv is not None]
    pvalue = utest_pvalue(base_times, new_times)
    noisy = not paired and any(cv > NOISY_CV for cv in noises)
    judged, basis = judge(change, max(noises, default=None), pvalue, len(base_times), len(new_times),
                          noisy, spread)
    return Pair(name, base, new, change, pvalue, judged, accounting_changes(base, new), basis)


def machines_differ(base: Run, new: Run) -> Optional[str]:
    """Why the two runs are from different machines (the keys of their devices differ, or they
    share no device), or None when they are from the same one."""
    common = sorted(set(base.devices) & set(new.devices))
    if not common:
        return f"no device in common (BASE {base.machine_key}, NEW {new.machine_key})"
    differ = [d for d in common if base.devices[d].file_key != new.devices[d].file_key]
    if not differ:
        return None
    return "; ".join(f"{d}: BASE {base.devices[d].file_key}, NEW {new.devices[d].file_key}" for d in differ)


def _cases_by_name(run: Run) -> dict[str, Case]:
    cases: dict[str, Case] = {}
    for case in run.cases:
        name = str(case.name)
        if name in cases:
            raise AnalysisError(f"{run.source}: case {name} is in both {cases[name].file.name} and "
                                f"{case.file.name}: cannot tell which to compare")
        cases[name] = case
    return cases


@dataclass
class Comparison:
    base: Run
    new: Run
    threshold: float
    timing_gate: bool  # asked for: timing gates unless --no-timing-gate
    different_machines: Optional[str]
    pairs: list[Pair] = field(default_factory=list)
    failed_in_new: list[tuple[Case, Case]] = field(default_factory=list)  # (base ok, new failed)
    not_compared: list[tuple[str, str]] = field(default_factory=list)  # (name, why)
    only_base: list[str] = field(default_factory=list)
    only_new: list[str] = field(default_factory=list)
    spreads: dict[str, float] = field(default_factory=dict)  # binary -> run-to-run spread

    @property
    def timing_gates(self) -> bool:
        return self.timing_gate and self.different_machines is None

    @property
    def accounting_failures(self) -> list[Pair]:
        return [p for p in self.pairs if p.accounting]

    @property
    def slower_beyond_threshold(self) -> list[Pair]:
        return [p for p in self.pairs if p.verdict == SLOWER and p.change > self.threshold]

    @property
    def regressions(self) -> list[Pair]:
        return self.slower_beyond_threshold if self.timing_gates else []

    @property
    def failed(self) -> bool:
        return bool(self.accounting_failures or self.failed_in_new or self.regressions)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0


def _why_not_compared(base: Case, new: Case) -> str:
    def side(label: str, case: Case) -> str:
        return f"{case.status} in {label}" + (f" ({case.reason})" if case.reason else "")

    if (base.status, base.reason) == (new.status, new.reason):
        return side("both", base)
    return "; ".join(side(label, c) for label, c in (("BASE", base), ("NEW", new)) if not c.ok)


def compare_runs(base: Run, new: Run, threshold: float = DEFAULT_THRESHOLD,
                 timing_gate: bool = True, paired: bool = False) -> Comparison:
    result = Comparison(base, new, threshold, timing_gate, machines_differ(base, new))
    base_cases, new_cases = _cases_by_name(base), _cases_by_name(new)
    both = [(name, b, new_cases[name]) for name, b in base_cases.items()
            if name in new_cases and b.ok and new_cases[name].ok]
    changes: dict[str, list[float]] = {}
    for _, b, n in both:
        changes.setdefault(b.binary, []).append(median_change(b, n))
    for binary, values in changes.items():
        spread = run_to_run_spread(values)
        if spread is not None:
            result.spreads[binary] = spread
    for name, b in base_cases.items():
        n = new_cases.get(name)
        if n is None:
            result.only_base.append(name)
        elif b.ok and n.ok:
            result.pairs.append(compare_cases(name, b, n, None if paired else result.spreads.get(b.binary),
                                              paired))
        elif b.ok and n.status == "failed":
            result.failed_in_new.append((b, n))
        else:
            result.not_compared.append((name, _why_not_compared(b, n)))
    result.only_new = [name for name in new_cases if name not in base_cases]
    result.pairs.sort(key=lambda p: p.base.name.sort_key())
    result.only_base.sort(key=lambda name: base_cases[name].name.sort_key())
    result.only_new.sort(key=lambda name: new_cases[name].name.sort_key())
    return result


# ---------------------------------------------------------------------------------------------
# Output: plain text for the terminal and CI logs, Markdown for --markdown


PAIR_HEADER = ["case", "BASE time", "NEW time", "change", "BASE rate", "NEW rate", "verdict", "basis"]
MARKDOWN_LIMIT = 60_000  # characters; GitHub's limit for a comment or a job summary is 65,536
NAMES_SHOWN = 10  # of a list of cases given as a count (only in BASE, only in NEW), the first few


def _pair_row(pair: Pair, threshold: float) -> list[str]:
    mark = ""
    if pair.accounting:
        mark = " ACCOUNTING"
    elif pair.verdict == SLOWER and pair.change > threshold:
        mark = f" >{100 * threshold:g}%"
    unit = pair.base.rate_unit
    return [pair.name, fmt.duration(pair.base.real_time_s), fmt.duration(pair.new.real_time_s),
            f"{100 * pair.change:+.1f}%", fmt.rate(pair.base.rate, unit), fmt.rate(pair.new.rate, unit),
            pair.verdict + mark, pair.basis]


def _describe(run: Run) -> str:
    return f"{run.id} ({run.machine_key}, commit {run.git_commit or '?'})"


def headline(result: Comparison) -> list[str]:
    """The lines above the table: what was compared with what, and whether timing gates."""
    lines = [f"BASE {_describe(result.base)}", f"NEW  {_describe(result.new)}"]
    if result.different_machines:
        lines.append(f"DIFFERENT MACHINES ({result.different_machines}): timing is shown but never "
                     "gates; accounting still does")
    elif not result.timing_gate:
        lines.append("timing is shown but does not gate; accounting does")
    for label, run in (("BASE", result.base), ("NEW", result.new)):
        if run.incomplete:
            lines.append(f"{label} is an incomplete run: {run.status.describe()}")
        missing = run.missing
        if missing:
            lines.append(f"{label} lacks {sum(map(len, missing.values()))} planned case(s): "
                         + ", ".join(f"{b} {len(names)}" for b, names in missing.items()))
        lines += [f"{label}: {line}" for line in run.unknown]
    if result.spreads:
        spreads = ", ".join(f"{binary} {100 * spread:.1f}%" for binary, spread in sorted(result.spreads.items()))
        lines.append(f"run-to-run spread per binary (robust sd of its cases' changes; a change within "
                     f"{SPREAD_K:g}x is noisy): {spreads}")
    return lines


def counts_line(result: Comparison) -> str:
    verdicts = [p.verdict for p in result.pairs]
    counts = ", ".join(f"{verdicts.count(v)} {v}" for v in (SAME, FASTER, SLOWER, NOISY))
    return (f"{len(result.pairs)} compared: {counts}; {len(result.accounting_failures)} accounting "
            f"change(s); {len(result.failed_in_new)} failed in NEW; "
            f"{len(result.slower_beyond_threshold)} slower by more than "
            f"{100 * result.threshold:g}%")


def outcome_line(result: Comparison) -> str:
    reasons = []
    if result.accounting_failures:
        reasons.append(f"{len(result.accounting_failures)} accounting change(s)")
    if result.failed_in_new:
        reasons.append(f"{len(result.failed_in_new)} case(s) failed in NEW")
    if result.regressions:
        reasons.append(f"{len(result.regressions)} case(s) slower by more than "
                       f"{100 * result.threshold:g}%")
    return f"FAIL: {', '.join(reasons)}" if reasons else "OK: no regression"


@dataclass
class Section:
    """One part of the output: a title, then a table of pairs, or lines (case: what), or a count."""

    title: str
    pairs: list[Pair] = field(default_factory=list)
    items: list[tuple[str, str]] = field(default_factory=list)  # (case name, what about it)
    total: Optional[int] = None  # the cases the section is about, where items are fewer
    more: int = 0  # names of cases left out of items (given as "... and N more")

    @property
    def size(self) -> int:
        return len(self.pairs) or (self.total if self.total is not None else len(self.items))


def _names(title: str, names: list[str], every: bool) -> Section:
    shown = names if every else names[:NAMES_SHOWN]
    return Section(title, items=[(n, "") for n in shown], total=len(names), more=len(names) - len(shown))


def sections(result: Comparison, every: bool = False) -> list[Section]:
    """The output's parts, most important first: what fails, then what changed (slower,
    faster), then what could not be judged (noisy); unchanged cases, skips and cases on one
    side only are counts (with `every`, the text output lists them all)."""
    pairs = result.pairs
    beyond = set(id(p) for p in result.slower_beyond_threshold)
    changed = lambda p: abs(p.change)  # noqa: E731 - a sort key
    out = [
        Section("Accounting changes (a failure whatever the timing)",
                items=[(p.name, ", ".join(p.accounting)) for p in result.accounting_failures]),
        Section("Failed in NEW (ran in BASE)", items=[(str(n.name), n.reason or "")
                                                     for _, n in result.failed_in_new]),
        Section(f"Slower by more than {100 * result.threshold:g}%"
                + ("" if result.timing_gates else " (not gating: see above)"),
                pairs=sorted((p for p in pairs if id(p) in beyond), key=changed, reverse=True)),
        Section(f"Slower within {100 * result.threshold:g}%",
                pairs=sorted((p for p in pairs if p.verdict == SLOWER and id(p) not in beyond),
                             key=changed, reverse=True)),
        Section("Faster", pairs=sorted((p for p in pairs if p.verdict == FASTER), key=changed, reverse=True)),
        Section("Noisy (could not be judged), largest change first",
                pairs=sorted((p for p in pairs if p.verdict == NOISY), key=changed, reverse=True)),
    ]
    same = [p for p in pairs if p.verdict == SAME]
    if every:
        out.append(Section("Same", pairs=same))
    elif same:
        out.append(Section("Same", items=[(f"{len(same)} case(s) within the noise or not significant", "")],
                           total=len(same)))
    reasons: dict[str, int] = {}
    for _, why in result.not_compared:
        reasons[why] = reasons.get(why, 0) + 1
    if every:
        out.append(Section("Not compared", items=list(result.not_compared)))
    else:
        out.append(Section("Not compared", items=[(f"{n} case(s)", why) for why, n in
                                                  sorted(reasons.items(), key=lambda kv: -kv[1])],
                           total=len(result.not_compared)))
    out += [_names("Only in BASE", result.only_base, every), _names("Only in NEW", result.only_new, every)]
    return [s for s in out if s.size]


def _item_line(name: str, what: str, code: bool) -> str:
    shown = f"`{name}`" if code and "/" in name else name
    return shown + (f": {what}" if what else "")


def _more(section: Section) -> Optional[str]:
    return f"... and {section.more} more" if section.more else None


def text_lines(result: Comparison, every: bool = False) -> list[str]:
    lines = headline(result) + [""]
    if not result.pairs:
        lines.append("no case ran on both sides")
    for section in sections(result, every):
        lines += ["", f"{section.title} ({section.size}):"]
        if section.pairs:
            lines += ["  " + line for line in tables.text(PAIR_HEADER, [_pair_row(p, result.threshold)
                                                                        for p in section.pairs])]
        lines += [f"  {_item_line(name, what, False)}" for name, what in section.items]
        if _more(section):
            lines.append(f"  {_more(section)}")
    return lines + ["", counts_line(result), outcome_line(result)]


def markdown_lines(result: Comparison, limit: int = MARKDOWN_LIMIT, full: Optional[str] = None,
                   level: int = 2, title: str = "flopscope compare") -> list[str]:
    """The comparison as Markdown of at most `limit` characters (joined with newlines): the
    sections in order of importance, cut where the limit is reached with a line saying how many
    rows were left out and where the full comparison is (`full`: a link or a command)."""
    where = full or ("`flopscope-analysis compare BASE NEW --all` prints every case")
    cut_line = "*Cut to stay under {limit:,} characters: {n} more case(s) left out; the full comparison: {where}.*"
    reserve = len(cut_line.format(limit=limit, n=10 ** 6, where=where)) + 2
    head = "#" * level
    lines = [f"{head} {title}: {outcome_line(result)}", ""]
    lines += [f"- {line}" for line in headline(result)] + [f"- {counts_line(result)}", ""]
    used = sum(len(line) + 1 for line in lines)
    left_out = 0
    for section in sections(result):
        block = [f"{head}# {section.title} ({section.size})", ""]
        if section.pairs:
            rows = tables.markdown(PAIR_HEADER, [[f"`{r[0]}`", *r[1:]] for r in
                                                 (_pair_row(p, result.threshold) for p in section.pairs)])
        else:
            rows = [f"- {_item_line(name, what, True)}" for name, what in section.items]
            if _more(section):
                rows.append(f"- {_more(section)}")
        header_rows = 2 if section.pairs else 0
        cost = sum(len(line) + 1 for line in block + rows[:header_rows + 1])
        if left_out or used + cost + reserve > limit:
            left_out += section.size
            continue
        lines += block + rows[:header_rows]
        used += sum(len(line) + 1 for line in block + rows[:header_rows])
        shown = 0
        for row in rows[header_rows:]:
            if used + len(row) + 1 + reserve > limit:
                break
            lines.append(row)
            used += len(row) + 1
            shown += 1
        if shown < len(rows) - header_rows:
            left_out += len(rows) - header_rows - shown
        lines.append("")
        used += 1
    if left_out:
        lines.append(cut_line.format(limit=limit, n=left_out, where=where))
    return lines
