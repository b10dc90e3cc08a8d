"""bench_collectives under mpirun with 2 ranks at tiny sizes: every collective validated (#wrong 0),
busbw = algbw x the nccl-tests factor, bytes = count x dtype size; and the bad inputs: one rank, a
count the ranks do not divide, a wrong result, a rank that dies, a rank that hangs (the timeout)."""
import json
import os
import shutil
import subprocess

import pytest

from test_bench_binaries import binary

ENV = dict(os.environ, FLOPSCOPE_WARMUP_S="0.05", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
          "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
          "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0, "send_recv": lambda n: 1.0}
SIZE = {"f32": 4, "f64": 8, "bf16": 2, "f16": 2}


def mpirun(tmp_path, ranks, *flags, env=None, timeout=120):
    if not shutil.which("mpirun"):
        pytest.skip("mpirun not found (scripts/setup.sh installs openmpi-bin)")
    out = tmp_path / "collectives.json"
    command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), "--mca", "btl", "self,vader",
               str(binary("bench_collectives")), "--devices=cpu", *flags, "--benchmark_min_time=0.001",
               f"--benchmark_out={out}", "--benchmark_out_format=json"]
    proc = subprocess.run(command, capture_output=True, text=True, env=dict(ENV, **(env or {})), timeout=timeout)
    data = json.loads(out.read_text()) if out.exists() else None
    return proc, data


def by_name(data):
    return {b["run_name"].removesuffix("/manual_time"): b for b in data["benchmarks"]}


def extras(name):
    return dict(part.split("=", 1) for part in name.split("/")[5:])


def test_two_ranks_validated_with_nccl_tests_busbw(tmp_path):
    proc, data = mpirun(tmp_path, 2, "--sizes=1024,4096", "--dtypes=f32,f64,bf16", "--ops=sum,max,prod")
    assert proc.returncode == 0, proc.stderr[-2000:]
    cases = by_name(data)
    ran = 0
    for name, b in cases.items():
        e = extras(name)
        if b.get("error_occurred"):
            message = b["error_message"]
            assert message.startswith("skipped: "), f"{name}: {message}"
            # The only skips with 2 ranks on the CPU: what MPI cannot do.
            assert any(w in message for w in ("MPI has no bf16 reduction", "MPI_Bcast has one buffer",
                                              "send_recv has no in-place form")), f"{name}: {message}"
            continue
        ran += 1
        dtype, n = name.split("/")[2], int(name.split("/")[4].split("=")[1])
        assert b["wrong"] == 0 and b["ranks"] == 2, name
        assert b["bytes"] == n * SIZE[dtype], name
        factor = FACTOR[e["coll"]](2)
        assert b["bus_factor"] == pytest.approx(factor, rel=1e-12), name
        assert b["busbw"] == pytest.approx(b["algbw"] * factor, rel=1e-9), name
        assert b["algbw"] == pytest.approx(b["bytes"] / (b["real_time"] * 1e-6), rel=1e-6), name  # time in us
    # 7 collectives: 3 reducing x 3 ops x 2 placements + 4 others x 2 placements, minus MPI's gaps.
    colls = {extras(n)["coll"] for n, b in cases.items() if not b.get("error_occurred")}
    assert colls == set(FACTOR), colls
    assert ran >= 60, ran
    # Only rank 0 printed the table.
    assert proc.stdout.count("coll=all_reduce/op=sum/place=out/ranks=2/manual_time") == 6


