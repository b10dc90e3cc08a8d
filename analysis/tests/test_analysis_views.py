"""The strided and broadcast families' report modules: "what contiguity costs", "what broadcasting
saves" and their plots, on made-up runs whose figures are chosen so that every expected cell is
known (a case's GB/s is bytes / time; each is paired with the copy of its own process)."""

from __future__ import annotations

import importlib.util
import itertools
import json

from conftest import FIXTURES
from flopscope_analysis import plots
from flopscope_analysis.families import broadcast, strided
from flopscope_analysis.load import load_run
from flopscope_analysis.report import write_report

spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
fixtures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fixtures)

PEAKS = {"flops": 3.328e11}


def entries(index: int, name: str, nbytes: float, gbps: float, flops: float = 0.0, **counters) -> list[dict]:
    seconds = nbytes / (gbps * 1e9)
    out = fixtures.case_entries(index, f"{name}/real_time", [seconds] * 3, flops, nbytes, "bound=memory", PEAKS, "memory")
    for entry in out:
        entry.update(counters)
    return out


ROLES = {"reorder": "vendor", "cublas_geam": "vendor", "onednn": "vendor", "copy": "baseline", "reference": "reference"}


def write(tmp_path, binary: str, cases: list[tuple]) -> load_run:
    benchmarks = []
    for i, (name, nbytes, gbps, *rest) in enumerate(cases):
        benchmarks += entries(i, name, nbytes, gbps, **(rest[0] if rest else {}))
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    # A schema-2 context: the planned cases carry their variants' roles, as the binaries write them.
    context = fixtures.with_roles(fixtures.context(binary, fixtures.CEILINGS), [name for name, *_ in cases], ROLES)
    (run_dir / f"{binary}.json").write_text(json.dumps({"context": context, "benchmarks": benchmarks}))
    return run_dir


M = 1 << 20  # 1024 x 1024 elements: an f32 transpose moves 8 MiB


def strided_run(tmp_path):
    t = "strided/{}/f32/cpu/m=1024,n=1024/view=transpose"
    s = "strided/{}/f32/cpu/m=1024,n=4096/view=slice/step={}"
    return write(tmp_path, "bench_strided", [
        (f"strided/copy/f32/cpu/n={M}", 8.0 * M, 40.0),
        (t.format("naive"), 8.0 * M, 4.0, {"elements": M, "bytes_touched": 8.0 * M}),
        (t.format("simd"), 8.0 * M, 30.0, {"elements": M, "bytes_touched": 8.0 * M}),
        (t.format("reorder"), 8.0 * M, 20.0, {"elements": M, "bytes_touched": 8.0 * M}),
        # x[:, ::4] of 1024 x 4096 f32: M elements read (every line: touched 4 MiB + 4 MiB... here 2.5x)
        (s.format("simd", 4), 8.0 * M, 10.0, {"elements": M, "bytes_touched": 20.0 * M}),
        (s.format("simd", 1), 32.0 * M, 36.0, {"elements": 4 * M, "bytes_touched": 32.0 * M}),
        (f"strided/copy/f32/cpu/n={4 * M}", 32.0 * M, 40.0),
    ])


def test_contiguity_cost_sets_own_and_vendor_against_the_same_process_copy(tmp_path):
    lines = strided.cost_section(load_run(strided_run(tmp_path)))
    rows = {line.split(" | ")[1]: line.split(" | ") for line in lines if line.startswith("| cpu |")}
    transpose = rows["transpose"]
    assert transpose[3:] == ["m=1024,n=1024", "8 MiB", "1.00", "40.0", "simd 30.0", "75.0%", "reorder 20.0",
                             "50.0%", "1.50x", "— |"]  # no target for a 1024^2 transpose
    slice4 = rows["slice step=4"]
    assert slice4[5:9] == ["2.50", "40.0", "simd 10.0", "25.0%"] and slice4[9] == "—"
    assert slice4[12] == ">= 1.00x vendor: — |"  # no vendor figure to judge it by
    # views in a reader's order: transpose before slices, slices by step
    assert [line.split(" | ")[1] for line in lines if line.startswith("| cpu |")] == \
        ["transpose", "slice step=1", "slice step=4"]


