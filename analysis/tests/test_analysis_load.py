import json
import math
import os
from pathlib import Path

import pytest

from conftest import FIXTURES
from flopscope_analysis import AnalysisError
from flopscope_analysis import load
from flopscope_analysis.load import NOISY_CV, load_file, load_run, parse_label


def entries(path, run_name):
    data = json.loads(path.read_text())
    return [e for e in data["benchmarks"] if e["run_name"] == run_name]


def by_name(cases):
    return {str(c.name): c for c in cases}


COPY = FIXTURES / "run_cpu" / "bench_copy.json"
PEAK = FIXTURES / "run_cpu" / "bench_peak.json"


def test_median_aggregate_stands_for_the_case():
    case = by_name(load_file(COPY).cases)["copy/simd/f32/cpu/n=67108864"]
    raw = entries(COPY, "copy/simd/f32/cpu/n=67108864/real_time")
    median = next(e for e in raw if e.get("aggregate_name") == "median")
    cv = next(e for e in raw if e.get("aggregate_name") == "cv")
    assert case.ok and case.statistic == "median"
    assert case.repetitions == 3
    assert case.real_time_s == pytest.approx(median["real_time"] * 1e-9)
    assert case.bytes_per_second == median["bytes_per_second"]
    assert case.counters["pct_ceiling_bw"] == median["pct_ceiling_bw"]
    assert case.cv == cv["real_time"]
    assert case.label == {"bound": "memory", "compute": "f32"}
    assert case.bound == "memory" and case.compute_mode == "f32"
    assert case.pct_peak is None  # no theoretical memory bandwidth on this VM
    assert case.pct_ceiling == median["pct_ceiling_bw"]


def test_time_units_are_converted():
    case = by_name(load_file(PEAK).cases)["peak/fma/f32/cpu/n=1024/threads=2"]
    median = next(e for e in entries(PEAK, "peak/fma/f32/cpu/n=1024/threads=2/real_time")
                  if e.get("aggregate_name") == "median")
    assert median["time_unit"] == "us"
    assert case.real_time_s == pytest.approx(median["real_time"] * 1e-6)
    assert case.bound == "compute" and case.pct_peak == median["pct_peak_flops"]
    assert case.moves_no_bytes and case.intensity == 0


def test_noisy_case():
    cases = by_name(load_file(COPY).cases)
    noisy = cases["copy/simd/f32/cpu/n=1024"]
    assert noisy.cv > NOISY_CV and noisy.noisy
    assert not cases["copy/simd/f32/cpu/n=65536"].noisy
    assert NOISY_CV == 0.05


def test_single_iteration_without_repetitions():
    path = FIXTURES / "single" / "bench_copy.json"
    case = by_name(load_file(path).cases)["copy/simd/f64/cpu/n=4096"]
    (raw,) = entries(path, "copy/simd/f64/cpu/n=4096/real_time")
    assert case.statistic == "single" and case.repetitions == 1
    assert case.cv is None and not case.noisy
    assert case.bytes_per_second == raw["bytes_per_second"]
    assert case.real_time_s == pytest.approx(raw["real_time"] * 1e-9)


def test_skip_and_failure_are_told_apart():
    cases = by_name(load_file(COPY).cases)
    failed = cases["copy/simd/bf16/cpu/n=1048576"]
    assert failed.status == "failed"
    assert failed.reason.startswith("3 of 1048576 elements differ")
    skipped = cases["copy/grid_stride/f32/cuda:0/n=67108864"]
    assert skipped.status == "skipped"
    assert skipped.reason == "CUDA driver version is insufficient for CUDA runtime version"
    assert [c.status for c in cases.values()].count("ok") == 6
    # three repetition entries of a skipped case make one case
    assert len([c for c in cases.values() if c.status == "skipped"]) == 2


