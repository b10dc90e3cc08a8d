"""The headline of report.md on the committed default-suite run of the Zen 4 VM, the
order-statistic CI of the median against the published table of its ranks, and the ceiling a
case is held against."""

from __future__ import annotations

import json
import re
import shutil
import statistics
from pathlib import Path

import pytest

from flopscope_analysis.load import load_run
from flopscope_analysis.report import write_report
from flopscope_analysis.stats import median_ci

DEFAULT_RUN = Path(__file__).resolve().parents[2] / "results" / "reports" / "cpu-amd-epyc-2026-12-04"


@pytest.mark.parametrize("n, ranks, coverage", [
    # ranks (1-based) of the 95% CI of the median in the standard tables (e.g. Conover,
    # Practical Nonparametric Statistics, table A3); n < 6: none reaches 95%, min..max given
    (3, (1, 3), 0.75), (5, (1, 5), 0.9375), (6, (1, 6), 0.96875), (9, (2, 8), 0.9609375),
    (10, (2, 9), 0.978515625), (20, (6, 15), 0.9586105346679688)])
def test_median_ci_ranks(n, ranks, coverage):
    samples = [float(10 * i) for i in range(n, 0, -1)]  # unsorted on purpose
    ci = median_ci(samples)
    assert (ci.low, ci.high) == (10.0 * ranks[0], 10.0 * ranks[1])
    assert ci.coverage == pytest.approx(coverage) and ci.reaches_level == (n >= 6)


