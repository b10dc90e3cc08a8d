"""A bench binary killed mid-run (SIGKILL, as `timeout -s KILL` or a lost lease does) leaves on disk
every case it finished: its --benchmark_out JSON is rewritten whole after each case, bench_peak's
ceilings file after each ceiling case, and the report reads what is there."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / os.environ.get("FLOPSCOPE_BUILD_DIR", "build")
PEAK = BUILD / "bench" / "bench_peak"
ENV = dict(os.environ, FLOPSCOPE_WARMUP_S="0.05")
FLAGS = ["--devices=cpu", "--benchmark_repetitions=2", "--benchmark_min_time=0.02"]


def planned(flags):
    """The cases the command line would run, in order (`--describe`: the same list as the JSON
    context's "cases")."""
    proc = subprocess.run([str(PEAK), *flags, "--describe"], capture_output=True, text=True, env=ENV,
                          timeout=120, check=True)
    return [case["name"] for case in json.loads(proc.stdout)["cases"]]


def test_a_killed_bench_peak_leaves_every_finished_case_and_ceiling(tmp_path):
    if not PEAK.exists():
        pytest.skip(f"{PEAK} not built")
    plan = planned(FLAGS)
    copy = next(i for i, name in enumerate(plan) if name.startswith("peak/copy/"))
    assert plan[copy + 1].startswith("peak/triad/"), plan  # the kill lands in the triad
    out, ceilings = tmp_path / "bench_peak.json", tmp_path / "ceilings"
    child = subprocess.Popen([str(PEAK), *FLAGS, f"--write-ceilings={ceilings}", f"--benchmark_out={out}",
                              "--benchmark_out_format=json"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True, env=ENV)
    progress = []  # "[bench_peak] 3/8 ..." lines: case k's line comes after case k-1 is on disk
    deadline = time.monotonic() + 240
    for line in child.stderr:
        if line.startswith("[bench_peak]"):
            progress.append(line.split()[-1].rsplit("/real_time", 1)[0])
        if len(progress) == copy + 1:  # the copy reported, the triad under way
            child.send_signal(signal.SIGKILL)
            break
        assert time.monotonic() < deadline, "bench_peak never reached its copy case"
    assert child.wait(60) == -signal.SIGKILL
    assert progress == plan[:copy + 1]

    data = json.loads(out.read_text())  # whole: parses
    runs = [b for b in data["benchmarks"] if b.get("run_type") == "iteration"]
    on_disk = {b["run_name"].rsplit("/real_time", 1)[0] for b in runs}
    # Every case whose successor reported is there (the last reported one may have been written or not).
    assert set(progress[:-1]) <= on_disk <= set(progress)
    missing = [name for name in plan if name not in on_disk]
    assert plan[-1] in missing and plan[copy + 1] in missing

    # The ceilings file holds the median of each finished ceiling case.
    files = list(ceilings.glob("*.json"))
    assert len(files) == 1, files
    document = json.loads(files[0].read_text())
    medians = {b["run_name"].rsplit("/real_time", 1)[0]: b for b in data["benchmarks"]
               if b.get("aggregate_name") == "median"}
    expected_compute = {}
    for name, run in medians.items():
        label = run.get("label", "")
        if "ceiling=compute:" in label:
            mode = label.split("ceiling=compute:")[1].split()[0]
            expected_compute[mode] = max(expected_compute.get(mode, 0), run["flops_per_second"])
    assert expected_compute and document["compute"] == pytest.approx(expected_compute)
    assert document["memory_bytes_per_second"]["triad"] is None
    if plan[copy] in medians:
        assert document["memory_bytes_per_second"]["copy"] == pytest.approx(medians[plan[copy]]["bytes_per_second"])

    # The report reads the killed binary's file.
    python = ROOT / ".venv" / "bin" / "python"
    report = subprocess.run([str(python if python.exists() else sys.executable), "-m", "flopscope_analysis", "report",
                             str(tmp_path)], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=str(ROOT / "analysis")))
    assert report.returncode == 0, report.stderr
    assert "Traceback" not in report.stderr
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "bench_peak" in text
    # The headline names what the killed binary planned and did not write.
    assert [c["name"] for c in json.loads(data["context"]["flopscope"])["cases"]] == plan
    line = next(line for line in text.splitlines() if line.startswith("- **Missing**: bench_peak"))
    assert f"lacks {len(missing)} of its {len(plan)} planned cases" in line
    assert f"`{missing[0]}`" in line
