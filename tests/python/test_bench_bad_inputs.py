"""Every bench binary given what a user might mistype or overdo, each flag that takes sizes,
shapes or a permutation: a size or shape whose bytes, element count or FLOPs do not fit 64 bits
(2^61, 2^62; shapes whose product overflows), numbers beyond int64 (2^63), negative, NaN and
garbage values, empty items in a list ("1,,2", "0,1,", a trailing ';'). Each is one line on
standard error naming the binary and the value, and exit code 2, before anything runs; never a
crash, a hang, a wrapped count or a list quietly shorter than the one given (issue 14)."""
import subprocess

import pytest

from test_bench_binaries import ENV, binary, run_json

MALFORMED = ["2^63", "-1", "nan", "x", "1.5"]

# (binary, flag, value, what the message must contain)
CASES = [
    # byte counts that wrap: size x element size, the matmul's operands, its FLOPs
    *[(name, "--sizes", value, "overflows") for name in ("bench_copy", "bench_peak", "bench_convert")
      for value in ("2^61", "2^62")],
    ("bench_matmul", "--squares", "2^61", "overflows"),
    ("bench_matmul", "--squares", "2^21", "overflows"),  # 2 m n k does not fit
    ("bench_matmul", "--shapes", "2^31x2^31x2^31", "overflows"),
    ("bench_matmul", "--shapes", "1x1x2^62", "overflows"),
    ("bench_strided", "--matrices", "2^40x2^40", "overflows"),
    ("bench_strided", "--heads", "2^40x2^40x2^40x2^40", "overflows"),
    ("bench_strided", "--slices", "2^62x2^62", "overflows"),
    ("bench_strided", "--expands", "2^62x2^62", "overflows"),
    ("bench_broadcast", "--btd", "2^40x2^40x2^40", "overflows"),
    ("bench_broadcast", "--outer", "2^62x2^62", "overflows"),
    # values that are not sizes
    *[(name, flag, value, f"'{value}'")
      for name, flag in [("bench_copy", "--sizes"), ("bench_peak", "--sizes"), ("bench_convert", "--sizes"),
                         ("bench_matmul", "--squares"), ("bench_strided", "--steps")]
      for value in MALFORMED],
    # a dimension that is not a size, inside a shape
    *[(name, flag, shape, f"'{bad}'")
      for name, flag, shape, bad in [
          ("bench_matmul", "--shapes", "8x8x-1", "-1"), ("bench_matmul", "--shapes", "8x2^63x8", "2^63"),
          ("bench_strided", "--matrices", "8xnan", "nan"), ("bench_strided", "--heads", "2x3x4xq", "q"),
          ("bench_strided", "--slices", "8x0", "0"), ("bench_strided", "--expands", "1.5x8", "1.5"),
          ("bench_strided", "--shape", "2x-3x4", "-3"), ("bench_broadcast", "--btd", "2x3x0", "0"),
          ("bench_broadcast", "--outer", "2^63x8", "2^63")]],
    # shapes of the wrong rank
    ("bench_matmul", "--shapes", "2^61", "2^61"),
    ("bench_strided", "--heads", "8x1024x12", "8x1024x12"),
    ("bench_broadcast", "--outer", "2x3x4", "2x3x4"),
    # permutations
    ("bench_strided", "--perm", "0,0,1", "0,0,1"),
    ("bench_strided", "--perm", "2^62", "2^62"),
    ("bench_strided", "--perm", "0,-1", "'-1'"),
    ("bench_strided", "--perm", "a,b", "'a'"),
    # empty items are refused, not dropped
    ("bench_copy", "--sizes", "1Ki,,2Ki", "''"),
    ("bench_copy", "--dtypes", "f32,", "''"),
    ("bench_matmul", "--shapes", "8x8x8;", "empty shape"),
    ("bench_strided", "--perm", "0,1,", "''"),
    ("bench_strided", "--heads", "2x3xx4x5", "''"),
    ("bench_broadcast", "--ops", "add,,mul", "''"),
]


@pytest.mark.parametrize("name, flag, value, named", CASES, ids=[f"{c[0]}{c[1]}={c[2]}" for c in CASES])
def test_bad_values_are_one_line_errors_with_exit_2(name, flag, value, named):
    proc = subprocess.run([str(binary(name)), f"{flag}={value}", "--benchmark_min_time=0.001"],
                          capture_output=True, text=True, env=ENV, timeout=60)
    assert proc.returncode == 2, proc.stderr
    # One line in all, an overflow found while the cases are built included: the devices' lines
    # come only once every case is built.
    errors = proc.stderr.splitlines()
    assert len(errors) == 1 and errors[0].startswith(f"{name}: ") and named in errors[0], proc.stderr
    assert proc.stdout == "", "nothing ran"


def test_a_slice_step_beyond_the_row_takes_one_column(tmp_path):
    # x[:, ::k] with k >= n is the first column. A step near 2^63 used to wrap ceil(n / k) to 0
    # columns (timed and reported as a normal case) and oneDNN's reorder copied wrong elements.
    steps = ["64", "2^61", "9223372036854775807"]
    data, _ = run_json("bench_strided", tmp_path, "--devices=cpu", "--views=slice", "--slices=4x64",
                       f"--steps={','.join(steps)}")
    ran = [b for b in data["benchmarks"] if "/view=slice/" in b["name"]]
    assert ran
    for b in ran:
        assert not b.get("error_occurred"), f"{b['name']}: {b.get('error_message')}"
        assert b["bytes"] == 2 * 4 * 1 * 4, b["name"]  # 4 rows of one f32 read and written
    assert {b["name"].split("/step=")[1].split("/")[0] for b in ran} == {"64", "2305843009213693952",
                                                                       "9223372036854775807"}
