"""Bad inputs to every `flopscope` subcommand and flag, as a new user types them: empty, negative,
huge, 2^63, NaN, garbage, missing values, unreadable input, unwritable output.

Each is one line on stderr, "flopscope <command>: ..." naming the value, exit code 2, within a
few seconds; never a crash, a hang, a wrapped count or an answer that says less than happened.
"""
import json
import os
import subprocess

import pytest

from flopscope_tool import run, tool


def assert_one_line_error(proc, command, needle):
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-300:], proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    prefix = f"flopscope {command}: " if command else "flopscope: "
    assert lines[0].startswith(prefix), lines[0]
    assert needle in lines[0], lines[0]


INIT = ["init", "--input-dim", "16", "--output-dim", "4"]

BAD = [
    # top level
    ([], None, "missing command"),
    (["nope"], None, "unknown command 'nope'"),
    ([""], None, "unknown command ''"),
    (["peaks", "x"], None, "takes no arguments (got 'x')"),
    # dtypes
    (["dtypes", "--value"], None, "option '--value' needs a value"),
    (["dtypes", "--value", ""], None, "--value: cannot parse ''"),
    (["dtypes", "--value", "abc"], None, "--value: cannot parse 'abc'"),
    (["dtypes", "--value", "2^63"], None, "--value: cannot parse '2^63'"),
    (["dtypes", "--value", "NaNx"], None, "--value: cannot parse 'NaNx'"),
    (["dtypes", "--value", "0x123456789"], None, "--value: cannot parse '0x123456789'"),
    (["dtypes", "--json=1"], None, "option '--json' takes no value"),
    (["dtypes", "1.5"], None, "unexpected argument '1.5'"),
    (["dtypes", "--accumulate", "--count"], None, "option '--count' needs a value"),
    (["dtypes", "--accumulate", "--count", ""], None, "--count: expected 1 to 1e7, got ''"),
    (["dtypes", "--accumulate", "--count", "-1"], None, "got '-1'"),
    (["dtypes", "--accumulate", "--count", "0"], None, "got '0'"),
    (["dtypes", "--accumulate", "--count", "2^63"], None, "got '2^63'"),
    (["dtypes", "--accumulate", "--count", "1e8"], None, "got '1e8'"),  # minutes and gigabytes: a limit
    (["dtypes", "--accumulate", "--count", "nan"], None, "got 'nan'"),
    (["dtypes", "--accumulate", "--term", ""], None, "--term: expected a positive number, got ''"),
    (["dtypes", "--accumulate", "--term", "-1"], None, "got '-1'"),
    (["dtypes", "--accumulate", "--term", "0"], None, "got '0'"),
    (["dtypes", "--accumulate", "--term", "nan"], None, "got 'nan'"),
    (["dtypes", "--accumulate", "--term", "inf"], None, "got 'inf'"),
    (["dtypes", "--accumulate", "--term", "1e400"], None, "got '1e400'"),
    (["dtypes", "--accumulate", "--term", "1e-400"], None, "got '1e-400'"),
    (["dtypes", "--accumulate", "--term", "1e308"], None, "--term: 1e+308 x 10000 terms: the sum overflows f64"),
    (["dtypes", "--accumulate", "--seed", "-1"], None, "--seed: expected a non-negative integer, got '-1'"),
    (["dtypes", "--accumulate", "--seed", "2^64"], None, "got '2^64'"),
    (["dtypes", "--accumulate", "--seed", "abc"], None, "got 'abc'"),
    (["dtypes", "--accumulate", "--value", "1"], None, "--accumulate takes --count, --term, --seed and --json only"),
    # convert
    (["convert", "1"], None, "missing --to DTYPE"),
    (["convert", "--to"], None, "option '--to' needs a value"),
    (["convert", "--to", "", "1"], None, "unknown dtype ''"),
    (["convert", "--to", "f99", "1"], None, "unknown dtype 'f99'"),
    (["convert", "--to", "f16", "--saturate=yes", "1"], None, "option '--saturate' takes no value"),
    (["convert", "--to", "f16", ""], None, "argument 1: cannot parse ''"),
    (["convert", "--to", "f16", "1", "abc"], None, "argument 2: cannot parse 'abc'"),
    (["convert", "--to", "f16", "2^63"], None, "argument 1: cannot parse '2^63'"),
    (["convert", "--to", "f16", "0x"], None, "argument 1: cannot parse '0x'"),
    (["convert", "--to", "f16", "1e"], None, "argument 1: cannot parse '1e'"),
    (["convert", "--to", "f16", "--", "1"], None, "unknown option '--'"),
    (["convert", "--to", "f16"], "1\n\n", "line 2: cannot parse ''"),
    (["convert", "--to", "f16"], "1\nnan(\n", "line 2: cannot parse 'nan('"),
    (["convert", "--to", "f16"], "1\x002\n", "line 1: cannot parse '1\\x002'"),  # control characters escaped
    (["convert", "--to", "f16"], "1" * 100 + "x\n", "line 1: cannot parse '" + "1" * 79),  # quoted, cut at 80
    # memory
    (["memory"], None, "needs --shape DIMS or --params COUNT"),
    (["memory", "--shape"], None, "option '--shape' needs a value"),
    (["memory", "--shape", ""], None, "--shape: cannot parse ''"),
    (["memory", "--shape", "-1"], None, "--shape: cannot parse '-1'"),
    (["memory", "--shape", "2x"], None, "--shape: cannot parse '2x'"),
    (["memory", "--shape", "2^63"], None, "--shape: cannot parse '2^63'"),
    (["memory", "--shape", "nan"], None, "--shape: cannot parse 'nan'"),
    (["memory", "--shape", "2^40x2^40"], None,
     "--shape 1099511627776x1099511627776: element count: 1099511627776 x 1099511627776 overflows 64 bits"),
    (["memory", "--shape", "2^61"], None, "bytes of f64 elements: 2305843009213693952 x 8 overflows 64 bits"),
    (["memory", "--params", ""], None, "--params: cannot parse ''"),
    (["memory", "--params", "-1"], None, "--params: negative value '-1'"),
    (["memory", "--params", "2^63"], None, "--params: cannot parse '2^63'"),
    (["memory", "--params", "7.25"], None, "--params: '7.25' is not a whole number"),
    (["memory", "--params", "1.5Q"], None, "--params: cannot parse '1.5Q'"),
    (["memory", "--params", "2^62"], None,
     "--params 4611686018427387904: bytes of parameters: 4611686018427387904 x 4 overflows 64 bits"),
    (["memory", "--shape", "4", "--dtype", ""], None, "unknown dtype ''"),
    (["memory", "--params", "7e9", "--optimizer", ""], None, "--optimizer: unknown ''"),
    (["memory", "--shape", "4", "--no-master-weights=1"], None, "option '--no-master-weights' takes no value"),
    (["memory", "--shape", "4", "4"], None, "unexpected argument '4'"),
    # einsum
    (["einsum"], None, "needs a PATTERN"),
    (["einsum", "...ij->i"], None, "'...' has no formula: give --shapes"),
    (["einsum", "ij->i", "--shapes"], None, "option '--shapes' needs a value"),
    (["einsum", "ij->i", "--shapes", ""], None, "--shapes: cannot parse ''"),
    (["einsum", "ij->i", "--shapes", "-2x3"], None, "--shapes: cannot parse '-2x3'"),
    (["einsum", "i->i", "--shapes", "2^63"], None, "--shapes: cannot parse '2^63'"),
    (["einsum", "i->i", "--shapes", "nan"], None, "--shapes: cannot parse 'nan'"),
    (["einsum", "ij,jk->ik", "--shapes", "2^40x2^40", "2^40x2^40"], None,
     "element count of an operand: 1099511627776 x 1099511627776 overflows 64 bits"),
    (["einsum", "ij,jk->ik", "--shapes", "2^21x2^21", "2^21x2^21"], None,  # 2^64 FLOPs, once printed as 0
     "--shapes 2097152x2097152 2097152x2097152: bmm FLOPs"),
    (["einsum", "ijk->", "--shapes", "2^30x2^30x2^30"], None, "element count of an operand"),  # once "-1 additions"
    (["einsum", "ij,jk,kl->il", "--shapes", "2^40x2", "2x2^40", "2^40x2"], None,
     "overflows 64 bits (--order optimal may find an order that fits)"),
    (["einsum", "i,i,i,i->", "--shapes", "2", "2", "2", "2"], None, "--shapes: 1 to 3 operands (got 4)"),
    (["einsum", "\t\n", "--shapes", "2"], None, "einsum pattern '\\t\\n'"),  # one line, escaped
    (["einsum", "ij->i", "--shapes", "2x3", "--order"], None, "option '--order' needs a value"),
    (["einsum", "ij->i", "--shapes", "2x3", "--order", ""], None, "--order: unknown ''"),
    (["einsum", "ij->i", "--shapes", "2x3", "--form", "x"], None, "--form: unknown 'x'"),
    (["einsum", "ij->i", "--shapes", "2x3", "--json=1"], None, "option '--json' takes no value"),
    # init
    (["init"], None, "needs --input-dim N and --output-dim M"),
    (INIT + ["--seed"], None, "option '--seed' needs a value"),
    (INIT + ["--seed", "-1"], None, "--seed: expected a non-negative integer (got '-1')"),
    (INIT + ["--seed", "2^64"], None, "got '2^64'"),
    (INIT + ["--dtype", ""], None, "unknown dtype ''"),
    (INIT + ["--json=x"], None, "option '--json' takes no value"),
    (["init", "--input-dim", "2^62", "--output-dim", "4"], None,  # once a heap overflow
     "input_dim x output_dim x batch = 4611686018427387904 x 4 x 1 overflows 64 bits"),
    (["init", "--input-dim", "2^32", "--output-dim", "2^32"], None,  # once a guard wrapped to 0, then > 16 GiB
     "4294967296 x 4294967296 x 1 overflows 64 bits, and exceeds the limit 2^24"),
    (["init", "--input-dim", "2^16", "--output-dim", "2^15"], None,  # once minutes and 50 GB
     "65536 x 32768 x 1 = 2147483648 exceeds the limit 2^24 = 16777216"),
    (["init", "--input-dim", "2^12", "--output-dim", "2^12", "--batch", "2"], None, "= 33554432 exceeds the limit"),
    (["init", "--input-dim", "16777217", "--output-dim", "1"], None, "= 16777217 exceeds the limit"),
] + [
    (INIT[:1] + (["--input-dim", "16", "--output-dim", "4"] if flag != "--input-dim" else ["--output-dim", "4"])
     + [flag, value], None, f"{flag}: expected a positive count (got '{value}')")
    for flag in ("--input-dim", "--output-dim", "--batch")
    for value in ("", "0", "-1", "2^63", "nan", "abc", "1.5")
]