def test_bad_inputs_are_named_skips(tmp_path):
    proc, data = mpirun(tmp_path, 2, "--sizes=1001", "--collectives=all_gather,all_reduce", "--placements=out")
    assert proc.returncode == 0, proc.stderr[-2000:]
    cases = by_name(data)
    gather = cases["collectives/mpi/f32/cpu/n=1001/coll=all_gather/place=out/ranks=2"]
    assert gather["error_message"] == ("skipped: 1001 elements not divisible by 2 ranks "
                                       "(all_gather splits its buffer in one piece per rank)")
    assert not cases["collectives/mpi/f32/cpu/n=1001/coll=all_reduce/op=sum/place=out/ranks=2"].get("error_occurred")
    proc, data = mpirun(tmp_path, 1, "--sizes=1024", "--collectives=all_reduce", "--placements=out")
    assert proc.returncode == 0, proc.stderr[-2000:]
    (one,) = data["benchmarks"]
    assert one["error_message"] == "skipped: needs 2 ranks, this run has 1 (start it under mpirun -np 2)"


def test_a_wrong_result_fails_the_case(tmp_path):
    proc, data = mpirun(tmp_path, 2, "--sizes=1024", "--collectives=all_reduce,all_gather", "--placements=out",
                        env={"FLOPSCOPE_COLLECTIVES_CORRUPT": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    for b in data["benchmarks"]:
        assert b["error_message"] == "failed: mpi: 1 elements differ from the expected result", b["name"]


@pytest.mark.parametrize("hook", ["FLOPSCOPE_COLLECTIVES_DIE", "FLOPSCOPE_COLLECTIVES_STALL"])
def test_a_rank_that_dies_or_hangs_ends_the_run_keeping_the_results(tmp_path, hook):
    # Case 2 of 3: the first two finished cases stay in rank 0's JSON; no hang.
    proc, data = mpirun(tmp_path, 2, "--sizes=1024,2048,4096", "--collectives=all_reduce", "--placements=out",
                        env={hook: "1:2", "FLOPSCOPE_COLLECTIVE_TIMEOUT_S": "3"}, timeout=60)
    assert proc.returncode != 0
    names = [b["run_name"] for b in data["benchmarks"]]
    assert len(names) == 2 and all(not b.get("error_occurred") for b in data["benchmarks"]), names
    if hook.endswith("STALL"):
        assert "did not finish within the timeout" in proc.stderr


def test_the_suite_without_mpirun_names_the_skips_and_keeps_the_rest(tmp_path):
    # scripts/run_suite.py with mpirun missing from PATH: bench_collectives runs alone (every mpi
    # case a named skip, exit 0), bench_copy beside it runs as always, the report is written, and the
    # step after it (`account train --busbw`: no all_reduce ran) is one line, not a failure.
    import sys
    from pathlib import Path
    build = tmp_path / "build"
    (build / "bench").mkdir(parents=True)
    (build / "tools").mkdir()
    for name in ("bench_collectives", "bench_copy"):
        (build / "bench" / name).symlink_to(binary(name))
    tool = binary("bench_copy").parent.parent / "tools" / "flopscope"
    if tool.exists():
        (build / "tools" / "flopscope").symlink_to(tool)
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, str(root / "scripts" / "run_suite.py"), "--quick", "--build-dir", str(build),
                           "--runs-dir", str(tmp_path / "runs"), "--only", "bench_collectives,bench_copy"],
                          capture_output=True, text=True, timeout=600,
                          env=dict(ENV, PATH=str(tmp_path / "empty"), MPLBACKEND="Agg",
                                   FLOPSCOPE_CEILINGS_DIR=str(tmp_path / "ceilings")))
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = list((tmp_path / "runs").iterdir())
    collectives = json.loads((run_dir / "bench_collectives.json").read_text())["benchmarks"]
    assert collectives and all(b["error_message"] == "skipped: needs 2 ranks, this run has 1 (start it under mpirun -np 2)"
                               for b in collectives if "/mpi/" in b["name"])
    copies = json.loads((run_dir / "bench_copy.json").read_text())["benchmarks"]
    assert any(not b.get("error_occurred") for b in copies)
    assert json.loads((run_dir / "status.json").read_text())["state"] == "complete"
    report = (run_dir / "report.md").read_text()
    assert "needs 2 ranks, this run has 1 (start it under mpirun -np 2)" in report
    assert "flopscope: mpirun not found (scripts/setup.sh installs openmpi-bin): bench_collectives runs alone" in proc.stderr
    if tool.exists():
        assert "flopscope account train --busbw exited 2: " in proc.stderr
        assert "has no all_reduce case that ran" in proc.stderr


