import json
import re

import pytest

from conftest import FIXTURES, run_cli
from flopscope_analysis import fmt
from flopscope_analysis.load import load_run
from flopscope_analysis.report import write_report

PNG = b"\x89PNG\r\n\x1a\n"


def median_of(path, run_name, aggregate="median"):
    data = json.loads(path.read_text())
    return next(e for e in data["benchmarks"]
                if e["run_name"] == run_name and e.get("aggregate_name") == aggregate)


def section(text, title):
    """The text of one '## title' section."""
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def row(text, *cells):
    """The table row whose first cells are `cells`."""
    prefix = "| " + " | ".join(cells) + " |"
    rows = [line for line in text.splitlines() if line.startswith(prefix)]
    assert len(rows) == 1, (prefix, rows)
    return [c.strip() for c in rows[0].strip("|").split(" | ")]


@pytest.fixture
def cpu_report(fixture_dir):
    run_dir = fixture_dir("run_cpu")
    path = write_report(load_run(run_dir), run_dir)
    return run_dir, path.read_text(encoding="utf-8")


def test_files_are_written(cpu_report):
    run_dir, text = cpu_report
    assert (run_dir / "report.md").is_file()
    for name in ("roofline_cpu.png", "copy_bandwidth_cpu.png"):
        assert (run_dir / "plots" / name).read_bytes().startswith(PNG)
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", text)
    assert sorted(links) == ["plots/copy_bandwidth_cpu.png", "plots/roofline_cpu.png"]
    for link in links:
        assert (run_dir / link).is_file()  # relative to the report
    leftovers = [p.name for p in run_dir.rglob("*") if p.name.startswith(".") or p.suffix == ".tmp"]
    assert leftovers == []


def test_build_names_what_the_context_records():
    from flopscope_analysis.report import _build_text
    compiled = {"compiler": "GNU 12.2.0", "build_type": "Release", "cuda": None, "git_commit": "abc123"}
    assert _build_text(compiled) == "GNU 12.2.0, Release, no CUDA, commit abc123"
    assert _build_text({**compiled, "cuda": "13.0"}) == "GNU 12.2.0, Release, CUDA 13.0, commit abc123"
    # A Python peer (torch_peer.py, gloo_allreduce.py) names its PyTorch; nothing it lacks shows as '?'.
    assert _build_text({"compiler": "PyTorch 2.15.0+cpu", "build_type": None}) == "PyTorch 2.15.0+cpu"
    assert _build_text({}) == "not recorded"


def test_header(cpu_report):
    _, text = cpu_report
    assert text.startswith("# flopscope run run_cpu\n")
    assert "GNU 12.2.0, Release, CUDA 13.0, commit 9248cb2" in text
    assert "### cpu: Intel(R) Xeon(R) Processor @ 2.60GHz" in text
    assert "clock: 2.600 GHz (measured: dependent add chain)" in text
    assert "2 cores x 2.600 GHz x 2 FMA units x 16 lanes x 2 FLOP (avx512 FMA)" in text
    devices = section(text, "Devices")
    assert row(devices, "f32")[1] == "333"  # 3.328e11 FLOP/s
    assert "from `results/ceilings/cpu-intel-r-xeon-r-processor.json`" in text
    assert row(devices, "memory copy") == ["memory copy", "11.5 GB/s"]
    assert row(devices, "compute f64") == ["compute f64", "150 GFLOP/s"]
    assert "theoretical memory bandwidth: unknown" in text
    assert "- `cuda:0`: CUDA driver version is insufficient for CUDA runtime version" in text
    assert row(text, "bench_copy")[-1] == "cold"


def test_results_table_holds_the_fixture_figures(cpu_report):
    _, text = cpu_report
    results = section(text, "Results")
    assert "### copy on cpu (Intel(R) Xeon(R) Processor @ 2.60GHz)" in results
    assert "### peak on cpu" in results
    median = median_of(FIXTURES / "run_cpu" / "bench_copy.json", "copy/simd/f32/cpu/n=67108864/real_time")
    times = sorted(e["real_time"] for e in json.loads((FIXTURES / "run_cpu" / "bench_copy.json").read_text())
                   ["benchmarks"] if e["run_name"] == "copy/simd/f32/cpu/n=67108864/real_time"
                   and e["run_type"] == "iteration")
    # 3 repetitions: min..max covers the median with 1 - 2/8 = 75%, the widest any 3 samples give
    ci = (f"-{100 * (times[1] - times[0]) / times[1]:.1f}/+{100 * (times[2] - times[1]) / times[1]:.1f}% "
          "(75% CI, 3 runs)")
    cells = row(results, "simd", "f32", "n=67108864")
    copy_ceiling = 11.5e9  # the fixture's measured copy ceiling: a copy is held against it
    assert cells == ["simd", "f32", "n=67108864", "512 MiB", "memory (f32)",
                     f"{median['real_time'] / 1e6:.3g} ms", "0", f"{median['bytes_per_second'] / 1e9:.3g}",
                     "0", "—", f"{100 * median['bytes_per_second'] / copy_ceiling:.1f}% copy", ci]
    assert cells[5:8] == ["49.7 ms", "0", "10.8"] and cells[10:] == ["93.9% copy", "-0.4/+0.4% (75% CI, 3 runs)"]


