"""Bundles: one JSON file that holds a finished run's Google Benchmark files as they were written
(FORMAT.md, "Bundle"), so that a run can be kept where a run directory cannot: a committed
baseline (results/baselines/<machine key>.json) and the entries of a history
(results/history/<machine key>/<date>-<commit>.json). load.load_source() reads one back as the
Run it came from; compare takes one as BASE or NEW."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .atomic import write_text_atomic
from .errors import AnalysisError
from .load import BUNDLE_KEY, BUNDLE_SCHEMA, Run


def require_complete(run: Run, what: str) -> None:
    """A run whose status.json says it did not finish makes no baseline or history entry."""
    if run.incomplete:
        raise AnalysisError(f"{run.source}: {run.status.describe()}: an incomplete run makes no {what}")


def bundle_document(run: Run) -> dict[str, Any]:
    """The bundle of a run: its files as read, keyed by file name, and what names it."""
    return {
        BUNDLE_KEY: BUNDLE_SCHEMA,
        "run_id": run.id,
        "machine_key": run.machine_key,
        "date": run.date,
        "git_commit": run.git_commit,
        "status": run.status.fields if run.status else None,
        "files": {f.path.name: f.document for f in run.files},
    }


def _file_text(name: str, data: dict[str, Any]) -> str:
    """One embedded file: each top-level field on a line, then one benchmark entry per line."""
    fields = [f"   {json.dumps(k)}: {json.dumps(v)}," for k, v in data.items() if k != "benchmarks"]
    entries = ",\n".join("    " + json.dumps(e) for e in data["benchmarks"])
    return "\n".join([f"  {json.dumps(name)}: {{", *fields, '   "benchmarks": [', entries, "   ]", "  }"])


def write_bundle(run: Run, path: Path) -> Path:
    """Writes the run's bundle to `path` (atomically), one benchmark entry per line, so that a
    committed baseline diffs line by line."""
    document = bundle_document(run)
    files = document.pop("files")
    head = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in document.items()]
    body = ",\n".join(_file_text(name, data) for name, data in files.items())
    return write_text_atomic(path, "\n".join(["{", *head, ' "files": {', body, " }", "}"]) + "\n")


def baseline_path(run: Run, out_dir: Path) -> Path:
    return out_dir / f"{run.machine_key}.json"


def history_path(run: Run, history_dir: Path) -> Path:
    """<history>/<machine key>/<date>-<commit>.json: entries sort by when the run was made."""
    stamp = re.sub(r"[^0-9]", "", (run.date or "")[:19]) or re.sub(r"[^A-Za-z0-9._-]", "-", run.id)
    commit = re.sub(r"[^A-Za-z0-9._-]", "-", run.git_commit or "unknown-commit")
    return history_dir / run.machine_key / f"{stamp}-{commit}.json"