def with_error(tmp_path, repetition, message):
    """bench_copy.json with one repetition of copy/simd/f32/cpu/n=65536 an error."""
    data = json.loads(COPY.read_text())
    for e in data["benchmarks"]:
        if e["run_name"] == "copy/simd/f32/cpu/n=65536/real_time" and e.get("repetition_index") == repetition:
            e["error_occurred"], e["error_message"] = True, message
    path = tmp_path / "bench_copy.json"
    path.write_text(json.dumps(data))
    return path


def test_one_failed_repetition_fails_the_case(tmp_path):
    path = with_error(tmp_path, 1, "failed: mismatch at [3]")
    case = by_name(load_file(path).cases)["copy/simd/f32/cpu/n=65536"]
    assert case.status == "failed" and case.reason == "mismatch at [3]"


def test_aggregates_only(tmp_path):
    data = json.loads(COPY.read_text())
    data["benchmarks"] = [e for e in data["benchmarks"]
                          if e["run_type"] == "aggregate" or e.get("error_occurred")]
    path = tmp_path / "bench_copy.json"
    path.write_text(json.dumps(data))
    case = by_name(load_file(path).cases)["copy/simd/f32/cpu/n=1024"]
    assert case.statistic == "median" and case.repetitions == 3 and case.noisy


def test_context_is_decoded():
    f = load_file(COPY)
    assert f.context.binary == "bench_copy"
    assert f.context.build["compiler"] == "GNU 12.2.0"
    cpu = f.context.devices["cpu"]
    assert cpu.key == "cpu-intel-r-xeon-r-processor"
    assert cpu.memory_peak is None
    assert cpu.compute_peaks["f32"]["flops_per_second"] == 3.328e11
    assert cpu.memory_ceilings == {"copy": 1.15e10, "triad": 1.2e10}
    assert cpu.caches == {"l1d": 49152, "l2": 2097152, "l3": 503316480}
    assert f.context.skipped_devices == {
        "cuda:0": "CUDA driver version is insufficient for CUDA runtime version"}


def test_run_merges_devices_first_non_null_wins():
    run = load_run(FIXTURES / "run_cpu")
    assert [f.path.name for f in run.files] == ["bench_copy.json", "bench_peak.json"]
    # bench_peak.json has ceilings null, bench_copy.json has them: the merged device has them
    assert run.devices["cpu"].ceilings_file == "results/ceilings/cpu-intel-r-xeon-r-processor.json"
    assert run.id == "run_cpu"
    assert len(run.cases) == 9 + 9


def test_tolerates_missing_optional_fields(tmp_path):
    data = json.loads(COPY.read_text())
    data["context"]["flopscope"] = json.dumps({"schema": 1, "devices": {"cpu": {}}})
    (tmp_path / "bench_copy.json").write_text(json.dumps(data))
    run = load_run(tmp_path)
    cpu = run.devices["cpu"]
    assert cpu.name == "cpu" and cpu.memory_peak is None and cpu.compute_peaks == {}
    assert cpu.memory_ceilings == {} and cpu.caches == {} and cpu.clock_hz is None


@pytest.mark.parametrize("flopscope, message", [
    ("{not json", "not a JSON-encoded string"),
    (json.dumps({"schema": 3}), "schema is 3"),
    (json.dumps({"devices": {}}), "schema is None"),
    (json.dumps([1, 2]), "not a JSON object"),
    (json.dumps({"schema": 1, "devices": []}), "devices is not a JSON object"),
])
def test_bad_context(tmp_path, flopscope, message):
    data = json.loads(COPY.read_text())
    data["context"]["flopscope"] = flopscope
    path = tmp_path / "bench_copy.json"
    path.write_text(json.dumps(data))
    with pytest.raises(AnalysisError, match=message):
        load_file(path)


def test_parse_label():
    assert parse_label("bound=compute compute=f32 ceiling=compute:f32") == {
        "bound": "compute", "compute": "f32", "ceiling": "compute:f32"}
    assert parse_label("") == {}


