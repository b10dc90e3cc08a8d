"""The backward family's report module: "Backward against forward" and its plot, on a made-up run
whose times are chosen so that every expected cell is known (the measured bwd/fwd ratio is the
ratio of the medians; MFU is FLOPs per second against the peak)."""

from __future__ import annotations

import importlib.util
import json

from conftest import FIXTURES
from flopscope_analysis.families import backward
from flopscope_analysis.load import load_run
from flopscope_analysis.report import write_report

spec = importlib.util.spec_from_file_location("make_fixtures", FIXTURES / "make_fixtures.py")
fixtures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fixtures)

PEAKS = {"flops": 1e11}
FWD = 2 * 2048 * 768 * 3072  # a linear layer's forward FLOPs


def backward_run(tmp_path):
    base = "backward/{}/f32/cpu/m=2048,k=768,n=3072/net=linear/pass={}"
    cases = [  # variant, pass, seconds, flops, flop_ratio
        ("microkernel", "fwd", 0.100, FWD, 1.0),
        ("microkernel", "bwd", 0.250, 2 * FWD, 2.0),
        ("microkernel", "step/opt=adamw", 0.400, 3 * FWD, 3.0),
        ("onednn", "fwd", 0.080, FWD, 1.0),
        ("onednn", "bwd", 0.160, 2 * FWD, 2.0),
    ]
    benchmarks = []
    for i, (variant, passname, seconds, flops, ratio) in enumerate(cases):
        for entry in fixtures.case_entries(i, base.format(variant, passname) + "/real_time", [seconds] * 3, flops,
                                           1e8, "bound=compute compute=f32", PEAKS, "compute"):
            entry["flop_ratio"] = ratio
            benchmarks.append(entry)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "bench_backward.json").write_text(json.dumps(
        {"context": fixtures.context("bench_backward", fixtures.CEILINGS), "benchmarks": benchmarks}))
    return run_dir


def test_ratio_section_sets_measured_against_flop_ratio(tmp_path):
    lines = backward.ratio_section(load_run(backward_run(tmp_path)))
    rows = {line.split(" | ")[4]: line.split(" | ") for line in lines if line.startswith("| cpu |")}
    mk = rows["microkernel"]
    assert mk[1:4] == ["f32", "linear", "m=2048,k=768,n=3072"]
    assert mk[5:7] == ["100 ms", "250 ms"] and mk[7] == "adamw 400 ms"
    assert mk[8:10] == ["2.50", "2.00"]
    # MFU: 2·2048·768·3072 FLOPs in 0.1 s against 1e11 FLOP/s
    assert mk[10] == f"{100 * FWD / 0.1 / 1e11:.1f}%" and mk[12].startswith(f"{100 * 3 * FWD / 0.4 / 1e11:.1f}%")
    od = rows["onednn"]
    assert od[8:10] == ["2.00", "2.00"] and od[7] == "—"


def test_backward_plot_and_report_section(tmp_path):
    run_dir = backward_run(tmp_path)
    write_report(load_run(run_dir), run_dir)
    assert "## Backward against forward" in (run_dir / "report.md").read_text()
    assert (run_dir / "plots" / "backward_cpu.png").read_bytes().startswith(b"\x89PNG")
