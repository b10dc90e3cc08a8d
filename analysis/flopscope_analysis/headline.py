"""The first screen of report.md: the machine, per family and device the best own result against
its ceiling and against the vendor (or baseline) timed beside it in the same process, the biggest
gaps to a vendor, how the own CPU kernels fare against their targets, how sure the medians are, and what was skipped (a count per reason; the rows
are in the appendix at the end).

Ratios pair cases of one file only: bandwidth on a shared machine drifts between processes (the
same copy measured 47-82 GB/s in three binaries of one run), so a ratio across binaries says more
about the minute it ran in than about the kernels."""

from __future__ import annotations

from collections import Counter
from typing import Optional

from . import fmt
from .families import families_in
from .families.beside import copies_of, copy_elements, named_copy, same_round_ratio
from .families.generic import case_ci
from .families.roles import cache_level, ceiling_of, pct_of_ceiling, role
from .load import Case, Run, device_order
from .stats import RESOLVED_WITHIN
from .tables import markdown as table

GAPS_SHOWN = 5
OVER_CEILING = 105  # percent: beyond this the ceiling, measured in another process, drifted
REASONS_SHOWN = 6
CEILING_FAMILY = "peak"  # its cases are the ceilings themselves
# Families whose cases are set against a copy timed beside them (in files that predate a case's
# `beside`, which names it).
SET_AGAINST_A_COPY = ("strided", "broadcast", "convert")


def _peer_key(case: Case) -> tuple:
    """Cases that differ only in variant, timed in one process."""
    return (case.file, case.name.family, case.name.device, case.name.dtype, case.name.shape_text())


def _over(a: Case, b: Case) -> Optional[float]:
    """a's rate over b's (both of one process), round by round where their repetitions pair
    (beside.same_round_ratio), as the family tables and the targets show it."""
    return same_round_ratio(a, b, a.rate_counter)


def _rate_text(case: Case) -> str:
    unit = "GB/s" if case.bound == "memory" else "GFLOP/s"
    return f"{fmt.giga(case.rate)} {unit}"


def _short(case: Case) -> str:
    return f"{case.name.variant} {case.name.dtype} {case.name.shape_text()}"


def _peers(run: Run) -> dict[tuple, dict[str, list[Case]]]:
    groups: dict[tuple, dict[str, list[Case]]] = {}
    for case in run.cases:
        if case.ok and case.rate:
            groups.setdefault(_peer_key(case), {}).setdefault(role(case), []).append(case)
    return groups


def _fastest(cases: list[Case]) -> Optional[Case]:
    return max(cases, key=lambda c: c.rate, default=None)


def _copy_in_process(run: Run, case: Case) -> Optional[Case]:
    """The contiguous copy its binary timed beside a strided, broadcast or convert case (same
    file, device and n; a conversion's copy is f32->f32): the one its binary names, where it does."""
    if case.beside is not None:
        return named_copy(copies_of(run, case.name.family).values(), case)
    n = case.name.shape_dict().get("n") if case.name.family == "convert" else copy_elements(case)
    if not n:
        return None
    found = [c for (path, device, _, m), c in copies_of(run, case.name.family).items()
             if (path, device, m) == (case.file, case.name.device, n)]
    same_dtype = [c for c in found if c.name.dtype == case.name.dtype]
    return (same_dtype or found or [None])[0]


def _machine_lines(run: Run) -> list[str]:
    lines = []
    for device_id in sorted(run.devices, key=device_order):
        device = run.devices[device_id]
        info = device.info
        facts = [str(info[k]) if k != "cores" else f"{info[k]} cores"
                 for k in ("isa", "cores") if info.get(k) is not None]
        if device.caches:
            facts.append("caches " + ", ".join(f"{k} {fmt.size(v)}" for k, v in device.caches.items()))
        ceilings = [f"{k} {fmt.giga(v)} GB/s" for k, v in sorted(device.memory_ceilings.items())]
        ceilings += [f"{k} {fmt.giga(v)} GFLOP/s" for k, v in
                     sorted(device.compute_ceilings.items(), key=lambda kv: -kv[1])]
        line = f"- **{device_id}**: {device.name}" + (f" ({'; '.join(facts)})" if facts else "")
        line += "; measured ceilings: " + (", ".join(ceilings) if ceilings else "none")
        lines.append(line)
    lines += [f"- **{d}** skipped: {why}" for d, why in sorted(run.skipped_devices.items())]
    return lines


