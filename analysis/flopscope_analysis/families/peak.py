"""The peak family (bench_peak): besides the generic table, a section with the ceilings that
this run's bench_peak measured (what it writes with --write-ceilings) beside the ceilings that
the run's binaries read at start-up. A quick run keeps an existing ceilings file, so the two
can differ; the % ceiling columns of the results are against the second."""

from __future__ import annotations

from typing import Optional

from .. import fmt, tables
from ..ceilings import compute_ceilings
from ..load import Run, device_order
from .base import Family

CEILINGS_NOTE = (
    "The best median of this run's cases per `ceiling=` label (what bench_peak writes into "
    "`results/ceilings/<device key>.json` with `--write-ceilings`), beside the ceilings that the "
    "run's binaries read when they started (`% ceiling` in the tables is against those). A quick "
    "run keeps an existing ceilings file (`--keep-ceilings`), so the two can differ.")


def _ratio(measured: Optional[float], used: Optional[float]) -> str:
    return fmt.percent(100 * measured / used) if measured and used else fmt.MISSING


def ceilings_section(run: Run) -> list[str]:
    rows = []
    for bench in run.files:
        if not any(c.ok and c.label.get("ceiling") for c in bench.cases):
            continue
        for device_id, doc in sorted(compute_ceilings(bench, bench.path.name).items(),
                                     key=lambda kv: device_order(kv[0])):
            device = run.devices.get(device_id)
            used_memory = device.memory_ceilings if device else {}
            used_compute = device.compute_ceilings if device else {}
            for kind, value in doc["memory_bytes_per_second"].items():
                rows.append([device_id, f"memory {kind}", fmt.rate(value, "B/s"),
                             fmt.rate(used_memory.get(kind), "B/s"), _ratio(value, used_memory.get(kind))])
            for mode, value in doc["compute"].items():
                rows.append([device_id, f"compute {mode}", fmt.rate(value, "FLOP/s"),
                             fmt.rate(used_compute.get(mode), "FLOP/s"), _ratio(value, used_compute.get(mode))])
    if not rows:
        return []
    lines = ["## Ceilings measured in this run", "", CEILINGS_NOTE, ""]
    lines += tables.markdown(["device", "ceiling", "this run", "used by the run", "this run / used"], rows)
    return lines + [""]


FAMILY = Family("peak", sections=ceilings_section)
