"""`flopscope convert`, `dtypes` and `memory` as a user runs them, checked against ml_dtypes.

ml_dtypes (PyPI) is the independent implementation: every bit pattern of f16, bf16, f8e4m3 and
f8e5m2, and a few hundred thousand random f32 inputs, in both overflow modes. ml_dtypes has no
saturating cast; saturation is modelled as clipping to +/- the largest finite value first, which
is what saturation means (every value between max and the overflow threshold rounds to max).
"""
import subprocess
import time

import numpy as np
import pytest

from flopscope_tool import run, tool

ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed (pip install -r analysis/requirements.txt)")

DTYPES = {
    "f16": (np.float16, np.uint16),
    "bf16": (ml_dtypes.bfloat16, np.uint16),
    "f8e4m3": (ml_dtypes.float8_e4m3fn, np.uint8),
    "f8e5m2": (ml_dtypes.float8_e5m2, np.uint8),
}


def convert(dtype, lines, saturate=False):
    args = ["convert", "--to", dtype] + (["--saturate"] if saturate else [])
    proc = run(*args, stdin="".join(line + "\n" for line in lines))
    assert proc.returncode == 0, proc.stderr
    rows = [row.split("\t") for row in proc.stdout.splitlines()]
    assert len(rows) == len(lines)
    for row, line in zip(rows, lines):
        assert len(row) == 4 and row[0] == line, row
    bits = np.array([int(row[1], 16) for row in rows], dtype=np.uint64)
    return rows, bits


def expected_bits(dtype, f32_values, saturate):
    narrow, storage = DTYPES[dtype]
    values = np.asarray(f32_values, dtype=np.float32)
    if saturate:
        limit = np.float32(float(ml_dtypes.finfo(narrow).max))
        values = np.clip(values, -limit, limit)  # NaN stays NaN
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(narrow).view(storage).astype(np.uint64)


def is_nan_bits(dtype, bits):
    narrow, storage = DTYPES[dtype]
    with np.errstate(invalid="ignore"):
        return np.isnan(bits.astype(storage).view(narrow).astype(np.float32))


def check_bits(dtype, got, want):
    nan_want = is_nan_bits(dtype, want)
    assert np.array_equal(is_nan_bits(dtype, got), nan_want), "NaN must stay NaN (and only NaN)"
    bad = np.nonzero((got != want) & ~nan_want)[0]
    assert bad.size == 0, f"{bad.size} mismatches, first at {bad[0]}: got {got[bad[0]]:#x} want {want[bad[0]]:#x}"


def check_decoded(dtype, rows, bits):
    narrow, storage = DTYPES[dtype]
    with np.errstate(invalid="ignore"):
        want = bits.astype(storage).view(narrow).astype(np.float32)
    got = np.array([float(row[2]) for row in rows], dtype=np.float32)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), f"decoded value wrong at {np.nonzero(~same)[0][:5]}"


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_every_pattern_decodes_and_reencodes(dtype):
    narrow, storage = DTYPES[dtype]
    patterns = np.arange(np.iinfo(storage).max + 1, dtype=np.uint64).astype(storage)
    with np.errstate(invalid="ignore"):  # NaN patterns
        values = patterns.view(narrow).astype(np.float64)
        values32 = values.astype(np.float32)
    lines = [repr(float(v)) for v in values]
    for saturate in (False, True):
        rows, bits = convert(dtype, lines, saturate)
        want = expected_bits(dtype, values32, saturate)
        check_bits(dtype, bits, want)
        check_decoded(dtype, rows, bits)
        if not saturate:  # finite patterns come back as themselves
            finite = np.isfinite(values)
            assert np.array_equal(bits[finite], patterns[finite].astype(np.uint64))