def _rendered(tmp_path_factory, source: Path, name: str) -> tuple[Path, str]:
    """A copy of the committed run `source` (its JSON, without its report and plots), reported anew."""
    run_dir = tmp_path_factory.mktemp(name) / "run"
    shutil.copytree(source, run_dir, ignore=shutil.ignore_patterns("plots", "report.md"))
    write_report(load_run(run_dir), run_dir)
    return run_dir, (run_dir / "report.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return _rendered(tmp_path_factory, DEFAULT_RUN, "default")


def _headline(text: str) -> list[str]:
    start = text.index("## Headline\n")
    return text[start:text.index("\n## ", start + 1)].splitlines()


def _rate(run_dir: Path, binary: str, name: str, counter: str) -> float:
    data = json.loads((run_dir / f"{binary}.json").read_text())
    (entry,) = [e for e in data["benchmarks"] if e["run_name"] == name + "/real_time"
                and e.get("aggregate_name") == "median"]
    return entry[counter]


def _paired(run_dir: Path, binary: str, name: str, base: str, counter: str) -> float:
    """name's `counter` over base's, the median of the ratios of their k-th repetitions (the
    Xeon run's cases and their copies share blocks), read from the JSON's iteration entries."""
    data = json.loads((run_dir / f"{binary}.json").read_text())

    def by_round(n: str) -> dict[int, float]:
        return {e["repetition_index"]: e[counter] for e in data["benchmarks"]
                if e["run_name"] == n + "/real_time" and e.get("run_type") == "iteration"}

    mine, theirs = by_round(name), by_round(base)
    return statistics.median(mine[k] / theirs[k] for k in mine if k in theirs)


def test_headline_is_one_screen_before_the_details(report):
    _, text = report
    lines = _headline(text)
    assert text.index("## Headline") < text.index("## Run") < text.index("## Appendix: skipped")
    assert len(lines) <= 45
    skipped = next(line for line in lines if line.startswith("- 291 cases ran"))
    assert skipped == "- 291 cases ran, 727 skipped, 0 failed."
    reasons = next(line for line in lines if line.startswith("- Skipped, by reason: "))
    counts = [int(n) for n in re.findall(r"(?:^|; )(\d+) × ", reasons.removeprefix("- Skipped, by reason: "))]
    assert sum(counts) == 727 and counts[0] == 682  # every skip counted once, largest first
    assert "noisy" not in "\n".join(lines)


# A schema-2 run (roles in the context): the Xeon VM's default suite of 2026-12-06.
XEON_RUN = Path(__file__).resolve().parents[2] / "results" / "reports" / "cpu-intel-xeon-2026-12-06"


@pytest.fixture(scope="module")
def xeon_report(tmp_path_factory):
    return _rendered(tmp_path_factory, XEON_RUN, "xeon")


def test_headline_ratios_are_of_one_process_and_the_right_ceiling(xeon_report):
    """Each family's row: the rate of the case it names, read back from that binary's JSON, over
    the ceiling of its kind (a copy against the copy ceiling, a view against the copy timed beside
    it, compute against its mode's FMA), and the vendor or baseline ratio from cases of the same
    file and shape."""
    run_dir, text = xeon_report
    rows = {line.split(" | ")[0].strip("| "): [cell.strip(" |`") for cell in line.split(" | ")]
            for line in _headline(text) if line.startswith("| ") and " | cpu | " in line}
    run = load_run(run_dir)
    ceilings = run.devices["cpu"].memory_ceilings

    def named(family: str) -> str:
        variant, dtype, shape = rows[family][2].split(" ", 2)
        return f"{family}/{variant}/{dtype}/cpu/{shape}"

    copy, memcpy_name = named("copy"), "copy/memcpy/f32/cpu/" + named("copy").split("/cpu/")[1]
    simd = _rate(run_dir, "bench_copy", copy, "bytes_per_second")
    assert rows["copy"][4].startswith(f"{100 * simd / ceilings['copy']:.0f}% of copy")
    # same binary, same n, round by round
    assert rows["copy"][5].startswith(f"{_paired(run_dir, 'bench_copy', copy, memcpy_name, 'bytes_per_second'):.2f}x memcpy")
    # A view against the copy of its elements timed beside it (its block's), not bench_peak's
    # copy ceiling of another process.
    elements = int(_rate(run_dir, "bench_strided", named("strided"), "elements"))
    dtype = named("strided").split("/")[2]
    paired = _paired(run_dir, "bench_strided", named("strided"), f"strided/copy/{dtype}/cpu/n={elements}",
                     "bytes_per_second")
    assert rows["strided"][4] == f"{100 * paired:.0f}% of its copy"
    matmul = _rate(run_dir, "bench_matmul", named("matmul"), "flops_per_second")
    mode = rows["matmul"][4].split(" of ")[1].split(" ")[0]  # the mode whose FMA ceiling applies
    compute = run.devices["cpu"].compute_ceilings[mode]
    assert rows["matmul"][4] == f"{100 * matmul / compute:.0f}% of {mode} FMA"
    assert rows["broadcast"][4] == "in L3"  # 3 streams of 24 MiB: inside this VM's 480 MiB L3


def test_cache_resident_sizes_are_marked_not_a_percentage_of_dram(report):
    _, text = report
    results = text[text.index("## Results"):]
    row = next(line for line in results.splitlines() if line.startswith("| simd | f32 | n=16384 |"))
    assert " in L2 " in row  # 128 KiB moved: fits the 1 MiB L2
    big = next(line for line in results.splitlines() if line.startswith("| simd | f32 | n=67108864 |"))
    assert "% copy" in big


def test_the_best_own_case_is_the_fastest_own_variant_of_its_shape(tmp_path):
    """A variant that another own variant beats at its shape and dtype in the same process is not
    the family's best, however near its own ceiling it runs. With the Xeon run's f32 microkernel
    slowed tenfold, bf16 decoded to f32 (`microkernel`, 67% of the f32 FMA ceiling, 0.22x the AMX
    tiles beside it) would be the backward row's pick."""
    run_dir = tmp_path / "run"
    shutil.copytree(XEON_RUN, run_dir, ignore=shutil.ignore_patterns("plots", "report.md"))
    path = run_dir / "bench_backward.json"
    data = json.loads(path.read_text())
    for entry in data["benchmarks"]:
        if entry["name"].startswith("backward/microkernel/f32/cpu/") and "flops_per_second" in entry:
            entry["flops_per_second"] /= 10
    path.write_text(json.dumps(data))
    write_report(load_run(run_dir), run_dir)
    row = next(line for line in _headline((run_dir / "report.md").read_text())
               if line.startswith("| backward | cpu | "))
    variant, dtype, shape = row.split(" | ")[2].strip("`").split(" ", 2)
    rates = {e["run_name"].split("/")[1]: e["flops_per_second"] for e in data["benchmarks"]
             if e.get("aggregate_name") == "median" and e["run_name"].split("/")[2:] == [dtype, "cpu", *shape.split("/")]
             + ["real_time"]}
    assert (variant, dtype) != ("microkernel", "bf16")
    own = {v: r for v, r in rates.items() if v.startswith("microkernel")}  # the table's own rows
    assert rates[variant] == max(own.values()), (variant, rates)


def test_the_run_table_says_which_binaries_had_their_operands_in_huge_pages(tmp_path_factory):
    # The same committed run, one binary's context marked as run with --huge-pages.
    run_dir = tmp_path_factory.mktemp("huge") / "run"
    shutil.copytree(DEFAULT_RUN, run_dir, ignore=shutil.ignore_patterns("plots", "report.md"))
    path = run_dir / "bench_strided.json"
    data = json.loads(path.read_text())
    context = json.loads(data["context"]["flopscope"])
    context["run"]["huge_pages"] = True
    data["context"]["flopscope"] = json.dumps(context)
    path.write_text(json.dumps(data))
    write_report(load_run(run_dir), run_dir)
    text = (run_dir / "report.md").read_text(encoding="utf-8")
    run_table = text[text.index("## Run\n"):text.index("\n## ", text.index("## Run\n") + 1)]
    marked = [line for line in run_table.splitlines() if "2 MiB pages (--huge-pages)" in line]
    assert len(marked) == 1 and "bench_strided" in marked[0], run_table


def test_the_targets_line_counts_the_tables_verdicts_and_names_the_missed(xeon_report):
    _, text = xeon_report
    (line,) = [line for line in _headline(text) if line.startswith("- **Targets**")]
    # Every target cell of the tables ("... copy: met, CI ..." / "... vendor: missed, CI ..."), by verdict.
    cells = re.findall(r"\| (>= [0-9.]+(?:% copy|x vendor)): (met|missed|within noise)(?:,| \() ?([^|]*?) \|", text)
    verdicts = [verdict for _, verdict, _ in cells]
    assert len(cells) >= 10
    assert f"{verdicts.count('met')} of {len(cells)} met" in line
    for verdict in ("within noise", "missed"):
        if verdicts.count(verdict):
            assert f"{verdicts.count(verdict)} {verdict}" in line
    # The missed ones by what they are, with the interval their table cell shows.
    for goal, verdict, detail in cells:
        if verdict == "missed":
            assert f"{goal}, {detail}" in line
