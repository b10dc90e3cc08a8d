"""Measured ceilings from a bench_peak run: the documents that bench_peak itself writes with
--write-ceilings=DIR (DIR/<device key>.json, which every bench binary reads at start-up into
context.flopscope.devices[...].ceilings). The analysis never writes them (data flows one way):
`flopscope-analysis ceilings RUN_DIR` prints them so that a person can inspect what a run
measured, and the peak family's report section shows them beside the ceilings the run used.

    {"schema": 1, "device_key": ..., "device_name": ..., "measured_at": ISO 8601 time,
     "source": the bench_peak JSON file,
     "memory_bytes_per_second": {"copy": x or null, "triad": y or null},
     "compute": {"<mode>": flops_per_second, ...}}

A value is the largest median of the cases that measure a ceiling (the context's typed
`measures`, kind and name: memory copy or triad, compute <mode>; a schema-1 file's label
ceiling=kind:name) on that device (bytes_per_second for memory, flops_per_second for compute).
Skipped and failed cases do not count.
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path
from typing import Any, Optional

from .errors import AnalysisError
from .load import BenchFile, Device, load_file

SCHEMA = 1
PEAK_FILE = "bench_peak.json"


def compute_ceilings(peak: BenchFile, source: str, measured_at: Optional[str] = None) -> dict[str, dict[str, Any]]:
    """device id -> ceilings document, for each device with at least one ceiling case that ran."""
    if measured_at is None:
        date = peak.context.gbench.get("date")
        measured_at = str(date) if date else _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    best: dict[str, dict[str, Any]] = {}
    for case in peak.cases:
        measures = case.measures  # typed (kind, name): the context's, or a schema-1 file's label
        if not case.ok or not (measures or case.label.get("ceiling")):
            continue
        kind, what = measures or (case.label["ceiling"], "")
        device_id = case.name.device
        entry = best.setdefault(device_id, {"memory": {}, "compute": {}})
        if kind == "memory" and what:
            value = case.bytes_per_second
            slot = entry["memory"]
        elif kind == "compute" and what:
            value = case.flops_per_second
            slot = entry["compute"]
        else:
            raise AnalysisError(f"{peak.path}: {case.name}: the ceiling it measures, {kind}:{what}, is not "
                                "memory:<copy|triad> or compute:<mode>")
        if value is not None and (what not in slot or value > slot[what]):
            slot[what] = value

    documents = {}
    for device_id, entry in sorted(best.items()):
        if not entry["memory"] and not entry["compute"]:
            continue
        device = peak.context.devices.get(device_id, Device(device_id, {}))
        memory = {"copy": entry["memory"].get("copy"), "triad": entry["memory"].get("triad")}
        memory.update({k: v for k, v in entry["memory"].items() if k not in memory})
        try:
            key = device.file_key
        except AnalysisError as e:
            raise AnalysisError(f"{peak.path}: {e}") from None
        documents[device_id] = {
            "schema": SCHEMA,
            "device_key": key,
            "device_name": device.name,
            "measured_at": measured_at,
            "source": source,
            "memory_bytes_per_second": memory,
            "compute": dict(sorted(entry["compute"].items())),
        }
    return documents


def run_ceilings(run_dir: Path | str) -> dict[str, dict[str, Any]]:
    """device key -> ceilings document, from RUN_DIR/bench_peak.json."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise AnalysisError(f"{run_dir}: not a directory")
    path = run_dir / PEAK_FILE
    if not path.is_file():
        raise AnalysisError(f"{run_dir}: no {PEAK_FILE} (run the bench_peak binary into it first)")
    peak = load_file(path)
    relative = os.path.relpath(path)
    documents = compute_ceilings(peak, str(path.resolve()) if relative.startswith("..") else relative)
    if not documents:
        raise AnalysisError(f"{path}: no ceiling case ran (no case labelled ceiling=... that was "
                            "neither skipped nor failed)")
    return {doc["device_key"]: doc for doc in documents.values()}
