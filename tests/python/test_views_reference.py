"""The views of lib's Tensor and every CPU strided variant against two independent
implementations, on seeded random chains of views (permute, transpose, t, slice with steps and
negative bounds, expand, unsqueeze, select) over every dtype: numpy always, PyTorch where it is
installed (it is a peer, not a requirement; the test says so when it skips).

tests/views_stdio builds each chain with lib's Tensor and prints the view's shape, strides and
storage offset, then Tensor::contiguous() and each variant's output (naive, blocked, simd, oneDNN's
reorder). Each must equal what numpy (or torch) makes of the same chain on the same source."""
import os
import random
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
HELPER = ROOT / os.environ.get("FLOPSCOPE_BUILD_DIR", "build") / "tests" / "views_stdio"
# The largest run of exact integers of each dtype: element i of the source holds i mod M.
EXACT = {"f64": 2**24, "f32": 2**24, "f16": 2048, "bf16": 256, "f8e4m3": 16, "f8e5m2": 8}
VARIANTS = {"reference", "naive", "blocked", "simd", "reorder"}


def random_chain(rng):
    """(dtype, source shape, ops): a chain of 1 to 4 views, each valid for the shape it meets."""
    dims = rng.randint(0, 4)
    big = rng.random() < 0.3  # past the kernels' tiles and vector widths
    shape = [rng.randint(1, 70 if big and dims <= 2 else 7) for _ in range(dims)]
    if dims and rng.random() < 0.05:
        shape[rng.randrange(dims)] = 0
    current, ops = list(shape), []
    for _ in range(rng.randint(1, 4)):
        n = len(current)
        kind = rng.choice(["permute", "transpose", "t", "slice", "expand", "unsqueeze", "select"])
        if kind == "permute" and n:
            perm = list(range(n))
            rng.shuffle(perm)
            ops.append(f"permute:{','.join(map(str, perm))}")
            current = [current[p] for p in perm]
        elif kind == "transpose" and n:
            a, b = rng.randrange(n), rng.randrange(n)
            ops.append(f"transpose:{a},{b}")
            current[a], current[b] = current[b], current[a]
        elif kind == "t" and n <= 2:
            ops.append("t")
            current = current[::-1]
        elif kind == "slice" and n:
            d = rng.randrange(n)
            size = current[d]
            bound = lambda: "" if rng.random() < 0.3 else str(rng.randint(-size - 2, size + 2))
            start, stop, step = bound(), bound(), rng.randint(1, 4)
            ops.append(f"slice:{d},{start},{stop},{step}")
            current[d] = len(range(size)[slice(int(start) if start else None, int(stop) if stop else None, step)])
        elif kind == "expand":
            lead = [rng.randint(1, 3) for _ in range(rng.randint(0, 1 if n < 4 else 0))]
            sizes = [rng.randint(1, 4) if s == 1 else -1 for s in current]
            ops.append(f"expand:{','.join(map(str, lead + sizes))}")
            current = lead + [s if s != -1 else c for s, c in zip(sizes, current)]
        elif kind == "unsqueeze" and n < 6:
            d = rng.randint(-n - 1, n)
            ops.append(f"unsqueeze:{d}")
            current.insert(d if d >= 0 else n + 1 + d, 1)
        elif kind == "select" and n and current[rng.randrange(n)]:
            d = next(i for i in range(n) if current[i])
            index = rng.randint(-current[d], current[d] - 1)
            ops.append(f"select:{d},{index}")
            del current[d]
    return rng.choice(sorted(EXACT)), shape, ops


def apply(module, x, op):
    """One view operation, as numpy or torch spells it (their semantics agree on these)."""
    name, _, args = op.partition(":")
    values = [int(v) if v else None for v in args.split(",")] if args else []
    if name == "permute":
        return np.transpose(x, values) if module is np else x.permute(values)
    if name == "transpose":
        return np.swapaxes(x, *values) if module is np else x.transpose(*values)
    if name == "t":
        return x.T if module is np else x.t()
    if name == "slice":
        d, start, stop, step = values
        return x[(slice(None),) * d + (slice(start, stop, step),)]
    if name == "expand":
        if module is np:
            lead = len(values) - x.ndim
            return np.broadcast_to(x, values[:lead] + [s if s != -1 else c for s, c in zip(values[lead:], x.shape)])
        return x.expand(values)
    if name == "unsqueeze":
        return np.expand_dims(x, values[0]) if module is np else x.unsqueeze(values[0])
    if name == "select":
        d, index = values
        return x[(slice(None),) * d + (index, Ellipsis)]  # the Ellipsis keeps numpy's 0-d result a view
    raise ValueError(op)


