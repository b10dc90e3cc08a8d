"""Loads flopscope's Google Benchmark JSON files (one per bench binary) into cases and devices.

The input format is described in analysis/FORMAT.md. Every figure shown later comes from these
files as they are: nothing here re-derives a counter that the JSON carries. What this module
chooses is which entry of a case stands for it (the median aggregate, else the single
iteration), where its variation comes from (the cv aggregate of real_time), and whether it was
skipped or failed (error_message "skipped: ..." or anything else). Every repetition that ran is
kept as a Sample, so that runs can be compared with statistics (compare.py).

A source is a run directory, one Google Benchmark JSON file, or a bundle (bundle.py: one JSON
file holding a run's files, as baselines and history entries are); load_source() reads any of
them into a Run.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from . import runstatus
from .errors import AnalysisError
from .names import CaseName, CaseNameError, parse_case_name, strip_gbench_suffixes

NOISY_CV = 0.05  # a case whose cv of real_time exceeds 5% is marked noisy, not to be trusted
SKIP_PREFIX = "skipped: "
FAIL_PREFIX = "failed: "
CONTEXT_SCHEMA = 2  # the newest; schema 1 (no suite, variants or planned cases) is read too
CONTEXT_SCHEMAS = (1, 2)

_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
# Fields that Google Benchmark itself writes into an entry; every other numeric field is a counter.
_GBENCH_FIELDS = {
    "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
    "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit", "label",
    "error_occurred", "error_message", "aggregate_name", "aggregate_unit", "big_o", "rms",
    "cpu_coefficient", "real_coefficient", "complexity_n",
}
_AGGREGATES = ("mean", "median", "stddev", "cv")


def number(value: Any) -> Optional[float]:
    """value as a float if it is a JSON number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def finite(value: Any) -> Optional[float]:
    """value as a float if it is a finite JSON number, else None."""
    x = number(value)
    return x if x is not None and math.isfinite(x) else None


def parse_label(text: str) -> dict[str, str]:
    """'bound=memory compute=f32' -> {'bound': 'memory', 'compute': 'f32'}; words without '='
    are kept with an empty value."""
    label: dict[str, str] = {}
    for word in text.split():
        key, _, value = word.partition("=")
        label[key] = value
    return label


@dataclass
class Device:
    """One device of a run's context (context.flopscope.devices[<id>]), read tolerantly: every
    field but the id may be missing or null."""

    id: str
    info: dict[str, Any]

    def _get(self, *path: str) -> Any:
        node: Any = self.info
        for key in path:
            if not isinstance(node, dict):
                return None
            node = node.get(key)
        return node

    @property
    def name(self) -> str:
        return str(self._get("name") or self.id)

    @property
    def key(self) -> Optional[str]:
        key = self._get("key")
        return str(key) if key else None

    @property
    def kind(self) -> str:
        return str(self._get("kind") or ("cpu" if self.id == "cpu" else "cuda"))

    @property
    def file_key(self) -> str:
        """The key that names this device's files (ceilings, baselines, history): the context's
        key, else one made of its kind and name ("cpu-amd-epyc"). AnalysisError when the
        context's key cannot name a file."""
        key = self.key or (re.sub(r"[^a-z0-9]+", "-", f"{self.kind}-{self.name}".lower()).strip("-")
                           or "device")
        if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", key):
            raise AnalysisError(f"device {self.id}: key {key!r} cannot name a file")
        return key

    @property
    def clock_hz(self) -> Optional[float]:
        return finite(self._get("clock_hz"))

    @property
    def clock_source(self) -> Optional[str]:
        return self._get("clock_source")

    @property
    def caches(self) -> dict[str, float]:
        """Cache sizes in bytes by level name (l1d, l2, l3); a GPU's l2_bytes appears as l2."""
        caches: dict[str, float] = {}
        raw = self._get("caches")
        if isinstance(raw, dict):
            for level, size in raw.items():
                if finite(size):
                    caches[str(level)] = finite(size)
        if "l2" not in caches and finite(self._get("l2_bytes")):
            caches["l2"] = finite(self._get("l2_bytes"))
        return caches

    @property
    def compute_peaks(self) -> dict[str, dict[str, Any]]:
        """mode -> {"flops_per_second", "formula", "source"} for each mode with a numeric peak."""
        peaks: dict[str, dict[str, Any]] = {}
        raw = self._get("peaks", "compute")
        if isinstance(raw, dict):
            for mode, entry in raw.items():
                if isinstance(entry, dict) and finite(entry.get("flops_per_second")):
                    peaks[str(mode)] = {
                        "flops_per_second": finite(entry["flops_per_second"]),
                        "formula": entry.get("formula"),
                        "source": entry.get("source"),
                    }
                elif finite(entry):
                    peaks[str(mode)] = {"flops_per_second": finite(entry), "formula": None,
                                        "source": None}
        return peaks

    @property
    def memory_peak(self) -> Optional[float]:
        return finite(self._get("peaks", "memory_bytes_per_second"))

    @property
    def memory_source(self) -> Optional[str]:
        return self._get("peaks", "memory_source")

    @property
    def ceilings_file(self) -> Optional[str]:
        return self._get("ceilings", "file")

    @property
    def memory_ceilings(self) -> dict[str, float]:
        """'copy'/'triad' -> measured bytes/s, where the ceilings file has them."""
        raw = self._get("ceilings", "memory_bytes_per_second")
        if not isinstance(raw, dict):
            return {}
        return {str(k): finite(v) for k, v in raw.items() if finite(v)}

    @property
    def compute_ceilings(self) -> dict[str, float]:
        raw = self._get("ceilings", "compute")
        if not isinstance(raw, dict):
            return {}
        return {str(k): finite(v) for k, v in raw.items() if finite(v)}


