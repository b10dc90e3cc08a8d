"""bench_matmul run at small sizes, as a user would: names, counters, the accuracy columns, the
sampled check, skips and errors."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_bench_binaries import ENV, binary

SIZE = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "f8e4m3": 1, "f8e5m2": 1}
NAME = re.compile(r"^matmul/(?P<variant>[a-z0-9_]+)/(?P<mode>[a-z0-9_]+)/cpu/m=(?P<m>\d+),n=(?P<n>\d+),k=(?P<k>\d+)"
                  r"/layout=(?P<layout>NN|NT|TN)(?P<extras>(/[a-z_]+=[A-Za-z0-9_.:-]+)*)$")


def run(tmp_path, *flags, env=None):
    out = tmp_path / "matmul.json"
    proc = subprocess.run(
        [str(binary("bench_matmul")), "--devices=cpu", *flags, "--benchmark_min_time=0.001",
         "--benchmark_min_warmup_time=0", "--benchmark_repetitions=1", f"--benchmark_out={out}",
         "--benchmark_out_format=json"],
        capture_output=True, text=True, env=dict(ENV, **(env or {})), timeout=600)
    assert proc.returncode == 0, proc.stderr
    runs = [b for b in json.loads(out.read_text())["benchmarks"] if b.get("run_type") == "iteration"]
    return {b["run_name"].removesuffix("/real_time"): b for b in runs}


def ran(runs):
    return {name: b for name, b in runs.items() if not b.get("error_occurred")}


def test_names_flops_and_bytes_follow_the_conventions(tmp_path):
    runs = run(tmp_path, "--shapes=33,20,7;5x9x300", "--dtypes=f64,f32,bf16,f8e5m2")
    assert ran(runs)
    for name, b in runs.items():
        match = NAME.match(name)
        assert match, name
        if b.get("error_occurred"):
            assert b["error_message"].startswith("skipped: "), (name, b["error_message"])
            continue
        m, n, k = (int(match[d]) for d in "mnk")
        mode = match["mode"]
        size = SIZE[mode]
        out = 8 if mode == "f64" else 4
        assert b["flops"] == 2 * m * n * k, name
        assert b["bytes"] == m * k * size + k * n * size + m * n * out, name
        assert b["max_rel_error"] >= b["mean_rel_error"] >= 0, name
    layouts = {NAME.match(name)["layout"] for name in runs}
    assert layouts == {"NN", "NT", "TN"}


def test_accuracy_columns_order_the_dtypes_and_f64_is_exact_to_rounding(tmp_path):
    # The error is against the product of the inputs before rounding to the dtype: it grows as
    # the dtype narrows. f64 inputs are not rounded at all, so f64's error is its accumulation's
    # (this also checks that the bench recomputes fill_uniform's values exactly).
    runs = ran(run(tmp_path, "--shapes=64,48,256", "--layouts=NN", "--variants=microkernel"))
    mean = {NAME.match(name)["mode"]: b["mean_rel_error"] for name, b in runs.items()}
    assert set(mean) == set(SIZE), mean
    assert mean["f64"] < 1e-13
    assert mean["f64"] < mean["f32"] < 1e-5
    assert mean["f32"] < mean["f16"] < mean["bf16"] < mean["f8e4m3"]
    assert mean["f8e4m3"] < mean["f8e5m2"]
    # bf16 keeps 8 significant bits: its inputs' rounding dominates. Each product is off by about
    # u = 2^-9 of |a·b| with a random sign, so a sum of k = 256 is off by about u·sqrt(k)·mean|a·b|,
    # and the error relative to the scale Σ|a·b| = k·mean|a·b| is about u / sqrt(k).
    u, k = 2.0**-9, 256
    assert u / k**0.5 / 5 < mean["bf16"] < 5 * u / k**0.5


def test_every_variant_of_a_mode_sees_the_same_inputs(tmp_path):
    runs = ran(run(tmp_path, "--shapes=40,70,90", "--dtypes=f32", "--layouts=NN,NT,TN"))
    errors = {b["mean_rel_error"] for b in runs.values()}
    # Different summation orders give different roundings, but all of f32's size.
    assert len(runs) >= 9 and max(errors) < 1e-5


def test_a_dtype_checked_after_another_of_its_shape_gets_its_own_reference(tmp_path):
    # The references of a shape are kept for its next variants (Note [one reference per
    # product]); bf16 runs first here, so an f32 case checked against bf16's inputs' product (a
    # reference kept by shape alone) would be off by bf16's rounding, ~1e-3, and fail.
    runs = run(tmp_path, "--squares=128", "--dtypes=bf16,f32", "--layouts=NN,NT")
    failed = [n for n, b in runs.items() if b.get("error_occurred") and not b["error_message"].startswith("skipped: ")]
    assert failed == []
    f32 = [b["max_rel_error"] for name, b in ran(runs).items() if "/f32/" in name]
    bf16 = [b["max_rel_error"] for name, b in ran(runs).items() if "/bf16/" in name]
    assert len(f32) >= 6 and len(bf16) >= 6
    assert max(f32) < 1e-5 < min(bf16)


def test_the_sampled_check_passes_correct_kernels_and_reports_errors(tmp_path):
    flags = ("--shapes=150,130,70", "--dtypes=f32,bf16", "--layouts=NN,TN", "--variants=microkernel,blocked")
    full = ran(run(tmp_path, *flags))
    sampled = ran(run(tmp_path, *flags, env={"FLOPSCOPE_MATMUL_FULL_CHECK": "0"}))
    assert full.keys() == sampled.keys() and len(full) == 8
    for name in full:
        # 16 rows and 16 columns of 150 x 130: a subset of the same errors.
        assert 0 < sampled[name]["max_rel_error"] <= full[name]["max_rel_error"], name
        assert sampled[name]["mean_rel_error"] == pytest.approx(full[name]["mean_rel_error"], rel=0.5), name


def test_skips_name_their_reason(tmp_path):
    runs = run(tmp_path, "--shapes=600,600,600", "--dtypes=f64,f8e4m3", "--layouts=NN")
    messages = {name.split("/")[1] + "/" + name.split("/")[2]: b.get("error_message", "") for name, b in runs.items()}
    assert messages["naive/f64"].startswith("skipped: naive: runs up to m·n·k = 2^27")
    for key in ("onednn/f64", "onednn/f8e4m3"):
        assert messages[key].startswith("skipped: onednn: oneDNN") or "built without oneDNN" in messages[key]
    assert "sgemm and dgemm" in messages["openblas/f8e4m3"] or "built without OpenBLAS" in messages["openblas/f8e4m3"]


def test_tf32_is_left_out_on_the_cpu(tmp_path):
    proc = subprocess.run([str(binary("bench_matmul")), "--devices=cpu", "--dtypes=f32", "--modes=tf32"],
                          capture_output=True, text=True, env=ENV, timeout=60)
    assert proc.returncode == 2
    assert "no case selected" in proc.stderr


@pytest.mark.parametrize("flag", ["--shapes=4096x4096", "--shapes=1,2,x", "--modes=f12", "--layouts=NX", "--squares=0"])
def test_malformed_values_are_one_line_errors(flag):
    proc = subprocess.run([str(binary("bench_matmul")), flag], capture_output=True, text=True, env=ENV, timeout=60)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("bench_matmul: ")


def listed(*flags):
    proc = subprocess.run([str(binary("bench_matmul")), "--devices=cpu", *flags, "--benchmark_list_tests=true"],
                          capture_output=True, text=True, env=ENV, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [line.removesuffix("/real_time") for line in proc.stdout.split()]


def test_gpt2_small_preset_gives_its_matmuls_at_8x1024_tokens():
    names = listed("--model=gpt2-small", "--dtypes=f32", "--layouts=NN", "--variants=microkernel")
    shapes = {}
    for name in names:
        match = NAME.match(name)
        assert match, name
        extras = dict(item.split("=") for item in match["extras"].strip("/").split("/"))
        assert extras["model"] == "gpt2-small"
        shapes[extras["site"]] = tuple(int(match[d]) for d in "mnk")
    tokens, d, vocab = 8 * 1024, 768, 50257
    assert shapes == {
        "qkv": (tokens, 3 * d, d),        # c_attn: d -> 3d
        "attn_out": (tokens, d, d),       # attn.c_proj
        "ffn_up": (tokens, 4 * d, d),     # mlp.c_fc: d -> 4d
        "ffn_down": (tokens, d, 4 * d),   # mlp.c_proj: 4d -> d
        "lm_head": (tokens, vocab, d),    # logits over the vocabulary
    }
    # Only the model's matmuls: no squares unless asked for.
    assert len(names) == 5
    assert len(listed("--model=gpt2-small", "--squares=64", "--dtypes=f32", "--layouts=NN",
                      "--variants=microkernel")) == 6


def test_unknown_model_is_a_one_line_error():
    proc = subprocess.run([str(binary("bench_matmul")), "--model=gpt5"], capture_output=True, text=True, env=ENV,
                          timeout=60)
    assert proc.returncode == 2 and "gpt2-small" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_default_suite_filter_keeps_2048_for_f32_and_bf16_nn():
    names = listed("--suite=default")
    large = {name.split("/")[1] + "/" + name.split("/")[2] for name in names if "/m=2048," in name}
    assert {"microkernel/f32", "onednn/f32", "openblas/f32", "microkernel_dpbf16/bf16", "onednn/bf16"} <= large
    assert not any(n for n in names if "/m=2048," in n and "/layout=NN" not in n)
    assert not any(n for n in names if n.startswith("matmul/blocked/") and "/m=2048," in n)
    layouts = {(name.split("/")[2], name.split("layout=")[1]) for name in names if "/m=1024," in name}
    assert {("f32", "NT"), ("f32", "TN"), ("bf16", "NT"), ("bf16", "TN"), ("f8e4m3", "NN")} <= layouts
    assert ("f64", "NT") not in layouts
    # 4096: f32 and bf16 NN at the vendors and the own kernels that run at their dtype's rate
    huge = {name.split("/")[1] + "/" + name.split("/")[2] for name in names if "/m=4096," in name}
    assert {"microkernel/f32", "onednn/f32", "openblas/f32", "microkernel_amx/bf16", "microkernel_dpbf16/bf16",
            "onednn/bf16"} <= huge
    assert not huge & {"blocked/f32", "microkernel/bf16", "naive/bf16"}
    assert not any(n for n in names if "/m=4096," in n and "/layout=NN" not in n)
    assert not any(n for n in names if "/m=4096," in n and n.split("/")[2] not in ("f32", "bf16"))
