"""Measured ceilings from a bench_peak run: one file per device, <out>/<device key>.json, which
the C++ harness reads at start-up (context.flopscope.devices[...].ceilings) and which the report
shows beside the theoretical peaks.

    {"schema": 1, "device_key": ..., "device_name": ..., "measured_at": ISO 8601 time,
     "source": the bench_peak JSON file,
     "memory_bytes_per_second": {"copy": x or null, "triad": y or null},
     "compute": {"<mode>": flops_per_second, ...}}

A value is the largest median of the cases labelled ceiling=memory:copy, ceiling=memory:triad or
ceiling=compute:<mode> on that device (bytes_per_second for memory, flops_per_second for compute).
Skipped and failed cases do not count.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from pathlib import Path
from typing import Any, Optional

from .atomic import write_text_atomic
from .errors import AnalysisError
from .load import BenchFile, Device, load_file

SCHEMA = 1
PEAK_FILE = "bench_peak.json"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "device"


def compute_ceilings(peak: BenchFile, source: str, measured_at: Optional[str] = None) -> dict[str, dict[str, Any]]:
    """device id -> ceilings document, for each device with at least one ceiling case that ran."""
    if measured_at is None:
        date = peak.context.gbench.get("date")
        measured_at = str(date) if date else _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    best: dict[str, dict[str, Any]] = {}
    for case in peak.cases:
        ceiling = case.label.get("ceiling")
        if not case.ok or not ceiling:
            continue
        kind, _, what = ceiling.partition(":")
        device_id = case.name.device
        entry = best.setdefault(device_id, {"memory": {}, "compute": {}})
        if kind == "memory" and what:
            value = case.bytes_per_second
            slot = entry["memory"]
        elif kind == "compute" and what:
            value = case.flops_per_second
            slot = entry["compute"]
        else:
            raise AnalysisError(f"{peak.path}: {case.name}: label ceiling={ceiling!r} is not "
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
        key = device.key or _slug(f"{device.kind}-{device.name}")
        if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", key):
            raise AnalysisError(f"{peak.path}: device {device_id}: key {key!r} cannot name a file")
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


def write_ceilings(run_dir: Path | str, out_dir: Path | str) -> list[Path]:
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    if not run_dir.is_dir():
        raise AnalysisError(f"{run_dir}: not a directory")
    path = run_dir / PEAK_FILE
    if not path.is_file():
        raise AnalysisError(f"{run_dir}: no {PEAK_FILE} (run the bench_peak binary into it first)")
    peak = load_file(path)
    source = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path.resolve())
    documents = compute_ceilings(peak, source)
    if not documents:
        raise AnalysisError(f"{path}: no ceiling case ran (no case labelled ceiling=... that was "
                            "neither skipped nor failed)")
    written = []
    for doc in documents.values():
        written.append(write_text_atomic(out_dir / f"{doc['device_key']}.json",
                                         json.dumps(doc, indent=2) + "\n"))
    return written