def _best_table(run: Run) -> tuple[list[str], list[tuple[float, Case, Case]]]:
    """The per-family table, and every (own rate / vendor rate, own, vendor) of one process."""
    peers = _peers(run)
    gaps: list[tuple[float, Case, Case]] = []
    for group in peers.values():
        own, vendor = _fastest(group.get("own", [])), _fastest(group.get("vendor", []))
        ratio = _over(own, vendor) if own and vendor else None
        if ratio:
            gaps.append((ratio, own, vendor))
    families = sorted({(c.name.family, c.name.device) for c in run.cases
                       if c.ok and c.name.family != CEILING_FAMILY and role(c) == "own"},
                      key=lambda fd: (device_order(fd[1]), fd[0]))
    # Each own case that is the fastest own variant of its shape and dtype in its process: one
    # that another own variant beats there (bf16 decoded to f32 beside AMX tiles) is not the
    # family's best result, however near its own ceiling it runs.
    fastest_own = {id(_fastest(group.get("own", []))) for group in peers.values()}
    rows = []
    over = False
    for family, device_id in families:
        device = run.devices.get(device_id)
        own = [c for c in run.cases if c.ok and c.rate and role(c) == "own" and id(c) in fastest_own
               and (c.name.family, c.name.device) == (family, device_id)]
        out_of_cache = [c for c in own if not cache_level(c, device)]
        pool = out_of_cache or own
        # A view's, broadcast's or conversion's ceiling is the copy of its bytes timed beside it
        # (its block's); bench_peak's, measured in another process, for the others.
        copy_of = {id(c): _copy_in_process(run, c) if c.beside or family in SET_AGAINST_A_COPY else None
                   for c in pool}

        def pct(c: Case) -> Optional[float]:
            copy = copy_of[id(c)]
            ratio = _over(c, copy) if copy and c.rate and copy.rate and not cache_level(c, device) else None
            return 100 * ratio if ratio else pct_of_ceiling(c, device)

        pcts = {id(c): pct(c) for c in pool}  # each pairs its repetitions once
        with_pct = [c for c in pool if pcts[id(c)] is not None]
        best = max(with_pct, key=lambda c: pcts[id(c)]) if with_pct else max(pool, key=lambda c: c.rate)
        ceiling, level, copy = ceiling_of(best, device), cache_level(best, device), copy_of[id(best)]
        share = pcts[id(best)]
        against = (f"in {level}" if level else
                   f"{share:.0f}% of its copy" if share is not None and copy else
                   f"{share:.0f}% of {ceiling[0]}" if share is not None and ceiling else fmt.MISSING)
        if share is not None and not copy and share > OVER_CEILING:
            over = True
            against += " (!)"
        group = peers.get(_peer_key(best), {})
        peer = (_fastest(group.get("vendor", [])) or _fastest(group.get("baseline", []))
                or copy or _copy_in_process(run, best))
        ratio = _over(best, peer) if peer else None
        beside = (f"{ratio:.2f}x {peer.name.variant} ({_rate_text(peer)})" if ratio else "none in its process")
        rows.append([family, device_id, f"`{_short(best)}`", _rate_text(best), against, beside])
    lines = table(["family", "device", "best own case", "rate", "of ceiling", "vs vendor/baseline, same process"],
                  rows) if rows else ["No own case ran."]
    if over:
        lines += ["", f"(!) above {OVER_CEILING:g}% of a ceiling measured in another process (bench_peak): "
                  "bandwidth drifts between processes on a shared machine (this VM switches between "
                  "~47 and ~65 GB/s for seconds at a time), so trust the same-process column."]
    return lines, gaps


def _gap_lines(gaps: list[tuple[float, Case, Case]]) -> list[str]:
    behind = sorted((g for g in gaps if g[0] < 1), key=lambda g: g[0])[:GAPS_SHOWN]
    if not behind:
        return [f"No own case is slower than the vendor timed beside it ({len(gaps)} pairs)."]
    lines = [f"Biggest gaps to a vendor (own rate / vendor rate, same process; {len(behind)} of "
             f"{sum(1 for g in gaps if g[0] < 1)} pairs behind, of {len(gaps)}):", ""]
    lines += table(["case", "own", "vendor", "own / vendor"],
                   [[f"`{own.name}`", _rate_text(own), f"{vendor.name.variant} {_rate_text(vendor)}",
                     f"{ratio:.2f}x"] for ratio, own, vendor in behind])
    return lines


def _noise_line(run: Run) -> str:
    ok = [c for c in run.cases if c.ok]
    cis = [case_ci(c) for c in ok]
    known = [ci for ci in cis if ci is not None]
    resolved = sum(1 for ci in known if ci.resolved)
    reps = Counter(ci.n for ci in known)
    most = reps.most_common(1)[0][0] if reps else 0
    line = (f"- Noise: the 95% order-statistic CI of the median time is within "
            f"±{100 * RESOLVED_WITHIN:g}% for {resolved} of {len(cis)} cases")
    ruled = [c for c in ok if c.resolved is not None]
    if ruled:
        marked = sum(1 for c in ruled if not c.resolved)
        line += (f"; {marked} of {len(ruled)} ({100 * marked / len(ruled):.0f}%) are unresolved "
                 "(the harness found no 95% CI within that after its repetitions: 6 to 20 by its "
                 "stopping rule, or the count given)")
    if known and most < 6:
        line += (f"; most cases have {most} repetitions, and under 6 no interval of the samples "
                 f"reaches 95% (min..max of {most} covers {100 * (1 - 2 / 2 ** most):.0f}%)")
    return line + "."


MISSING_SHOWN = 3


