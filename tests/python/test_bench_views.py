"""bench_strided and bench_broadcast at tiny sizes, as a user would run them: names in the one
grammar, the counters the report reads (bytes, bytes_touched, elements, the copy baselines), and
bad flag values as one-line errors with exit code 2."""
import json
import os
import subprocess

import pytest

from test_bench_binaries import binary, run_json

ENV = dict(os.environ, FLOPSCOPE_WARMUP_S="0.05")
STRIDED_TINY = ["--devices=cpu", "--matrices=17x33", "--heads=2x5x3x4", "--slices=4x64", "--steps=1,2,16",
                "--expands=3x16", "--shape=2x3x4", "--perm=2,0,1"]


def ran(data):
    """Benchmarks that ran, by run_name; a failure (validation included) fails the test."""
    out = {}
    for b in data["benchmarks"]:
        if b.get("error_occurred"):
            assert b["error_message"].startswith("skipped: "), f"{b['name']}: {b['error_message']}"
            continue
        out[b["run_name"].rsplit("/", 1)[0]] = b  # without the /real_time suffix
    return out


def test_strided_names_every_view_and_counts_its_bytes(tmp_path):
    data, _ = run_json("bench_strided", tmp_path, *STRIDED_TINY)
    cases = ran(data)
    f32 = "strided/simd/f32/cpu"
    expected = {
        f"{f32}/m=17,n=33/view=transpose": (17 * 33, 2 * 17 * 33 * 4),
        f"{f32}/b=2,t=5,h=3,d=4/view=split_heads": (120, 2 * 120 * 4),
        f"{f32}/b=2,h=3,t=5,d=4/view=merge_heads": (120, 2 * 120 * 4),
        f"{f32}/m=4,n=64/view=slice/step=2": (4 * 32, 2 * 4 * 32 * 4),
        f"{f32}/m=4,n=64/view=slice/step=16": (4 * 4, 2 * 4 * 4 * 4),
        f"{f32}/m=3,n=16/view=expand_row": (48, (16 + 48) * 4),   # the source row read once
        f"{f32}/m=3,n=16/view=expand_col": (48, (3 + 48) * 4),
        f"{f32}/d0=2,d1=3,d2=4/view=permute/perm=2.0.1": (24, 2 * 24 * 4),
    }
    for name, (elements, nbytes) in expected.items():
        assert name in cases, f"{name} missing; ran {sorted(cases)}"
        case = cases[name]
        assert case["elements"] == elements and case["bytes"] == nbytes, name
        # Each case's copy baseline, of as many elements, ran in the same process.
        assert f"strided/copy/f32/cpu/n={elements}" in cases, name
    # The cache-line model: x[:, ::16] of a 4 x 64 f32 matrix reads all 16 lines of the matrix
    # and writes one line of 16 f32; k = 1 touches what it moves.
    assert cases[f"{f32}/m=4,n=64/view=slice/step=16"]["bytes_touched"] == (16 + 1) * 64
    assert cases[f"{f32}/m=4,n=64/view=slice/step=1"]["bytes_touched"] == 2 * 4 * 64 * 4
    assert cases[f"{f32}/m=3,n=16/view=expand_row"]["bytes_touched"] == (1 + 3) * 64
    for variant in ("naive", "blocked", "simd", "reorder"):
        assert f"strided/{variant}/f32/cpu/m=17,n=33/view=transpose" in cases, variant


def test_broadcast_names_every_pattern_beside_its_materialized_form(tmp_path):
    data, _ = run_json("bench_broadcast", tmp_path, "--devices=cpu", "--btd=2x3x16", "--outer=5x8")
    cases = ran(data)
    btd = 2 * 3 * 16
    expected = {  # bcast -> (shape, FLOPs, bytes)
        "b=2,t=3,d=16/op=add/bcast=td": (btd, (btd + 3 * 16 + btd) * 4),
        "b=2,t=3,d=16/op=add/bcast=d": (btd, (btd + 16 + btd) * 4),
        "b=2,t=3,d=16/op=mul/bcast=bt1": (btd, (btd + 6 + btd) * 4),
        "b=2,t=3,d=16/op=add/bcast=none": (btd, 3 * btd * 4),
        "n=5,m=8/op=mul/bcast=outer": (40, (5 + 8 + 40) * 4),
        "n=5,m=8/op=add/bcast=none": (40, 3 * 40 * 4),
    }
    for tail, (flops, nbytes) in expected.items():
        for variant in ("reference", "simd"):
            case = cases[f"broadcast/{variant}/f32/cpu/{tail}"]
            assert case["flops"] == flops and case["bytes"] == nbytes, tail
        assert f"broadcast/copy/f32/cpu/n={nbytes // 8}" in cases, tail
    # oneDNN broadcasts one operand only: the outer sum is a named skip, the rest ran.
    assert "broadcast/onednn/f32/cpu/b=2,t=3,d=16/op=add/bcast=d" in cases
    outer = [b for b in data["benchmarks"] if b["name"].startswith("broadcast/onednn/f32/cpu/n=5,m=8/op=add/bcast=outer")]
    assert outer and outer[0]["error_message"].startswith("skipped: onednn: ")


@pytest.mark.parametrize("name, flags, named", [
    ("bench_strided", ["--views=permute", "--shape=2x3x4", "--perm=1,0"], "--perm=1,0"),
    ("bench_strided", ["--perm=0,2,2,1"], "--perm=0,2,2,1"),
    # A --shape alone, of another rank than the default permutation: the message says which was given.
    ("bench_strided", ["--views=permute", "--shape=2x3"], "the default permutation 0,2,3,1"),
    ("bench_strided", ["--perm=0,x"], "'x'"),
    ("bench_strided", ["--views=diagonal"], "diagonal"),
    ("bench_strided", ["--matrices=4096"], "4096"),
    ("bench_strided", ["--heads=8x1024x12"], "8x1024x12"),
    ("bench_strided", ["--steps=0"], "'0'"),
    ("bench_strided", ["--shape=8x0x2"], "'0'"),
    ("bench_broadcast", ["--bcasts=row"], "row"),
    ("bench_broadcast", ["--btd=8x1024"], "8x1024"),
    ("bench_broadcast", ["--dtypes=f8e4m3"], "f8e4m3"),
    ("bench_broadcast", ["--ops=div"], "div"),
])
def test_bad_values_are_one_line_errors_with_exit_2(name, flags, named):
    proc = subprocess.run([str(binary(name)), *flags], capture_output=True, text=True, env=ENV, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0] and name in lines[0], proc.stderr
