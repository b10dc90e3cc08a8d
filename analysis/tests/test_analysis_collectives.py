"""The collectives family module: its table (nccl-tests' columns), the best-busbw section and the
busbw plot, from a 2-rank MPI run of bench_collectives (fixtures/run_collectives: all_reduce,
all_gather and broadcast at 1024 and 65536 f32 elements, both placements)."""
import json

from conftest import run_cli
from flopscope_analysis import fmt
from flopscope_analysis.families import REGISTRY, collectives
from flopscope_analysis.load import Device


def _busbw(run_dir):
    data = json.loads((run_dir / "bench_collectives.json").read_text())
    return {b["run_name"].removesuffix("/manual_time"): b["busbw"] for b in data["benchmarks"] if "busbw" in b}


def test_report_has_the_table_section_and_plot(fixture_dir):
    run_dir = fixture_dir("run_collectives")
    proc = run_cli("report", run_dir)
    assert proc.returncode == 0, proc.stderr
    report = (run_dir / "report.md").read_text()
    busbw = _busbw(run_dir)
    # The table row of all_gather in place at 65536 elements: its busbw in GB/s.
    name = "collectives/mpi/f32/cpu/n=65536/coll=all_gather/place=in/ranks=2"
    row = next(line for line in report.splitlines()
               if line.startswith("| all_gather | mpi | f32 | — | in | 2 | 65536 |"))
    assert f"| {fmt.giga(busbw[name])} |" in row
    # The best busbw per collective and placement: broadcast in place, at 256 KiB (the larger size here).
    section = report.split("## Collectives: best bus bandwidth", 1)[1].split("\n## ", 1)[0]
    best = max(v for k, v in busbw.items() if "coll=broadcast/place=in" in k)
    assert f"| cpu | broadcast | mpi | f32 | in | 2 | 256 KiB | {fmt.giga(best)} | — |" in section
    assert (run_dir / "plots" / "collectives_busbw_cpu.png").stat().st_size > 0
    assert "skipped" in report and "MPI_Bcast has one buffer" in report


def test_registered_and_the_link_limit_is_half_the_copy_ceiling():
    assert REGISTRY["collectives"] is collectives.FAMILY
    cpu = Device("cpu", {"kind": "cpu", "ceilings": {"memory_bytes_per_second": {"copy": 20e9}}})
    assert collectives.link_limit(cpu)[0] == 10e9
    # Without ceilings, the theoretical memory bandwidth halved; without either, none.
    assert collectives.link_limit(Device("cpu", {"kind": "cpu", "peaks": {"memory_bytes_per_second": 50e9}}))[0] == 25e9
    assert collectives.link_limit(Device("cpu", {"kind": "cpu"})) is None
    assert collectives.link_limit(Device("cuda:0", {"kind": "cuda"})) is None
