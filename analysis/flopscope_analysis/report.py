"""report.md of a run directory: header (run, build, devices, peaks, ceilings), a results
table per family and device, each family's own sections, the plots (a roofline per device and
the families' own), and the skipped and failed cases. What a family adds comes from its module
(families/); this file holds what every family gets."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from . import families, fmt, plots
from .atomic import write_text_atomic
from .families import NOISY_MARK, Plot
from .families.generic import unresolved
from .headline import headline_lines
from .load import Case, Device, Run, device_order
from .stats import RESOLVED_WITHIN
from .tables import markdown as table


def _build_text(build: dict[str, Any]) -> str:
    """What built the binary, from what its context says: a compiled binary names its compiler,
    build type, CUDA and commit; a Python peer (torch_beside, torch_gloo) its PyTorch only, so
    what a context leaves out is left out here, not shown as '?'."""
    if not build:
        return "not recorded"
    parts = [str(build[key]) for key in ("compiler", "build_type") if build.get(key)]
    if build.get("cuda"):
        parts.append(f"CUDA {build['cuda']}")
    elif build.get("build_type"):  # a compiled binary: built without CUDA
        parts.append("no CUDA")
    if build.get("git_commit"):
        parts.append(f"commit {build['git_commit']}")
    return ", ".join(parts) or "not recorded"


def _device_section(device: Device, run: Run) -> list[str]:
    info = device.info
    lines = [f"### {device.id}: {device.name}", ""]
    facts = [f"kind {device.kind}"]
    for key, label in (("isa", "ISA"), ("cores", "cores"), ("sm", "SM"), ("sm_count", "SMs")):
        if info.get(key) is not None:
            facts.append(f"{label} {info[key]}")
    if info.get("memory_bytes") is not None:
        facts.append(f"memory {fmt.size(info['memory_bytes'])}")
    features = info.get("features")
    if isinstance(features, dict) and any(features.values()):
        facts.append("features " + ", ".join(k for k, v in features.items() if v))
    caches = device.caches
    if caches:
        facts.append("caches " + ", ".join(f"{k} {fmt.size(v)}" for k, v in caches.items()))
    lines.append("- " + "; ".join(facts))
    clock = fmt.hz(device.clock_hz) if device.clock_hz else "unknown"
    if device.clock_source:
        clock += f" ({device.clock_source})"
    lines.append(f"- clock: {clock}")
    # Each binary measures the clock itself, and its CPU peaks (and so its % peak) follow it.
    clocks = {f.context.binary: f.context.devices[device.id].clock_hz for f in run.files
              if device.id in f.context.devices and f.context.devices[device.id].clock_hz}
    if len({round(c / 1e6) for c in clocks.values()}) > 1:
        lines.append("- clock measured by each binary (its peaks and % peak follow its own clock; "
                     "the peaks below are the first binary's): "
                     + ", ".join(f"{b} {fmt.hz(c)}" for b, c in clocks.items()))
    memory = f"{fmt.giga(device.memory_peak)} GB/s" if device.memory_peak else "unknown"
    if device.memory_source:
        memory += f" ({device.memory_source})"
    lines += [f"- theoretical memory bandwidth: {memory}", ""]

    peaks = device.compute_peaks
    if peaks:
        lines += ["Theoretical compute peaks:", ""]
        lines += table(["mode", "GFLOP/s", "formula", "source"],
                       [[mode, fmt.giga(p["flops_per_second"]), p["formula"] or fmt.MISSING,
                         p["source"] or fmt.MISSING]
                        for mode, p in sorted(peaks.items(), key=lambda kv: -kv[1]["flops_per_second"])])
    else:
        lines.append("Theoretical compute peaks: none in the context.")
    lines.append("")

    rows = [[f"memory {k}", f"{fmt.giga(v)} GB/s"] for k, v in sorted(device.memory_ceilings.items())]
    rows += [[f"compute {k}", f"{fmt.giga(v)} GFLOP/s"]
             for k, v in sorted(device.compute_ceilings.items(), key=lambda kv: -kv[1])]
    if rows:
        lines += [f"Measured ceilings (from `{device.ceilings_file or '?'}`):", ""]
        lines += table(["ceiling", "value"], rows)
    else:
        lines.append("Measured ceilings: none for this device (no ceilings file when the run "
                     "started; bench_peak writes one with `--write-ceilings=DIR`).")
    lines.append("")
    return lines


def _results_section(run: Run) -> list[str]:
    ok = sorted((c for c in run.cases if c.ok), key=lambda c: c.name.sort_key())
    lines = ["## Results", ""]
    if not ok:
        return lines + ["No case ran: every case was skipped or failed (see below).", ""]
    wide = [c for c in ok if unresolved(c)]
    lines += [
        "Each row is one case: its median over the repetitions (the `median` aggregate, else the "
        "single run). `% peak` is against the theoretical peak, as the benchmark computed it; "
        "`% ceiling` is against the measured ceiling that applies (a copy, view or conversion: "
        "the copy ceiling; a 3-stream op: triad; compute: the mode's FMA ceiling); a memory-bound "
        "case whose bytes fit in a cache of its device shows `in L2` (or L1d, L3) instead of a "
        "percentage of a DRAM ceiling. `95% CI` is the distribution-free confidence interval of "
        "the median time from the order statistics of the repetitions, against the median; "
        "with fewer than 6 repetitions no interval reaches 95% and the coverage of min..max is "
        f"shown; wider than ±{100 * RESOLVED_WITHIN:g}% is marked {NOISY_MARK} "
        f"({len(wide)} of {len(ok)} cases).", ""]
    groups: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for case in ok:
        groups[(case.name.family, case.name.device)].append(case)
    for (family, device_id), cases in groups.items():
        device = run.devices.get(device_id)
        title = f"{family} on {device_id}" + (f" ({device.name})" if device else "")
        lines += [f"### {title}", ""]
        lines += families.family(family).table(cases, device)
        notes = [c for c in cases if c.notes]
        if notes:
            lines.append("")
            lines += [f"- `{c.name}`: {'; '.join(c.notes)}" for c in notes]
        lines.append("")
    return lines


def _plot_lines(plot: Plot, device_id: str) -> list[str]:
    return [f"### {plot.heading}: {device_id}", "",
            f"![{plot.heading.lower()} {device_id}](plots/{plot.path.name})", "",
            f"*{plot.caption}*", ""]


def _plots_section(run: Run, run_dir: Path) -> list[str]:
    """Per device: the roofline (every case at its intensity), then each family's plots."""
    lines = ["## Plots", ""]
    plots_dir = run_dir / "plots"
    device_ids = sorted({c.name.device for c in run.cases if c.ok}, key=device_order)
    wrote = False
    for device_id in device_ids:
        figures = []
        roof = plots.roofline(run, device_id, plots_dir / f"roofline_{plots.device_slug(device_id)}.png")
        if roof:
            figures.append(Plot("Roofline", roof, plots.ROOFLINE_CAPTION))
        for family in families.families_in(run):
            figures += family.plots(run, device_id, plots_dir)
        for plot in figures:
            lines += _plot_lines(plot, device_id)
        wrote = wrote or bool(figures)
    if not wrote:
        lines += ["No plots: no case ran.", ""]
    return lines


