"""What a report says about what it does not have: a binary's partial file, a file cut short, an
old context (schema 1), NaN counters; and what it reads from the harness: the CI of the median,
the drift check, the variants' descriptions. Each is a report that renders (exit 0, no
traceback) and a line that says so."""

from __future__ import annotations

import json
import math

from conftest import run_cli
from flopscope_analysis.names import strip_gbench_suffixes

MISSING = ["copy/simd/f32/cpu/n=1073741824", "copy/memcpy/f32/cpu/n=1073741824"]


def _flopscope(document: dict) -> dict:
    return json.loads(document["context"]["flopscope"])


def _set_flopscope(document: dict, value: dict) -> None:
    document["context"]["flopscope"] = json.dumps(value)


def _names(document: dict) -> list[str]:
    names = []
    for entry in document["benchmarks"]:
        name = strip_gbench_suffixes(entry["run_name"])
        if name not in names:
            names.append(name)
    return names


def schema2(path, extra_planned=(), variants=()) -> dict:
    """Makes a fixture file schema 2: its cases planned (plus `extra_planned`, never written)."""
    document = json.loads(path.read_text())
    flopscope = _flopscope(document)
    flopscope.update(schema=2, suite="default", variants=list(variants),
                     cases=[{"name": n, "variant": n.split("/")[1], "role": "own", "dtype": "f32", "device": "cpu",
                             "skip": None, "ceiling": {"kind": "memory", "name": "best"}, "measures": None,
                             "group": "copy"} for n in _names(document) + list(extra_planned)])
    _set_flopscope(document, flopscope)
    path.write_text(json.dumps(document))
    return document


def report(run_dir) -> str:
    done = run_cli("report", run_dir)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return (run_dir / "report.md").read_text(encoding="utf-8")


def test_a_partial_file_is_read_and_its_missing_cases_listed(fixture_dir):
    run_dir = fixture_dir("run_cpu")
    copy = run_dir / "bench_copy.json"
    document = schema2(copy, MISSING)
    copy.rename(run_dir / "bench_copy.json.partial")  # as run_suite.py keeps a binary that stopped
    text = report(run_dir)
    planned = len(_names(document)) + len(MISSING)
    assert (f"- **Missing**: bench_copy (its partial file: the binary stopped early) lacks 2 of its {planned} "
            f"planned cases: `{MISSING[0]}`, `{MISSING[1]}`.") in text
    assert "copy/simd/f32/cpu/n=1024" in text or "| simd |" in text  # its cases are reported
    # A whole file beside the partial one wins: nothing is missing then.
    (run_dir / "bench_copy.json").write_text((run_dir / "bench_copy.json.partial").read_text())
    schema2(run_dir / "bench_copy.json")
    assert "**Missing**" not in report(run_dir)


def test_a_file_cut_short_is_read_as_far_as_it_parses(fixture_dir):
    run_dir = fixture_dir("run_cpu")
    copy = run_dir / "bench_copy.json"
    document = schema2(copy)
    names = _names(document)
    text = json.dumps(document, indent=2)
    # Cut in the middle of the entries of the third case: the first two are whole.
    third = text.index(f'"run_name": "{names[2]}/real_time"')
    copy.write_text(text[:third + 40])
    out = report(run_dir)
    line = next(line for line in out.splitlines() if line.startswith("- **Missing**: bench_copy"))
    assert "(its file is cut short)" in line and f"lacks {len(names) - 2} of its {len(names)}" in line
    assert f"`{names[3]}`" in line
    # Cut inside the context, nothing can be read of it: a one-line error, as for any non-JSON.
    copy.write_text(text[:200])
    done = run_cli("report", run_dir)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and "bench_copy.json" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_old_context_says_in_one_line_what_it_cannot_know(fixture_dir):
    run_dir = fixture_dir("run_cpu")  # schema 1, both files
    lines = [line for line in report(run_dir).splitlines() if "**Unknown**" in line]
    assert lines == ["- **Unknown**: roles, typed ceilings and planned cases unknown for bench_copy, bench_peak: "
                     "written by an older binary (context schema 1); roles are read from variant names."]
    done = run_cli("compare", run_dir, run_dir)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if "planned cases unknown" in line]
    assert [line.split(":")[0] for line in said] == ["BASE", "NEW"]


