"""status.json of a run directory: whether the run finished.

The runner (scripts/run_suite.py) writes it before the first bench binary starts, as "running",
and replaces it (atomically) when it stops: "complete", "failed" (a binary exited non-zero) or
"interrupted" (Ctrl-C). A runner that was killed leaves "running" behind, so a directory whose
status is not "complete" never passes for a finished run. Directories without the file (older
runs, hand-made ones) have no status; the analysis takes them as they are.

    {"schema": 1, "state": "running" | "complete" | "failed" | "interrupted",
     "suite": "default" | "quick", "started_at": ISO 8601, "finished_at": ISO 8601 | null,
     "binaries": [every binary the run meant to run], "finished": [those that wrote their JSON],
     "failed": [those that exited non-zero]}
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from .atomic import write_text_atomic
from .errors import AnalysisError

FILE = "status.json"
SCHEMA = 1
RUNNING, COMPLETE, FAILED, INTERRUPTED = "running", "complete", "failed", "interrupted"
STATES = (RUNNING, COMPLETE, FAILED, INTERRUPTED)


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunStatus:
    state: str
    fields: dict[str, Any]

    @property
    def complete(self) -> bool:
        return self.state == COMPLETE

    def _names(self, key: str) -> list[str]:
        value = self.fields.get(key)
        return [str(v) for v in value] if isinstance(value, list) else []

    def describe(self) -> str:
        """One sentence for the report and the summary: what happened to the run."""
        binaries, finished = self._names("binaries"), self._names("finished")
        done = f"{len(finished)} of {len(binaries)} binaries finished" if binaries else ""
        if self.state == COMPLETE:
            return "complete: every binary finished"
        if self.state == RUNNING:
            return ("incomplete: status.json still says running (the runner was killed, or is "
                    "still running)" + (f"; {done}" if done else ""))
        if self.state == INTERRUPTED:
            return "incomplete: interrupted (Ctrl-C)" + (f"; {done}" if done else "")
        failed = ", ".join(self._names("failed")) or "?"
        return f"incomplete: these binaries failed: {failed}" + (f"; {done}" if done else "")


def write(run_dir: Path | str, state: str, **fields: Any) -> Path:
    """Writes (replaces) RUN_DIR/status.json atomically."""
    if state not in STATES:
        raise ValueError(f"unknown run state {state!r}")
    document = {"schema": SCHEMA, "state": state, **fields}
    return write_text_atomic(Path(run_dir) / FILE, json.dumps(document, indent=2) + "\n")


def from_document(where: str, document: Any) -> RunStatus:
    """A RunStatus from a decoded status.json; AnalysisError when it is not one."""
    if not isinstance(document, dict) or document.get("state") not in STATES:
        raise AnalysisError(f"{where}: not a run status (a JSON object with \"state\": one of "
                            f"{', '.join(STATES)})")
    return RunStatus(str(document["state"]), document)


def read(run_dir: Path, parse_json) -> Optional[RunStatus]:
    """RUN_DIR/status.json, or None when the directory has none. parse_json(path) reads a JSON
    file with the loader's one-line errors."""
    path = run_dir / FILE
    if not path.exists():
        return None
    return from_document(str(path), parse_json(path))