def test_noisy_case_is_marked(cpu_report):
    _, text = cpu_report
    results = section(text, "Results")
    cells = row(results, "simd", "f32", "n=1024")
    # samples 77.6, 86.2, 94.9 ns: min and max 10% either side of the median; 8 KiB fit in L1d
    assert cells[-2:] == ["in L1D", "-10.0/+10.0% (75% CI, 3 runs) ⚠ unresolved"]
    assert "⚠ unresolved (1 of 12 cases)" in results
    assert sum("⚠ unresolved" in line for line in results.splitlines() if line.startswith("| ")) == 1


def test_compute_cases(cpu_report):
    _, text = cpu_report
    results = section(text, "Results")
    cells = row(results, "fma", "f32", "n=1024/threads=2")
    median = median_of(FIXTURES / "run_cpu" / "bench_peak.json", "peak/fma/f32/cpu/n=1024/threads=2/real_time")
    assert cells[4] == "compute (f32)"
    assert cells[6] == f"{median['flops_per_second'] / 1e9:.3g}" == "300"
    assert cells[8] == "∞ (no bytes)"
    assert cells[9] == f"{median['pct_peak_flops']:.1f}%" == "90.1%"
    triad = row(results, "triad", "f64", "n=67108864")
    assert triad[8] == "0.0833"


def test_skipped_and_failed_are_listed_not_tabulated(cpu_report):
    _, text = cpu_report
    results = section(text, "Results")
    assert "bf16" not in results and "cuda:0" not in results
    skips = section(text, "Appendix: skipped and failed cases")
    assert "### Failed (2)" in skips and "### Skipped (4)" in skips
    failed = row(skips, "`copy/simd/bf16/cpu/n=1048576`")
    assert failed[1] == "bench_copy.json"
    assert failed[2].startswith("3 of 1048576 elements differ from the reference, first at [17]")
    assert row(skips, "`peak/fma/f16/cpu/n=1024/threads=2`")[2] == \
        "FMA chain result 0 differs from the reference 2048"
    assert row(skips, "peak/dot", "cpu")[-1] == "CPU lacks AVX512_BF16 (ISA avx512)"
    assert row(skips, "copy/grid_stride", "cuda:0")[-1] == \
        "CUDA driver version is insufficient for CUDA runtime version"


def test_report_is_rewritten(cpu_report):
    run_dir, text = cpu_report
    (run_dir / "report.md").write_text("stale")
    write_report(load_run(run_dir), run_dir)
    assert (run_dir / "report.md").read_text(encoding="utf-8") == text


def test_gpu_run(fixture_dir):
    run_dir = fixture_dir("run_gpu")
    text = write_report(load_run(run_dir), run_dir).read_text(encoding="utf-8")
    for name in ("roofline_cpu.png", "roofline_cuda_0.png", "copy_bandwidth_cuda_0.png"):
        assert (run_dir / "plots" / name).read_bytes().startswith(PNG)
    assert not (run_dir / "plots" / "copy_bandwidth_cpu.png").exists()  # no CPU copy in this run
    results = section(text, "Results")
    matmul = row(results, "cublas", "bf16", "m=8192,n=8192,k=8192")
    assert matmul[5] == "700000" and matmul[6] == "70.7%" and matmul[7] == "94.6% bf16 FMA"  # the matmul table: variant, mode, shape, layout, time, GFLOP/s, % peak, % ceiling
    assert row(results, "hw", "f32->bf16")[7] == "9.00"
    assert "132 SMs x 1.830 GHz x 4096 FLOP/clk/SM" in text
    assert "theoretical memory bandwidth: 4800 GB/s (NVIDIA H200 datasheet (HBM3e))" in text
    assert "### Failed (0)" in text and "### Skipped (0)" in text


