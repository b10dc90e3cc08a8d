"""The matmul family's report module: its table, "what each dtype buys" and "what a transposed
operand costs", on a made-up run whose figures are chosen so that every expected cell is known."""

from __future__ import annotations

import importlib.util
import json

from conftest import FIXTURES
from flopscope_analysis.families import matmul
from flopscope_analysis.load import load_run
from flopscope_analysis.report import write_report

spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
fixtures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fixtures)

PEAKS = {"flops": 3.328e11}


def matmul_entries(index: int, variant: str, mode: str, n: int, layout: str, gflops: float,
                   max_rel: float, mean_rel: float, label: str = "out=f32") -> list[dict]:
    flops = 2.0 * n**3
    seconds = flops / (gflops * 1e9)
    entries = fixtures.case_entries(index, f"matmul/{variant}/{mode}/cpu/m={n},n={n},k={n}/layout={layout}/real_time",
                                    [seconds] * 3, flops, 12.0 * n * n, f"bound=compute compute=f32 {label}",
                                    PEAKS, "compute")
    for entry in entries:
        entry["max_rel_error"], entry["mean_rel_error"] = max_rel, mean_rel
    return entries


def write_run(tmp_path):
    benchmarks = []
    rows = [("microkernel", "f32", 256, "NN", 100.0, 2e-7, 1e-8), ("openblas", "f32", 256, "NN", 120.0, 3e-7, 1e-8),
            ("microkernel", "f32", 256, "NT", 80.0, 2e-7, 1e-8), ("microkernel", "f32", 256, "TN", 125.0, 2e-7, 1e-8),
            ("microkernel_dpbf16", "bf16", 256, "NN", 240.0, 4e-3, 1e-4), ("microkernel", "f64", 256, "NN", 60.0, 1e-16, 1e-17),
            ("microkernel", "f32", 512, "NN", 110.0, 3e-7, 2e-8)]
    for i, row in enumerate(rows):
        benchmarks += matmul_entries(i, *row)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "bench_matmul.json").write_text(json.dumps(
        {"context": fixtures.context("bench_matmul", fixtures.CEILINGS), "benchmarks": benchmarks}))
    return run_dir


def test_trade_off_takes_the_fastest_variant_of_each_mode(tmp_path):
    lines = matmul.trade_off_section(load_run(write_run(tmp_path)))
    rows = [line for line in lines if line.startswith("| cpu | m=256")]
    assert [row.split(" | ")[2:5] for row in rows] == [
        ["f64", "microkernel", "60.0"], ["f32", "openblas", "120"], ["bf16", "microkernel_dpbf16", "240"]]
    assert "| 2.00x | 4.00e-03 | 1.00e-04 |" in rows[2]  # bf16 against the fastest f32
    assert "| 0.50x |" in rows[0]


def test_layout_cost_is_the_time_ratio_against_nn(tmp_path):
    lines = matmul.layout_section(load_run(write_run(tmp_path)))
    rows = [line for line in lines if line.startswith("| cpu |")]
    assert rows == ["| cpu | f32 | m=256,n=256,k=256 | microkernel | 336 µs | 1.25 | 0.80 |"]


def test_the_report_has_the_sections_and_the_size_plot(tmp_path):
    run_dir = write_run(tmp_path)
    write_report(load_run(run_dir), run_dir)
    report = (run_dir / "report.md").read_text()
    assert "## Matmul: what each dtype buys" in report and "## Matmul: what a transposed operand costs" in report
    assert (run_dir / "plots" / "matmul_size_cpu.png").stat().st_size > 1000
    assert "| microkernel_dpbf16 | bf16 | m=256,n=256,k=256 | NN |" in report
