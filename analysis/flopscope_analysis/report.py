"""report.md of a run directory: header (run, build, devices, peaks, ceilings), a table of
achieved figures per family and device, the plots, and the skipped and failed cases."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

from . import fmt, plots
from .atomic import write_text_atomic
from .load import NOISY_CV, Case, Device, Run

NOISY_MARK = "⚠ noisy"


def cell(value: Any) -> str:
    """A Markdown table cell: no pipes or newlines."""
    return str(value).replace("|", "\\|").replace("\n", " ").strip() or fmt.MISSING


def table(header: list[str], rows: Iterable[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def cv_cell(case: Case) -> str:
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


RESULT_HEADER = ["variant", "dtype", "shape", "bytes/iter", "bound", "median time", "GFLOP/s",
                 "GB/s", "FLOP/byte", "% peak", "% ceiling", "cv"]


def _build_text(build: dict[str, Any]) -> str:
    parts = [f"{build.get('compiler') or '?'}", f"{build.get('build_type') or '?'}",
             f"CUDA {build['cuda']}" if build.get("cuda") else "no CUDA",
             f"commit {build.get('git_commit') or '?'}"]
    return ", ".join(parts)


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
                     "started; `flopscope-analysis ceilings RUN_DIR` writes one from bench_peak).")
    lines.append("")
    return lines


def _results_section(run: Run) -> list[str]:
    ok = sorted((c for c in run.cases if c.ok), key=lambda c: c.name.sort_key())
    lines = ["## Results", ""]
    if not ok:
        return lines + ["No case ran: every case was skipped or failed (see below).", ""]
    noisy = [c for c in ok if c.noisy]
    lines += [
        "Each row is one case: its median over the repetitions (the `median` aggregate, else the "
        "single run); `% peak` and `% ceiling` are against the theoretical peak and the measured "
        "ceiling of the bound that applies (memory: bandwidth, compute: the mode's FLOP/s), as "
        f"the benchmark computed them. cv is the coefficient of variation of the time; above "
        f"{NOISY_CV:.0%} the case is marked {NOISY_MARK}: not to be trusted.", ""]
    if noisy:
        lines += [f"**{len(noisy)} noisy case(s)**: " +
                  ", ".join(f"`{c.name}`" for c in noisy), ""]
    groups: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for case in ok:
        groups[(case.name.family, case.name.device)].append(case)
    for (family, device_id), cases in groups.items():
        device = run.devices.get(device_id)
        title = f"{family} on {device_id}" + (f" ({device.name})" if device else "")
        lines += [f"### {title}", ""]
        lines += table(RESULT_HEADER, [result_row(c) for c in cases])
        notes = [c for c in cases if c.notes]
        if notes:
            lines.append("")
            lines += [f"- `{c.name}`: {'; '.join(c.notes)}" for c in notes]
        lines.append("")
    return lines


CONVERSION_NOTE = (
    "Bytes are read plus written, n x (size(from) + size(to)), as for copy (2 x 4n for f32). "
    "A core whose reads alone limit it converts f32->16-bit at 6/8 = 75% of its copy figure "
    "(the same source, half the output); above 75%, copy was also held back by its writes. "
    "`% copy ceiling` is against bench_peak's measured copy; `% copy, same n` against an f32 "
    "copy of the same element count: bench_convert's f32->f32 baseline, timed in the same "
    "process with the repetitions interleaved, where the run has it (on a shared machine, "
    "bandwidth drifts between processes), else the fastest in the run (bench_copy).")


def _conversion_section(run: Run) -> list[str]:
    """Each conversion (its best variant per dtype pair and n) against the device's copy: the
    measured copy ceiling and, where the run has one, an f32 copy of the same element count,
    preferably the one timed in the same process (bench_convert's f32->f32 baseline)."""
    best: dict[tuple[str, str, int], Case] = {}
    copies: dict[tuple[Path, str, int], Case] = {}  # (file, device, n): the fastest f32 copy
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

    def copy_beside(case: Case, device_id: str, n: int) -> Case | None:
        same_process = copies.get((case.file, device_id, n))
        others = [c for (_, d, m), c in copies.items() if (d, m) == (device_id, n)]
        return same_process or max(others, key=lambda c: c.bytes_per_second, default=None)

    if not best:
        return []
    rows = []
    for (device_id, dtype, n), case in sorted(best.items(), key=lambda kv: (kv[0][0] != "cpu", kv[0])):
        device = run.devices.get(device_id)
        ceiling = device.memory_ceilings.get("copy") if device else None
        copy = copy_beside(case, device_id, n)
        rate = case.bytes_per_second
        rows.append([device_id, dtype, f"n={n}", case.name.variant, fmt.giga(rate),
                     fmt.percent(100 * rate / ceiling) if ceiling else fmt.MISSING,
                     f"{fmt.percent(100 * rate / copy.bytes_per_second)} ({copy.name.family}/{copy.name.variant}, "
                     f"{fmt.giga(copy.bytes_per_second)} GB/s)" if copy else fmt.MISSING,
                     cv_cell(case)])
    lines = ["## Conversions against copy", "", CONVERSION_NOTE, ""]
    lines += table(["device", "conversion", "shape", "best variant", "GB/s", "% copy ceiling",
                    "% copy, same n", "cv"], rows)
    return lines + [""]


def _plots_section(run: Run, run_dir: Path) -> list[str]:
    lines = ["## Plots", ""]
    device_ids = sorted({c.name.device for c in run.cases if c.ok},
                        key=lambda d: (d != "cpu", d))
    wrote = False
    for device_id in device_ids:
        slug = plots.device_slug(device_id)
        roof = plots.roofline(run, device_id, run_dir / "plots" / f"roofline_{slug}.png")
        if roof:
            lines += [f"### Roofline: {device_id}", "",
                      f"![roofline {device_id}](plots/{roof.name})", "",
                      f"*{plots.ROOFLINE_CAPTION}*", ""]
            wrote = True
        copy = plots.copy_bandwidth(run, device_id, run_dir / "plots" / f"copy_bandwidth_{slug}.png")
        if copy:
            lines += [f"### Copy bandwidth against size: {device_id}", "",
                      f"![copy bandwidth {device_id}](plots/{copy.name})", "",
                      f"*{plots.COPY_CAPTION}*", ""]
            wrote = True
    if not wrote:
        lines += ["No plots: no case ran.", ""]
    return lines


def _skips_section(run: Run) -> list[str]:
    failed = sorted((c for c in run.cases if c.status == "failed"), key=lambda c: c.name.sort_key())
    skipped = [c for c in run.cases if c.status == "skipped"]
    lines = ["## Skipped and failed cases", ""]
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


def render(run: Run, run_dir: Path) -> str:
    """The text of report.md; writes the plots under run_dir/plots/ on the way."""
    lines = [f"# flopscope run {run.id}", ""]
    first = run.files[0].context
    date = first.gbench.get("date")
    host = first.gbench.get("host_name")
    if date or host:
        lines += [f"Measured {date or '?'}" + (f" on host `{host}`" if host else "") + ".", ""]

    rows = []
    for f in run.files:
        counts = defaultdict(int)
        for c in f.cases:
            counts[c.status] += 1
        hot = f.context.run.get("hot")
        rows.append([f.context.binary, f.path.name, counts["ok"], counts["skipped"], counts["failed"],
                     _build_text(f.context.build),
                     fmt.MISSING if hot is None else ("hot (--hot: no cache flush)" if hot else "cold")])
    lines += ["## Run", ""]
    lines += table(["binary", "file", "ran", "skipped", "failed", "build", "timing"], rows)
    lines.append("")

    lines += ["## Devices", ""]
    if not run.devices:
        lines += ["No device in the context.", ""]
    for device_id in sorted(run.devices, key=lambda d: (d != "cpu", d)):
        lines += _device_section(run.devices[device_id], run)
    if run.skipped_devices:
        lines += ["### Skipped devices", ""]
        lines += [f"- `{d}`: {reason}" for d, reason in sorted(run.skipped_devices.items())]
        lines.append("")

    lines += _results_section(run)
    lines += _conversion_section(run)
    lines += _plots_section(run, run_dir)
    lines += _skips_section(run)
    return "\n".join(lines).rstrip() + "\n"


def write_report(run: Run, run_dir: Path | str) -> Path:
    run_dir = Path(run_dir)
    text = render(run, run_dir)
    return write_text_atomic(run_dir / "report.md", text)