def test_nan_counters_render(fixture_dir):
    run_dir = fixture_dir("run_cpu")
    copy = run_dir / "bench_copy.json"
    document = json.loads(copy.read_text())
    name = _names(document)[0]
    for entry in document["benchmarks"]:
        if entry["run_name"].startswith(name + "/"):
            for key in ("bytes_per_second", "pct_peak_bw", "intensity", "real_time"):
                if key in entry and entry.get("aggregate_name") != "cv":
                    entry[key] = math.nan
    copy.write_text(json.dumps(document))  # NaN, as Google Benchmark writes it
    assert "NaN" in copy.read_text()
    done = run_cli("report", run_dir)
    # A repetition without a numeric time is named as such; every other NaN renders.
    assert "Traceback" not in done.stderr
    if done.returncode != 0:
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and "real_time" in done.stderr
    for entry in document["benchmarks"]:
        if entry["run_name"].startswith(name + "/"):
            entry["real_time"] = 1.0
    copy.write_text(json.dumps(document))
    text = report(run_dir)
    assert "nan" not in text.lower().replace("nanosec", "")


def test_the_harness_ci_is_read_not_recomputed(fixture_dir):
    run_dir = fixture_dir("run_cpu")
    copy = run_dir / "bench_copy.json"
    document = json.loads(copy.read_text())
    name = _names(document)[0]
    median = next(e for e in document["benchmarks"]
                  if e["run_name"].startswith(name + "/") and e.get("aggregate_name") == "median")
    t = median["real_time"]
    median.update(ci_low=0.9 * t, ci_high=1.05 * t, ci_coverage=0.96875, resolved=0)
    copy.write_text(json.dumps(document))
    text = report(run_dir)
    row = next(line for line in text.splitlines() if line.startswith("| simd | f32 | n=1024 |"))
    assert "-10.0/+5.0% ⚠ unresolved" in row


def test_drift_between_start_and_end_is_said(fixture_dir):
    run_dir = fixture_dir("run_cpu")
    copy = run_dir / "bench_copy.json"
    document = json.loads(copy.read_text())

    def probe(rate, low, high):
        return json.dumps({"probe": "memcpy of 128 MiB", "bytes_per_second": rate, "ci_low": low,
                           "ci_high": high, "repetitions": 6, "resolved": True})

    document["context"]["flopscope_drift_start"] = probe(47e9, 46e9, 48e9)
    document["context"]["flopscope_drift_end"] = probe(63e9, 62e9, 64e9)
    copy.write_text(json.dumps(document))
    line = next(line for line in report(run_dir).splitlines() if "Drift" in line)
    assert line.startswith("- **Drift**: the baseline copy (memcpy of 128 MiB) differs")
    assert "1 of 1 binaries" in line and "bench_copy 47.0 → 63.0 GB/s (+34%)" in line
    document["context"]["flopscope_drift_end"] = probe(47.5e9, 46.5e9, 48.5e9)
    copy.write_text(json.dumps(document))
    line = next(line for line in report(run_dir).splitlines() if "Drift" in line)
    assert line == ("- Drift: the baseline copy (memcpy of 128 MiB) at the start and end of each of 1 binaries "
                    "agree within their CIs.")


def test_variants_appendix_carries_descriptions(fixture_dir):
    run_dir = fixture_dir("run_cpu")
    variants = [{"name": "simd", "device": "cpu", "role": "own", "description": "AVX-512 loads and stores",
                 "available": True, "reason": None},
                {"name": "mma", "device": "cuda", "role": "own", "description": "mma.sync (Ampere-style), not wgmma",
                 "available": False, "reason": "cuda:0: no CUDA device"}]
    schema2(run_dir / "bench_copy.json", variants=variants)
    text = report(run_dir)
    appendix = text[text.index("## Appendix: variants"):]
    assert "| bench_copy | `mma` | cuda | own | mma.sync (Ampere-style), not wgmma | no: cuda:0: no CUDA device |" \
        in appendix
    assert "| bench_copy | `simd` | cpu | own | AVX-512 loads and stores | yes |" in appendix
