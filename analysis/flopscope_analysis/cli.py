"""flopscope-analysis: report, summary and ceilings of a run directory (results/runs/<run-id>/);
compare two runs; baselines, CI's gate and the history of runs.

Bad input (a file that is not Google Benchmark JSON, no results, a case name outside the
grammar, a path that cannot be read or written, ...) prints one line on stderr and exits with
code 2; Ctrl-C exits with 130. Neither prints a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from . import __version__, fmt, tables
from .errors import AnalysisError

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
PROG = "flopscope-analysis"


def cmd_report(args: argparse.Namespace) -> int:
    from .load import load_run
    from .report import write_report

    run = load_run(args.run_dir)
    path = write_report(run, args.run_dir)
    print(path)
    return 0


def cmd_ceilings(args: argparse.Namespace) -> int:
    from .ceilings import run_ceilings

    print(json.dumps(run_ceilings(args.run_dir), indent=2))
    return 0


def summary_lines(run) -> list[str]:
    header = ["case", "time", "GFLOP/s", "GB/s", "%peak", "%ceil", "cv"]
    rows = []
    for c in sorted((c for c in run.cases if c.ok), key=lambda c: c.name.sort_key()):
        cv = fmt.fraction_percent(c.cv) + (" NOISY" if c.noisy else "")
        rows.append([str(c.name), fmt.duration(c.real_time_s), fmt.giga(c.flops_per_second),
                     fmt.giga(c.bytes_per_second), fmt.percent(c.pct_peak),
                     fmt.percent(c.pct_ceiling), cv])
    lines = [f"flopscope run {run.id}"]
    if run.incomplete:
        lines.append(f"INCOMPLETE run: {run.status.describe()}")
    lines += tables.text(header, rows)
    failed = [c for c in run.cases if c.status == "failed"]
    skipped = [c for c in run.cases if c.status == "skipped"]
    noisy = [c for c in run.cases if c.ok and c.noisy]
    lines.append(f"{len(rows)} ran ({len(noisy)} noisy), {len(skipped)} skipped, {len(failed)} failed")
    for device_id, reason in sorted(run.skipped_devices.items()):
        lines.append(f"skipped device {device_id}: {reason}")
    for c in failed:
        lines.append(f"FAILED {c.name}: {c.reason}")
    return lines


def cmd_summary(args: argparse.Namespace) -> int:
    from .load import load_source

    print("\n".join(summary_lines(load_source(args.source))))
    return 0


def percent(text: str) -> float:
    """A --threshold in percent ('5' or '5%') as a fraction (0.05)."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage (5 or 5%)") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage >= 0")
    return value / 100


def write_markdown(path: Optional[Path], lines: list[str]) -> None:
    if path is not None:
        from .atomic import write_text_atomic

        write_text_atomic(path, "\n".join(lines).rstrip() + "\n")


def cmd_compare(args: argparse.Namespace) -> int:
    from .compare import compare_runs, markdown_lines, text_lines
    from .load import load_source

    result = compare_runs(load_source(args.base), load_source(args.new), args.threshold,
                          timing_gate=not args.no_timing_gate)
    write_markdown(args.markdown, markdown_lines(result, limit=args.markdown_limit, full=args.full))
    print("\n".join(text_lines(result, every=args.all)))
    return result.exit_code


def cmd_ab(args: argparse.Namespace) -> int:
    import tempfile

    from .ab import NothingInCommon, compare_pair, run_pair
    from .compare import markdown_lines, text_lines

    out = args.out or Path(tempfile.mkdtemp(prefix="flopscope-ab-"))
    try:
        dir_a, dir_b = run_pair(args.a, args.b, out, args.filter, args.rounds, args.repetitions)
    except NothingInCommon as nothing:
        if args.filter != ".":  # the user's filter chose nothing: their error
            raise
        # the whole suite and nothing in common: the base predates it, not the change's fault
        print(f"ab: skipped: {nothing}")
        write_markdown(args.markdown, [f"*Paired timing skipped: {nothing}.*"])
        return 0
    result = compare_pair(dir_a, dir_b, args.threshold)
    write_markdown(args.markdown, markdown_lines(result, limit=args.markdown_limit, full=args.full,
                                                 title="flopscope paired timing (merge base A, head B)"))
    print("\n".join(text_lines(result)))
    print(f"paired runs in {out}")
    return result.exit_code