def test_report_and_summary_commands(fixture_dir):
    run_dir = fixture_dir("run_cpu")
    done = run_cli("report", run_dir)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(run_dir / "report.md")
    assert (run_dir / "plots" / "roofline_cpu.png").is_file()
    summary = run_cli("summary", run_dir)
    assert summary.returncode == 0, summary.stderr
    lines = summary.stdout.splitlines()
    assert lines[0] == "flopscope run run_cpu"
    simd = next(line for line in lines if line.startswith("copy/simd/f32/cpu/n=1024 "))
    assert simd.split()[-2:] == ["10.00%", "NOISY"]
    assert "12 ran (1 noisy), 4 skipped, 2 failed" in lines
    assert any(line.startswith("FAILED copy/simd/bf16/cpu/n=1048576: 3 of 1048576") for line in lines)
    assert "skipped device cuda:0: CUDA driver version is insufficient for CUDA runtime version" in lines


def test_main_in_process_and_single_run(fixture_dir):
    from flopscope_analysis.cli import main

    run_dir = fixture_dir("single")
    assert main(["report", str(run_dir)]) == 0
    text = (run_dir / "report.md").read_text(encoding="utf-8")
    assert row(section(text, "Results"), "simd", "f64", "n=4096")[-1] == "— (1 run)"


def conversion_report(fixture_dir):
    run_dir = fixture_dir("run_convert")
    return section(write_report(load_run(run_dir), run_dir).read_text(encoding="utf-8"), "Conversions against copy")


def rate(binary, run_name):
    return median_of(FIXTURES / "run_convert" / f"{binary}.json", run_name + "/real_time")["bytes_per_second"]


def against(conversion, copy, copy_name):
    return f"{100 * conversion / copy:.1f}% ({copy_name}, {fmt.giga(copy)} GB/s)"


def test_conversions_are_set_against_copy(fixture_dir):
    """Each conversion's best variant against the measured copy ceiling and against the f32
    copy of the same n (the figures of the fixture's JSON, divided here)."""
    conversions = conversion_report(fixture_dir)
    convert = FIXTURES / "run_convert" / "bench_convert.json"
    ceiling = json.loads(json.loads(convert.read_text())["context"]["flopscope"])["devices"]["cpu"]["ceilings"]
    copy_ceiling = ceiling["memory_bytes_per_second"]["copy"]

    best = rate("bench_convert", "convert/avx512bf16/f32->bf16/cpu/n=67108864")
    cells = row(conversions, "cpu", "f32->bf16", "n=67108864")
    assert cells[3] == "avx512bf16"  # the faster of avx512 and avx512bf16
    assert cells[4] == fmt.giga(best)
    assert cells[5] == f"{100 * best / copy_ceiling:.1f}%"
    # One row per (conversion, n): the slower avx512 f32->bf16 is not a second row.
    assert conversions.count("| f32->bf16 |") == 1
    # No f32 copy of n=4096 ran: only the ceiling applies.
    assert row(conversions, "cpu", "f32->f8e4m3", "n=4096")[6] == "—"


def test_the_copy_of_the_same_process_comes_first(fixture_dir):
    """bench_convert's f32->f32 baseline is what a conversion of its n is set against, whether
    faster or slower than bench_copy's copy (another process, another moment); where
    bench_convert has no baseline of that n there is no ratio (bench_copy's copy ran in another
    process, minutes apart). The baseline is no conversion row."""
    conversions = conversion_report(fixture_dir)
    assert "| f32->f32 |" not in conversions
    for dtype, variant, n in (("f32->bf16", "avx512bf16", 67108864), ("bf16->f32", "avx512", 1048576)):
        baseline = rate("bench_convert", f"convert/copy/f32->f32/cpu/n={n}")
        assert row(conversions, "cpu", dtype, f"n={n}")[6] == \
            against(rate("bench_convert", f"convert/{variant}/{dtype}/cpu/n={n}"), baseline, "convert/copy")
    assert rate("bench_convert", "convert/copy/f32->f32/cpu/n=67108864") < \
        rate("bench_copy", "copy/simd/f32/cpu/n=67108864")  # preferred although slower
    assert rate("bench_copy", "copy/simd/f32/cpu/n=65536")  # there, but of another process
    assert row(conversions, "cpu", "f32->f16", "n=65536")[6] == "—"


def test_no_conversion_section_without_conversions(cpu_report):
    _, text = cpu_report
    assert "## Conversions against copy" not in text


def rename_family(path, old, new):
    """Rewrites a fixture file so that its `old` cases belong to the family `new`."""
    data = json.loads(path.read_text())
    for e in data["benchmarks"]:
        for key in ("name", "run_name"):
            e[key] = e[key].replace(f"{old}/", f"{new}/", 1) if e[key].startswith(f"{old}/") else e[key]
    path.write_text(json.dumps(data))


