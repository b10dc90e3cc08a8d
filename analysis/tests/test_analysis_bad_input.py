"""Every bad input is one line on stderr and exit code 2, never a traceback."""

import pytest

from conftest import run_cli


def check_one_line_error(done, *expected):
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("flopscope-analysis: error: ")
    for text in expected:
        assert text in lines[0], lines[0]
    assert done.stdout == ""


BAD_RUNS = {
    "not_json": ["bench_copy.json", "not JSON"],
    "not_gbench": ["bench_copy.json", "not Google Benchmark JSON"],
    "no_context": ["bench_copy.json", "no flopscope context"],
    "bad_name": ["bench_copy.json", "'BM_Copy/1024'", "outside the grammar"],
    "no_benchmarks": ["no results"],
}


@pytest.mark.parametrize("command", ["report", "summary"])
@pytest.mark.parametrize("bad", sorted(BAD_RUNS))
def test_bad_run_directory(fixture_dir, command, bad):
    run_dir = fixture_dir(f"bad/{bad}")
    check_one_line_error(run_cli(command, run_dir), *BAD_RUNS[bad])
    assert not (run_dir / "report.md").exists()


@pytest.mark.parametrize("command", ["report", "summary", "ceilings"])
def test_empty_run_directory(tmp_path, command):
    run_dir = tmp_path / "empty"
    run_dir.mkdir()
    expected = "no bench_peak.json" if command == "ceilings" else "no results"
    check_one_line_error(run_cli(command, run_dir), str(run_dir), expected)


@pytest.mark.parametrize("command", ["report", "ceilings"])
def test_missing_directory(tmp_path, command):
    check_one_line_error(run_cli(command, tmp_path / "nope"), "nope", "not a directory")


def test_file_instead_of_directory(fixture_dir):
    path = fixture_dir("run_cpu") / "bench_copy.json"
    check_one_line_error(run_cli("report", path), "not a directory")


def test_not_json_peak_file_for_ceilings(fixture_dir, tmp_path):
    run_dir = fixture_dir("run_cpu")
    (run_dir / "bench_peak.json").write_bytes(b"\xff\xfe binary")
    check_one_line_error(run_cli("ceilings", run_dir), "bench_peak.json", "not JSON")


def test_one_bad_file_among_good_ones(fixture_dir):
    run_dir = fixture_dir("run_cpu")
    (run_dir / "bench_matmul.json").write_text("[1, 2, 3]")
    check_one_line_error(run_cli("report", run_dir), "bench_matmul.json", "not Google Benchmark JSON")
    assert not (run_dir / "report.md").exists()


def test_entry_without_name(fixture_dir):
    run_dir = fixture_dir("single")
    (run_dir / "bench_copy.json").write_text('{"context": {"flopscope": "{\\"schema\\":1}"}, '
                                             '"benchmarks": [{"real_time": 1}]}')
    check_one_line_error(run_cli("report", run_dir), "benchmarks[0] has no name")


def test_unknown_time_unit(fixture_dir):
    run_dir = fixture_dir("single")
    path = run_dir / "bench_copy.json"
    path.write_text(path.read_text().replace('"time_unit": "ns"', '"time_unit": "fortnights"'))
    check_one_line_error(run_cli("report", run_dir), "unknown time_unit 'fortnights'")


def test_usage_error_exits_2():
    done = run_cli("frobnicate")
    assert done.returncode == 2 and "Traceback" not in done.stderr


@pytest.mark.parametrize("command", ["report", "summary"])
def test_json_nested_very_deep(fixture_dir, command):
    run_dir = fixture_dir("single")
    (run_dir / "bench_copy.json").write_text("[" * 200000 + "]" * 200000)
    check_one_line_error(run_cli(command, run_dir), "bench_copy.json", "nested too deeply")


def test_plots_path_that_is_a_file(fixture_dir):
    run_dir = fixture_dir("single")
    (run_dir / "plots").write_text("not a directory")
    check_one_line_error(run_cli("report", run_dir), str(run_dir / "plots"))
    assert (run_dir / "plots").read_text() == "not a directory"


def test_report_md_that_is_a_directory(fixture_dir):
    run_dir = fixture_dir("single")
    (run_dir / "report.md").mkdir()
    check_one_line_error(run_cli("report", run_dir), "report.md", "not a regular file")


def test_unexpected_field_types_are_one_line_errors(fixture_dir):
    run_dir = fixture_dir("single")
    path = run_dir / "bench_copy.json"
    path.write_text(path.read_text().replace('"time_unit": "ns"', '"time_unit": ["ns"]'))
    check_one_line_error(run_cli("summary", run_dir), "unknown time_unit")
