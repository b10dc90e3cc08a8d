"""CI's gate (.ci/run): a run against the committed baseline of its machine,
results/baselines/<machine key>.json, with compare's rules: accounting strictly, timing as a
report only unless strict_timing. A machine without a baseline gets a line saying so, and its
accounting is still checked against every committed baseline (FLOPs and bytes do not depend on
the machine, so a changed count shows against any of them); with no baseline at all there is
nothing to check, and that is said too."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from typing import Optional

from .compare import MARKDOWN_LIMIT, Comparison, compare_runs, markdown_lines, text_lines
from .load import Run, load_source


@dataclass
class Gate:
    notes: list[str] = field(default_factory=list)  # what was (not) compared, and why
    comparisons: list[tuple[Path, Comparison]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return max((c.exit_code for _, c in self.comparisons), default=0)

    def outcome(self) -> str:
        failed = [path.name for path, c in self.comparisons if c.failed]
        return f"FAIL against {', '.join(failed)}" if failed else "OK"

    def text_lines(self) -> list[str]:
        lines = [f"flopscope gate: {self.outcome()}", *self.notes]
        for path, comparison in self.comparisons:
            lines += ["", f"== against {path}", *text_lines(comparison)]
        return lines

    def markdown_lines(self, limit: int = MARKDOWN_LIMIT, full: Optional[str] = None) -> list[str]:
        """At most `limit` characters in all: each comparison gets an equal share."""
        lines = [f"# flopscope gate: {self.outcome()}", ""] + [f"- {note}" for note in self.notes] + [""]
        used = sum(len(line) + 1 for line in lines)
        share = (limit - used) // max(1, len(self.comparisons))
        for path, comparison in self.comparisons:
            part = [f"Against `{path}`:", ""]
            lines += part + markdown_lines(comparison, share - sum(len(x) + 1 for x in part), full)
        return lines


def gate(run: Run, baselines_dir: Path, strict_timing: bool, threshold: float) -> Gate:
    result = Gate()
    own = baselines_dir / f"{run.machine_key}.json"
    if own.is_file():
        result.notes.append(f"baseline of this machine: {own} (timing "
                            + ("gates: --strict-timing" if strict_timing else "is a report only") + ")")
        result.comparisons.append((own, compare_runs(load_source(own), run, threshold, strict_timing)))
        return result
    others = sorted(baselines_dir.glob("*.json")) if baselines_dir.is_dir() else []
    result.notes.append(f"no baseline for this machine ({run.machine_key}) in {baselines_dir}: timing "
                        "is not compared")
    if not others:
        result.notes.append("no baseline committed at all: accounting is not checked either "
                            "(`flopscope-analysis baseline RUN_DIR` writes one)")
    else:
        result.notes.append(f"accounting is checked against the {len(others)} baseline(s) of other "
                            "machines (FLOPs and bytes do not depend on the machine)")
    result.comparisons += [(path, compare_runs(load_source(path), run, threshold, timing_gate=False))
                           for path in others]
    return result