def random_f32(count, seed):
    rng = np.random.default_rng(seed)
    uniform_bits = rng.integers(0, 2**32, size=count // 2, dtype=np.uint64).astype(np.uint32)
    # The other half in the range where the narrow formats' rounding decisions are.
    mantissa = rng.uniform(1, 2, size=count - count // 2)
    exponent = rng.integers(-30, 20, size=count - count // 2)
    sign = rng.choice([-1.0, 1.0], size=count - count // 2)
    ranged = (sign * np.ldexp(mantissa, exponent)).astype(np.float32)
    return np.concatenate([uniform_bits.view(np.float32), ranged])


@pytest.mark.parametrize("saturate", [False, True], ids=["overflow", "saturate"])
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_random_f32_against_ml_dtypes(dtype, saturate):
    values = random_f32(200_000, seed=list(DTYPES).index(dtype) + 10 * saturate)
    lines = [f"0x{b:08x}" for b in values.view(np.uint32)]
    rows, bits = convert(dtype, lines, saturate)
    check_bits(dtype, bits, expected_bits(dtype, values, saturate))
    check_decoded(dtype, rows, bits)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_decimal_input_is_the_same_number(dtype):
    values = random_f32(20_000, seed=5)
    values = values[np.isfinite(values)]
    lines = [repr(float(v)) for v in values]  # shortest repr of the double = the f32 value
    _, bits = convert(dtype, lines)
    check_bits(dtype, bits, expected_bits(dtype, values, False))


@pytest.mark.parametrize("dtype,value,bits,flag", [
    ("f16", "1e-8", 0x0000, "underflow to zero"),
    ("bf16", "1e-8", 0x322C, "rounded"),
    ("f16", "65504", 0x7BFF, "exact"),
    ("f16", "70000", 0x7C00, "overflow to inf"),
    ("f8e4m3", "448", 0x7E, "exact"),
    ("f8e4m3", "500", 0x7F, "overflow to NaN"),
    ("f8e5m2", "61440", 0x7C, "overflow to inf"),
    ("f8e5m2", "nan", 0x7E, "NaN"),
    ("f32", "0x3f800000", 0x3F800000, "exact"),
])
def test_flags(dtype, value, bits, flag):
    proc = run("convert", "--to", dtype, value)
    assert proc.returncode == 0, proc.stderr
    fields = proc.stdout.rstrip("\n").split("\t")
    assert int(fields[1], 16) == bits and fields[3] == flag


def test_saturate_flag():
    proc = run("convert", "--to", "f8e4m3", "--saturate", "500", "-inf")
    assert proc.stdout.splitlines() == ["500\t0x7e\t448\tsaturated", "-inf\t0xfe\t-448\tsaturated"]


@pytest.mark.parametrize("args,stdin,message", [
    (["convert", "--to", "bf16"], "1\nxyz\n3\n", "flopscope convert: line 2: cannot parse 'xyz'"),
    (["convert", "--to", "bf16"], "1\n\n", "flopscope convert: line 2: cannot parse ''"),
    (["convert", "--to", "bf16", "1", "0xzz"], None, "flopscope convert: argument 2: cannot parse '0xzz'"),
    (["convert", "--to", "f17", "1"], None, "flopscope convert: unknown dtype 'f17'"),
    (["convert", "1"], None, "flopscope convert: missing --to"),
    (["convert", "--to"], None, "flopscope convert: option '--to' needs a value"),
    (["convert", "--to", "f16", "--fast"], None, "flopscope convert: unknown option '--fast'"),
    (["dtypes", "--frob"], None, "flopscope dtypes: unknown option '--frob'"),
    (["dtypes", "--value", "abc"], None, "flopscope dtypes: --value: cannot parse 'abc'"),
    (["memory"], None, "flopscope memory: needs --shape"),
    (["memory", "--shape", "3xq"], None, "flopscope memory: --shape: cannot parse '3xq'"),
    (["memory", "--params", "7e9", "--optimizer", "lion"], None, "flopscope memory: --optimizer: unknown 'lion'"),
])
def test_errors_are_one_line_exit_2(args, stdin, message):
    proc = run(*args, stdin=stdin)
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), proc.stderr


def test_memory_gpt3_matrix():
    proc = run("memory", "--shape", "49152x12288", "--dtype", "f32")
    assert proc.returncode == 0 and "2,415,919,104 B (2.25 GiB, 2.42 GB)" in proc.stdout
    every = run("memory", "--shape", "49152x12288").stdout
    assert "1,207,959,552 B" in every and "603,979,776 B" in every


def test_memory_training_state():
    proc = run("memory", "--params", "7e9", "--optimizer", "adamw")
    assert proc.returncode == 0
    total = [line for line in proc.stdout.splitlines() if line.strip().startswith("total")]
    assert total and "16 B/param" in total[0] and "112,000,000,000 B" in total[0]


def test_dtypes_json_and_defaults():
    import json
    out = json.loads(run("dtypes", "--json").stdout)
    by_name = {d["dtype"]: d for d in out["dtypes"]}
    assert by_name["f16"]["largest_finite"] == 65504 and by_name["f8e4m3"]["has_inf"] is False
    assert [v["input"] for v in out["values"]] == ["1e-8", "1e-5", "65504", "70000", "448", "500"]
    assert out["values"][0]["results"]["f16"]["flag"] == "underflow to zero"
    assert any(m["name"] == "tf32" and m["storage"] == "f32" for m in out["compute_modes"])
    assert "relative error" in run("dtypes", "--accumulate").stdout


def test_a_million_lines_well_under_a_second(tmp_path):
    values = random_f32(1_000_000, seed=11)
    text = "".join(f"0x{b:08x}\n" if i % 2 else f"{float(v)!r}\n"
                   for i, (b, v) in enumerate(zip(values.view(np.uint32), values)))
    start = time.perf_counter()
    proc = subprocess.run([str(tool()), "convert", "--to", "bf16"], input=text, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0 and proc.stdout.count("\n") == 1_000_000
    assert elapsed < 2.0, f"{elapsed:.2f} s (shared CI machines: the target is well under 1 s)"