@dataclass(frozen=True)
class DriftProbe:
    """A baseline copy that a binary timed at its start or end (FORMAT.md, drift): its median
    rate and the 95% CI of that rate, bytes/s."""

    probe: str
    rate: float
    ci_low: float
    ci_high: float
    repetitions: int


def _drift_probe(text: Any) -> Optional[DriftProbe]:
    """context.flopscope_drift_start or _end (a JSON-encoded string); None where missing or not
    as written by the harness."""
    if not isinstance(text, str):
        return None
    try:
        raw = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(raw, dict):
        return None
    values = [finite(raw.get(k)) for k in ("bytes_per_second", "ci_low", "ci_high")]
    if any(v is None or v <= 0 for v in values):
        return None
    return DriftProbe(str(raw.get("probe") or "copy"), *values, int(finite(raw.get("repetitions")) or 0))


@dataclass
class Context:
    """context.flopscope of one file, decoded, plus Google Benchmark's own context fields."""

    binary: str
    build: dict[str, Any]
    run: dict[str, Any]
    devices: dict[str, Device]
    skipped_devices: dict[str, str]
    gbench: dict[str, Any]
    schema: int = 1
    suite: Optional[str] = None
    # schema 2: the binary's variants and planned cases as --describe writes them (FORMAT.md);
    # empty for schema 1
    variants: list[dict[str, Any]] = field(default_factory=list)
    planned: list[dict[str, Any]] = field(default_factory=list)

    @property
    def drift(self) -> Optional[tuple[DriftProbe, DriftProbe]]:
        """The baseline copy at the binary's start and end, where it wrote both."""
        start = _drift_probe(self.gbench.get("flopscope_drift_start"))
        end = _drift_probe(self.gbench.get("flopscope_drift_end"))
        return (start, end) if start and end else None

    @property
    def unknown(self) -> list[str]:
        """What a file of an older binary cannot say (schema 1: no roles, no planned cases)."""
        if self.schema >= 2:
            return []
        return [f"{self.binary}: roles, typed ceilings and planned cases unknown: written by an older binary "
                "(context schema 1)"]


