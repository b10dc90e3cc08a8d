"""Every bulk conversion kernel (kernels/cpu/convert.cpp, and kernels/cuda/convert.cu where a GPU
runs it) against ml_dtypes, an independent implementation, on millions of random f32 inputs in
both overflow modes, and on every bit pattern decoded. The kernels run through the test helper
build/tests/convert_stdio on raw bytes. Half the calls force the non-temporal store path
(--stream), which the kernels otherwise take only past the last-level cache.

A kernel this CPU cannot run (AVX512-FP16 on a Zen 4, CUDA without a GPU) is a skip that says why.
"""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from test_cli_numerics import DTYPES, check_bits, expected_bits, random_f32

ROOT = Path(__file__).resolve().parents[2]
HELPER = ROOT / os.environ.get("FLOPSCOPE_BUILD_DIR", "build") / "tests" / "convert_stdio"
RANDOM_INPUTS = 4_000_000  # per kernel, dtype and overflow mode


def helper():
    if not HELPER.exists():
        pytest.skip(f"{HELPER} not built (build the 'convert_stdio' target, or set FLOPSCOPE_BUILD_DIR)")
    return HELPER


def kernels():
    """(variant, dtype) for every kernel and dtype it converts, with why it cannot run here."""
    if not HELPER.exists():
        return [pytest.param("none", "f16", None, marks=pytest.mark.skip(reason=f"{HELPER} not built"))]
    listing = subprocess.run([str(HELPER), "--list"], capture_output=True, text=True, check=True).stdout
    cases = []
    for line in listing.splitlines():
        variant, dtypes, status = line.split(" ", 2)
        reason = None if status == "ok" else status
        cases += [pytest.param(variant, dtype, reason, id=f"{variant}-{dtype}") for dtype in dtypes.split(",")]
    return cases


def run(variant, args, data: bytes) -> bytes:
    proc = subprocess.run([str(helper()), "--variant", variant, *args], input=data, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


@pytest.mark.parametrize("variant,dtype,unavailable", kernels())
def test_encode_random_f32_against_ml_dtypes(variant, dtype, unavailable):
    if unavailable:
        pytest.skip(f"{variant}: {unavailable}")
    storage = DTYPES[dtype][1]
    seed = sorted(DTYPES).index(dtype)
    for saturate, stream in ((False, False), (True, True)):
        values = random_f32(RANDOM_INPUTS, seed=100 + seed + 10 * saturate)
        args = ["--to", dtype] + (["--saturate"] if saturate else []) + (["--stream"] if stream else [])
        got = np.frombuffer(run(variant, args, values.tobytes()), dtype=storage).astype(np.uint64)
        assert got.size == values.size
        check_bits(dtype, got, expected_bits(dtype, values, saturate))


@pytest.mark.parametrize("variant,dtype,unavailable", kernels())
def test_decode_every_pattern_against_ml_dtypes(variant, dtype, unavailable):
    if unavailable:
        pytest.skip(f"{variant}: {unavailable}")
    narrow, storage = DTYPES[dtype]
    patterns = np.arange(np.iinfo(storage).max + 1, dtype=np.uint64).astype(storage)
    codes = np.tile(patterns, 3)[: patterns.size * 2 + 1001]  # every pattern, at several alignments
    with np.errstate(invalid="ignore"):
        want = codes.view(narrow).astype(np.float32)
    for stream in (False, True):
        got = np.frombuffer(run(variant, ["--from", dtype] + (["--stream"] if stream else []), codes.tobytes()),
                            dtype=np.float32)
        same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
        bad = np.nonzero(~same)[0]
        assert bad.size == 0, f"{bad.size} wrong, first code {codes[bad[0]]:#x}: got {got[bad[0]]!r} want {want[bad[0]]!r}"


def test_helper_errors_are_one_line_exit_2():
    for args in (["--variant", "avx512", "--to", "f32"], ["--variant", "nope", "--to", "bf16"],
                 ["--variant", "f16c", "--to", "bf16"], ["--bogus"]):
        proc = subprocess.run([str(helper()), *args], input=b"", capture_output=True, text=False)
        assert proc.returncode == 2, args
        assert proc.stderr.decode().count("\n") == 1 and proc.stderr.startswith(b"convert_stdio: ")
