"""`flopscope account infer` against a hand computation of Llama-3-8B's serving arithmetic: the KV
cache (2 · layers · kv_heads · head_dim · bytes), prefill and decode FLOPs from the parameters that
do matmuls and the score terms, the bytes of a decode step (the weights once, each sequence's KV),
the roofline times on the H100 row of the peaks table and on a device given by --peak and
--bandwidth, and the crossover batch; bad input exits 2 with one line."""
import json
import math

import pytest

from flopscope_tool import run as run_tool

# Llama-3-8B (meta-llama/Meta-Llama-3-8B config.json): 32 layers, 32 heads of 128, 8 kv heads,
# d 4096, vocab 128256, untied; 8,030,261,248 parameters (the model card's count).
N, V, D, L, H, KV, HD = 8_030_261_248, 128_256, 4096, 32, 32, 8, 128
MATMUL_PARAMS = N - V * D - (2 * L + 1) * D  # all but the gathered embedding and the RMSNorm weights
KV_PER_TOKEN = 2 * L * KV * HD * 2  # bf16
H100_BF16, H100_BYTES = 132 * 4096 * 1.83e9, 3.35e12


def infer(*args):
    result = run_tool("account", "infer", *map(str, args))
    assert result.returncode == 0, result.stderr
    return result


def infer_json(*args):
    return json.loads(infer(*args, "--json").stdout)


def decode_flops(context):
    return 2 * MATMUL_PARAMS + 4 * L * H * HD * context


def decode_bytes(batch, context):
    return (N - V * D + batch * D) * 2 + batch * context * KV_PER_TOKEN


def crossover(context, peak, bandwidth):
    """Smallest batch B with B·f/peak > (W + B·(d·2 + context·kv))/bandwidth, or None."""
    per_sequence = decode_flops(context) / peak - (2 * D + context * KV_PER_TOKEN) / bandwidth
    if per_sequence <= 0:
        return None
    return math.floor((N - V * D) * 2 / bandwidth / per_sequence) + 1


def test_llama3_8b_on_h100_by_hand():
    out = infer_json("--model", "llama-3-8b", "--device", "h100", "--batch", "1,64", "--prompt", 1024)
    assert out["parameters"] == N
    assert out["kv_cache"]["bytes_per_token"] == KV_PER_TOKEN == 131_072
    assert out["kv_cache"]["bytes_per_sequence"] == 1024 * KV_PER_TOKEN
    assert out["kv_cache"]["bytes_per_full_context"] == 8192 * KV_PER_TOKEN
    assert out["prefill"]["pytorch_flops"] == 2 * 1024 * MATMUL_PARAMS + 4 * L * H * HD * 1024 ** 2
    assert out["decode_token"]["pytorch_flops"] == decode_flops(1024)
    assert out["device"]["peak_flops_per_second"] == pytest.approx(H100_BF16)
    assert out["device"]["bytes_per_second"] == H100_BYTES
    for step in out["steps"]:
        batch, decode, prefill = step["batch"], step["decode"], step["prefill"]
        assert decode["pytorch_flops"] == batch * decode_flops(1024)
        assert decode["bytes"] == decode_bytes(batch, 1024)
        assert decode["compute_seconds"] == pytest.approx(batch * decode_flops(1024) / H100_BF16)
        assert decode["memory_seconds"] == pytest.approx(decode_bytes(batch, 1024) / H100_BYTES)
        assert decode["tokens_per_second"] == pytest.approx(
            batch / max(decode["compute_seconds"], decode["memory_seconds"]))
        assert decode["bound"] == "memory"  # batch 1 and 64 both, on an H100
        assert prefill["bound"] == "compute"
        assert prefill["pytorch_flops"] == batch * out["prefill"]["pytorch_flops"]
    batch1 = out["steps"][0]["decode"]
    # At batch 1 the step reads ~15 GB of weights: about 222 tokens/s on 3.35 TB/s.
    assert batch1["tokens_per_second"] == pytest.approx(H100_BYTES / decode_bytes(1, 1024))
    assert out["decode_crossover_batch"] == crossover(1024, H100_BF16, H100_BYTES)


def test_any_device_by_peak_and_bandwidth_and_no_crossover_at_long_context():
    out = infer_json("--model", "llama-3-8b", "--peak", "100T", "--bandwidth", "1TB/s", "--batch", 8,
                     "--context", 256)
    decode = out["steps"][0]["decode"]
    assert decode["compute_seconds"] == pytest.approx(8 * decode_flops(256) / 100e12)
    assert decode["memory_seconds"] == pytest.approx(decode_bytes(8, 256) / 1e12)
    assert out["decode_crossover_batch"] == crossover(256, 100e12, 1e12)
    # At 1024 keys and beyond, on an H100, each sequence's KV read outlasts its FLOPs.
    assert crossover(1024, H100_BF16, H100_BYTES) is None
    long = infer_json("--model", "llama-3-8b", "--device", "h100", "--context", 8192)
    assert long["decode_crossover_batch"] is None
    assert crossover(8192, H100_BF16, H100_BYTES) is None
    text = infer("--model", "llama-3-8b", "--device", "h100", "--context", 8192).stdout
    assert "memory-bound at any batch" in text


def test_fp8_weights_and_kv_halve_the_bytes_and_take_the_fp8_peak():
    out = infer_json("--model", "llama-3-8b", "--device", "h100", "--dtype", "float8_e4m3fn")
    assert out["kv_dtype"] == "f8e4m3"
    assert out["kv_cache"]["bytes_per_token"] == KV_PER_TOKEN // 2
    assert out["device"]["peak_flops_per_second"] == pytest.approx(2 * H100_BF16)
    assert out["steps"][0]["decode"]["weight_bytes"] == N - V * D + D


def test_text_names_the_bound_and_the_crossover():
    text = infer("--model", "llama-3-8b", "--device", "h100", "--batch", "1,64", "--context", 128).stdout
    assert "131,072 bytes per token" in text
    assert f"crossover      decode at 128 keys is compute-bound from batch {crossover(128, H100_BF16, H100_BYTES)}" in text
    assert "memory" in text and "compute" in text
    assert "(add --device" in infer("--model", "gpt2-small").stdout  # no device: no roofline


@pytest.mark.parametrize("args, message", [
    ([], "needs --model NAME, --config FILE.json or --hf-config PATH"),
    (["--model", "gpt2-small", "--prompt", "2048"], "--prompt 2048 exceeds gpt2-small's context 1024"),
    (["--model", "gpt2-small", "--context", "0"], "--context: expected a positive count"),
    (["--model", "gpt2-small", "--batch", "1,,2"], "--batch: cannot parse ''"),
    (["--model", "gpt2-small", "--batch", "0"], "--batch: expected a positive count"),
    (["--model", "gpt2-small", "--device", "h900"], "--device: unknown device 'h900'"),
    (["--model", "gpt2-small", "--bandwidth", "1TB/s"], "--bandwidth needs --peak FLOP/s too"),
    (["--model", "gpt2-small", "--peak", "1T"], "--peak needs --bandwidth B/s too"),
    (["--model", "gpt2-small", "--peak", "fast", "--bandwidth", "1TB/s"], "--peak: expected a positive rate"),
    (["--model", "gpt2-small", "--device", "a100", "--dtype", "f8e4m3"], "has no f8 peak"),
    (["--model", "gpt2-small", "--dtype", "fp8"], "'fp8' is two formats: f8e4m3"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = run_tool("account", "infer", *args)
    assert result.returncode == 2, result.stdout
    assert result.stderr.startswith("flopscope account: ") and message in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1