@dataclass(frozen=True)
class Sample:
    """One repetition of a case as Google Benchmark wrote it (an "iteration" entry that ran):
    its times in seconds and its counters (flops, bytes, bytes_per_second, ...)."""

    real_time_s: float
    cpu_time_s: Optional[float]
    counters: dict[str, float]
    # Its repetition_index: under the stopping rule, the round it ran in (a block's cases take
    # their k-th repetitions in turn, seconds apart); None where the file has none.
    index: Optional[int] = None


@dataclass
class Case:
    """One benchmark case (one run_name) of one file, represented by one entry; `samples` keeps
    every repetition that ran, in the order of the file."""

    name: CaseName
    run_name: str
    file: Path
    binary: str
    status: str  # "ok", "skipped" or "failed"
    reason: Optional[str] = None  # for skipped/failed: the message without its prefix
    statistic: Optional[str] = None  # "median" (aggregate) or "single" (one iteration entry)
    repetitions: int = 0  # iteration entries seen (or the "repetitions" field)
    real_time_s: Optional[float] = None
    cpu_time_s: Optional[float] = None
    cv: Optional[float] = None  # cv aggregate of real_time, a fraction (0.02 = 2%)
    # The harness's 95% CI of the median time (the median aggregate's ci_low, ci_high, in
    # seconds), its coverage and whether it is within +-3% (resolved); None where not written.
    ci_s: Optional[tuple[float, float]] = None
    ci_coverage: Optional[float] = None
    resolved: Optional[bool] = None
    counters: dict[str, float] = field(default_factory=dict)
    label: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    # From the context's planned cases (schema 2); None where the file is schema 1.
    role: Optional[str] = None  # "own", "vendor", "reference", "baseline"
    group: Optional[str] = None  # the bench it came from ("conversions")
    # The baseline it is set against, by name ("strided/copy/f32/cpu/n=16777216"), and the block
    # of the stopping rule's rounds it ran in (cases of one block take their k-th repetitions in
    # turn, seconds apart): None where not written (files before them, fixed repetitions).
    beside: Optional[str] = None
    block: Optional[int] = None
    planned_ceiling: Optional[tuple[str, str]] = None
    planned_measures: Optional[tuple[str, str]] = None

    @property
    def ceiling_ref(self) -> Optional[tuple[str, str]]:
        """(kind, name) of the ceiling the case is set against: ("memory", "best"),
        ("compute", "f32"); None for a ceiling case or where not known. Schema 1: from the
        label's bound= and compute=."""
        if self.planned_ceiling is not None or self.role is not None:
            return self.planned_ceiling
        if self.measures is not None:
            return None
        if self.label.get("bound") == "memory":
            return ("memory", "best")
        mode = self.label.get("compute")
        return ("compute", mode) if self.label.get("bound") == "compute" and mode else None

    @property
    def measures(self) -> Optional[tuple[str, str]]:
        """(kind, name) of the ceiling a bench_peak case measures; schema 1: its label's
        ceiling=kind:name."""
        if self.planned_measures is not None:
            return self.planned_measures
        kind, _, name = self.label.get("ceiling", "").partition(":")
        return (kind, name) if kind and name else None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def noisy(self) -> bool:
        return self.cv is not None and self.cv > NOISY_CV

    def counter(self, key: str) -> Optional[float]:
        """A counter as written (None when absent, nan/inf kept)."""
        return self.counters.get(key)

    @property
    def flops(self) -> Optional[float]:
        return finite(self.counters.get("flops"))

    @property
    def bytes(self) -> Optional[float]:
        return finite(self.counters.get("bytes"))

    @property
    def flops_per_second(self) -> Optional[float]:
        return finite(self.counters.get("flops_per_second"))

    @property
    def bytes_per_second(self) -> Optional[float]:
        return finite(self.counters.get("bytes_per_second"))

    @property
    def rate_counter(self) -> str:
        """The counter of the case's bound: bytes_per_second for memory, flops_per_second for compute."""
        return "bytes_per_second" if self.bound == "memory" else "flops_per_second"

    @property
    def rate(self) -> Optional[float]:
        """The rate of the case's bound (rate_counter)."""
        return finite(self.counters.get(self.rate_counter))

    @property
    def rate_unit(self) -> str:
        return "B/s" if self.bound == "memory" else "FLOP/s"

    @property
    def intensity(self) -> Optional[float]:
        """The intensity counter (FLOP/byte) as written (the harness writes 0 when bytes is 0)."""
        return number(self.counters.get("intensity"))

    @property
    def moves_no_bytes(self) -> bool:
        """A case with FLOPs and no bytes (an FMA chain in registers): its intensity is really
        infinite, whatever the intensity counter says."""
        return bool(self.flops) and self.bytes == 0

    @property
    def bound(self) -> str:
        """The label's bound=, else 'memory' for a case without FLOPs, else 'compute'."""
        bound = self.label.get("bound")
        if bound:
            return bound
        return "memory" if not self.flops else "compute"

    @property
    def compute_mode(self) -> Optional[str]:
        return self.label.get("compute") or None

    @property
    def pct_peak(self) -> Optional[float]:
        """Percent of the theoretical peak for the case's bound (pct_peak_bw or pct_peak_flops)."""
        key = "pct_peak_bw" if self.bound == "memory" else "pct_peak_flops"
        return finite(self.counters.get(key))

    @property
    def pct_ceiling(self) -> Optional[float]:
        key = "pct_ceiling_bw" if self.bound == "memory" else "pct_ceiling_flops"
        return finite(self.counters.get(key))