def _skips_section(run: Run) -> list[str]:
    failed = sorted((c for c in run.cases if c.status == "failed"), key=lambda c: c.name.sort_key())
    skipped = [c for c in run.cases if c.status == "skipped"]
    lines = ["## Appendix: skipped and failed cases", ""]
    lines.append(f"### Failed ({len(failed)})")
    lines.append("")
    if failed:
        lines += ["These cases failed validation (or another check) and were not timed; they are "
                  "not in the tables or plots.", ""]
        lines += table(["case", "file", "reason"],
                       [[f"`{c.name}`", c.file.name, c.reason] for c in failed])
    else:
        lines.append("None.")
    lines.append("")
    lines.append(f"### Skipped ({len(skipped)})")
    lines.append("")
    if skipped:
        groups: dict[tuple[str, str, str, str], list[Case]] = defaultdict(list)
        for c in skipped:
            groups[(c.name.family, c.name.variant, c.name.device, c.reason or "")].append(c)
        rows = []
        for (family, variant, device_id, reason), cases in sorted(groups.items()):
            dtypes = sorted({c.name.dtype for c in cases})
            shapes = [c.name.shape_text() for c in cases]
            shown = ", ".join(shapes[:4]) + (f", … ({len(shapes)} in all)" if len(shapes) > 4 else "")
            rows.append([f"{family}/{variant}", device_id, len(cases), ", ".join(dtypes), shown, reason])
        lines += table(["family/variant", "device", "cases", "dtypes", "shapes", "reason"], rows)
    else:
        lines.append("None.")
    lines.append("")
    return lines


