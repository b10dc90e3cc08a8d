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


def _gloo_script():
    """scripts/checks/gloo_allreduce.py as a module (its writer of torch_gloo.json)."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "scripts" / "checks" / "gloo_allreduce.py"
    spec = importlib.util.spec_from_file_location("gloo_allreduce", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gloo_beside_mpi_in_the_same_table_with_the_ratio(fixture_dir):
    run_dir = fixture_dir("run_collectives")
    gloo = _gloo_script()
    sizes = gloo.suite_sizes(run_dir / "bench_collectives.json")
    assert sizes == [1024, 65536]  # the f32 sum out-of-place all_reduce cases
    busbw = _busbw(run_dir)
    # gloo at a third of MPI's busbw (algbw = busbw for 2 ranks): the ratio column says 3.00x gloo.
    rows = {}
    for n in sizes:
        mpi = busbw[f"collectives/mpi/f32/cpu/n={n}/coll=all_reduce/op=sum/place=out/ranks=2"]
        rows[n] = {"n": n, "bytes": 4 * n, "calls": 10, "seconds": 4 * n / (mpi / 3), "algbw": mpi / 3, "wrong": 0}
    gloo.write_file(run_dir, sizes, 2, rows, "2.0")
    proc = run_cli("report", run_dir)
    assert proc.returncode == 0, proc.stderr
    lines = (run_dir / "report.md").read_text().splitlines()
    table = [line for line in lines if line.startswith("| all_reduce |") and "| sum | out | 2 |" in line]
    # Side by side: at each size the MPI row, then gloo's; MPI's row carries the ratio.
    assert [line.split(" | ")[1] for line in table] == ["mpi", "gloo", "mpi", "gloo"]
    for mpi_row, gloo_row in zip(table[::2], table[1::2]):
        assert mpi_row.endswith("| 3.00x gloo |") and gloo_row.endswith("| — |")
        n = int(gloo_row.split(" | ")[6])
        assert f"| {fmt.giga(busbw[f'collectives/mpi/f32/cpu/n={n}/coll=all_reduce/op=sum/place=out/ranks=2'] / 3)} |" in gloo_row
    # Other collectives have no baseline.
    assert next(line for line in lines if line.startswith("| all_gather |")).endswith("| — |")


def test_without_pytorch_gloo_is_a_named_skip_line(fixture_dir):
    run_dir = fixture_dir("run_collectives")
    gloo = _gloo_script()
    gloo.write_file(run_dir, [1024, 65536], 2, {}, None)
    proc = run_cli("report", run_dir)
    assert proc.returncode == 0, proc.stderr
    section = (run_dir / "report.md").read_text().split("## Collectives: best bus bandwidth", 1)[1].split("\n## ", 1)[0]
    assert ("- gloo beside MPI: skipped: PyTorch is not installed (pip install -r analysis/requirements-torch.txt)"
            in section)


def test_the_step_table_shows_what_account_train_computed(fixture_dir):
    # account/train_busbw.json: `flopscope account train --model gpt2-small --devices 8 --batch 8 --seq 1024
    # --device h100 --mfu 0.4 --dtype bf16 --json --busbw <the fixture>`, as the suite writes it.
    run_dir = fixture_dir("run_collectives")
    data = json.loads((run_dir / "account" / "train_busbw.json").read_text())
    proc = run_cli("report", run_dir)
    assert proc.returncode == 0, proc.stderr
    report = (run_dir / "report.md").read_text()
    section = report.split("## Collectives: a data-parallel step's communication against its compute", 1)[1]
    section = section.split("\n## ", 1)[0]
    assert f"busbw {fmt.giga(data['busbw'])} GB/s" in section
    by_stage = {s["sharding"]: s for s in data["stages"]}
    ddp = next(line for line in section.splitlines() if line.startswith("| ddp |"))
    assert (f"| {fmt.duration(by_stage['ddp']['comm_seconds'])} | {fmt.duration(data['compute_seconds'])} | "
            f"{fmt.duration(by_stage['ddp']['step_seconds_serial'])} |") in ddp
    assert next(line for line in section.splitlines() if line.startswith("| zero3 |")).count("all_gather") == 2