def test_nan_and_infinity_counters_are_read(tmp_path):
    text = COPY.read_text().replace('"intensity": 0.0', '"intensity": NaN')
    path = tmp_path / "bench_copy.json"
    path.write_text(text)
    cases = load_file(path).cases
    assert any(c.intensity is not None and math.isnan(c.intensity) for c in cases)


def iterations(path, run_name):
    return [e for e in entries(path, run_name) if e["run_type"] == "iteration"]


def test_samples_keep_every_repetition():
    case = by_name(load_file(COPY).cases)["copy/simd/f32/cpu/n=67108864"]
    raw = iterations(COPY, "copy/simd/f32/cpu/n=67108864/real_time")
    assert len(raw) == 3 and len(case.samples) == 3
    assert [s.real_time_s for s in case.samples] == [e["real_time"] * 1e-9 for e in raw]
    assert [s.cpu_time_s for s in case.samples] == [e["cpu_time"] * 1e-9 for e in raw]
    assert [s.counters["bytes_per_second"] for s in case.samples] == [e["bytes_per_second"] for e in raw]
    assert all(s.counters["bytes"] == 2 * 4 * 67108864 for s in case.samples)
    # the median aggregate is the median of the repetitions (hand-computed: the middle one)
    assert sorted(s.real_time_s for s in case.samples)[1] == pytest.approx(case.real_time_s)


def test_samples_in_other_time_units():
    case = by_name(load_file(PEAK).cases)["peak/fma/f32/cpu/n=1024/threads=2"]
    raw = iterations(PEAK, "peak/fma/f32/cpu/n=1024/threads=2/real_time")
    assert [s.real_time_s for s in case.samples] == [e["real_time"] * 1e-6 for e in raw]


def test_no_samples_for_skipped_failed_or_aggregates_only(tmp_path):
    cases = by_name(load_file(COPY).cases)
    assert cases["copy/simd/bf16/cpu/n=1048576"].samples == []
    assert cases["copy/grid_stride/f32/cuda:0/n=67108864"].samples == []
    data = json.loads(COPY.read_text())
    data["benchmarks"] = [e for e in data["benchmarks"] if e["run_type"] == "aggregate"]
    path = tmp_path / "bench_copy.json"
    path.write_text(json.dumps(data))
    assert by_name(load_file(path).cases)["copy/simd/f32/cpu/n=1024"].samples == []


def test_a_skipped_repetition_is_no_sample(tmp_path):
    path = with_error(tmp_path, 0, "skipped: out of memory")
    case = by_name(load_file(path).cases)["copy/simd/f32/cpu/n=65536"]
    raw = iterations(path, "copy/simd/f32/cpu/n=65536/real_time")[1:]
    assert case.ok and [s.real_time_s for s in case.samples] == [e["real_time"] * 1e-9 for e in raw]


def test_a_repetition_without_real_time_is_an_error(tmp_path):
    data = json.loads(COPY.read_text())
    del data["benchmarks"][0]["real_time"]
    path = tmp_path / "bench_copy.json"
    path.write_text(json.dumps(data))
    with pytest.raises(AnalysisError, match="without a numeric real_time"):
        load_file(path)


def test_load_source_reads_a_directory_or_one_file(tmp_path):
    from flopscope_analysis.load import load_source

    run = load_source(FIXTURES / "run_cpu")
    assert run.id == "run_cpu" and len(run.files) == 2
    one = load_source(COPY)
    assert one.id == "bench_copy.json" and [f.path for f in one.files] == [COPY]
    assert [str(c.name) for c in one.cases] == [str(c.name) for c in load_file(COPY).cases]
    with pytest.raises(AnalysisError, match="no such file or directory"):
        load_source(tmp_path / "nope.json")