def _variants_section(run: Run) -> list[str]:
    """Every variant the binaries describe (context schema 2): what it is and whether it could
    run here, so that a label such as "mma.sync (Ampere-style), not wgmma" reaches the report."""
    rows, seen = [], set()
    for f in run.files:
        for v in f.context.variants:
            key = (f.context.binary, v.get("name"), v.get("device"))
            if key in seen:
                continue
            seen.add(key)
            available = v.get("available")
            state = ("yes" if available else "no" if available is False else "not selected")
            if available is False and v.get("reason"):
                state += f": {v['reason']}"
            rows.append([f.context.binary, f"`{v.get('name')}`", str(v.get("device") or fmt.MISSING),
                         str(v.get("role") or fmt.MISSING), str(v.get("description") or fmt.MISSING), state])
    lines = ["## Appendix: variants", ""]
    if not rows:
        return lines + ["No file describes its variants (written by an older binary: context schema 1).", ""]
    return lines + table(["binary", "variant", "device", "role", "what it is", "available here"], rows) + [""]


def render(run: Run, run_dir: Path) -> str:
    """The text of report.md; writes the plots under run_dir/plots/ on the way."""
    lines = [f"# flopscope run {run.id}", ""]
    if run.incomplete:
        lines += [f"**⚠ Incomplete run** ({run.status.describe()}): the results below are what "
                  "was written before it stopped.", ""]
    first = run.files[0].context
    date = first.gbench.get("date")
    host = first.gbench.get("host_name")
    if date or host:
        lines += [f"Measured {date or '?'}" + (f" on host `{host}`" if host else "") + ".", ""]
    lines += headline_lines(run)

    rows = []
    for f in run.files:
        counts = defaultdict(int)
        for c in f.cases:
            counts[c.status] += 1
        hot = f.context.run.get("hot")
        timing = fmt.MISSING if hot is None else ("hot (--hot: no cache flush)" if hot else "cold")
        if f.context.run.get("huge_pages"):
            timing += ", host operands in 2 MiB pages (--huge-pages)"
        rows.append([f.context.binary, f.path.name, counts["ok"], counts["skipped"], counts["failed"],
                     _build_text(f.context.build), timing])
    lines += ["## Run", ""]
    lines += table(["binary", "file", "ran", "skipped", "failed", "build", "timing"], rows)
    lines.append("")

    lines += ["## Devices", ""]
    if not run.devices:
        lines += ["No device in the context.", ""]
    for device_id in sorted(run.devices, key=device_order):
        lines += _device_section(run.devices[device_id], run)
    if run.skipped_devices:
        lines += ["### Skipped devices", ""]
        lines += [f"- `{d}`: {reason}" for d, reason in sorted(run.skipped_devices.items())]
        lines.append("")

    lines += _results_section(run)
    for family in families.families_in(run):
        lines += family.sections(run)
    lines += _plots_section(run, run_dir)
    lines += _skips_section(run)
    lines += _variants_section(run)
    return "\n".join(lines).rstrip() + "\n"


def write_report(run: Run, run_dir: Path | str) -> Path:
    run_dir = Path(run_dir)
    text = render(run, run_dir)
    return write_text_atomic(run_dir / "report.md", text)
