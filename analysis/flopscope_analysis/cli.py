"""flopscope-analysis: report, ceilings and summary of a run directory (results/runs/<run-id>/).

Bad input (a file that is not Google Benchmark JSON, no results, a case name outside the
grammar, ...) prints one line on stderr and exits with code 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from . import __version__, fmt
from .errors import AnalysisError

EXIT_BAD_INPUT = 2
PROG = "flopscope-analysis"


def cmd_report(args: argparse.Namespace) -> int:
    from .load import load_run
    from .report import write_report

    run = load_run(args.run_dir)
    path = write_report(run, args.run_dir)
    print(path)
    return 0


def cmd_ceilings(args: argparse.Namespace) -> int:
    from .ceilings import write_ceilings

    for path in write_ceilings(args.run_dir, args.out):
        print(path)
    return 0


def summary_lines(run) -> list[str]:
    header = ["case", "time", "GFLOP/s", "GB/s", "%peak", "%ceil", "cv"]
    rows = []
    for c in sorted((c for c in run.cases if c.ok), key=lambda c: c.name.sort_key()):
        cv = fmt.fraction_percent(c.cv) + (" NOISY" if c.noisy else "")
        rows.append([str(c.name), fmt.duration(c.real_time_s), fmt.giga(c.flops_per_second),
                     fmt.giga(c.bytes_per_second), fmt.percent(c.pct_peak),
                     fmt.percent(c.pct_ceiling), cv])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(r):
        return "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))).rstrip()

    lines = [f"flopscope run {run.id}", line(header), line(["-" * w for w in widths])]
    lines += [line(r) for r in rows]
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
    from .load import load_run

    print("\n".join(summary_lines(load_run(args.run_dir))))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=(
        "Reads the Google Benchmark JSON files of a flopscope run directory and writes its "
        "report, plots and measured ceilings. Input format: analysis/FORMAT.md."))
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("report", help="write RUN_DIR/report.md and RUN_DIR/plots/*.png")
    r.add_argument("run_dir", metavar="RUN_DIR", type=Path)
    r.set_defaults(func=cmd_report)

    c = sub.add_parser("ceilings", help="write <DIR>/<device key>.json from RUN_DIR/bench_peak.json")
    c.add_argument("run_dir", metavar="RUN_DIR", type=Path)
    c.add_argument("--out", metavar="DIR", type=Path, default=Path("results") / "ceilings",
                   help="where to write the ceilings files (default: results/ceilings)")
    c.set_defaults(func=cmd_ceilings)

    s = sub.add_parser("summary", help="print a plain-text table of the run (for CI logs)")
    s.add_argument("run_dir", metavar="RUN_DIR", type=Path)
    s.set_defaults(func=cmd_summary)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except AnalysisError as e:
        message = " ".join(str(e).split())  # one line, whatever the message held
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