@dataclass
class BenchFile:
    path: Path
    context: Context
    cases: list[Case]
    document: dict[str, Any] = field(repr=False, default_factory=dict)  # as read: bundles embed it
    # Why the file is not all its binary meant to write: "partial" (a <binary>.json.partial of a
    # binary that stopped early), "truncated" (JSON that ends mid-way: what parses is read); None
    # for a whole file.
    damage: Optional[str] = None


@dataclass
class Run:
    source: Path  # the run directory, JSON file or bundle it was read from
    files: list[BenchFile]
    devices: dict[str, Device]  # merged over the files; first non-null value of each field wins
    skipped_devices: dict[str, str]
    name: str  # the run id: the directory's name, the file's, or the one a bundle kept
    status: Optional[runstatus.RunStatus] = None  # from status.json; None when there is none

    @property
    def id(self) -> str:
        return self.name

    @property
    def incomplete(self) -> bool:
        """True when status.json says the run did not finish (no status.json: not known, False)."""
        return self.status is not None and not self.status.complete

    @property
    def cases(self) -> list[Case]:
        return [case for f in self.files for case in f.cases]

    @property
    def planned(self) -> dict[str, list[str]]:
        """binary -> the case names its context planned to run, in order (schema 2 files only):
        a case planned but absent from the results did not finish."""
        return {f.context.binary: [c["name"] for c in f.context.planned] for f in self.files if f.context.schema >= 2}

    @property
    def missing(self) -> dict[str, list[str]]:
        """binary -> the planned cases that its file does not hold (a binary killed, a file cut
        short), in planned order; only binaries that miss some (schema 2 files only)."""
        out = {}
        for f in self.files:
            have = {strip_gbench_suffixes(c.run_name) for c in f.cases}
            lost = [c["name"] for c in f.context.planned if c["name"] not in have]
            if lost:
                out[f.context.binary] = lost
        return out

    @property
    def unknown(self) -> list[str]:
        """What files of older binaries cannot say (FORMAT.md, context schema), in one line;
        empty where every file can."""
        old = [f.context.binary for f in self.files if f.context.unknown]
        if not old:
            return []
        return [f"roles, typed ceilings and planned cases unknown for {', '.join(old)}: written by an "
                "older binary (context schema 1); roles are read from variant names"]

    def file(self, binary: str) -> Optional[BenchFile]:
        for f in self.files:
            if f.path.stem == binary or f.context.binary == binary:
                return f
        return None

    @property
    def machine_key(self) -> str:
        """The devices' keys, CPU first, joined by '+' ("cpu-amd-epyc+cuda-nvidia-h200"): what
        names a machine's baseline and history. Two runs with the same key ran on the same kind
        of machine."""
        ids = sorted(self.devices, key=device_order)
        return "+".join(self.devices[i].file_key for i in ids) or "unknown"

    def _first_context_value(self, read) -> Optional[str]:
        values = [read(f.context) for f in self.files]
        return next((str(v) for v in values if v), None)

    @property
    def date(self) -> Optional[str]:
        """When Google Benchmark ran the first binary (context.date)."""
        return self._first_context_value(lambda c: c.gbench.get("date"))

    @property
    def git_commit(self) -> Optional[str]:
        return self._first_context_value(lambda c: c.build.get("git_commit"))


