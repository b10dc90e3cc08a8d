"""flopscope-analysis: report, summary and ceilings of a run directory (results/runs/<run-id>/).

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


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=(
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