def test_a_family_without_a_module_gets_the_generic_table_and_the_roofline(fixture_dir):
    run_dir = fixture_dir("single")
    rename_family(run_dir / "bench_copy.json", "convert", "widget")
    text = write_report(load_run(run_dir), run_dir).read_text(encoding="utf-8")
    results = section(text, "Results")
    assert "### widget on cpu" in results
    (raw,) = [e for e in json.loads((run_dir / "bench_copy.json").read_text())["benchmarks"]
              if e["run_name"] == "widget/hw/f32->bf16/cpu/n=1048576/real_time"]  # one repetition
    cells = row(results, "hw", "f32->bf16", "n=1048576")
    assert cells[6] == fmt.giga(raw["flops_per_second"]) and cells[7] == fmt.giga(raw["bytes_per_second"])
    lines = results.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("### widget on cpu"))
    header = next(line for line in lines[start:] if line.startswith("| variant"))
    assert header == "| variant | dtype | shape | bytes/iter | bound | median time | GFLOP/s | GB/s | " \
                     "FLOP/byte | % peak | % ceiling | 95% CI |"
    assert "## Conversions against copy" not in text  # the convert module's section is not applied
    assert re.findall(r"!\[[^]]*\]\(([^)]+)\)", text) == ["plots/roofline_cpu.png",
                                                         "plots/copy_bandwidth_cpu.png"]


def test_a_registered_module_adds_its_sections_and_plots(fixture_dir, monkeypatch):
    """The report grows by a module in the registry, report.py unchanged."""
    from flopscope_analysis import families

    def sections(run):
        return ["## Widgets", "", f"{len([c for c in run.cases if c.name.family == 'widget'])} widget(s)", ""]

    def plots(run, device_id, plots_dir):
        path = plots_dir / f"widget_{device_id}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(PNG)
        return [families.Plot("Widget plot", path, "a widget caption")]

    def table(cases, device=None):
        assert device is not None and device.id == "cpu"  # the report passes the cases' device
        return [f"widget table of {len(cases)}"]

    monkeypatch.setitem(families.REGISTRY, "widget",
                        families.Family("widget", table=table, sections=sections, plots=plots))
    run_dir = fixture_dir("single")
    rename_family(run_dir / "bench_copy.json", "convert", "widget")
    text = write_report(load_run(run_dir), run_dir).read_text(encoding="utf-8")
    assert "widget table of 1" in section(text, "Results")
    assert section(text, "Widgets") == "## Widgets\n\n1 widget(s)\n"
    assert "### Widget plot: cpu\n\n![widget plot cpu](plots/widget_cpu.png)\n\n*a widget caption*" in text


def test_peak_section_sets_this_runs_ceilings_beside_those_it_used(cpu_report):
    _, text = cpu_report
    ceilings = section(text, "Ceilings measured in this run")
    peak = FIXTURES / "run_cpu" / "bench_peak.json"
    copy = median_of(peak, "peak/copy/f64/cpu/n=134217728/real_time")["bytes_per_second"]
    fma = median_of(peak, "peak/fma/f32/cpu/n=1024/threads=2/real_time")["flops_per_second"]
    assert row(ceilings, "cpu", "memory copy") == [
        "cpu", "memory copy", fmt.rate(copy, "B/s"), "11.5 GB/s", f"{100 * copy / 1.15e10:.1f}%"]
    assert row(ceilings, "cpu", "compute f32") == [
        "cpu", "compute f32", fmt.rate(fma, "FLOP/s"), "300 GFLOP/s", f"{100 * fma / 3.0e11:.1f}%"]
    assert "compute f16" not in ceilings  # a failed case is no ceiling


def test_an_incomplete_run_says_so(fixture_dir):
    from flopscope_analysis import runstatus

    run_dir = fixture_dir("run_cpu")
    runstatus.write(run_dir, runstatus.INTERRUPTED, binaries=["bench_peak", "bench_copy", "bench_convert"],
                    finished=["bench_peak", "bench_copy"])
    text = write_report(load_run(run_dir), run_dir).read_text(encoding="utf-8")
    assert text.splitlines()[2] == ("**⚠ Incomplete run** (incomplete: interrupted (Ctrl-C); 2 of 3 "
                                    "binaries finished): the results below are what was written "
                                    "before it stopped.")
    summary = run_cli("summary", run_dir)
    assert summary.stdout.splitlines()[1] == \
        "INCOMPLETE run: incomplete: interrupted (Ctrl-C); 2 of 3 binaries finished"
    runstatus.write(run_dir, runstatus.COMPLETE)
    assert "Incomplete" not in write_report(load_run(run_dir), run_dir).read_text(encoding="utf-8")