def device_order(device_id: str) -> tuple:
    """Sort key of device ids: cpu first, then cuda:0, cuda:1, ... in number order."""
    number = device_id.partition(":")[2]
    return (device_id != "cpu", int(number) if number.isdigit() else 0, device_id)


# ---------------------------------------------------------------------------------------------
# Loading


def parse_json(where: str, text: str) -> Any:
    """json.loads with the loader's one-line errors (also for JSON nested too deeply to parse)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise AnalysisError(f"{where}: not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except RecursionError:
        raise AnalysisError(f"{where}: not JSON that can be read: nested too deeply") from None


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise AnalysisError(f"{path}: not JSON (not UTF-8 text)") from None
    except OSError as e:
        raise AnalysisError(f"{path}: cannot read: {e.strerror or e}") from None


def read_json(path: Path) -> Any:
    """A JSON file, decoded; AnalysisError (one line) when it cannot be read or is not JSON."""
    return parse_json(str(path), read_text(path))


def salvage_truncated(text: str) -> Optional[dict[str, Any]]:
    """What parses of Google Benchmark JSON that ends mid-way (a file cut short: a full disk, a
    copy interrupted): its context and every whole entry before the cut (or before whatever
    breaks it); None where the text is whole or its context does not parse."""
    decoder = json.JSONDecoder()
    try:
        json.loads(text)
        return None  # whole: not truncated
    except (json.JSONDecodeError, RecursionError):
        pass
    found = re.match(r'\s*\{\s*"context"\s*:\s*', text)
    if not found:
        return None
    try:
        context, at = decoder.raw_decode(text, found.end())
    except (json.JSONDecodeError, RecursionError):
        return None
    head = re.compile(r'\s*,\s*"benchmarks"\s*:\s*\[').match(text, at)
    entries: list[Any] = []
    if head:
        at = head.end()
        separator = re.compile(r"\s*,?\s*")
        while True:
            at = separator.match(text, at).end()
            try:
                entry, at = decoder.raw_decode(text, at)
            except (json.JSONDecodeError, RecursionError):
                break
            entries.append(entry)
    if not isinstance(context, dict):
        return None
    # The last case may have lost its aggregates at the cut: its repetitions stand for it
    # (FORMAT.md: several repetitions and no aggregates).
    return {"context": context, "benchmarks": entries}


def _decode_context(path: Path, context: dict[str, Any]) -> Context:
    if "flopscope" not in context:
        raise AnalysisError(
            f"{path}: no flopscope context (context.flopscope is missing): "
            "not written by a flopscope bench binary")
    raw = context["flopscope"]
    if isinstance(raw, str):
        raw = parse_json(f"{path}: context.flopscope is not a JSON-encoded string", raw)
    if not isinstance(raw, dict):
        raise AnalysisError(f"{path}: context.flopscope is not a JSON object")
    schema = raw.get("schema")
    if schema not in CONTEXT_SCHEMAS:
        raise AnalysisError(
            f"{path}: context.flopscope schema is {schema!r}, this analysis reads schemas 1 and {CONTEXT_SCHEMA}")

    def obj(key: str) -> dict[str, Any]:
        value = raw.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise AnalysisError(f"{path}: context.flopscope.{key} is not a JSON object")
        return value

    devices = {}
    for device_id, info in obj("devices").items():
        if not isinstance(info, dict):
            raise AnalysisError(f"{path}: context.flopscope.devices[{device_id!r}] is not a JSON object")
        devices[str(device_id)] = Device(str(device_id), info)
    skipped = {str(k): str(v) for k, v in obj("skipped_devices").items()}
    gbench = {k: v for k, v in context.items() if k != "flopscope"}

    def rows(key: str) -> list[dict[str, Any]]:
        value = raw.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(r, dict) and isinstance(r.get("name"), str)
                                                  for r in value):
            raise AnalysisError(f"{path}: context.flopscope.{key} is not a list of objects with a name")
        return value

    suite = raw.get("suite")
    return Context(binary=str(raw.get("binary") or path.stem), build=obj("build"), run=obj("run"),
                   devices=devices, skipped_devices=skipped, gbench=gbench, schema=int(schema),
                   suite=suite if isinstance(suite, str) else None, variants=rows("variants"),
                   planned=rows("cases") if schema >= 2 else [])


def _ref(value: Any) -> Optional[tuple[str, str]]:
    if isinstance(value, dict) and isinstance(value.get("kind"), str) and isinstance(value.get("name"), str):
        return (value["kind"], value["name"])
    return None


def _entry_run_name(path: Path, index: int, entry: Any) -> str:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise AnalysisError(f"{path}: not Google Benchmark JSON (benchmarks[{index}] has no name)")
    run_name = entry.get("run_name")
    if isinstance(run_name, str):
        return run_name
    name = entry["name"]  # Google Benchmark before 1.5 had no run_name
    aggregate = entry.get("aggregate_name")
    if entry.get("run_type") == "aggregate" and isinstance(aggregate, str) and name.endswith("_" + aggregate):
        return name[: -len(aggregate) - 1]
    return name


def _time_s(path: Path, entry: dict[str, Any], key: str) -> Optional[float]:
    value = number(entry.get(key))
    unit = entry.get("time_unit", "ns")
    if value is None:
        return None
    if not isinstance(unit, str) or unit not in _TIME_UNITS:
        raise AnalysisError(f"{path}: {entry['name']}: unknown time_unit {unit!r}")
    return value * _TIME_UNITS[unit]


def _counters(entry: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in entry.items()
            if k not in _GBENCH_FIELDS and number(v) is not None}


def _sample(path: Path, entry: dict[str, Any]) -> Sample:
    real_time = _time_s(path, entry, "real_time")
    if real_time is None:
        raise AnalysisError(f"{path}: {entry['name']}: a repetition without a numeric real_time")
    index = entry.get("repetition_index")
    return Sample(real_time, _time_s(path, entry, "cpu_time"), _counters(entry),
                  index if isinstance(index, int) and not isinstance(index, bool) and index >= 0 else None)


def _error_message(entry: dict[str, Any]) -> str:
    message = entry.get("error_message")
    return message if isinstance(message, str) else ""


def _build_case(path: Path, binary: str, run_name: str, entries: list[dict[str, Any]]) -> Case:
    try:
        name = parse_case_name(strip_gbench_suffixes(run_name))
    except CaseNameError as e:
        raise AnalysisError(f"{path}: {e}") from None

    iterations = [e for e in entries if e.get("run_type", "iteration") != "aggregate"]
    aggregates: dict[str, dict[str, Any]] = {}
    for e in entries:
        if e.get("run_type") == "aggregate" and e.get("aggregate_name") in _AGGREGATES:
            aggregates.setdefault(e["aggregate_name"], e)  # first one wins if written twice

    case = Case(name=name, run_name=run_name, file=path, binary=binary, status="ok")
    errors = [e for e in iterations if e.get("error_occurred")]
    good = [e for e in iterations if not e.get("error_occurred")]
    case.repetitions = len(iterations)
    messages = [_error_message(e) for e in errors]
    failures = [m for m in messages if not m.startswith(SKIP_PREFIX)]
    if failures:
        # A repetition that failed validation makes the whole case a failure: never report it.
        case.status = "failed"
        message = failures[0]
        case.reason = message[len(FAIL_PREFIX):] if message.startswith(FAIL_PREFIX) else message
        case.reason = case.reason or "(no error message)"
        return case
    if errors and not good:
        case.status = "skipped"
        case.reason = messages[0][len(SKIP_PREFIX):]
        return case
    if errors:
        case.notes.append(f"{len(errors)} of {len(iterations)} repetitions skipped: "
                          f"{messages[0][len(SKIP_PREFIX):]}")
    case.samples = [_sample(path, e) for e in good]

    if "median" in aggregates:
        chosen, case.statistic = aggregates["median"], "median"
        reps = number(chosen.get("repetitions"))
        if reps and not iterations:  # --benchmark_report_aggregates_only
            case.repetitions = int(reps)
    elif good:
        if len(good) > 1:
            # Several repetitions but no aggregates: stand for the case by the repetition of
            # median real_time (an entry as written, not a computed figure).
            by_time = sorted(good, key=lambda e: number(e.get("real_time")) or 0.0)
            case.notes.append(f"{len(good)} repetitions without a median aggregate: "
                              "the repetition of median real_time is shown")
            chosen, case.statistic = by_time[(len(by_time) - 1) // 2], "median repetition"
        else:
            chosen, case.statistic = good[0], "single"
    else:
        raise AnalysisError(f"{path}: {run_name}: no iteration entry and no median aggregate")

    case.real_time_s = _time_s(path, chosen, "real_time")
    case.cpu_time_s = _time_s(path, chosen, "cpu_time")
    case.counters = _counters(chosen)
    label = chosen.get("label")
    case.label = parse_label(label) if isinstance(label, str) else {}
    if "cv" in aggregates:
        case.cv = finite(aggregates["cv"].get("real_time"))
    low, high = _time_s(path, chosen, "ci_low"), _time_s(path, chosen, "ci_high")
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        case.ci_s = (low, high)
        case.ci_coverage = finite(chosen.get("ci_coverage"))
        resolved = finite(chosen.get("resolved"))
        case.resolved = None if resolved is None else bool(resolved)
    return case


def bench_file(path: Path, document: Any) -> BenchFile:
    """A decoded Google Benchmark JSON document written by a flopscope bench binary; `path` is
    where it came from (for messages, and the report's file names)."""
    if not isinstance(document, dict) or not isinstance(document.get("benchmarks"), list):
        raise AnalysisError(f"{path}: not Google Benchmark JSON (no 'benchmarks' list)")
    if not isinstance(document.get("context"), dict):
        raise AnalysisError(f"{path}: not Google Benchmark JSON (no 'context' object)")
    context = _decode_context(path, document["context"])

    grouped: dict[str, list[dict[str, Any]]] = {}
    for index, entry in enumerate(document["benchmarks"]):
        grouped.setdefault(_entry_run_name(path, index, entry), []).append(entry)
    cases = [_build_case(path, context.binary, run_name, entries)
             for run_name, entries in grouped.items()]
    planned = {c["name"]: c for c in context.planned}
    for case in cases:
        if row := planned.get(re.sub(r"/(real_time|manual_time)$", "", case.run_name)):
            case.role = row.get("role") if isinstance(row.get("role"), str) else None
            case.group = row.get("group") if isinstance(row.get("group"), str) else None
            case.beside = row.get("beside") if isinstance(row.get("beside"), str) else None
            block = row.get("block")
            case.block = block if isinstance(block, int) and not isinstance(block, bool) else None
            case.planned_ceiling, case.planned_measures = _ref(row.get("ceiling")), _ref(row.get("measures"))
    return BenchFile(path=path, context=context, cases=cases, document=document)


def load_file(path: Path | str, damage: Optional[str] = None) -> BenchFile:
    """Loads one Google Benchmark JSON file written by a flopscope bench binary; a file cut short
    is read as far as it parses (damage "truncated")."""
    path = Path(path)
    text = read_text(path)
    salvaged = salvage_truncated(text)
    if salvaged is not None:
        loaded = bench_file(path, salvaged)
        loaded.damage = "truncated"
        return loaded
    loaded = bench_file(path, parse_json(str(path), text))
    loaded.damage = damage
    return loaded


def _merge_device(into: dict[str, Any], other: dict[str, Any]) -> None:
    for key, value in other.items():
        if into.get(key) is None and value is not None:
            into[key] = value


def make_run(source: Path, name: str, files: list[BenchFile],
             status: Optional[runstatus.RunStatus] = None) -> Run:
    """A Run of loaded files: at least one must hold benchmarks; devices are merged over the
    files (the first non-null value of each field wins)."""
    if not any(f.cases for f in files):
        names = ", ".join(f.path.name for f in files)
        raise AnalysisError(f"{source}: no results (no benchmarks in {names})")
    merged: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for f in files:
        for device_id, device in f.context.devices.items():
            _merge_device(merged.setdefault(device_id, {}), device.info)
        for device_id, reason in f.context.skipped_devices.items():
            skipped.setdefault(device_id, reason)
    devices = {device_id: Device(device_id, info) for device_id, info in merged.items()}
    return Run(source=source, files=files, devices=devices, skipped_devices=skipped, name=name,
               status=status)


PARTIAL_SUFFIX = ".partial"


def _run_paths(run_dir: Path) -> list[tuple[Path, Optional[str]]]:
    """The files of a run directory: every *.json but status.json, and for a binary without one
    its <binary>.json.partial (run_suite.py keeps a binary that stopped early so), else the
    hidden .<binary>.json.partial that a killed runner leaves."""
    whole = sorted(p for p in run_dir.glob("*.json")
                   if p.is_file() and not p.name.startswith(".") and p.name != runstatus.FILE)
    names = {p.name for p in whole}
    partial: dict[str, Path] = {}
    for p in sorted(run_dir.glob("*.json" + PARTIAL_SUFFIX), key=lambda p: p.name.startswith(".")):
        name = p.name[: -len(PARTIAL_SUFFIX)].lstrip(".")
        if p.is_file() and name not in names:
            partial.setdefault(name, p)
    paths = [(p, None) for p in whole] + [(p, "partial") for p in partial.values()]
    return sorted(paths, key=lambda pd: pd[0].name.lstrip("."))


def load_run(run_dir: Path | str) -> Run:
    """Loads every *.json file directly inside a run directory but status.json (and the partial
    file of a binary that stopped early); each must be Google Benchmark JSON from a flopscope
    bench binary, and at least one must hold benchmarks."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise AnalysisError(f"{run_dir}: not a directory")
    paths = _run_paths(run_dir)
    if not paths:
        raise AnalysisError(f"{run_dir}: no results (no *.json files)")
    status = runstatus.read(run_dir, read_json)
    return make_run(run_dir, run_dir.resolve().name, [load_file(p, damage) for p, damage in paths], status)


BUNDLE_KEY = "flopscope_bundle"  # marks a bundle (bundle.py): {"flopscope_bundle": 1, ...}
BUNDLE_SCHEMA = 1


def run_from_bundle(path: Path, document: dict[str, Any]) -> Run:
    """The Run that a bundle (a baseline or history entry, bundle.py) holds."""
    if document.get(BUNDLE_KEY) != BUNDLE_SCHEMA:
        raise AnalysisError(f"{path}: bundle schema is {document.get(BUNDLE_KEY)!r}, this "
                            f"analysis reads schema {BUNDLE_SCHEMA}")
    files = document.get("files")
    if not isinstance(files, dict) or not files:
        raise AnalysisError(f"{path}: a bundle without files (\"files\": {{name: document}})")
    loaded = [bench_file(path / str(name), data) for name, data in files.items()]
    status = document.get("status")
    status = None if status is None else runstatus.from_document(f"{path}: status", status)
    return make_run(path, str(document.get("run_id") or path.stem), loaded, status)


def load_source(path: Path | str) -> Run:
    """A run directory, a bundle, or one Google Benchmark JSON file, as a Run."""
    path = Path(path)
    if path.is_dir():
        return load_run(path)
    if not path.exists():
        raise AnalysisError(f"{path}: no such file or directory")
    document = read_json(path)
    if isinstance(document, dict) and BUNDLE_KEY in document:
        return run_from_bundle(path, document)
    return make_run(path, path.name, [bench_file(path, document)])
