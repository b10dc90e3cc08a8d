"""flopscope account train --busbw: a data-parallel step's communication, checked by hand.

GPT-2 small: 124,439,808 parameters; bf16 gradients 248,879,616 B. On 8 ranks at 400 GB/s busbw the
ring all-reduce carries 2 x 7/8 x 248,879,616 = 435,539,328 B per link: 1.08884832 ms. ZeRO-2 moves
the same (reduce-scatter of G + all-gather of P); ZeRO-3/FSDP 1.5x: 653,308,992 B, 1.63327248 ms."""
import json

import pytest

from flopscope_tool import run

GPT2 = ["account", "train", "--model", "gpt2-small", "--devices", "8"]


def train_json(*args):
    proc = run(*GPT2, *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_gpt2_small_on_8_gpus_at_400_gbs():
    out = train_json("--busbw", "400GB/s", "--compute-time", "10ms")
    assert out["parameters"] == 124_439_808 and out["busbw"] == 400e9 and out["compute_seconds"] == pytest.approx(0.01)
    stages = {s["sharding"]: s for s in out["stages"]}
    assert list(stages) == ["ddp", "zero1", "zero2", "zero3"]
    ddp = stages["ddp"]
    assert [c["collective"] for c in ddp["collectives"]] == ["all_reduce"]
    assert ddp["collectives"][0]["bytes"] == 248_879_616
    assert ddp["link_bytes"] == 435_539_328
    assert ddp["comm_seconds"] == pytest.approx(1.08884832e-3, rel=1e-12)
    assert ddp["step_seconds_serial"] == pytest.approx(11.08884832e-3, rel=1e-12)
    assert ddp["step_seconds_overlapped"] == pytest.approx(10e-3, rel=1e-12)
    assert ddp["comm_fraction_serial"] == pytest.approx(1.08884832 / 11.08884832, rel=1e-12)
    assert [c["collective"] for c in stages["zero2"]["collectives"]] == ["reduce_scatter", "all_gather"]
    assert stages["zero2"]["link_bytes"] == 435_539_328
    zero3 = stages["zero3"]
    assert [c["collective"] for c in zero3["collectives"]] == ["all_gather", "all_gather", "reduce_scatter"]
    assert zero3["link_bytes"] == 653_308_992
    assert zero3["comm_seconds"] == pytest.approx(1.63327248e-3, rel=1e-12)


def test_compute_time_from_the_step_flops():
    # batch 8 x seq 1024 of GPT-2 small: the step's FLOPs (PyTorch's convention) at 40% of the H100's bf16 peak.
    out = train_json("--busbw", "400GB/s", "--batch", "8", "--seq", "1024", "--device", "h100", "--mfu", "0.4",
                     "--sharding", "fsdp")
    mfu = run("account", "train", "--model", "gpt2-small", "--batch", "8", "--seq", "1024", "--device", "h100",
              "--step-time", "1", "--json")
    step = json.loads(mfu.stdout)["step"]
    expected = step["step_pytorch_flops"] / (step["peak_flops_per_second"] * 0.4)
    assert out["compute_seconds"] == pytest.approx(expected, rel=1e-12)
    (zero3,) = out["stages"]
    assert zero3["sharding"] == "zero3"
    assert zero3["step_seconds_overlapped"] == pytest.approx(max(expected, 1.63327248e-3), rel=1e-12)


def test_busbw_from_a_run_directory(tmp_path):
    # NCCL's all_reduce before MPI's, the largest count, the median over the repetitions; NaN as
    # Google Benchmark writes it for a cv.
    entries = [
        ("collectives/mpi/f32/cpu/n=4096/coll=all_reduce/op=sum/place=out/ranks=2/manual_time", "iteration", "", "2e9"),
        ("collectives/nccl/f32/cuda:0/n=1024/coll=all_reduce/op=sum/place=out/ranks=8/manual_time", "iteration", "", "3e11"),
        ("collectives/nccl/f32/cuda:0/n=4096/coll=all_reduce/op=sum/place=out/ranks=8/manual_time", "iteration", "", "3.5e11"),
        ("collectives/nccl/f32/cuda:0/n=4096/coll=all_reduce/op=sum/place=out/ranks=8/manual_time", "aggregate", "median", "4e11"),
        ("collectives/nccl/f32/cuda:0/n=4096/coll=all_reduce/op=sum/place=out/ranks=8/manual_time", "aggregate", "cv", "NaN"),
        ("collectives/nccl/f32/cuda:0/n=8192/coll=all_gather/place=out/ranks=8/manual_time", "iteration", "", "9e11"),
    ]
    rows = ",\n".join(
        f'{{"name": "{n}", "run_name": "{n}", "run_type": "{t}", "aggregate_name": "{a}", "busbw": {v}}}'
        for n, t, a, v in entries)
    (tmp_path / "bench_collectives.json").write_text('{"context": {}, "benchmarks": [\n' + rows + "\n]}\n")
    out = train_json("--busbw", str(tmp_path), "--compute-time", "10ms", "--sharding", "ddp")
    assert out["busbw"] == 4e11
    assert out["busbw_source"].startswith("measured: collectives/nccl/f32/cuda:0/n=4096/coll=all_reduce/")
    assert out["stages"][0]["comm_seconds"] == pytest.approx(248_879_616 * 1.75 / 4e11, rel=1e-12)


@pytest.mark.parametrize("args, message", [
    (["--busbw", "fast", "--compute-time", "1"], "--busbw: expected a rate"),
    (["--busbw", "1GB/s"], "--busbw needs --compute-time T"),
    (["--busbw", "1GB/s", "--compute-time", "1", "--sharding", "zero4"], "--sharding: unknown 'zero4'"),
    (["--busbw", "-3GB/s", "--compute-time", "1"], "--busbw: expected a rate"),
])
def test_bad_input_is_one_line_exit_2(args, message):
    proc = run(*GPT2, *args)
    assert proc.returncode == 2
    assert message in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_a_run_directory_without_collectives(tmp_path):
    proc = run(*GPT2, "--busbw", str(tmp_path), "--compute-time", "1")
    assert proc.returncode == 2 and "has no bench_collectives.json" in proc.stderr