@pytest.mark.parametrize("args, stdin, needle", BAD, ids=[" ".join(a)[:60] or "(none)" for a, _, _ in BAD])
def test_bad_input_is_one_line_naming_it_exit_2(args, stdin, needle):
    proc = run(*args, stdin=stdin)
    assert_one_line_error(proc, args[0] if args and args[0] in ("peaks", "dtypes", "convert", "memory", "einsum", "init")
                          else "", needle)


def test_an_overflow_prints_nothing_but_the_error():
    # Every count is computed before the first line: no half table above the error.
    proc = run("memory", "--shape", "2^61")
    assert proc.returncode == 2 and proc.stdout == ""


def test_unreadable_standard_input():
    directory = os.open("/", os.O_RDONLY)  # a folder: read() fails with EISDIR
    try:
        proc = subprocess.run([str(tool()), "convert", "--to", "f16"], stdin=directory, capture_output=True,
                              text=True, timeout=60)
    finally:
        os.close(directory)
    assert_one_line_error(proc, "convert", "cannot read standard input: Is a directory")


@pytest.mark.parametrize("args", [["convert", "--to", "f16", "1"], ["dtypes"], ["memory", "--shape", "4"], ["help"]])
def test_unwritable_standard_output(args):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([str(tool()), *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert_one_line_error(proc, args[0], "cannot write standard output: No space left on device")


# ---- answers that once said less than happened -----------------------------------------------


def convert_flags(dtype, *values, saturate=False):
    proc = run("convert", "--to", dtype, *(["--saturate"] if saturate else []), *values)
    assert proc.returncode == 0, proc.stderr
    return [line.split("\t")[3] for line in proc.stdout.splitlines()]


@pytest.mark.parametrize("dtype", ["f64", "f32", "f16", "bf16", "f8e5m2"])
def test_decimals_beyond_f64_overflow_and_underflow_in_every_dtype(dtype):
    # Once "exact": the decimal itself is out of range of f64, read as inf or 0.
    tiny = "0." + "0" * 400 + "1"  # no exponent: once read as inf
    assert convert_flags(dtype, "1e400", "-1e400", "1e999999", "1" * 400, "1e-400", "-1e-400", tiny) == \
        ["overflow to inf"] * 4 + ["underflow to zero"] * 3


def test_decimals_beyond_f64_in_e4m3_and_saturated():
    assert convert_flags("f8e4m3", "1e400", "-1e-400") == ["overflow to NaN", "underflow to zero"]
    assert convert_flags("f16", "1e400", "-1e400", saturate=True) == ["saturated", "saturated"]
    proc = run("convert", "--to", "f16", "0." + "0" * 400 + "1")
    assert proc.stdout.split("\t")[1:3] == ["0x0000", "0"]


def test_decimal_exactness_is_said_of_the_decimal():
    # 0.1 and 1e23 are not doubles (once "exact" in f64); 0.5, 1e22 and 2^-1074 are.
    assert convert_flags("f64", "0.1", "1e23", "4.9e-324", "0.5", "1e22", "4.940656458412465441765687928682213723651e-324",
                         "1152921504606846976", "-0", "inf") == \
        ["rounded", "rounded", "rounded", "exact", "exact", "rounded", "exact", "exact", "exact"]
    out = json.loads(run("dtypes", "--value", "1e-8", "--value", "1e400", "--json").stdout)
    assert out["values"][0]["results"]["f64"]["flag"] == "rounded"
    assert {r["flag"] for r in out["values"][1]["results"].values()} == {"overflow to inf", "overflow to NaN"}


def test_f32_nan_patterns_become_the_canonical_nan_in_f64():
    proc = run("convert", "--to", "f64", "0x7f800001", "0xffc00001")
    assert [line.split("\t")[1] for line in proc.stdout.splitlines()] == ["0x7ff8000000000000", "0xfff8000000000000"]


def test_einsum_optimal_order_skips_orders_that_overflow():
    proc = run("einsum", "ij,jk,kl->il", "--shapes", "2^40x2", "2x2^40", "2^40x2", "--order", "optimal")
    assert proc.returncode == 0, proc.stderr
    assert f"FLOPs: {2 ** 44} " in proc.stdout
    assert "left-to-right order: its counts overflow (bmm FLOPs" in proc.stdout
