import json

import pytest

from conftest import FIXTURES, run_cli
from flopscope_analysis.ceilings import run_ceilings

PEAK = FIXTURES / "run_cpu" / "bench_peak.json"
KEY = "cpu-intel-r-xeon-r-processor"


def best_median(label, counter):
    """The largest median `counter` among the cases whose label holds `label`, from the JSON."""
    data = json.loads(PEAK.read_text())
    values = [e[counter] for e in data["benchmarks"]
              if e.get("aggregate_name") == "median" and label in e.get("label", "").split()]
    return max(values)


def test_ceilings_document(fixture_dir):
    run_dir = fixture_dir("run_cpu")
    documents = run_ceilings(run_dir)
    assert list(documents) == [KEY]
    doc = documents[KEY]
    assert doc["schema"] == 1
    assert doc["device_key"] == KEY
    assert doc["device_name"] == "Intel(R) Xeon(R) Processor @ 2.60GHz"
    assert doc["measured_at"] == "2026-12-02T12:00:00+00:00"
    assert doc["source"].endswith("run_cpu/bench_peak.json")
    assert doc["memory_bytes_per_second"] == {
        "copy": best_median("ceiling=memory:copy", "bytes_per_second"),
        "triad": best_median("ceiling=memory:triad", "bytes_per_second"),
    }
    assert doc["memory_bytes_per_second"]["copy"] == pytest.approx(11.5e9)  # the larger of two
    assert doc["compute"] == {
        "f32": best_median("ceiling=compute:f32", "flops_per_second"),
        "f64": best_median("ceiling=compute:f64", "flops_per_second"),
    }
    assert doc["compute"]["f32"] == pytest.approx(300e9)  # threads=2 beats threads=1
    # the failed f16 case (9e15 FLOP/s) and the skipped bf16 and CUDA cases do not count
    assert "f16" not in doc["compute"] and "bf16" not in doc["compute"]


def test_the_command_prints_the_documents_and_writes_nothing(fixture_dir, tmp_path):
    """bench_peak writes the ceilings files (data flows one way): the command only prints."""
    run_dir = fixture_dir("run_cpu")
    work = tmp_path / "repo"
    work.mkdir()
    before = sorted(p.name for p in run_dir.iterdir())
    done = run_cli("ceilings", run_dir, cwd=work)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert list(printed) == [KEY]
    expected = run_ceilings(run_dir)[KEY]
    assert {k: v for k, v in printed[KEY].items() if k != "source"} == \
        {k: v for k, v in expected.items() if k != "source"}
    assert printed[KEY]["source"].endswith("run_cpu/bench_peak.json")
    assert list(work.iterdir()) == [] and sorted(p.name for p in run_dir.iterdir()) == before


def test_missing_kind_is_null(fixture_dir, tmp_path):
    run_dir = fixture_dir("run_cpu")
    data = json.loads((run_dir / "bench_peak.json").read_text())
    data["benchmarks"] = [e for e in data["benchmarks"] if "memory:triad" not in e.get("label", "")]
    (run_dir / "bench_peak.json").write_text(json.dumps(data))
    doc = run_ceilings(run_dir)[KEY]
    assert doc["memory_bytes_per_second"]["triad"] is None


def test_report_after_ceilings_reads_the_same_run(fixture_dir, tmp_path):
    run_dir = fixture_dir("run_cpu")
    assert run_cli("ceilings", run_dir).returncode == 0
    assert run_cli("report", run_dir).returncode == 0


@pytest.mark.parametrize("setup, message", [
    ("no_peak_file", "no bench_peak.json"),
    ("all_skipped", "no ceiling case ran"),
    ("bad_ceiling_label", "is not memory:<copy|triad> or compute:<mode>"),
])
def test_bad_input(fixture_dir, tmp_path, setup, message):
    run_dir = fixture_dir("run_cpu")
    peak = run_dir / "bench_peak.json"
    if setup == "no_peak_file":
        peak.unlink()
    else:
        data = json.loads(peak.read_text())
        for e in data["benchmarks"]:
            if setup == "all_skipped":
                e["error_occurred"], e["error_message"] = True, "skipped: no time"
            elif "ceiling=memory:copy" in e.get("label", ""):
                e["label"] = e["label"].replace("ceiling=memory:copy", "ceiling=copy")
        peak.write_text(json.dumps(data))
    done = run_cli("ceilings", run_dir)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr
    assert done.stdout == ""