def cmd_baseline(args: argparse.Namespace) -> int:
    from .bundle import baseline_path, require_complete, write_bundle
    from .load import load_run

    run = load_run(args.run_dir)
    require_complete(run, "baseline")
    print(write_bundle(run, baseline_path(run, args.out)))
    return 0


def cmd_gate(args: argparse.Namespace) -> int:
    from .gate import gate
    from .load import load_run

    result = gate(load_run(args.run_dir), args.baselines, args.strict_timing, args.threshold)
    write_markdown(args.markdown, result.markdown_lines(limit=args.markdown_limit, full=args.full))
    print("\n".join(result.text_lines()))
    return result.exit_code


def cmd_history_add(args: argparse.Namespace) -> int:
    from .history import add

    print(add(args.run_dir, args.history, overwrite=args.overwrite))
    return 0


def cmd_history_plot(args: argparse.Namespace) -> int:
    from .history import plot

    for path in plot(args.history, args.out):
        print(path)
    return 0


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit code 2), as every other bad input."""

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"{PROG}: error: {one_line(message)} (see {self.prog} --help)\n")


def _results_dir_option(p: argparse.ArgumentParser, flag: str, folder: str) -> None:
    """A --flag DIR option whose default is results/<folder> (relative to the current directory)."""
    p.add_argument(flag, metavar="DIR", type=Path, default=Path("results") / folder,
                   help=f"default: results/{folder}")


def _add_markdown_options(p: argparse.ArgumentParser) -> None:
    from .compare import MARKDOWN_LIMIT

    p.add_argument("--markdown", type=Path, metavar="FILE",
                   help="also write the summary as Markdown (a CI log, a pull request comment): "
                   "regressions first, at most --markdown-limit characters, cut with a pointer to --full")
    p.add_argument("--markdown-limit", type=int, default=MARKDOWN_LIMIT, metavar="CHARS",
                   help=f"the Markdown's size limit (default {MARKDOWN_LIMIT:,}: GitHub's 65,536 for a "
                   "comment, with room; CI gives the paired timing and the gate a share each)")
    p.add_argument("--full", metavar="WHERE",
                   help="where the full comparison is (a link to a CI artifact), named where the "
                   "Markdown is cut")


def _add_compare_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threshold", type=percent, default=0.05, metavar="PERCENT",
                   help="a slower verdict beyond this change of time is a regression (default 5%%)")
    _add_markdown_options(p)


def parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description=(
        "Reads the Google Benchmark JSON files of a flopscope run directory and writes its "
        "report and plots. Input format: analysis/FORMAT.md."))
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("report", help="write RUN_DIR/report.md and RUN_DIR/plots/*.png")
    r.add_argument("run_dir", metavar="RUN_DIR", type=Path)
    r.set_defaults(func=cmd_report)

    s = sub.add_parser("summary", help="print a plain-text table of a run (for CI logs)")
    s.add_argument("source", metavar="RUN", type=Path,
                   help="a run directory, one of its JSON files, or a baseline/history bundle")
    s.set_defaults(func=cmd_summary)

    c = sub.add_parser("ceilings", help=(
        "print, as JSON, the ceilings documents that RUN_DIR/bench_peak.json yields (what "
        "bench_peak writes with --write-ceilings); writes nothing"))
    c.add_argument("run_dir", metavar="RUN_DIR", type=Path)
    c.set_defaults(func=cmd_ceilings)

    k = sub.add_parser("compare", help=(
        "compare NEW with BASE case by case: time, rate, U test, verdict, exact accounting; "
        "exit 1 on a regression"))
    k.add_argument("base", metavar="BASE", type=Path, help="a run directory, JSON file or bundle")
    k.add_argument("new", metavar="NEW", type=Path, help="a run directory, JSON file or bundle")
    _add_compare_options(k)
    k.add_argument("--all", action="store_true",
                   help="list every case (unchanged, skipped, on one side only), not counts")
    k.add_argument("--no-timing-gate", action="store_true",
                   help="show timing but never fail on it (accounting still fails)")
    k.set_defaults(func=cmd_compare)

    from .ab import AB_REPETITIONS, AB_ROUNDS, AB_SUITE, AB_THRESHOLD

    a = sub.add_parser("ab", help=(
        f"paired timing: the {AB_SUITE} suite of two builds run interleaved, block by block "
        "(A B, B A, ...) on this machine, compared; a slowdown beyond the threshold fails "
        "(scripts/ab.sh BASE_REF builds both)"))
    a.add_argument("--a", type=Path, required=True, metavar="BUILD",
                   help="the base build: a build directory (its bench_* binaries) or one binary")
    a.add_argument("--b", type=Path, required=True, metavar="BUILD", help="the new build, likewise")
    a.add_argument("--filter", default=".", metavar="REGEX",
                   help="the cases (a regex searched in their names; default: the whole suite, "
                   "where nothing in common is a skip, not an error)")
    a.add_argument("--rounds", type=int, default=AB_ROUNDS, help=f"A B pairs per block (default {AB_ROUNDS})")
    a.add_argument("--repetitions", type=int, default=AB_REPETITIONS,
                   help=f"repetitions a side per round (default {AB_REPETITIONS})")
    a.add_argument("--out", type=Path, metavar="DIR", help="where the two runs go (default: a temp dir)")
    a.add_argument("--threshold", type=percent, default=AB_THRESHOLD, metavar="PERCENT",
                   help=f"a paired slowdown beyond this fails (default {100 * AB_THRESHOLD:g}%%)")
    _add_markdown_options(a)
    a.set_defaults(func=cmd_ab)

    b = sub.add_parser("baseline", help="write RUN_DIR as the baseline of its machine: "
                                        "<DIR>/<machine key>.json")
    b.add_argument("run_dir", metavar="RUN_DIR", type=Path)
    _results_dir_option(b, "--out", "baselines")
    b.set_defaults(func=cmd_baseline)

    g = sub.add_parser("gate", help=(
        "CI: compare RUN_DIR with the baseline of its machine (accounting gates; timing only "
        "with --strict-timing); without one, accounting against every baseline"))
    g.add_argument("run_dir", metavar="RUN_DIR", type=Path)
    _results_dir_option(g, "--baselines", "baselines")
    g.add_argument("--strict-timing", action="store_true", help="a timing regression fails too")
    _add_compare_options(g)
    g.set_defaults(func=cmd_gate)

    h = sub.add_parser("history", help="a machine's runs over commits: add one, plot them")
    hsub = h.add_subparsers(dest="history_command", required=True, metavar="ACTION")
    ha = hsub.add_parser("add", help="file RUN_DIR under <DIR>/<machine key>/<date>-<commit>.json")
    ha.add_argument("run_dir", metavar="RUN_DIR", type=Path)
    ha.add_argument("--overwrite", action="store_true",
                    help="replace an entry of the same machine, date and commit (else an error)")
    ha.set_defaults(func=cmd_history_add)
    hp = hsub.add_parser("plot", help="<OUT>/<machine key>/trend_<family>.png: each case's rate "
                                      "over the runs")
    hp.add_argument("--out", metavar="OUT", type=Path, help="default: the history directory")
    hp.set_defaults(func=cmd_history_plot)
    for action in (ha, hp):
        _results_dir_option(action, "--history", "history")
    return p


def one_line(message: str) -> str:
    return " ".join(str(message).split())


def error_message(error: BaseException) -> str:
    """What the command-line tool prints for an exception it stops on, in one line."""
    if isinstance(error, AnalysisError):
        return one_line(error)
    if isinstance(error, OSError):
        where = error.filename if error.filename is not None else ""
        what = error.strerror or str(error)
        return one_line(f"{where}: {what}" if where else what)
    if isinstance(error, RecursionError):
        return "input nested too deeply to be read"
    return one_line(f"internal error: {type(error).__name__}: {error} "
                    "(FLOPSCOPE_DEBUG=1 shows the traceback)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:  # noqa: BLE001: every failure is one line, never a traceback
        if os.environ.get("FLOPSCOPE_DEBUG") and not isinstance(error, AnalysisError):
            raise
        print(f"{PROG}: error: {error_message(error)}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
