"""The bench harness end to end, through tests/harness_probe (a made-up family with one axis of
each kind and cases that pass, skip, fail, throw) and bench_peak's ceilings file: flags, the
expansion of axes, the case skeleton, what reaches the JSON and the console."""
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / os.environ.get("FLOPSCOPE_BUILD_DIR", "build")
ENV = dict(os.environ, FLOPSCOPE_WARMUP_S="0.05")


def binary(path):
    if not path.exists():
        pytest.skip(f"{path} not built (run ./test.sh, which builds first)")
    return path


PROBE = BUILD / "tests" / "harness_probe"
PEAK = BUILD / "bench" / "bench_peak"


def run(path, tmp_path, *flags, expect=0):
    out = tmp_path / "out.json"
    proc = subprocess.run([str(binary(path)), *flags, "--benchmark_min_time=0.001", "--benchmark_repetitions=1",
                           f"--benchmark_out={out}", "--benchmark_out_format=json"],
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == expect, proc.stderr
    return (json.loads(out.read_text()) if expect == 0 else None), proc


def by_name(data):
    return {b["run_name"].rsplit("/real_time", 1)[0]: b for b in data["benchmarks"]}


def test_every_outcome_is_reported_and_the_run_goes_on(tmp_path):
    data, _ = run(PROBE, tmp_path)
    cases = by_name(data)
    stem = "f32/cpu/n=1024/view=transpose/perm=01"
    assert set(cases) == {f"probe/{v}/{stem}" for v in ("copy", "skip", "wrong", "throws", "explodes", "counted")}
    assert "error_occurred" not in cases[f"probe/copy/{stem}"]
    assert cases[f"probe/copy/{stem}"]["bytes"] == 2 * 1024 * 4
    messages = {v: cases[f"probe/{v}/{stem}"]["error_message"] for v in ("skip", "wrong", "throws", "explodes")}
    assert messages["skip"] == "skipped: probe: skipped on purpose"
    assert messages["wrong"] == "failed: wrong: dst: 1 of 1024 elements differ (element 512)"
    assert messages["throws"] == "failed: throws: probe: no plan"
    assert messages["explodes"] == "failed: explodes: probe: exploded in the timed loop"


def prepares(tmp_path, *flags):
    """Runs the `counted` and `wrong` probes at two sizes with 3 repetitions: {case: times set up}
    from stderr, and the JSON's repetitions of each case."""
    out = tmp_path / "out.json"
    proc = subprocess.run([str(binary(PROBE)), "--variants=counted,wrong", "--sizes=1024,4096", *flags,
                           "--benchmark_min_time=0.01", "--benchmark_repetitions=3", f"--benchmark_out={out}"],
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stderr
    counts = {}
    for line in proc.stderr.splitlines():
        if line.startswith("probe: prepared "):
            counts[line.split()[-1]] = counts.get(line.split()[-1], 0) + 1
    runs = [b for b in json.loads(out.read_text())["benchmarks"] if b["run_type"] == "iteration"]
    return counts, runs


def test_a_case_is_set_up_once_for_the_calls_in_a_row_that_benchmark_makes(tmp_path):
    # Google Benchmark calls a case's function for the warm-up, each trial of the iteration count
    # and each repetition: without interleaving all in a row, so one set-up (and one validated
    # run) serves them all; with it, each repetition may follow another case, which drops it.
    counts, runs = prepares(tmp_path)
    names = {f"probe/counted/f32/cpu/n={n}/view=transpose/perm=01" for n in (1024, 4096)}
    assert counts == {name: 1 for name in names}
    assert sorted(r["run_name"].rsplit("/real_time", 1)[0] for r in runs if "counted" in r["name"]) == sorted(list(names) * 3)
    # A case that fails validation is set up again, and fails again, at every call.
    wrong = [r for r in runs if "/wrong/" in r["name"]]
    assert len(wrong) == 6 and all(r["error_message"].startswith("failed: wrong: dst: 1 of") for r in wrong)
    counts, runs = prepares(tmp_path, "--benchmark_enable_random_interleaving=true")
    assert set(counts) == names and all(1 <= k <= 3 for k in counts.values()), counts
    assert sum(1 for r in runs if "counted" in r["name"] and "error_occurred" not in r) == 6


def test_duplicate_axis_values_run_once(tmp_path):
    data, _ = run(PROBE, tmp_path, "--variants=copy", "--sizes=1Ki,1024,1Ki,2^10,17")
    assert sorted(by_name(data)) == ["probe/copy/f32/cpu/n=1024/view=transpose/perm=01",
                                     "probe/copy/f32/cpu/n=17/view=transpose/perm=01"]


def test_axes_of_each_kind_expand_in_order(tmp_path):
    data, _ = run(PROBE, tmp_path, "--variants=copy", "--views=slice,transpose", "--perm=1,0;0,1", "--shapes=64x32")
    names = [b["run_name"].rsplit("/real_time", 1)[0] for b in data["benchmarks"]]
    assert names[:4] == ["probe/copy/f32/cpu/n=1024/view=slice/perm=10", "probe/copy/f32/cpu/n=1024/view=slice/perm=01",
                         "probe/copy/f32/cpu/n=1024/view=transpose/perm=10",
                         "probe/copy/f32/cpu/n=1024/view=transpose/perm=01"]
    # the bench that takes the shape axis names its case by it
    assert "probe/copy/f32/cpu/m=64,k=32/view=slice/perm=10" in names


@pytest.mark.parametrize("flag, named", [
    ("--views=diagonal", "diagonal"), ("--perm=0,0", "0,0"), ("--perm=0,a", "'a'"), ("--perm=", "--perm"),
    ("--shapes=64x32x2", "64x32x2"), ("--shapes=64xq", "'q'"), ("--sizes=0", "'0'"), ("--sizes=2^62", "overflows"),
    ("--sizes=2^61", "overflows"), ("--benchmark_filter=nomatch", "nomatch"), ("--benchmark_filter=(", "'('"),
    ("--benchmark_out=/proc/nope/x.json", "/proc/nope/x.json"), ("--devices=cuda:0", "no case selected"),
    ("--variants=copy,fast", "fast"),
])
def test_bad_input_is_one_line_and_exit_2(flag, named):
    proc = subprocess.run([str(binary(PROBE)), flag], capture_output=True, text=True, env=ENV, timeout=60)
    assert proc.returncode == 2, proc.stderr
    # One line in all: the devices' lines come only once every flag and size is known good.
    errors = proc.stderr.splitlines()
    assert len(errors) == 1 and named in errors[0] and "harness_probe" in errors[0], proc.stderr


def test_console_shows_one_line_per_device_not_the_context(tmp_path):
    _, proc = run(PROBE, tmp_path, "--variants=copy")
    assert '"schema"' not in proc.stdout + proc.stderr  # the JSON context stays in the file
    device_lines = [line for line in proc.stderr.splitlines() if line.startswith("harness_probe: cpu: ")]
    assert len(device_lines) == 1 and "peaks f64" in device_lines[0]


def test_bench_peak_writes_the_ceilings_file_it_measured(tmp_path):
    ceilings = tmp_path / "ceilings"
    data, proc = run(PEAK, tmp_path, "--devices=cpu", "--sizes=64Ki", "--dtypes=f64",
                     f"--write-ceilings={ceilings}")
    files = list(ceilings.glob("*.json"))
    assert len(files) == 1, proc.stderr
    document = json.loads(files[0].read_text())
    context = json.loads(data["context"]["flopscope"])
    assert document["device_key"] == context["devices"]["cpu"]["key"] == files[0].stem
    measured = {b["label"].split("ceiling=")[1]: b for b in data["benchmarks"] if "ceiling=" in b.get("label", "")}
    assert document["memory_bytes_per_second"]["copy"] == pytest.approx(measured["memory:copy"]["bytes_per_second"])
    assert document["memory_bytes_per_second"]["triad"] == pytest.approx(measured["memory:triad"]["bytes_per_second"])
    assert set(document["compute"]) == {k.split(":")[1] for k in measured if k.startswith("compute:")}
    # --keep-ceilings leaves an existing file alone
    files[0].write_text('{"schema": 1, "kept": true}')
    run(PEAK, tmp_path, "--devices=cpu", "--sizes=64Ki", "--dtypes=f64", f"--write-ceilings={ceilings}",
        "--keep-ceilings")
    assert json.loads(files[0].read_text()) == {"schema": 1, "kept": True}


def test_keep_ceilings_needs_a_directory():
    proc = subprocess.run([str(binary(PEAK)), "--keep-ceilings"], capture_output=True, text=True, env=ENV, timeout=60)
    assert proc.returncode == 2 and "--write-ceilings" in proc.stderr


def by_rule(tmp_path, *flags):
    """Runs the probe without --benchmark_repetitions (the stopping rule): the JSON, its cases'
    repetitions and median aggregates by name, and the process."""
    out = tmp_path / "rule.json"
    proc = subprocess.run([str(binary(PROBE)), "--variants=counted,copy,skip,wrong", "--sizes=1024,4096", *flags,
                           "--benchmark_min_time=0.002", f"--benchmark_out={out}"],
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    reps, aggregates = {}, {}
    for b in data["benchmarks"]:
        name = b["run_name"].rsplit("/real_time", 1)[0]
        if b["run_type"] == "iteration":
            reps.setdefault(name, []).append(b)
        else:
            aggregates.setdefault(name, {})[b["aggregate_name"]] = b
    return data, reps, aggregates, proc


def test_the_stopping_rule_runs_6_to_20_repetitions_until_the_median_is_resolved(tmp_path):
    import statistics
    import sys
    sys.path.insert(0, str(ROOT / "analysis"))
    from flopscope_analysis.stats import median_ci  # the analysis' own CI: the reference here

    data, reps, aggregates, proc = by_rule(tmp_path)
    ran = [n for n in reps if "error_occurred" not in reps[n][0]]
    assert sorted(ran) == sorted(f"probe/{v}/f32/cpu/n={n}/view=transpose/perm=01"
                                 for v in ("counted", "copy") for n in (1024, 4096))
    for name in ran:
        runs = reps[name]
        times = [r["real_time"] for r in runs]
        assert 6 <= len(times) <= 20, (name, len(times))
        assert [r["repetition_index"] for r in runs] == list(range(len(times)))
        assert {r["repetitions"] for r in runs} == {len(times)}
        # The first repetition's iteration count (Google Benchmark's search) is every later one's,
        # and the count fixed for them is not part of the name.
        assert {r["iterations"] for r in runs} == {runs[0]["iterations"]}, name
        assert all("iterations:" not in r["name"] + r["run_name"] for r in runs)
        agg = aggregates[name]
        # The aggregates as Google Benchmark computes them.
        assert agg["mean"]["real_time"] == pytest.approx(statistics.mean(times), rel=1e-9)
        assert agg["median"]["real_time"] == pytest.approx(statistics.median(times), rel=1e-9)
        assert agg["stddev"]["real_time"] == pytest.approx(statistics.stdev(times), rel=1e-6)
        assert agg["cv"]["real_time"] == pytest.approx(statistics.stdev(times) / statistics.mean(times), rel=1e-6)
        assert agg["cv"]["aggregate_unit"] == "percentage"
        # The CI the harness stopped on is the analysis' CI of the same samples.
        ci = median_ci(times)
        median = agg["median"]
        assert (median["ci_low"], median["ci_high"]) == pytest.approx((ci.low, ci.high), rel=1e-9)
        assert median["ci_coverage"] == pytest.approx(ci.coverage)
        assert median["resolved"] == int(ci.resolved)
        # It stopped as soon as the CI was within 3% (after 6), else at 20.
        assert ci.resolved or len(times) == 20
        if len(times) > 6:
            assert not median_ci(times[:-1]).resolved
    # Skips and failures run once.
    for variant in ("skip", "wrong"):
        for n in (1024, 4096):
            assert len(reps[f"probe/{variant}/f32/cpu/n={n}/view=transpose/perm=01"]) == 1
    # Each case is set up once, though the rounds interleave them (A B, A B, ...).
    prepared = [line.split()[-1] for line in proc.stderr.splitlines() if line.startswith("probe: prepared ")]
    assert sorted(prepared) == sorted(f"probe/counted/f32/cpu/n={n}/view=transpose/perm=01" for n in (1024, 4096))
    # The drift check: the baseline copy at start and end, with its CI, in the context.
    for key in ("flopscope_drift_start", "flopscope_drift_end"):
        drift = json.loads(data["context"][key])
        assert drift["ci_low"] <= drift["bytes_per_second"] <= drift["ci_high"] and drift["repetitions"] >= 6


def test_fixed_repetitions_mean_that_count_and_carry_the_same_ci(tmp_path):
    _, reps, aggregates, _ = by_rule(tmp_path, "--benchmark_repetitions=3")
    name = "probe/copy/f32/cpu/n=1024/view=transpose/perm=01"
    assert len(reps[name]) == 3
    median = aggregates[name]["median"]
    times = sorted(r["real_time"] for r in reps[name])
    assert (median["ci_low"], median["ci_high"], median["ci_coverage"]) == pytest.approx((times[0], times[2], 0.75))
    assert median["resolved"] == 0  # 75% is no 95% CI


def test_google_benchmarks_compare_reads_the_rules_json(tmp_path):
    compare = Path("/usr/share/benchmark/compare.py")
    if not compare.exists():
        pytest.skip("Google Benchmark's tools/compare.py is not installed")
    by_rule(tmp_path)
    first = tmp_path / "a.json"
    (tmp_path / "rule.json").rename(first)
    by_rule(tmp_path)
    python = ROOT / ".venv" / "bin" / "python"
    proc = subprocess.run([str(python if python.exists() else "python3"), str(compare), "benchmarks", str(first),
                           str(tmp_path / "rule.json")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "probe/copy/f32/cpu/n=1024/view=transpose/perm=01/real_time_median" in proc.stdout


def idle_cpu_ms(env):
    """harness_probe --idle-cpu: an OpenMP region and an OpenBLAS dgemm, then the process's CPU
    milliseconds while its main thread sleeps 0.25 s (what idle thread pools burn)."""
    proc = subprocess.run([str(binary(PROBE)), "--idle-cpu"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    fields = dict(word.split("=") for word in proc.stdout.split())
    if fields["openblas"] != "1":
        pytest.skip("a build without OpenBLAS: no second thread pool")
    return float(fields["idle_cpu_ms"])


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: the pools have no second thread to spin")
def test_idle_thread_pools_give_the_cores_back_between_cases(tmp_path):
    # Note [idle thread pools] (bench/harness/thread_pools.cpp): unset, the harness caps both
    # pools' spin; the runtimes' defaults (set by hand here) spin for ~0.1 s after a call.
    clean = {k: v for k, v in ENV.items() if k not in ("OPENBLAS_THREAD_TIMEOUT", "GOMP_SPINCOUNT")}
    assert idle_cpu_ms(dict(clean, OPENBLAS_THREAD_TIMEOUT="28", GOMP_SPINCOUNT="300000")) > 30
    assert idle_cpu_ms(clean) < 10
    # The settings in effect are in the context; a caller's own value is kept.
    out = tmp_path / "out.json"
    for env, expected in ((clean, {"OPENBLAS_THREAD_TIMEOUT": "20", "GOMP_SPINCOUNT": "10000"}),
                          (dict(clean, GOMP_SPINCOUNT="5"), {"OPENBLAS_THREAD_TIMEOUT": "20", "GOMP_SPINCOUNT": "5"})):
        proc = subprocess.run([str(binary(PROBE)), "--variants=copy", "--benchmark_min_time=0.001",
                               "--benchmark_repetitions=1", f"--benchmark_out={out}"],
                              capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        context = json.loads(json.loads(out.read_text())["context"]["flopscope"])
        assert context["run"]["thread_pools"] == expected


def thp_mode():
    try:
        line = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return ""
    return line[line.index("[") + 1:line.index("]")] if "[" in line else ""


def test_huge_pages_are_asked_for_only_with_the_flag_and_the_context_says_so(tmp_path):
    mode = thp_mode()
    for flags, expected in (((), False), (("--huge-pages",), True)):
        if expected and mode in ("", "never"):
            # The flag is refused where the system grants no huge pages: one line, exit 2.
            _, proc = run(PROBE, tmp_path, "--variants=copy", *flags, expect=2)
            assert proc.stderr.count("\n") == 1 and "--huge-pages" in proc.stderr, proc.stderr
            continue
        data, _ = run(PROBE, tmp_path, "--variants=copy", *flags)
        context = json.loads(data["context"]["flopscope"])
        assert context["run"]["huge_pages"] is expected
        assert context["run"]["transparent_huge_pages"] == (mode or None)
