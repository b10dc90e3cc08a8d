"""`flopscope account` as a user runs it: the per-layer table, JSON, training arithmetic,
--predict on a fixture run, and error exits.

Every layer's parameters and FLOPs (both conventions) are checked against a re-implementation
in this file that shares nothing with the C++ but the per-element cost table (read from
`flopscope account --rules --json`, the convention itself). Where PyTorch is importable, the
PyTorch-convention totals are also checked against torch.utils.flop_counter.FlopCounterMode on
the same modules, forward and backward, per layer (skipped otherwise; torch is not a requirement).
"""
import json
import math
import shutil
from pathlib import Path

import pytest

from flopscope_tool import run as run_tool

RUN = Path(__file__).resolve().parent / "data" / "matmul_run"


def run(*args):
    return run_tool("account", *map(str, args))


def account_json(*args):
    result = run(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def config_file(tmp_path, config, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return path


# ---- an independent re-implementation ----------------------------------------------------------


@pytest.fixture(scope="module")
def rules():
    return {rule["op"]: rule for rule in account_json("--rules")}


def ew(rules, op, pass_, rows, length):
    """FLOPs of one elementwise op of the table over rows x length."""
    r = rules[op][pass_]
    return r["flops_per_element"] * rows * length + r["flops_per_row"] * rows


DEFAULTS = {"tied_embeddings": True, "ffn": "gelu", "norm": "layernorm", "bias": True, "positions": "learned",
            "fused_qkv": True, "attention": "math"}


def expected_layers(c, B, s, rules):
    """{layer name: (parameters, forward pytorch, forward full, backward pytorch, backward full)}."""
    c = {**DEFAULTS, **c}
    V, d, h, L, ctx = c["vocab"], c["d_model"], c["heads"], c["layers"], c["context"]
    f = c.get("d_ff", 4 * d)
    T, dh, bias = B * s, d // h, c["bias"]
    F, Bk = "forward", "backward"

    def e(op, pass_, rows, length):
        return ew(rules, op, pass_, rows, length)

    layers = {}
    # embedding: gathers, the position add; backward scatter-adds
    params, fwd, bwd = V * d, e("embedding", F, T, d), e("embedding", Bk, T, d)
    if c["positions"] == "learned":
        params += ctx * d
        fwd += e("embedding", F, T, d) + e("add", F, T, d)
        bwd += e("embedding", Bk, T, d) + e("add", Bk, T, d)
    layers["embedding"] = (params, 0, fwd, 0, bwd)

    norm = "layer_norm" if c["norm"] == "layernorm" else "rms_norm"
    norm_params = 2 * d if norm == "layer_norm" else d
    norm_layer = (norm_params, 0, e(norm, F, T, d), 0, e(norm, Bk, T, d))

    # attention: q (d -> h·hd), k and v (d -> kv·hd), output (h·hd -> d); two bmm forward, four
    # (math) or five (fused) back, over all h query heads (k and v repeated to them)
    kv, hd = c.get("kv_heads") or h, c.get("head_dim") or d // h
    qw, kvw = h * hd, kv * hd
    qkv_bias, out_bias = c.get("qkv_bias", bias), c.get("out_bias", bias)
    bmm = 2 * B * h * s * s * hd
    linear = 2 * T * d * (2 * qw + 2 * kvw)
    a_fwd_py = linear + 2 * bmm
    a_bwd_py = 2 * linear + (4 if c["attention"] == "math" else 5) * bmm
    a_fwd, a_bwd = a_fwd_py, a_bwd_py

    def both(op, rows, length, times=1):
        return times * e(op, F, rows, length), times * e(op, Bk, rows, length)

    def add_both(pair):
        nonlocal a_fwd, a_bwd
        a_fwd, a_bwd = a_fwd + pair[0], a_bwd + pair[1]
    if qkv_bias:
        for width in ([qw + 2 * kvw] if c["fused_qkv"] else [qw, kvw, kvw]):
            add_both(both("bias", T, width))
    if out_bias:
        add_both(both("bias", T, d))
    if not c["fused_qkv"]:
        add_both(both("grad_accumulate", T, d, 2))
    if c["positions"] == "rope":
        add_both(both("rope", T, qw))
        add_both(both("rope", T, kvw))
    if kv != h:  # the gradients of the repeated k and v summed over each group
        add_both(both("grad_accumulate", T, kvw * (h // kv - 1), 2))
    for op in ("scale", "mask", "softmax"):
        a_fwd += e(op, F, B * h * s, s)
        a_bwd += e(op, Bk, B * h * s, s) + (e(op, F, B * h * s, s) if c["attention"] == "fused" else 0)
    a_fwd += e("add", F, T, d)
    a_bwd += e("grad_accumulate", Bk, T, d)
    a_params = d * (2 * qw + 2 * kvw) + ((qw + 2 * kvw) if qkv_bias else 0) + (d if out_bias else 0)
    attention = (a_params, a_fwd_py, a_fwd, a_bwd_py, a_bwd)

    # feed-forward: one FFN, or a mixture of experts (router, softmax, top-k renormalized, each
    # token through its k experts: R = T·k routed rows, weighted and summed)
    bias = c.get("mlp_bias", bias)
    experts, k = c.get("experts", 0), c.get("experts_per_token", 0)
    R = T * k if experts > 1 else T
    gated = c["ffn"] != "gelu"
    act = "gelu_tanh" if c["ffn"] in ("gelu", "geglu") else "silu"
    m_fwd_py = (3 if gated else 2) * 2 * R * d * f
    m_fwd, m_bwd = m_fwd_py + e(act, F, R, f), 2 * m_fwd_py + e(act, Bk, R, f)
    one_expert = (3 if gated else 2) * d * f + (((2 if gated else 1) * f + d) if bias else 0)
    if gated:
        m_fwd += e("mul", F, R, f)
        m_bwd += e("mul", Bk, R, f) + e("grad_accumulate", Bk, R, d)
    if bias:
        m_fwd += (2 if gated else 1) * e("bias", F, R, f) + e("bias", F, R, d)
        m_bwd += (2 if gated else 1) * e("bias", Bk, R, f) + e("bias", Bk, R, d)
    m_params = one_expert
    if experts > 1:
        m_fwd_py += 2 * T * d * experts
        m_fwd += 2 * T * d * experts + e("softmax", F, T, experts) + e("mul", F, T, k)
        m_bwd += 4 * T * d * experts + e("softmax", Bk, T, experts) + e("mul", Bk, T, k)
        for op in ("mul", "add"):
            m_fwd, m_bwd = m_fwd + e(op, F, R, d), m_bwd + e(op, Bk, R, d)
        m_bwd += k * e("grad_accumulate", Bk, T, d)
        m_params = d * experts + experts * one_expert
    m_fwd += e("add", F, T, d)
    m_bwd += e("grad_accumulate", Bk, T, d)
    mlp = (m_params, m_fwd_py, m_fwd, 2 * m_fwd_py, m_bwd)

    for i in range(L):
        layers[f"h.{i}.ln_1"] = norm_layer
        layers[f"h.{i}.attn"] = attention
        layers[f"h.{i}.ln_2"] = norm_layer
        layers[f"h.{i}.mlp"] = mlp
    layers["ln_f"] = norm_layer

    head = 2 * T * d * V
    h_fwd = head + e("log_softmax", F, T, V) + e("nll_loss", F, T, V)
    h_bwd = 2 * head + e("log_softmax", Bk, T, V) + e("nll_loss", Bk, T, V)
    if c["tied_embeddings"]:
        h_bwd += e("grad_accumulate", Bk, V, d)
    layers["lm_head"] = (0 if c["tied_embeddings"] else V * d, head, h_fwd, 2 * head, h_bwd)
    return layers


CUSTOM_CONFIGS = [
    {"vocab": 1000, "context": 64, "d_model": 96, "layers": 3, "heads": 6, "d_ff": 200, "ffn": "swiglu",
     "norm": "layernorm", "bias": True, "positions": "rope", "attention": "fused", "tied_embeddings": False,
     "fused_qkv": False},
    {"vocab": 77, "context": 40, "d_model": 30, "layers": 1, "heads": 5, "positions": "none", "norm": "rmsnorm"},
    {"vocab": 50257, "context": 2048, "d_model": 2048, "layers": 2, "heads": 16, "attention": "fused"},
    # grouped-query (8 heads of 16 over 2 kv heads, head_dim not d/h), q/k/v biases only, MoE
    {"vocab": 300, "context": 64, "d_model": 96, "layers": 2, "heads": 8, "kv_heads": 2, "head_dim": 16,
     "d_ff": 80, "ffn": "swiglu", "norm": "rmsnorm", "bias": False, "qkv_bias": True, "positions": "rope",
     "fused_qkv": False, "tied_embeddings": False, "experts": 4, "experts_per_token": 2},
    # multi-query, fused qkv with biases, GeGLU experts with biases, math attention
    {"vocab": 50, "context": 32, "d_model": 48, "layers": 1, "heads": 4, "kv_heads": 1, "d_ff": 40, "ffn": "geglu",
     "bias": True, "positions": "learned", "experts": 3, "experts_per_token": 3},
    # GPT-style MoE (gelu experts), fused attention, grouped 6/3
    {"vocab": 64, "context": 16, "d_model": 36, "layers": 2, "heads": 6, "kv_heads": 3, "ffn": "gelu",
     "attention": "fused", "experts": 5, "experts_per_token": 1},
]


def check_against_reimplementation(out, config, B, s, rules):
    expected = expected_layers(config, B, s, rules)
    assert [layer["name"] for layer in out["layers"]] == list(expected)
    for layer in out["layers"]:
        got = (layer["parameters"], layer["forward"]["pytorch_flops"], layer["forward"]["flops"],
               layer["backward"]["pytorch_flops"], layer["backward"]["flops"])
        assert got == expected[layer["name"]], layer["name"]
    totals = out["totals"]
    assert totals["parameters"] == sum(v[0] for v in expected.values())
    assert totals["forward"]["pytorch_flops"] == sum(v[1] for v in expected.values())
    assert totals["step"]["flops"] == sum(v[2] + v[4] for v in expected.values())
    # A MoE token uses the router and k of the experts: the others' parameters are not active.
    c = {**DEFAULTS, **config}
    experts, k = c.get("experts", 0), c.get("experts_per_token", 0)
    mlp = expected["h.0.mlp"][0]
    idle = c["layers"] * (experts - k) * (mlp - c["d_model"] * experts) // experts if experts > 1 else 0
    assert totals["active_parameters"] == totals["parameters"] - idle
    assert totals["six_n_t"] == 6 * totals["active_parameters"] * B * s


@pytest.mark.parametrize("preset, B, s", [("gpt2-small", 2, 128), ("gpt2-xl", 1, 1024), ("cs336-small", 4, 256),
                                          ("cs336-2.7b", 1, 64)])
def test_presets_match_the_reimplementation(preset, B, s, rules):
    out = account_json("--model", preset, "--batch", B, "--seq", s)
    config = {k: v for k, v in out["model"].items() if k not in ("name", "source", "weight_layout")}
    check_against_reimplementation(out, config, B, s, rules)


@pytest.mark.parametrize("index", range(len(CUSTOM_CONFIGS)))
def test_configs_match_the_reimplementation(tmp_path, index, rules):
    config = CUSTOM_CONFIGS[index]
    out = account_json("--config", config_file(tmp_path, config), "--batch", 3, "--seq", 16)
    check_against_reimplementation(out, config, 3, 16, rules)


def test_each_layer_lists_its_matmul_shapes():
    out = account_json("--model", "gpt2-small", "--batch", 8, "--seq", 1024)
    attn = next(layer for layer in out["layers"] if layer["name"] == "h.0.attn")
    roles = {(m["name"], m["role"]) for m in attn["matmuls"]}
    assert ("qkv", "forward") in roles and ("qkv", "backward-input") in roles and ("qkv", "backward-weight") in roles
    qkv = next(m for m in attn["matmuls"] if m["name"] == "qkv" and m["role"] == "forward")
    assert (qkv["m"], qkv["n"], qkv["k"], qkv["layout"]) == (8192, 2304, 768, "NN")  # GPT-2's Conv1D: x @ W
    scores = next(m for m in attn["matmuls"] if m["name"] == "scores" and m["role"] == "forward")
    assert (scores["batch"], scores["m"], scores["n"], scores["k"], scores["layout"]) == (96, 1024, 1024, 64, "NT")
    for layer in out["layers"]:
        for pass_ in ("forward", "backward"):
            shapes = [m for m in layer["matmuls"] if (m["role"] == "forward") == (pass_ == "forward")]
            assert layer[pass_]["pytorch_flops"] == sum(2 * m["batch"] * m["m"] * m["n"] * m["k"] for m in shapes)


# ---- the table -------------------------------------------------------------------------------


def test_gpt2_small_table():
    result = run("--model", "gpt2-small", "--batch", 8, "--seq", 1024)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "batch 8 x seq 1024" in text
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("layer"))
    assert "pytorch" in header and "full" in header and "activation bytes" in header
    attn = next(line for line in lines if line.startswith("h.*.attn"))
    assert attn.split()[1] == "12"
    # q,k,v (8192 x 768 x 2304) + proj + two bmm of 96 x 1024 x 1024 x 64, 2 FLOPs each.
    attention_forward = 2 * 8192 * 768 * 2304 + 2 * 8192 * 768 * 768 + 2 * 2 * 96 * 1024 * 1024 * 64
    assert f"{attention_forward:,}" in attn
    total = next(line for line in lines if line.startswith("total"))
    assert "124,439,808" in total
    assert "pytorch: torch.utils.flop_counter" in text and "full:" in text
    assert "6·N·T" in text


def test_presets_list_published_gpt2_sizes():
    presets = {p["name"]: p for p in account_json("--list")}
    for name, millions in (("gpt2-small", 124), ("gpt2-medium", 355), ("gpt2-large", 774), ("gpt2-xl", 1558)):
        assert round(presets[name]["parameters"] / 1e6) == millions
        assert presets[name]["vocab"] == 50257 and presets[name]["context"] == 1024
        assert presets[name]["tied_embeddings"] is True
    assert presets["cs336-2.7b"]["d_model"] == 2560 and presets["cs336-2.7b"]["layers"] == 32
    assert presets["cs336-xl"]["heads"] == 25 and presets["cs336-xl"]["ffn"] == "swiglu"
    text = run("--list").stdout
    assert "Radford" in text and "CS336" in text


def test_mlp_is_the_lectures_arithmetic():
    D, L, B = 64, 3, 16
    out = account_json("--mlp", f"{D}x{L}", "--batch", B)
    layers = {layer["name"]: layer for layer in out["layers"]}
    assert layers["layers.0"]["backward"]["pytorch_flops"] == 2 * B * D * D  # no gradient of the data
    assert layers["layers.1"]["forward"]["pytorch_flops"] == 2 * B * D * D
    assert layers["layers.1"]["backward"]["pytorch_flops"] == 4 * B * D * D
    assert layers["final"]["forward"]["pytorch_flops"] == 2 * B * D
    params = out["totals"]["parameters"]
    assert params == L * D * D + D
    assert out["totals"]["step"]["pytorch_flops"] == 6 * params * B - 2 * B * D * D
    text = run("--mlp", f"{D}x{L}", "--batch", B).stdout
    assert any(line.startswith("layers.1-2 ") for line in text.splitlines())


def test_rules_table_is_printed():
    text = run("--rules").stdout
    for name in ("softmax", "layer_norm", "gelu_tanh", "silu", "log_softmax"):
        assert name in text
    assert "one FLOP per arithmetic operation" in text


# ---- train -----------------------------------------------------------------------------------


def train_json(*args):
    result = run("train", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


H100_BF16 = 132 * 4096 * 1.83e9


def test_train_days_of_a_70b_run():
    args = ["--params", "70e9", "--tokens", "15e12", "--device", "h100", "--mfu", "0.5", "--devices", "1024"]
    out = train_json(*args)["run"]
    assert out["six_n_t"] == 6 * 70 * 10**9 * 15 * 10**12  # exact, past 64 bits
    assert out["days"] == pytest.approx(6 * 70e9 * 15e12 / (1024 * H100_BF16 * 0.5) / 86400, rel=1e-12)
    text = run("train", *args).stdout
    assert "6,300,000,000,000,000,000,000,000" in text
    assert "143.9 days" in text
    assert "H100 SXM" in text


def test_train_exact_count_with_a_model():
    out = train_json("--model", "gpt2-small", "--tokens", "300e9")["run"]
    assert out["tokens"] == 300 * 10**9
    per_sequence = account_json("--model", "gpt2-small", "--batch", 1, "--seq", 1024)["totals"]["step"]["pytorch_flops"]
    assert out["exact"]["pytorch_flops"] == per_sequence * (300 * 10**9 // 1024)
    assert out["exact"]["rounded"] is False  # 300e9 = 1024 x 292,968,750
    assert out["exact"]["pytorch_flops"] > out["six_n_t"]  # the attention term
    odd = train_json("--model", "gpt2-small", "--tokens", "1000000001")["run"]["exact"]
    assert odd["rounded"] is True
    assert odd["pytorch_flops"] == per_sequence * 1000000001 // 1024


def test_train_gpt3_scale_is_exact():
    out = train_json("--params", "175e9", "--tokens", "300e9")["run"]
    assert out["six_n_t"] == 315_000_000_000_000_000_000_000


def test_train_largest_model_for_a_memory():
    out = train_json("--memory", "8x80GB")["memory"]
    assert out["memory_bytes"] == 640 * 10**9
    assert out["bytes_per_parameter"] == 16  # bf16 params and grads, f32 master, two f32 moments
    assert out["largest_parameters"] == 40 * 10**9
    assert train_json("--memory", "80GiB", "--dtype", "f32", "--optimizer", "sgd")["memory"]["largest_parameters"] == 80 * 2**30 // 8
    assert "40,000,000,000" in run("train", "--memory", "8x80GB").stdout


def test_train_mfu_from_a_step_time():
    out = train_json("--step-time", "0.35s", "--model", "gpt2-small", "--batch", 8, "--seq", 1024, "--device", "h100")["step"]
    step = account_json("--model", "gpt2-small", "--batch", 8, "--seq", 1024)["totals"]["step"]
    assert out["step_pytorch_flops"] == step["pytorch_flops"]
    assert out["mfu"] == pytest.approx(step["pytorch_flops"] / 0.35 / H100_BF16, rel=1e-12)
    assert out["tokens_per_second"] == pytest.approx(8192 / 0.35)
    ms = train_json("--step-time", "350ms", "--model", "gpt2-small", "--batch", 8, "--seq", 1024, "--device", "h100")
    assert ms["step"]["mfu"] == pytest.approx(out["mfu"])
    assert "MFU" in run("train", "--step-time", "0.35", "--model", "gpt2-small", "--batch", 8, "--seq", 1024,
                        "--device", "h100").stdout


# ---- predict ---------------------------------------------------------------------------------


def fixture_cases():
    """{(variant, dtype, device, m, n, k, layout): [entries]} of the fixture run."""
    cases = {}
    for entry in json.loads((RUN / "bench_matmul.json").read_text())["benchmarks"]:
        parts = entry["run_name"].split("/")
        variant, dtype, device, shape, layout = parts[1], parts[2], parts[3], parts[4], parts[5]
        dims = dict(item.split("=") for item in shape.split(","))
        key = (variant, dtype, device, int(dims["m"]), int(dims["n"]), int(dims["k"]), layout.split("=")[1])
        cases.setdefault(key, []).append(entry)
    return cases


def representative_rate(entries):
    if any(e.get("error_occurred") for e in entries):
        return None
    medians = [e for e in entries if e.get("aggregate_name") == "median"]
    if medians:
        return medians[0]["flops_per_second"]
    iterations = sorted((e for e in entries if e["run_type"] == "iteration"), key=lambda e: e["real_time"])
    return iterations[(len(iterations) - 1) // 2]["flops_per_second"]


def best_rates(device, dtype):
    """{(m, n, k, layout): best variant's rate}, FORMAT.md's rules, written again here."""
    best = {}
    for (variant, d, dev, m, n, k, layout), entries in fixture_cases().items():
        rate = representative_rate(entries)
        if dev == device and d == dtype and rate:
            best[(m, n, k, layout)] = max(best.get((m, n, k, layout), 0), rate)
    return best


def idw(best, m, n, k, layout):
    points = [(key, rate) for key, rate in best.items() if key[3] == layout]
    dist = lambda key: math.dist((math.log2(key[0]), math.log2(key[1]), math.log2(key[2])),
                                 (math.log2(m), math.log2(n), math.log2(k)))
    nearest = sorted(points, key=lambda p: dist(p[0]))[:4]
    weights = [1 / dist(key) ** 2 for key, _ in nearest]
    return sum(w * rate for w, (_, rate) in zip(weights, nearest)) / sum(weights)


def predictions(*args):
    out = account_json("--predict", RUN, *args)
    return out, {(p["device"], p["dtype"]): p for p in out["predictions"]}


def test_predict_gpt2_small_from_the_fixture():
    out, by_device = predictions("--model", "gpt2-small", "--batch", 8, "--seq", 1024)
    assert set(by_device) == {("cuda:0", "bf16"), ("cpu", "f32")}
    step = account_json("--model", "gpt2-small", "--batch", 8, "--seq", 1024)["totals"]["step"]["pytorch_flops"]
    gpu = by_device[("cuda:0", "bf16")]
    best = best_rates("cuda:0", "bf16")
    measured = interpolated = 0
    for row in gpu["matmuls"]:
        flops = 2 * row["batch"] * row["m"] * row["n"] * row["k"] * row["count"]
        assert row["seconds"] == pytest.approx(flops / row["flops_per_second"], rel=1e-12)
        key = (row["m"], row["n"], row["k"], row["layout"])
        if row["measured"]:
            measured += 1
            assert row["flops_per_second"] == pytest.approx(best[key], rel=1e-12)
            assert row["source"] == "measured (cublas)"
        else:
            interpolated += 1
            assert key not in best
            assert row["source"].startswith("interpolated")
            assert row["flops_per_second"] == pytest.approx(idw(best, *key), rel=1e-9)
    assert measured == gpu["measured_shapes"] == 4 and interpolated == gpu["interpolated_shapes"]
    assert sum(r["count"] * 2 * r["batch"] * r["m"] * r["n"] * r["k"] for r in gpu["matmuls"]) == step
    assert gpu["step_seconds"] == pytest.approx(sum(r["seconds"] for r in gpu["matmuls"]), rel=1e-12)
    assert gpu["mfu"] == pytest.approx(step / gpu["step_seconds"] / H100_BF16, rel=1e-9)
    assert 0.2 < gpu["mfu"] < 0.8
    text = run("--predict", RUN, "--model", "gpt2-small", "--batch", 8, "--seq", 1024).stdout
    assert "interpolated" in text and "method:" in text and "MFU" in text


def test_predict_takes_medians_and_skips_failed_cases():
    # (4096,4096,4096) NN: cublas's median, not its mean, and not the failed variant's.
    _, by_device = predictions("--mlp", "4096x2", "--batch", 4096)
    forward = [r for r in by_device[("cuda:0", "bf16")]["matmuls"]
               if r["pass"] == "forward" and (r["m"], r["n"], r["k"]) == (4096, 4096, 4096)]
    assert forward and forward[0]["measured"] and forward[0]["layout"] == "NN"
    entries = fixture_cases()[("cublas", "bf16", "cuda:0", 4096, 4096, 4096, "NN")]
    median = next(e for e in entries if e.get("aggregate_name") == "median")["flops_per_second"]
    mean = next(e for e in entries if e.get("aggregate_name") == "mean")["flops_per_second"]
    assert forward[0]["flops_per_second"] == pytest.approx(median, rel=1e-12) and median != mean
    # CPU (512,512,512) NN: three repetitions, no aggregates: the one of median real_time.
    _, by_device = predictions("--mlp", "512x2", "--batch", 512)
    cpu = [r for r in by_device[("cpu", "f32")]["matmuls"]
           if r["pass"] == "forward" and (r["m"], r["n"], r["k"], r["layout"]) == (512, 512, 512, "NN")]
    repetitions = sorted(fixture_cases()[("openblas", "f32", "cpu", 512, 512, 512, "NN")], key=lambda e: e["real_time"])
    assert cpu[0]["flops_per_second"] == pytest.approx(repetitions[1]["flops_per_second"], rel=1e-12)


# ---- errors ----------------------------------------------------------------------------------


def expect_error(args, needle):
    result = run(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("flopscope account: ")
    assert needle in lines[0], lines[0]


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--model", "gpt3"], "unknown preset 'gpt3'"),
        ([], "needs --model NAME"),
        (["--model", "gpt2-small", "--seq", "2048"], "seq 2048 exceeds the model's context 1024"),
        (["--model", "gpt2-small", "--batch", "-8"], "--batch: expected a positive count (got '-8')"),
        (["--model", "gpt2-small", "--dtype", "f13"], "unknown dtype 'f13'"),
        (["--mlp", "64x"], "--mlp: expected DIMxLAYERS"),
        (["--model", "gpt2-small", "--batch", "1000000000"],
         "gpt2-small at batch 1000000000 x seq 1024: matmul FLOPs: 51463168000000000 x 768 overflows 64 bits"),
        (["--config", "/nonexistent/config.json"], "cannot read '/nonexistent/config.json'"),
        (["--config", "/tmp"], "--config: '/tmp' is a directory"),
        (["train", "--params", "-70e9", "--tokens", "1e12"], "--params: negative value '-70e9'"),
        (["train", "--params", "1e30", "--tokens", "1e12"], "--params: '1e30' overflows a 64-bit count"),
        (["train", "--params", "70e9", "--tokens", "1.5"], "--tokens: '1.5' is not a whole number"),
        (["train", "--params", "70e9", "--tokens", "many"], "--tokens: cannot parse 'many'"),
        (["train", "--params", "70e9", "--tokens", "1e12", "--device", "v100"], "unknown device 'v100'"),
        (["train", "--params", "70e9", "--tokens", "1e12", "--device", "h100", "--mfu", "1.5"], "--mfu: expected a fraction"),
        (["train", "--memory", "8x80XB"], "--memory: cannot parse '8x80XB'"),
        (["train", "--step-time", "-1s", "--model", "gpt2-small"], "--step-time: expected a positive time"),
        (["train", "--step-time", "1s", "--model", "gpt2-small"], "needs --model (or --config), --batch, --seq and --device"),
        (["train"], "train needs --tokens"),
        (["--predict", "/nonexistent/run", "--model", "gpt2-small"], "'/nonexistent/run' is not a directory"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, needle):
    expect_error(args, needle)


@pytest.mark.parametrize(
    "config, needle",
    [
        ({"vocab": 100, "context": 8, "d_model": 768, "layers": 1, "heads": 5}, "heads 5 does not divide d_model 768"),
        ({"vocab": 100, "context": 8, "d_model": -8, "layers": 1, "heads": 1}, "d_model must be positive (got -8)"),
        ({"vocab": 100, "context": 8, "d_model": 1e30, "layers": 1, "heads": 1}, "'d_model' must be an integer (got 1e+30)"),
        ({"vocab": 2**64 - 1, "context": 8, "d_model": 8, "layers": 1, "heads": 1},
         "'vocab' 18446744073709551615 overflows a 64-bit count"),
        # Fits int64 alone; its d_model x 3 d_model weight does not.
        ({"vocab": 2, "context": 1, "d_model": 2**32, "layers": 1, "heads": 1, "d_ff": 1},
         "4294967296 x 12884901888 overflows 64 bits"),
        ({"vocab": 100, "context": 8, "d_model": 8, "layers": 1, "heads": 1, "dropout": 0.1}, "unknown key 'dropout'"),
        ({"vocab": 100, "context": 8, "d_model": 8, "layers": 1, "heads": 1, "ffn": "relu"}, "'ffn' must be one of gelu, swiglu"),
        ({"vocab": 100, "context": 8, "d_model": 8, "heads": 1}, "missing 'layers'"),
        ({"vocab": 100, "context": 8, "d_model": 64, "layers": 1, "heads": 8, "kv_heads": 3},
         "kv_heads 3 does not divide heads 8"),
        ({"vocab": 100, "context": 8, "d_model": 64, "layers": 1, "heads": 8, "experts": 4, "experts_per_token": 5},
         "experts_per_token 5 exceeds experts 4"),
        ({"vocab": 100, "context": 8, "d_model": 64, "layers": 1, "heads": 8, "head_dim": 0, "kv_heads": -2},
         "kv_heads must be positive (got -2)"),
    ],
)
def test_bad_configs_name_the_value(tmp_path, config, needle):
    expect_error(["--config", config_file(tmp_path, config), "--seq", "1"], needle)


def test_grouped_query_and_moe_config_keys(tmp_path):
    # Llama-3-style GQA with Mixtral-style experts, by hand: per layer q, o d x (h hd); k, v d x (kv hd);
    # router d x E; E experts of 3 d f; two RMSNorm weights; then the embedding, final norm, LM head.
    d, h, kv, hd, f, E, k, V, L, B, s = 64, 8, 2, 16, 96, 4, 2, 50, 3, 2, 16
    config = {"vocab": V, "context": 64, "d_model": d, "layers": L, "heads": h, "kv_heads": kv, "head_dim": hd,
              "d_ff": f, "experts": E, "experts_per_token": k, "ffn": "swiglu", "norm": "rmsnorm", "bias": False,
              "qkv_bias": True, "positions": "rope", "fused_qkv": False, "tied_embeddings": False}
    out = account_json("--config", config_file(tmp_path, config), "--batch", B, "--seq", s)
    attention = 2 * d * h * hd + 2 * d * kv * hd + 2 * kv * hd + h * hd  # q, k, v biases
    dense = attention + d * E + 2 * d
    assert out["totals"]["parameters"] == L * (dense + E * 3 * d * f) + 2 * V * d + d
    assert out["totals"]["active_parameters"] == L * (dense + k * 3 * d * f) + 2 * V * d + d
    T = B * s
    forward = L * (4 * T * d * h * hd + 4 * T * d * kv * hd + 4 * B * h * s * s * hd + 2 * T * d * E
                   + 6 * T * k * d * f) + 2 * T * d * V
    assert out["totals"]["forward"]["pytorch_flops"] == forward
    assert out["totals"]["backward"]["pytorch_flops"] == 2 * forward
    assert out["model"]["kv_heads"] == kv and out["model"]["experts_per_token"] == k
    assert out["totals"]["six_n_t"] == 6 * out["totals"]["active_parameters"] * T


def test_not_json_config(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{vocab: 1")
    expect_error(["--config", path], "not JSON")


def test_run_dir_without_matmul_results(tmp_path):
    shutil.copy(RUN / "bench_copy.json", tmp_path / "bench_copy.json")
    expect_error(["--predict", tmp_path, "--model", "gpt2-small"], "no matmul results in")
    (tmp_path / "broken.json").write_text("[]")
    expect_error(["--predict", tmp_path, "--model", "gpt2-small"], "broken.json is not a Google Benchmark JSON file")


# ---- against PyTorch's flop counter ----------------------------------------------------------


def torch_network(torch, c):
    """The config as PyTorch modules named as flopscope's layers, and a function running a step."""
    nn, F = torch.nn, torch.nn.functional
    c = {**DEFAULTS, **c}
    V, d, h, L, ctx = c["vocab"], c["d_model"], c["heads"], c["layers"], c["context"]
    f, bias, dh = c.get("d_ff", 4 * d), c["bias"], c["d_model"] // c["heads"]

    def rope(x):  # rotary embedding: elementwise, no FLOPs in PyTorch's count
        s = x.shape[-2]
        freq = 10000 ** (-torch.arange(0, dh, 2) / dh)
        angle = torch.arange(s)[:, None] * freq[None, :]
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * angle.cos() - x2 * angle.sin(), x1 * angle.sin() + x2 * angle.cos()), -1).flatten(-2)

    class Embedding(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, d)
            self.wpe = nn.Embedding(ctx, d) if c["positions"] == "learned" else None

        def forward(self, idx):
            x = self.wte(idx)
            return x + self.wpe(torch.arange(idx.shape[1])) if self.wpe is not None else x

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            if c["fused_qkv"]:
                self.qkv = nn.Linear(d, 3 * d, bias=bias)
            else:
                self.q, self.k, self.v = (nn.Linear(d, d, bias=bias) for _ in range(3))
            self.proj = nn.Linear(d, d, bias=bias)

        def forward(self, x):
            B, s, _ = x.shape
            q, k, v = self.qkv(x).split(d, -1) if c["fused_qkv"] else (self.q(x), self.k(x), self.v(x))
            q, k, v = (t.view(B, s, h, dh).transpose(1, 2) for t in (q, k, v))
            if c["positions"] == "rope":
                q, k = rope(q), rope(k)
            if c["attention"] == "fused":
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                scores = q @ k.transpose(-2, -1) / math.sqrt(dh)
                mask = torch.ones(s, s, dtype=torch.bool).tril()
                out = scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v
            return self.proj(out.transpose(1, 2).reshape(B, s, d))

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            if c["ffn"] == "gelu":
                self.fc, self.proj = nn.Linear(d, f, bias=bias), nn.Linear(f, d, bias=bias)
            else:
                self.w1, self.w3, self.w2 = nn.Linear(d, f, bias=bias), nn.Linear(d, f, bias=bias), nn.Linear(f, d, bias=bias)

        def forward(self, x):
            if c["ffn"] == "gelu":
                return self.proj(F.gelu(self.fc(x), approximate="tanh"))
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    def norm():
        return nn.LayerNorm(d) if c["norm"] == "layernorm" else nn.RMSNorm(d)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2, self.mlp = norm(), Attention(), norm(), Mlp()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class LmHead(nn.Module):
        def __init__(self, tied_to):
            super().__init__()
            self.weight = tied_to if tied_to is not None else nn.Parameter(torch.randn(V, d) / math.sqrt(d))

        def forward(self, x, targets):
            logits = F.linear(x, self.weight)
            return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = Embedding()
            self.h = nn.ModuleList(Block() for _ in range(L))
            self.ln_f = norm()
            self.lm_head = LmHead(self.embedding.wte.weight if c["tied_embeddings"] else None)

        def forward(self, idx, targets):
            x = self.embedding(idx)
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x), targets)

    return Transformer()


def torch_counts(torch, module, run_forward):
    """FlopCounterMode's totals and per-module counts, forward and backward apart.

    Its module tracker attributes backward ops to modules only when the forward pass ran under
    the same counter, so one counter sees the forward pass alone and another both passes; the
    backward pass is their difference."""
    from torch.utils.flop_counter import FlopCounterMode

    root = type(module).__name__

    def per_module(counter):
        return {name[len(root) + 1:]: sum(ops.values()) for name, ops in counter.get_flop_counts().items()
                if name.startswith(root + ".")}

    with FlopCounterMode(display=False) as forward:
        run_forward()
    module.zero_grad()
    with FlopCounterMode(display=False) as both:
        run_forward().backward()
    forward_modules, both_modules = per_module(forward), per_module(both)
    backward_modules = {name: flops - forward_modules.get(name, 0) for name, flops in both_modules.items()}
    return (forward.get_total_flops(), both.get_total_flops() - forward.get_total_flops(), forward_modules,
            backward_modules)


def compare_with_torch(out, forward, backward, forward_modules, backward_modules, last):
    """Totals, then layer by layer. FlopCounterMode's module tracker leaves the backward pass of the
    module whose output is the loss unattributed (counted under "Global" alone): `last`'s
    backward is what no module was given."""
    assert out["totals"]["forward"]["pytorch_flops"] == forward
    assert out["totals"]["backward"]["pytorch_flops"] == backward
    attributed = 0
    for layer in out["layers"]:
        assert layer["forward"]["pytorch_flops"] == forward_modules.get(layer["name"], 0), layer["name"]
        attributed += backward_modules.get(layer["name"], 0)
        if layer["name"] != last:
            assert layer["backward"]["pytorch_flops"] == backward_modules.get(layer["name"], 0), layer["name"]
    last_layer = next(layer for layer in out["layers"] if layer["name"] == last)
    assert last_layer["backward"]["pytorch_flops"] == backward_modules.get(last, 0) + backward - attributed


TORCH_CONFIGS = [
    {"vocab": 97, "context": 32, "d_model": 48, "layers": 2, "heads": 4},  # GPT-2's choices
    {"vocab": 97, "context": 32, "d_model": 48, "layers": 2, "heads": 4, "attention": "fused"},
    {"vocab": 61, "context": 16, "d_model": 32, "layers": 2, "heads": 2, "d_ff": 80, "ffn": "swiglu",
     "norm": "rmsnorm", "bias": False, "positions": "rope", "fused_qkv": False, "tied_embeddings": False},  # CS336's
    {"vocab": 50, "context": 16, "d_model": 24, "layers": 1, "heads": 3, "ffn": "swiglu", "bias": True,
     "attention": "fused", "positions": "none"},
]


@pytest.mark.parametrize("index", range(len(TORCH_CONFIGS)))
def test_pytorch_convention_matches_flop_counter_mode(tmp_path, index):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the cross-check against its flop counter is skipped")
    config, B, s = TORCH_CONFIGS[index], 2, 12
    torch.manual_seed(0)
    model = torch_network(torch, config)
    idx = torch.randint(0, config["vocab"], (B, s))
    targets = torch.randint(0, config["vocab"], (B, s))
    forward, backward, forward_modules, backward_modules = torch_counts(torch, model, lambda: model(idx, targets))
    out = account_json("--config", config_file(tmp_path, config), "--batch", B, "--seq", s)
    compare_with_torch(out, forward, backward, forward_modules, backward_modules, "lm_head")


@pytest.mark.parametrize("dim, layers, batch", [(16, 3, 5), (32, 1, 7)])
def test_mlp_matches_flop_counter_mode(dim, layers, batch):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: the cross-check against its flop counter is skipped")
    nn = torch.nn

    class Linear(nn.Module):  # the lecture's: x @ w
        def __init__(self, i, o):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(i, o) / math.sqrt(i))

        def forward(self, x):
            return x @ self.weight

    class Cruncher(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(Linear(dim, dim) for _ in range(layers))
            self.final = Linear(dim, 1)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.final(x).squeeze(-1).sum()

    model, x = Cruncher(), torch.randn(batch, dim)
    forward, backward, forward_modules, backward_modules = torch_counts(torch, model, lambda: model(x))
    out = account_json("--mlp", f"{dim}x{layers}", "--batch", batch)
    compare_with_torch(out, forward, backward, forward_modules, backward_modules, "final")


# ---- --hf-config ---------------------------------------------------------------------------------

# Meta-Llama-3-8B's config.json as the hub ships it; Mistral-7B-v0.1's and Mixtral-8x7B's sizes.
LLAMA3_8B = {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "bos_token_id": 128000,
             "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
             "intermediate_size": 14336, "max_position_embeddings": 8192, "model_type": "llama",
             "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "pretraining_tp": 1,
             "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 500000.0, "tie_word_embeddings": False,
             "torch_dtype": "bfloat16", "transformers_version": "4.40.0.dev0", "use_cache": True,
             "vocab_size": 128256}


def without_attention_bias(config):
    return {k: v for k, v in config.items() if k != "attention_bias"}  # Mistral's and Mixtral's have none



@pytest.mark.parametrize(
    "config, parameters, active",
    [
        (LLAMA3_8B, 8_030_261_248, 8_030_261_248),
        ({**without_attention_bias(LLAMA3_8B), "model_type": "mistral", "vocab_size": 32000, "max_position_embeddings": 32768,
          "sliding_window": 4096}, 7_241_732_096, 7_241_732_096),
        ({**without_attention_bias(LLAMA3_8B), "model_type": "mixtral", "vocab_size": 32000, "num_local_experts": 8,
          "num_experts_per_tok": 2}, 46_702_792_704, 12_879_925_248),
        ({**LLAMA3_8B, "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000},
         6_738_415_616, 6_738_415_616),  # Llama-2-7B
    ],
)
def test_hf_config_published_parameter_counts(tmp_path, config, parameters, active):
    (tmp_path / "config.json").write_text(json.dumps(config))
    out = account_json("--hf-config", tmp_path, "--seq", 4)  # a folder holding config.json
    assert out["totals"]["parameters"] == parameters
    assert out["totals"]["active_parameters"] == active


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"model_type": "bert"}, "'model_type' 'bert' is not one flopscope counts"),
        ({"num_experts": 4}, "unknown key 'num_experts' for model_type llama"),
        ({"hidden_size": None}, "missing 'hidden_size'"),
        ({"num_hidden_layers": 0}, "'num_hidden_layers' must be positive (got 0)"),
        ({"num_key_value_heads": 5}, "'num_key_value_heads' 5 does not divide 'num_attention_heads' 32"),
        ({"num_attention_heads": 30, "num_key_value_heads": 30}, "'num_attention_heads' 30 does not divide 'hidden_size' 4096"),
        ({"hidden_act": "relu"}, "'hidden_act' 'relu' has no rule"),
        ({"model_type": "mixtral", "num_local_experts": 2, "num_experts_per_tok": 3},
         "'num_experts_per_tok' 3 exceeds 'num_local_experts' 2"),
        ({"model_type": "mistral"}, "unknown key 'attention_bias' for model_type mistral"),
        ({"vocab_size": 2**70}, "'vocab_size' must be an integer"),
    ],
)
def test_hf_config_bad_input_names_the_key(tmp_path, change, needle):
    base = without_attention_bias(LLAMA3_8B) if change.get("model_type") == "mixtral" else LLAMA3_8B
    expect_error(["--hf-config", config_file(tmp_path, {**base, **change}), "--seq", "1"], needle)
