"""`flopscope einsum` without shapes (the FLOP formula in the axis names) and `flopscope view` (is an
einops rearrange a view, its strides, the bytes of its copy, the time a run predicts), against
PyTorch: the formula evaluated at random sizes equals torch.utils.flop_counter's count of
torch.einsum and flopscope's own count with --shapes; view-or-copy and the strides equal what
x.view(split).permute(order).reshape(merged) gives in PyTorch (einops' own recipe)."""
import json
import random
import re

import pytest

from flopscope_tool import run

PATTERNS = ["b t d, d f -> b t f", "bij,bkj->bik", "ij,jk->ik", "batch head seq d, batch head key d -> batch head seq key",
            "i,i->", "ij,jk,kl->il", "bhqd,bhkd->bhqk", "ii->i"]


def formula(pattern):
    result = run("einsum", pattern, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def evaluate(text, sizes):
    return eval(re.sub(r"[A-Za-z_][A-Za-z_0-9]*", lambda m: str(sizes[m.group(0)]), text))


def test_the_llm_projection_formula():
    out = formula("b t d, d f -> b t f")
    assert out["flops_formula"] == "2*b*t*d*f"
    text = run("einsum", "b t d, d f -> b t f").stdout
    assert "FLOPs: 2*b*t*d*f" in text


@pytest.mark.parametrize("pattern", PATTERNS)
def test_formula_at_random_sizes_equals_the_counts(pattern):
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode
    out = formula(pattern)
    rng = random.Random(pattern)
    axes = {axis for operand in out["input_axes"] for axis in operand}
    for _ in range(3):
        sizes = {axis: rng.randint(2, 7) for axis in axes}
        shapes = [[sizes[a] for a in operand] for operand in out["input_axes"]]
        expected = evaluate(out["flops_formula"], sizes)
        given = run("einsum", pattern, "--shapes", *["x".join(map(str, s)) if s else "scalar" for s in shapes],
                    "--json")
        assert json.loads(given.stdout)["flops"] == expected
        operands = [torch.randn(*shape) for shape in shapes]
        torch_pattern = pattern
        if " " in pattern.split("->")[0].strip().split(",")[0].strip():  # named form: one letter per name
            letters = {axis: chr(ord("a") + i) for i, axis in enumerate(sorted(axes))}
            left, right = pattern.split("->")
            torch_pattern = ",".join("".join(letters[a] for a in op.split()) for op in left.split(",")) + "->" + \
                "".join(letters[a] for a in right.split())
        with FlopCounterMode(display=False) as counter:
            torch.einsum(torch_pattern, *operands)
        assert counter.get_total_flops() == expected, (pattern, sizes)


def view(*args):
    result = run("view", *map(str, args), "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


VIEWS = [
    ("b t (h d) -> b h t d", {"b": 8, "t": 1024, "h": 12, "d": 64}),
    ("b t (h d) -> b t h d", {"b": 2, "t": 16, "h": 4, "d": 8}),
    ("b h t d -> b t (h d)", {"b": 2, "h": 4, "t": 16, "d": 8}),
    ("b t h d -> (b t) (h d)", {"b": 2, "t": 3, "h": 4, "d": 5}),
    ("m n -> n m", {"m": 3, "n": 5}),
    ("(a b) c -> a (b c)", {"a": 2, "b": 3, "c": 4}),
    ("b 1 t d -> b t d", {"b": 2, "t": 3, "d": 4}),
    ("b t d -> t (b d)", {"b": 1, "t": 3, "d": 4}),
]


def torch_rearrange(torch, pattern, sizes):
    """einops' recipe in PyTorch: view the input split into its axes, permute, reshape."""
    left, right = [side.split() for side in pattern.replace("(", " ( ").replace(")", " ) ").split("->")]

    def groups(tokens):
        out, group = [], None
        for token in tokens:
            if token == "(":
                group = []
            elif token == ")":
                out.append(group)
                group = None
            elif group is not None:
                group.append(token)
            else:
                out.append([token])
        return out
    length = lambda axis: 1 if axis == "1" else sizes[axis]  # noqa: E731
    left_groups, right_groups = groups(left), groups(right)
    import math
    x = torch.empty([math.prod(length(a) for a in g) for g in left_groups])
    axes = [a for g in left_groups for a in g]
    split = x.view([length(a) for a in axes])
    kept = [a for a in axes if a != "1"]
    split = split.reshape([length(a) for a in kept])
    order = [kept.index(a) for g in right_groups for a in g if a != "1"]
    y = split.permute(order).reshape([math.prod(length(a) for a in g) for g in right_groups])
    return x, y


@pytest.mark.parametrize("pattern, sizes", VIEWS)
def test_view_or_copy_and_strides_as_pytorch(pattern, sizes):
    torch = pytest.importorskip("torch")
    out = view(pattern, "--dims", ",".join(f"{k}={v}" for k, v in sizes.items()), "--dtype", "bf16")
    x, y = torch_rearrange(torch, pattern, sizes)
    assert out["input_shape"] == list(x.shape)
    assert out["output_shape"] == list(y.shape)
    is_view = y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert out["is_view"] == is_view
    assert out["output_strides"] == list(y.stride())
    assert out["contiguous"] == (is_view and y.is_contiguous())
    if not out["contiguous"]:  # a copy now, or at .contiguous()
        assert out["copy"]["when"] == (".contiguous()" if is_view else "rearrange")
        assert out["copy"]["bytes"] == 2 * y.numel() * 2  # read once, written once, 2 bytes


def test_split_and_merge_heads_text():
    dims = ["--dims", "b=8,t=1024,h=12,d=64", "--dtype", "bf16"]
    split = run("view", "b t (h d) -> b h t d", *dims).stdout  # a permuted view; .contiguous() copies
    assert "a view: no copy now" in split and "strides (786432, 64, 768, 1)" in split
    assert "25,165,824" in split  # 2 x 6,291,456 elements x 2 bytes
    merge = run("view", "b h t d -> b t (h d)", *dims).stdout  # the merge of permuted axes copies
    assert "needs a copy" in merge and "25,165,824" in merge
    assert "contiguous: no copy" in run("view", "b t (h d) -> b t h d", *dims).stdout


def strided_case(name, bytes_per_second, nbytes):
    return {"name": name + "/real_time", "run_name": name + "/real_time", "run_type": "iteration",
            "real_time": 1.0, "bytes_per_second": bytes_per_second, "bytes": nbytes}


def test_run_prediction_takes_the_nearest_case_of_the_same_permutation(tmp_path):
    # A run's bench_strided.json as Google Benchmark writes it (with a nan), status.json beside it.
    cases = [strided_case("strided/simd/bf16/cpu/b=8,t=256,h=12,d=64/view=split_heads", 4e9, 1),
             strided_case("strided/naive/bf16/cpu/b=8,t=256,h=12,d=64/view=split_heads", 1e9, 1),
             strided_case("strided/simd/bf16/cpu/b=8,t=2048,h=12,d=64/view=split_heads", 3e9, 1),
             strided_case("strided/simd/bf16/cpu/m=4096,n=4096/view=transpose", 9e9, 1)]
    cases[0]["cv"] = float("nan")
    text = json.dumps({"context": {"flopscope": "{}"}, "benchmarks": cases}).replace("NaN", "nan")
    (tmp_path / "bench_strided.json").write_text(text)
    (tmp_path / "status.json").write_text(json.dumps({"state": "complete"}))
    out = view("b t (h d) -> b h t d", "--dims", "b=8,t=1024,h=12,d=64", "--dtype", "bf16", "--run", tmp_path)
    (p,) = out["predictions"]
    # 1,572,864 elements in the 256-token case, 12,582,912 in the 2048-token one, 6,291,456 here:
    # 4x from the small one, 2x from the large; its fastest variant (simd).
    assert p["case"].startswith("strided/simd/bf16/cpu/b=8,t=2048")
    assert p["seconds"] == pytest.approx(out["copy"]["bytes"] / 3e9)
    assert "the same coalesced permutation (0 2 1 3)" in p["match"]
    # A transpose of a matrix is matched by the measured transpose.
    t = view("m n -> n m", "--dims", "m=4096,n=2048", "--dtype", "bf16", "--run", tmp_path)
    assert t["predictions"][0]["case"].endswith("view=transpose")


@pytest.mark.parametrize("args, message", [
    ([], "needs a PATTERN"),
    (["b t -> t b"], "needs --dims"),
    (["b t -> t b", "--dims", "b=2"], "axis 't' needs a length"),
    (["b t -> t b", "--dims", "b=2,t=0"], "--dims t: expected a positive count"),
    (["b t -> t b", "--dims", "b=2,b=3,t=1"], "axis 'b' given twice"),
    (["b t -> t b", "--dims", "b2"], "--dims: expected NAME=LENGTH"),
    (["b t -> t", "--dims", "b=2,t=3"], "axis 'b' appears on the left but not on the right"),
    (["... t -> t ...", "--dims", "t=3"], "'...' has no length"),
    (["b t -> t b", "--dims", "b=2^40,t=2^40"], "overflows"),
    (["b t -> t b", "--dims", "b=2,t=3", "--run", "/nonexistent"], "--run: '/nonexistent' is not a directory"),
])
def test_view_bad_input(args, message):
    result = run("view", *args)
    assert result.returncode == 2, result.stdout
    assert message in result.stderr and result.stderr.count("\n") == 1, result.stderr