def _missing_lines(run: Run) -> list[str]:
    """What the run does not hold: per binary, the planned cases its file lacks (a binary that
    stopped early, a file cut short), and what files of older binaries cannot say."""
    lines = []
    damage = {f.context.binary: f.damage for f in run.files if f.damage}
    for binary, lost in run.missing.items():
        how = {"partial": " (its partial file: the binary stopped early)",
               "truncated": " (its file is cut short)"}.get(damage.get(binary) or "", "")
        shown = ", ".join(f"`{n}`" for n in lost[:MISSING_SHOWN])
        more = f" and {len(lost) - MISSING_SHOWN} more" if len(lost) > MISSING_SHOWN else ""
        lines.append(f"- **Missing**: {binary}{how} lacks {len(lost)} of its "
                     f"{len(run.file(binary).context.planned)} planned cases: {shown}{more}.")
    for f in run.files:
        if f.damage and f.context.binary not in run.missing:
            lines.append(f"- **Missing**: {f.path.name} is {f.damage}; what it lacks is unknown "
                         "(its context lists no planned cases).")
    lines += [f"- **Unknown**: {line}." for line in run.unknown]
    return lines


def _drift_lines(run: Run) -> list[str]:
    """The baseline copy each binary measured at its start and end (context
    flopscope_drift_start / _end): said where the two differ by more than their CIs."""
    probes = [(f.context.binary, f.context.drift) for f in run.files if f.context.drift]
    if not probes:
        return []
    drifted = []
    for binary, (start, end) in probes:
        apart = start.ci_high < end.ci_low or end.ci_high < start.ci_low
        if apart:
            change = (end.rate - start.rate) / start.rate
            drifted.append(f"{binary} {fmt.giga(start.rate)} → {fmt.giga(end.rate)} GB/s "
                           f"({100 * change:+.0f}%)")
    probe = probes[0][1][0].probe
    if not drifted:
        return [f"- Drift: the baseline copy ({probe}) at the start and end of each of "
                f"{len(probes)} binaries agree within their CIs."]
    return [f"- **Drift**: the baseline copy ({probe}) differs between the start and end of "
            f"{len(drifted)} of {len(probes)} binaries by more than its CIs: " + "; ".join(drifted)
            + ". Ratios in one process pair cases measured seconds apart; figures of different "
            "binaries may differ by this much."]


def _skip_lines(run: Run) -> list[str]:
    skipped = [c for c in run.cases if c.status == "skipped"]
    failed = [c for c in run.cases if c.status == "failed"]
    ran = sum(1 for c in run.cases if c.ok)
    lines = [f"- {ran} cases ran, {len(skipped)} skipped, {len(failed)} failed"
             + (" (**failed cases are listed in the appendix**)" if failed else "") + "."]
    if skipped:
        reasons = Counter(c.reason or "no reason given" for c in skipped).most_common()
        shown = "; ".join(f"{n} × {fmt_reason(why)}" for why, n in reasons[:REASONS_SHOWN])
        rest = sum(n for _, n in reasons[REASONS_SHOWN:])
        if rest:
            shown += f"; {rest} × {len(reasons) - REASONS_SHOWN} other reasons"
        lines.append(f"- Skipped, by reason: {shown} (every row: appendix at the end).")
    return lines


def fmt_reason(why: str, width: int = 70) -> str:
    return why if len(why) <= width else why[:width - 1].rstrip() + "…"


def _target_lines(run: Run) -> list[str]:
    """The goals flopscope sets its own CPU kernels (each family's targets), counted by verdict;
    the missed ones by name."""
    judged = [(what, j) for family in families_in(run) for what, j in family.targets(run)]
    if not judged:
        return []
    counts = Counter(j.verdict for _, j in judged)
    missed = "; ".join(f"`{what}`: {j.goal}, {j.detail}" for what, j in judged if j.verdict == "missed")
    parts = [f"{counts['met']} of {len(judged)} met"]
    parts += [f"{counts[v]} {v}" for v in ("within noise", "missed") if counts[v]]
    if missed:
        parts[-1] += f" ({missed})"
    if counts[fmt.MISSING]:
        parts.append(f"{counts[fmt.MISSING]} without a figure to judge by")
    return [f"- **Targets** of the own CPU kernels (the `target` columns below, each judged by the 95% CI of "
            f"the ratio of repetitions taken in the same round): {', '.join(parts)}."]


def headline_lines(run: Run) -> list[str]:
    lines = ["## Headline", ""]
    lines += _machine_lines(run)
    lines += _skip_lines(run)
    lines += _missing_lines(run)
    lines += _target_lines(run)
    lines += [_noise_line(run)]
    lines += _drift_lines(run) + [""]
    best, gaps = _best_table(run)
    lines += ["Per family and device, the own case nearest its ceiling among the fastest own variant "
              "of each shape and dtype (sizes that fit in a cache are left out where others ran; a "
              "view, broadcast or conversion is held against the copy of its bytes timed beside it, "
              "in its own rounds; a copy against the copy ceiling, a 3-stream op against triad, "
              "compute against its mode's FMA ceiling, measured by bench_peak), and the vendor or "
              "baseline of the same shape timed in the same process:", ""]
    lines += best + [""] + _gap_lines(gaps) + [""]
    return lines