def parse(output):
    """Per case: {'view': (shape, strides, offset)} and each variant's values, or {'error': ...}."""
    cases = []
    for block in output.strip("\n").split("\n\n"):
        case = {}
        for line in block.splitlines():
            label, _, rest = line.partition(" ")
            if label == "view":
                shape, strides, offset = rest.split(" ")
                ints = lambda t: [] if t == "-" else [int(v) for v in t.split(",")]
                case["view"] = (ints(shape), ints(strides), int(offset))
            elif label == "error:":
                case["error"] = rest
            elif "unavailable:" in rest:
                case[label] = None
            else:
                case[label] = [float(v) for v in rest.split(" ")] if rest else []
        cases.append(case)
    return cases


@pytest.fixture(scope="module")
def results():
    if not HELPER.exists():
        pytest.skip(f"{HELPER} not built (build the 'views_stdio' target, or set FLOPSCOPE_BUILD_DIR)")
    rng = random.Random(20261203)
    chains = [random_chain(rng) for _ in range(400)]
    lines = [f"{dtype} {'x'.join(map(str, shape)) or 'scalar'} {' '.join(ops)}" for dtype, shape, ops in chains]
    proc = subprocess.run([str(HELPER)], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    cases = parse(proc.stdout)
    assert len(cases) == len(chains)
    return list(zip(lines, chains, cases))


def source(module, dtype, shape):
    numel = int(np.prod(shape)) if shape else 1
    if module is np:
        return (np.arange(numel, dtype=np.int64) % EXACT[dtype]).astype(np.float64).reshape(shape)
    return (module.arange(numel, dtype=module.int64) % EXACT[dtype]).to(module.float64).reshape(shape)


def the_view(module, chain):
    """The chain's view as numpy or torch makes it, on the same source values."""
    dtype, shape, ops = chain
    x = source(module, dtype, shape)
    for op in ops:
        x = apply(module, x, op)
    return x


def check_variants(line, case, expected):
    assert set(case) - {"view"} <= VARIANTS, line
    assert "reference" in case and "naive" in case and "simd" in case, (line, sorted(case))
    for variant, values in case.items():
        if variant != "view" and values is not None:
            assert values == expected, f"{line}: {variant} gave {values[:16]}, expected {expected[:16]}"


def test_every_chain_is_a_view_lib_accepts(results):
    errors = [(line, case["error"]) for line, _, case in results if "error" in case]
    assert not errors, errors[:5]  # the generator makes only valid chains


def test_views_and_every_variant_match_numpy(results):
    checked = 0
    for line, chain, case in results:
        x = the_view(np, chain)
        got_shape, got_strides, got_offset = case["view"]
        assert got_shape == list(x.shape), line
        if x.size:
            base = x.base if x.base is not None else x
            while base.base is not None:
                base = base.base
            assert got_offset == (x.ctypes.data - base.ctypes.data) // x.itemsize, line
            # numpy's stride of a size-1 dimension is arbitrary (never used); compare the others
            assert [s for s, n in zip(got_strides, x.shape) if n > 1] == \
                   [s // x.itemsize for s, n in zip(x.strides, x.shape) if n > 1], line
        check_variants(line, case, x.ravel().tolist())
        checked += 1
    assert checked == 400


def test_views_and_every_variant_match_pytorch(results):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: numpy is the only reference here")
    for line, chain, case in results:
        x = the_view(torch, chain)
        got_shape, got_strides, got_offset = case["view"]
        assert (got_shape, got_strides) == (list(x.shape), list(x.stride())), line
        if x.numel():
            assert got_offset == x.storage_offset(), line
        check_variants(line, case, x.contiguous().flatten().tolist())


def test_a_wrong_view_is_caught():
    # The check itself: a transpose's values compared with the source's order must fail.
    x = source(np, "f32", [3, 4])
    with pytest.raises(AssertionError):
        check_variants("f32 3x4 t", {"view": None, "reference": x.ravel().tolist(), "naive": x.ravel().tolist(),
                                     "simd": x.ravel().tolist()}, x.T.ravel().tolist())