@pytest.mark.parametrize("where", ["file", "context"])
def test_json_nested_too_deeply_is_an_error(tmp_path, where):
    deep = "[" * 100000 + "]" * 100000
    if where == "file":
        text = deep
    else:
        data = json.loads(COPY.read_text())
        data["context"]["flopscope"] = deep
        text = json.dumps(data)
    (tmp_path / "bench_copy.json").write_text(text)
    with pytest.raises(AnalysisError, match="nested too deeply"):
        load_run(tmp_path)


def test_machine_key_names_every_device_cpu_first():
    assert load_run(FIXTURES / "run_cpu").machine_key == "cpu-intel-r-xeon-r-processor"
    assert load_run(FIXTURES / "run_gpu").machine_key == "cpu-intel-r-xeon-r-processor+cuda-nvidia-h200"


def test_device_without_key_gets_one_from_its_name():
    from flopscope_analysis.load import Device

    assert Device("cpu", {"kind": "cpu", "name": "AMD EPYC 9654 (96 cores)"}).file_key == \
        "cpu-amd-epyc-9654-96-cores"
    with pytest.raises(AnalysisError, match="cannot name a file"):
        Device("cpu", {"key": "../etc"}).file_key


def test_status_json_is_the_run_status_not_a_bench_file(tmp_path):
    from flopscope_analysis import runstatus

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "bench_copy.json").write_text(COPY.read_text())
    assert load_run(run_dir).status is None and not load_run(run_dir).incomplete
    runstatus.write(run_dir, runstatus.RUNNING, binaries=["bench_peak", "bench_copy"],
                    finished=["bench_copy"])
    run = load_run(run_dir)
    assert [f.path.name for f in run.files] == ["bench_copy.json"]
    assert run.incomplete and run.status.state == "running"
    assert "1 of 2 binaries finished" in run.status.describe()
    runstatus.write(run_dir, runstatus.COMPLETE)
    assert not load_run(run_dir).incomplete
    (run_dir / "status.json").write_text('{"state": "maybe"}')
    with pytest.raises(AnalysisError, match="not a run status"):
        load_run(run_dir)


def test_schema_2_context_gives_roles_ceilings_and_planned_cases(tmp_path):
    """A schema-2 file (what the binaries write since issue 21): roles, typed ceilings and the
    planned cases come from the context; a schema-1 file says they are unknown."""
    import subprocess
    bench = Path(__file__).resolve().parents[2] / "build" / "bench" / "bench_copy"
    if not bench.exists():
        pytest.skip(f"{bench} not built")
    out = tmp_path / "bench_copy.json"
    subprocess.run([str(bench), "--sizes=1Ki", "--devices=cpu", "--variants=memcpy,simd",
                    "--benchmark_min_time=0.001", "--benchmark_repetitions=1", f"--benchmark_out={out}",
                    "--benchmark_out_format=json"], check=True, capture_output=True,
                   env=dict(os.environ, FLOPSCOPE_WARMUP_S="0"))
    f = load.load_file(out)
    assert f.context.schema == 2 and f.context.unknown == []
    roles = {c.name.variant: c.role for c in f.cases}
    assert roles == {"memcpy": "baseline", "simd": "own"}
    assert {c.ceiling_ref for c in f.cases} == {("memory", "best")} and {c.measures for c in f.cases} == {None}
    assert {c.group for c in f.cases} == {"copy"}
    run = load.make_run(tmp_path, "r", [f])
    assert run.planned == {"bench_copy": ["copy/memcpy/f32/cpu/n=1024", "copy/simd/f32/cpu/n=1024"]}
    # the same file as an older binary wrote it: no roles, and it says so
    document = json.loads(out.read_text())
    context = json.loads(document["context"]["flopscope"])
    for key in ("suite", "variants", "cases"):
        del context[key]
    context["schema"] = 1
    document["context"]["flopscope"] = json.dumps(context)
    old = load.bench_file(out, document)
    assert {c.role for c in old.cases} == {None} and "older binary" in old.context.unknown[0]
    assert {c.ceiling_ref for c in old.cases} == {("memory", "best")}
