import json

import pytest

from flopscope_analysis import fmt
from flopscope_analysis.atomic import write_atomic, write_text_atomic
from flopscope_analysis.load import load_run
from flopscope_analysis.report import write_report


@pytest.mark.parametrize("value, text", [
    (10.8, "10.8"), (0.99996, "1.00"), (95.0, "95.0"), (300.0, "300"), (0.08333, "0.0833"),
    (0.0, "0"), (None, "—"), (float("nan"), "—"), (float("inf"), "∞"), (700000.0, "700000"),
    (1.5e7, "1.50e+07"),
])
def test_sig(value, text):
    assert fmt.sig(value) == text


def test_units():
    assert fmt.duration(0.0497) == "49.7 ms"
    assert fmt.duration(86.2e-9) == "86.2 ns"
    assert fmt.duration(7.49e-6) == "7.49 µs"
    assert fmt.duration(2.5) == "2.50 s"
    assert fmt.size(49152) == "48 KiB" and fmt.size(3 * 2**29) == "1.50 GiB" and fmt.size(0) == "0 B"
    assert fmt.rate(4.8e12, "B/s") == "4.80 TB/s" and fmt.rate(3.328e11, "FLOP/s") == "333 GFLOP/s"
    assert fmt.percent(93.913) == "93.9%" and fmt.fraction_percent(0.1) == "10.00%"


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path):
    path = write_text_atomic(tmp_path / "report.md", "old")

    def broken(out):
        out.write(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_atomic(path, broken)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_run_where_nothing_ran(fixture_dir):
    run_dir = fixture_dir("single")
    path = run_dir / "bench_copy.json"
    data = json.loads(path.read_text())
    for e in data["benchmarks"]:
        e["error_occurred"], e["error_message"] = True, "skipped: not enough memory for 2 GiB"
    path.write_text(json.dumps(data))
    text = write_report(load_run(run_dir), run_dir).read_text(encoding="utf-8")
    assert "No case ran" in text and "No plots" in text
    assert "not enough memory for 2 GiB" in text and "### Skipped (2)" in text
    assert not (run_dir / "plots").exists()


def test_clock_that_differs_between_binaries_is_shown_per_binary(fixture_dir):
    run_dir = fixture_dir("run_cpu")
    path = run_dir / "bench_peak.json"
    data = json.loads(path.read_text())
    context = json.loads(data["context"]["flopscope"])
    context["devices"]["cpu"]["clock_hz"] = 3.1e9
    data["context"]["flopscope"] = json.dumps(context)
    path.write_text(json.dumps(data))
    text = write_report(load_run(run_dir), run_dir).read_text(encoding="utf-8")
    assert "- clock: 2.600 GHz" in text
    assert "bench_copy 2.600 GHz, bench_peak 3.100 GHz" in text
