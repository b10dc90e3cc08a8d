"""What scripts/checks/reference_check.py, matmul_check.py and torch_beside.py share: the CPU's name, the cases a
bench binary would run (its --describe), the medians of a Google Benchmark run, and writing the result table under a
dated, CPU-named file atomically."""
import datetime
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path


def cpu_model():
    """The CPU's model name from /proc/cpuinfo ("AMD EPYC", "Intel(R) Xeon(R) Processor")."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def describe(binary, *flags):
    """The cases that BINARY FLAGS would run, by name (`BINARY --describe FLAGS`, analysis/FORMAT.md "Describe"):
    each a dict with its variant, role, dtype, device, skip and what it measures. The checks select cases by role
    (--roles=...) and read the variants' names from here, never from a list of their own."""
    out = subprocess.run([str(binary), "--describe", *flags], check=True, capture_output=True, text=True).stdout
    return {case["name"]: case for case in json.loads(out)["cases"]}


F32_PEAK_FLAGS = ("--devices=cpu", "--dtypes=f32")  # bench_peak's f32 cases on the CPU


def f32_fma_chains(bench_dir):
    """bench_peak's cases that measure the f32 compute ceiling (one FMA chain per vector ISA the
    binary has), by name: {case name: variant}, from its --describe."""
    cases = describe(Path(bench_dir) / "bench_peak", *F32_PEAK_FLAGS)
    return {name: c["variant"] for name, c in cases.items() if c["measures"] == {"kind": "compute", "name": "f32"}}


def gbench_medians(binary, *flags, repetitions, min_time, warmup_s):
    """Medians by case name (without /real_time) of one Google Benchmark run; failures left out."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        subprocess.run([str(binary), *flags, f"--benchmark_repetitions={repetitions}",
                        f"--benchmark_min_time={min_time}", f"--benchmark_out={out}", "--benchmark_out_format=json"],
                       check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, FLOPSCOPE_WARMUP_S=str(warmup_s)))
        data = json.loads(out.read_text())
    return {b["run_name"].replace("/real_time", ""): b for b in data["benchmarks"]
            if b.get("aggregate_name") == "median" and not b.get("error_occurred")}


def write_table(text, out_dir, prefix):
    """Prints `text` and writes it to OUT_DIR/<prefix>-<date>-<cpu>.md (via a partial file)."""
    print(text)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^a-z0-9]+", "-", cpu_model().lower()).strip("-")
    target = out / f"{prefix}-{datetime.date.today()}-{slug}.md"
    tmp = target.with_suffix(".partial")
    tmp.write_text(text)
    os.replace(tmp, target)
    print(f"written to {target}")