def test_gloo_beside_in_the_run_directory(tmp_path):
    # scripts/checks/gloo_allreduce.py --run-dir, as the suite runs it after bench_collectives: a case per
    # f32 sum out-of-place all_reduce size of the run's bench_collectives.json, validated (#wrong 0) and
    # timed, in bench_collectives' format; without PyTorch, named skips.
    import shutil
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    run_dir = tmp_path / "run"
    shutil.copytree(root / "analysis" / "tests" / "fixtures" / "run_collectives", run_dir)
    proc = subprocess.run([sys.executable, str(root / "scripts" / "checks" / "gloo_allreduce.py"), f"--run-dir={run_dir}"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads((run_dir / "torch_gloo.json").read_text())
    names = [b["run_name"].removesuffix("/manual_time") for b in data["benchmarks"]]
    assert names == [f"collectives/gloo/f32/cpu/n={n}/coll=all_reduce/op=sum/place=out/ranks=2" for n in (1024, 65536)]
    context = json.loads(data["context"]["flopscope"])
    assert [c["role"] for c in context["cases"]] == ["baseline", "baseline"]
    try:
        import torch  # noqa: F401
    except ImportError:
        assert all(b["error_message"].startswith("skipped: PyTorch is not installed") for b in data["benchmarks"])
        return
    for b in data["benchmarks"]:
        n = int(b["run_name"].split("/")[4].split("=")[1])
        assert not b.get("error_occurred") and b["wrong"] == 0 and b["bytes"] == 4 * n and b["iterations"] >= 10
        assert b["algbw"] == pytest.approx(b["bytes"] / (b["real_time"] * 1e-6), rel=1e-9)
        assert b["busbw"] == pytest.approx(b["algbw"], rel=1e-12)  # 2(n-1)/n = 1 for 2 ranks


def test_gpu_suite_on_one_gpu_names_what_needs_two():
    # The gpu suite outside mpirun: NCCL over this process's GPUs (ranks = GPUs; 1 where there is at
    # most one, as here). With one, send_recv and the collectives of busbw factor 0 are named skips;
    # broadcast and reduce (factor 1) are cases.
    proc = subprocess.run([str(binary("bench_collectives")), "--suite=gpu", "--sizes=1Ki", "--describe"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    cases = {c["name"]: c for c in json.loads(proc.stdout)["cases"]}
    if not cases or any((c["skip"] or "").startswith("built without NCCL") for c in cases.values()):
        pytest.skip("built without CUDA, so without NCCL")
    if any("/ranks=1" not in name for name in cases):
        pytest.skip("this machine shows several GPUs")
    # The gpu suite is bf16 only (what a short lease can afford: see bench_collectives.cpp's suites).
    assert {n.split("/")[2] for n in cases} == {"bf16"} and all("/place=out/" in n for n in cases)
    skips = {extras(n)["coll"]: c["skip"] for n, c in cases.items()}
    assert skips == {
        "all_reduce": "needs 2 GPUs: with 1, all_reduce moves nothing across a link (busbw factor 0)",
        "all_gather": "needs 2 GPUs: with 1, all_gather moves nothing across a link (busbw factor 0)",
        "reduce_scatter": "needs 2 GPUs: with 1, reduce_scatter moves nothing across a link (busbw factor 0)",
        "all_to_all": "needs 2 GPUs: with 1, all_to_all moves nothing across a link (busbw factor 0)",
        "send_recv": "send_recv needs 2 GPUs (a peer), this machine shows 1",
        "broadcast": None, "reduce": None}