def rounds(index: int, name: str, nbytes: float, gbps: list[float], **counters) -> list[dict]:
    """A case's entries with one repetition per round at the given GB/s (repetition_index k: round k)."""
    out = fixtures.case_entries(index, f"{name}/real_time", [nbytes / (g * 1e9) for g in gbps], 0.0, nbytes,
                                "bound=memory", PEAKS, "memory")
    for entry in out:
        entry.update(counters)
    return out


def write_rounds(tmp_path, cases: list[tuple], drop_index: bool = False, planned_extra: dict | None = None):
    benchmarks = []
    for i, (name, nbytes, gbps, counters) in enumerate(cases):
        benchmarks += rounds(i, name, nbytes, gbps, **counters)
    if drop_index:
        for entry in benchmarks:
            entry.pop("repetition_index", None)
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    context = fixtures.with_roles(fixtures.context("bench_strided", fixtures.CEILINGS), [c[0] for c in cases], ROLES,
                                  planned_extra)
    (run_dir / "bench_strided.json").write_text(json.dumps({"context": context, "benchmarks": benchmarks}))
    return run_dir


def target_cells(run_dir) -> dict[str, str]:
    return {line.split(" | ")[1]: line.split(" | ")[12] for line in strided.cost_section(load_run(run_dir))
            if line.startswith("| cpu |")}


T4096 = "strided/{}/f32/cpu/m=4096,n=4096/view=transpose"
SLICE2 = "strided/{}/f32/cpu/m=1024,n=4096/view=slice/step=2"
COPY16M = f"strided/copy/f32/cpu/n={16 * M}"


def test_a_target_is_judged_by_the_ratio_of_repetitions_taken_in_the_same_round(tmp_path):
    # The host's bandwidth steps from 40 to 60 GB/s after round 6. The copy ran 12 rounds, the
    # transpose was done after 6, at 0.72x the copy in each: its median (28.8) over the copy's
    # (50) would read 57.6%, but in every round both ran it moved 72% of what the copy did. The
    # row says what the target is about: the copy in those rounds (40.0), and 72.0%.
    run_dir = write_rounds(tmp_path, [
        (COPY16M, 128.0 * M, [40.0] * 6 + [60.0] * 6, {}),
        (T4096.format("simd"), 128.0 * M, [28.8] * 6, {"elements": 16 * M}),
        (T4096.format("reorder"), 128.0 * M, [8.0] * 3 + [12.0] * 3, {"elements": 16 * M}),
    ])
    lines = strided.cost_section(load_run(run_dir))
    row = next(line.split(" | ") for line in lines if line.startswith("| cpu | transpose"))
    assert (row[6], row[7], row[8]) == ("40.0", "simd 28.8", "72.0%")
    assert row[12] == ">= 70% copy: met, CI 72.0-72.0% |"  # 6 pairs: min..max covers 96.9%
    # The vendor's columns the same way: 8 then 12 GB/s over a copy at 40: 20% and 30% by round
    # (median 25%), 2.40-3.60x own / vendor (median 3.00x; the medians' ratio would read 2.88x).
    assert (row[9], row[10], row[11]) == ("reorder 10.0", "25.0%", "3.00x")


