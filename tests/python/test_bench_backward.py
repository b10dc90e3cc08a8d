"""bench_backward at tiny sizes, as a user would run it: names in the one grammar, the FLOP counts
(PyTorch's convention as `flops`, the optimizer's FLOPs added in `full_flops`, the bwd/fwd FLOP
ratio), validation passing for every variant that runs here, and bad flag values as one-line
errors with exit code 2."""
import os
import subprocess

import pytest

from test_bench_binaries import binary, run_json
from test_bench_views import ran

ENV = dict(os.environ, FLOPSCOPE_WARMUP_S="0.05")
M, K, N = 33, 20, 17          # a linear layer: tokens, in, out
MT, D, L = 40, 24, 3          # a deep linear MLP: tokens, width, layers
MF, DM, FF = 19, 8, 40        # a feed-forward block: tokens, d_model, d_ff
TINY = ["--devices=cpu", f"--linears={M}x{K}x{N}", f"--mlps={MT}x{D}x{L}", f"--ffns={MF}x{DM}x{FF}",
        "--optimizers=sgd,adamw"]


def test_passes_count_what_pytorch_counts(tmp_path):
    data, _ = run_json("bench_backward", tmp_path, *TINY, "--dtypes=f32,bf16")
    cases = ran(data)
    linear = f"m={M},k={K},n={N}/net=linear"
    mlp = f"m={MT},d={D},layers={L}/net=mlp"
    ffn = f"m={MF},d={DM},d_ff={FF}/net=ffn"
    fwd_ffn = 2 * 2 * MF * DM * FF
    fwd_linear, fwd_mlp = 2 * M * K * N, L * 2 * MT * D * D
    params_linear, params_mlp = K * N, L * D * D
    expected = {
        # name: (flops, full_flops, flop_ratio)
        f"{linear}/pass=fwd": (fwd_linear, fwd_linear, 1),
        f"{linear}/pass=bwd": (2 * fwd_linear, 2 * fwd_linear, 2),
        f"{linear}/pass=step/opt=sgd": (3 * fwd_linear, 3 * fwd_linear + 2 * params_linear, 3),
        f"{linear}/pass=step/opt=adamw": (3 * fwd_linear, 3 * fwd_linear + 14 * params_linear, 3),
        f"{mlp}/pass=fwd": (fwd_mlp, fwd_mlp, 1),
        # The Cruncher's first layer computes no dX: (2L - 1) products backward.
        f"{mlp}/pass=bwd": ((2 * L - 1) * fwd_mlp // L, (2 * L - 1) * fwd_mlp // L, (2 * L - 1) / L),
        # The GELU: 9 FLOPs per element forward, 18 backward (the full count's rule table), not
        # in PyTorch's convention.
        f"{ffn}/pass=fwd": (fwd_ffn, fwd_ffn + 9 * MF * FF, 1),
        f"{ffn}/pass=bwd": (2 * fwd_ffn, 2 * fwd_ffn + 18 * MF * FF, 2),
    }
    for dtype in ("f32", "bf16"):
        for shape, (flops, full, ratio) in expected.items():
            name = f"backward/microkernel/{dtype}/cpu/{shape}"
            assert name in cases, f"{name} missing; ran {sorted(cases)}"
            case = cases[name]
            assert case["flops"] == flops and case["full_flops"] == full, name
            assert abs(case["flop_ratio"] - ratio) < 1e-12, name
            assert "bound=compute" in case["label"], name
    # Bytes: a forward linear layer in f32 reads X and W and writes Y; bf16 reads them narrow,
    # writes Y in f32 and rounds it to bf16 (read f32, write bf16).
    assert cases[f"backward/microkernel/f32/cpu/{linear}/pass=fwd"]["bytes"] == 4 * (M * K + K * N + M * N)
    assert cases[f"backward/microkernel/bf16/cpu/{linear}/pass=fwd"]["bytes"] == \
        2 * (M * K + K * N) + 4 * M * N + (4 + 2) * M * N
    assert "mixed=f32-master" in cases[f"backward/microkernel/bf16/cpu/{linear}/pass=fwd"]["label"]
    # The vendors run the same passes where they take the dtype.
    for variant in ("onednn", "openblas"):
        assert f"backward/{variant}/f32/cpu/{linear}/pass=bwd" in cases, variant


def test_bad_flags_are_one_line_errors(tmp_path):
    for flag in ("--passes=fwd,sideways", "--optimizers=lion", "--linears=8x8", "--mlps=8x0x2", "--linears=",
                 "--dtypes=f8e4m3", "--linears=2^31x2^31x2^31", "--mlps=2^40x2^40x2", "--mlps=8x8x2^40"):
        proc = subprocess.run([str(binary("bench_backward")), "--devices=cpu", flag], capture_output=True,
                              text=True, env=ENV, timeout=60)
        assert proc.returncode == 2, (flag, proc.stderr)
        # The error is the last line (the device line may precede it), and nothing crashed.
        lines = proc.stderr.strip().splitlines()
        assert lines[-1].startswith("bench_backward: ") and "terminate" not in proc.stderr, (flag, proc.stderr)


def test_flops_equal_pytorch_flop_counter(tmp_path):
    """Each net's fwd and bwd `flops` equal torch.utils.flop_counter.FlopCounterMode's count of the
    same modules (nn.Linear without bias, GELU tanh; the Cruncher's input needs no gradient, a linear
    layer's and an FFN block's does). Runs where PyTorch is installed (not a dependency)."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: FlopCounterMode is not available")
    from torch import nn
    from torch.utils.flop_counter import FlopCounterMode

    def counted(module, rows, width, input_grad):
        x = torch.randn(rows, width, requires_grad=input_grad)
        with FlopCounterMode(display=False) as forward:
            y = module(x)
        with FlopCounterMode(display=False) as backward:
            y.backward(torch.ones_like(y))
        return forward.get_total_flops(), backward.get_total_flops()

    data, _ = run_json("bench_backward", tmp_path, *TINY, "--dtypes=f32", "--variants=microkernel",
                       "--passes=fwd,bwd")
    cases = ran(data)
    nets = {
        f"m={M},k={K},n={N}/net=linear": counted(nn.Linear(K, N, bias=False), M, K, True),
        f"m={MT},d={D},layers={L}/net=mlp": counted(nn.Sequential(*[nn.Linear(D, D, bias=False) for _ in range(L)]),
                                                     MT, D, False),
        f"m={MF},d={DM},d_ff={FF}/net=ffn": counted(nn.Sequential(nn.Linear(DM, FF, bias=False),
                                                                   nn.GELU(approximate="tanh"),
                                                                   nn.Linear(FF, DM, bias=False)), MF, DM, True),
    }
    for net, (forward, backward) in nets.items():
        assert cases[f"backward/microkernel/f32/cpu/{net}/pass=fwd"]["flops"] == forward, net
        assert cases[f"backward/microkernel/f32/cpu/{net}/pass=bwd"]["flops"] == backward, net
