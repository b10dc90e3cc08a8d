"""The CLI as a new user meets it: `--help` on every command and subcommand (usage on stdout, exit
0), dtypes as PyTorch and ml_dtypes spell them and `fp8` answered with a question, counts with
K/M/B/T suffixes, the GPU peaks table's new rows, `--peak` for any device, the hint of `account
train` without --mfu, and --predict on a run directory written as ./bench.sh writes one (a real
bench_matmul run made here, status.json beside it)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from flopscope_tool import ROOT, run, tool

sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "analysis"))


def commands():
    """The commands `flopscope help` lists, and the account subcommands."""
    listed = run("help")
    assert listed.returncode == 0
    names = [line.split()[0] for line in listed.stdout.splitlines() if line.startswith("  ")]
    assert {"peaks", "dtypes", "account", "einsum", "view"} <= set(names)
    return [[name] for name in names] + [["account", "train"], ["account", "infer"]]


def test_every_command_and_subcommand_has_help():
    for words in commands():
        for flag in ("--help", "-h"):
            result = run(*words, flag)
            assert result.returncode == 0, (words, result.stderr)
            assert result.stdout.startswith("usage: flopscope " + " ".join(words)), (words, result.stdout)
            assert result.stderr == ""
        assert run("help", *words).stdout == run(*words, "--help").stdout
    # --help wins over options that would be errors.
    assert run("account", "train", "--nope", "--help").returncode == 0


@pytest.mark.parametrize("alias, name", [
    ("float8_e4m3fn", "f8e4m3"), ("torch.float8_e4m3fn", "f8e4m3"), ("float8_e5m2", "f8e5m2"),
    ("bfloat16", "bf16"), ("torch.bfloat16", "bf16"), ("half", "f16"), ("float16", "f16"), ("float32", "f32"),
    ("float", "f32"), ("float64", "f64"), ("double", "f64"),
])
def test_dtype_aliases_as_pytorch_and_ml_dtypes_spell_them(alias, name):
    assert run("convert", "--to", alias, "0.1").stdout == run("convert", "--to", name, "0.1").stdout
    # ml_dtypes' own names, where it is installed, are the same formats.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    import numpy as np
    if alias.startswith("float8") and hasattr(ml_dtypes, alias):
        bits = run("convert", "--to", alias, "300").stdout.split("\t")[1]
        assert int(bits, 16) == int(np.array(300, dtype=getattr(ml_dtypes, alias)).view(np.uint8))


@pytest.mark.parametrize("text", ["fp8", "FP8", "float8", "f8"])
def test_fp8_is_a_question_naming_both(text):
    result = run("memory", "--shape", "4", "--dtype", text)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "f8e4m3 (float8_e4m3fn" in result.stderr and "f8e5m2 (float8_e5m2" in result.stderr
    assert "?" in result.stderr


@pytest.mark.parametrize("params, tokens, n, t", [
    ("70B", "15T", 70 * 10**9, 15 * 10**12), ("7e9", "1.5T", 7 * 10**9, 15 * 10**11),
    ("1.5B", "300e9", 15 * 10**8, 3 * 10**11), ("125M", "2.5K", 125 * 10**6, 2500),
])
def test_counts_with_suffixes_and_decimals(params, tokens, n, t):
    result = run("account", "train", "--params", params, "--tokens", tokens, "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)["run"]
    assert (out["parameters"], out["tokens"], out["six_n_t"]) == (n, t, 6 * n * t)
    memory = run("memory", "--params", params, "--dtype", "bf16")
    assert memory.returncode == 0 and f"{n:,}" in memory.stdout


@pytest.mark.parametrize("text, message", [
    ("1.5Q", "cannot parse '1.5Q'"), ("0.5K5", "cannot parse"), ("1.0001K", "'1.0001K' is not a whole number"),
    ("9999999999T", "overflows a 64-bit count"), ("-7B", "negative value"),
])
def test_bad_counts(text, message):
    result = run("account", "train", "--params", text, "--tokens", "1T")
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_peaks_table_rows_sources_and_no_zero_rates():
    text = run("peaks").stdout
    for device, source in [("B200", "HGX B200 datasheet"), ("L4", "L4 Tensor Core GPU datasheet"),
                           ("RTX 4090", "Ada Lovelace GPU architecture whitepaper"), ("H200 SXM", "H200 datasheet")]:
        block = text[text.index(device + "\n"):]
        assert "source: " in block and source in block.split("source: ")[1].splitlines()[0], device
    assert " 0.0 TFLOP/s" not in text and " 0.0 GFLOP/s" not in text
    assert "not rated: " in text and "f8" in text.split("not rated: ")[1].splitlines()[0]


def test_peak_for_any_device_and_the_mfu_hint():
    out = json.loads(run("account", "train", "--params", "7e9", "--tokens", "1T", "--peak", "500T", "--mfu", "0.5",
                         "--json").stdout)["run"]
    assert out["seconds"] == pytest.approx(6 * 7e9 * 1e12 / (500e12 * 0.5))
    assert out["device"]["peak_flops_per_second"] == 500e12
    hint = run("account", "train", "--params", "7e9", "--tokens", "1T", "--device", "h100").stdout
    assert "add --mfu" in hint and "H100 SXM peak" in hint and "--device h100" not in hint
    assert "--device h100 (or --peak FLOP/s)" in run("account", "train", "--params", "7e9", "--tokens", "1T").stdout
    result = run("account", "train", "--params", "7e9", "--tokens", "1T", "--device", "tpu9")
    assert result.returncode == 2 and "give --peak FLOP/s" in result.stderr


def test_a_count_that_overflows_128_bits_is_an_error_naming_it(tmp_path):
    # A sequence of 2^28 tokens through 2^14 layers: its attention term is ~2^77 FLOPs (fits 128
    # bits; fused attention saves no 2^56-element score matrix, so no 64-bit count overflows first);
    # times 2^62 tokens of training: past 2^127.
    config = {"name": "huge", "vocab": 8, "context": 2**28, "d_model": 8, "layers": 2**14, "heads": 1, "d_ff": 8,
              "attention": "fused"}
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(config))
    result = run("account", "train", "--config", str(path), "--tokens", str(2**62), "--seq", str(2**28))
    assert result.returncode == 2, result.stdout
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"flopscope account: --tokens {2**62} of huge at --seq {2**28}: run FLOPs: ")
    assert result.stderr.endswith("overflows 128 bits\n"), result.stderr


def test_predict_reads_a_run_directory_as_bench_sh_writes_it(tmp_path):
    """A real run: bench_matmul (and bench_copy, where built) through run_suite's own writer (the
    partial file renamed into place, the console log, status.json), with repetitions so that
    Google Benchmark writes its aggregates: the cv of a counter that is 0 in every repetition
    (bench_copy's flops) is 0/0, written as a bare NaN."""
    bench = Path(tool()).parent.parent / "bench"
    if not (bench / "bench_matmul").exists():
        pytest.skip(f"{bench / 'bench_matmul'} not built")
    import run_suite
    from flopscope_analysis import runstatus
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    binaries = {"bench_matmul": ["--devices=cpu", "--shapes=64,64,64", "--dtypes=f32"],
                "bench_copy": ["--devices=cpu", "--sizes=4Ki", "--dtypes=f32"]}
    binaries = {name: args for name, args in binaries.items() if (bench / name).exists()}
    runstatus.write(run_dir, runstatus.RUNNING, suite="test", binaries=list(binaries), finished=[], failed=[])
    env = dict(__import__("os").environ, FLOPSCOPE_CEILINGS_DIR=str(tmp_path / "ceilings"))
    for name, args in binaries.items():
        args = [*args, "--benchmark_min_time=0.001", "--benchmark_min_warmup_time=0", "--benchmark_repetitions=3"]
        assert run_suite.run_binary(bench / name, args, run_dir, env) == 0
    runstatus.write(run_dir, runstatus.COMPLETE, suite="test", binaries=list(binaries), finished=list(binaries),
                    failed=[])
    if "bench_copy" in binaries:
        assert "NaN" in (run_dir / "bench_copy.json").read_text()  # what made --predict refuse real runs
    result = run("account", "--predict", str(run_dir), "--mlp", "64x2", "--batch", "64", "--json")
    assert result.returncode == 0, result.stderr
    predictions = json.loads(result.stdout)["predictions"]
    assert predictions and predictions[0]["device"] == "cpu" and predictions[0]["step_seconds"] > 0
    assert predictions[0]["measured_shapes"] >= 1