def test_a_target_inside_the_ratios_interval_is_within_noise_and_one_below_it_missed(tmp_path):
    copy = [40.0, 50.0, 40.0, 60.0, 45.0, 55.0]
    straddling = [0.66, 0.68, 0.70, 0.72, 0.74, 0.69]
    run_dir = write_rounds(tmp_path, [
        (COPY16M, 128.0 * M, copy, {}),
        (T4096.format("simd"), 128.0 * M, [c * r for c, r in zip(copy, straddling)], {"elements": 16 * M}),
        (SLICE2.format("simd"), 4.0 * M, [9.0, 9.5, 9.2, 9.6, 9.1, 9.4], {"elements": M // 2}),
        (SLICE2.format("reorder"), 4.0 * M, [10.0] * 6, {"elements": M // 2}),
    ])
    cells = target_cells(run_dir)
    assert cells["transpose"] == ">= 70% copy: within noise, CI 66.0-74.0% |"
    assert cells["slice step=2"] == ">= 1.00x vendor: missed, CI 0.90-0.96x |"


def test_a_target_says_how_sure_it_is_with_few_rounds_or_none_paired(tmp_path):
    three = [(COPY16M, 128.0 * M, [40.0] * 3, {}), (T4096.format("simd"), 128.0 * M, [28.4] * 3, {"elements": 16 * M})]
    assert target_cells(write_rounds(tmp_path, three))["transpose"] == ">= 70% copy: met, 75% CI 71.0-71.0% |"
    # A file without repetition_index (an old binary): the medians' ratio, and the reason
    assert target_cells(write_rounds(tmp_path, three, drop_index=True))["transpose"] == \
        ">= 70% copy: met (no paired repetitions) |"
    # No vendor figure to judge a slice by
    alone = [(SLICE2.format("simd"), 4.0 * M, [9.0] * 3, {"elements": M // 2})]
    assert target_cells(write_rounds(tmp_path, alone))["slice step=2"] == ">= 1.00x vendor: — |"


def test_a_case_is_set_against_the_copy_its_binary_names_and_paired_only_in_its_block(tmp_path):
    # Two copies of 16Mi elements' bytes ran (say, one a case's and one another family's n); the
    # binary says the transpose is set against the second: its ratio is 0.72 of that one (28.8 of
    # 40), not 0.36 of the first (80 GB/s), which its element count alone would have chosen.
    other = "strided/copy/f32/cpu/n=16777217"
    cases = [
        (COPY16M, 128.0 * M, [80.0] * 6, {}),
        (other, 128.0 * M, [40.0] * 6, {}),
        (T4096.format("simd"), 128.0 * M, [28.8] * 6, {"elements": 16 * M}),
    ]
    named = {T4096.format("simd"): {"beside": other, "block": 4}, other: {"block": 4}}
    row = next(line.split(" | ") for line in strided.cost_section(load_run(write_rounds(tmp_path, cases, planned_extra=named)))
               if line.startswith("| cpu | transpose"))
    assert (row[6], row[8], row[12]) == ("40.0", "72.0%", ">= 70% copy: met, CI 72.0-72.0% |")
    # Timed in different blocks (the copy's block was full), the k-th repetitions are not a pair:
    # the medians' ratio, and the reason.
    apart = {T4096.format("simd"): {"beside": other, "block": 4}, other: {"block": 1}}
    assert target_cells(write_rounds(tmp_path, cases, planned_extra=apart))["transpose"] == \
        ">= 70% copy: met (timed in different blocks: medians) |"
    # A named copy that did not run: no ratio, rather than another copy's.
    missing = {T4096.format("simd"): {"beside": "strided/copy/f32/cpu/n=3"}}
    row = next(line.split(" | ") for line in strided.cost_section(load_run(write_rounds(tmp_path, cases, planned_extra=missing)))
               if line.startswith("| cpu | transpose"))
    assert (row[6], row[8]) == ("—", "—")


def test_strided_plots_and_report_section(tmp_path):
    run_dir = strided_run(tmp_path)
    write_report(load_run(run_dir), run_dir)
    report = (run_dir / "report.md").read_text()
    assert "## What contiguity costs" in report
    for name in ("strided_ratio_cpu.png", "strided_step_cpu.png"):
        assert (run_dir / "plots" / name).read_bytes().startswith(b"\x89PNG")


def test_a_case_without_its_copy_has_no_ratio(tmp_path):
    run_dir = write(tmp_path, "bench_strided", [
        ("strided/simd/f32/cpu/m=8,n=8/view=transpose", 512.0, 1.0, {"elements": 64, "bytes_touched": 512.0})])
    row = next(line for line in strided.cost_section(load_run(run_dir)) if line.startswith("| cpu |"))
    assert row.split(" | ")[6:9] == ["—", "simd 1.00", "—"]


def broadcast_run(tmp_path):
    # (B,T,D) = (2,1024,1024) f32: out 8 MiB; (T,D) 4 MiB; materialized: two 8 MiB inputs.
    b = "broadcast/{}/f32/cpu/b=2,t=1024,d=1024/op=add/bcast={}"
    full, td = 24.0 * M, 20.0 * M
    return write(tmp_path, "bench_broadcast", [
        (f"broadcast/copy/f32/cpu/n={3 * M}", full, 40.0),
        (f"broadcast/copy/f32/cpu/n={int(td) // 8}", td, 50.0),
        (b.format("simd", "none"), full, 30.0, {"flops": 2.0 * M}),
        (b.format("onednn", "none"), full, 20.0, {"flops": 2.0 * M}),
        (b.format("simd", "td"), td, 40.0, {"flops": 2.0 * M}),
        (b.format("onednn", "td"), td, 50.0, {"flops": 2.0 * M}),
        (b.format("reference", "td"), td, 100.0, {"flops": 2.0 * M}),  # the reference is never "own"
    ])


def test_broadcast_saves_against_materialized_and_copy(tmp_path):
    lines = broadcast.saves_section(load_run(broadcast_run(tmp_path)))
    rows = {line.split(" | ")[4]: line.split(" | ") for line in lines if line.startswith("| cpu |")}
    td = rows["(B,T,D) op (T,D)"]
    # 20 MiB at 40 GB/s against 24 MiB at 30 GB/s: time ratio (20/40) / (24/30) = 0.625
    assert td[5:] == ["20 MiB", "4 MiB", "simd 40.0", "80.0%", "onednn 50.0", "100.0%", "0.80x", "0.62 |"]
    assert rows["materialized"][5:9] == ["24 MiB", "—", "simd 30.0", "75.0%"]


def test_broadcast_plot_and_report_section(tmp_path):
    run_dir = broadcast_run(tmp_path)
    write_report(load_run(run_dir), run_dir)
    assert "## What broadcasting saves" in (run_dir / "report.md").read_text()
    assert (run_dir / "plots" / "broadcast_cpu.png").read_bytes().startswith(b"\x89PNG")


def test_ratio_plot_series_past_the_palette_take_another_marker(tmp_path, monkeypatch):
    # 12 views of one size (12 permutations: each a series of one point, whose line style does
    # not show): the 11th and 12th share the 1st and 2nd's colours, and must not look like them.
    perms = [".".join(map(str, p)) for p in itertools.permutations(range(4))][1:13]
    cases = [("strided/copy/f32/cpu/n=120", 960.0, 40.0)]
    cases += [(f"strided/simd/f32/cpu/d0=2,d1=3,d2=4,d3=5/view=permute/perm={p}", 960.0, 10.0 + i,
               {"elements": 120}) for i, p in enumerate(perms)]
    captured = {}
    monkeypatch.setattr(plots, "save", lambda fig, path: captured.setdefault("fig", fig) and path)
    strided.ratio_plot(load_run(write(tmp_path, "bench_strided", cases)), "cpu", tmp_path / "ratio.png")
    handles, labels = captured["fig"].axes[0].get_legend_handles_labels()
    assert len(labels) == 12
    drawn = [(tuple(handle.get_color()) if not isinstance(handle.get_color(), str) else handle.get_color(),
              handle.get_marker()) for handle in handles]
    assert len(set(drawn)) == 12, drawn  # colour and marker together tell every series apart
    assert drawn[10][0] == drawn[0][0] and drawn[10][1] != drawn[0][1]
