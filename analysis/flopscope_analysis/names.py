"""Benchmark case names, the grammar of DESIGN.md (built and parsed the same way in bench/harness/):

    <family>/<variant>/<dtype>/<device>/<shape>[/<extra>=<value>...]

    family, variant   [a-z0-9_]+
    dtype             [a-z0-9_]+ , optionally "->" and another (a conversion: f32->bf16)
    device            cpu | cuda:N
    shape             key=value[,key=value...]   key [a-z_][a-z0-9_]*, value an integer
    extra             key=value                   key as above, value [A-Za-z0-9_.:-]+

Google Benchmark appends its own suffixes to a run's name (/manual_time, /iterations:N, ...);
strip_gbench_suffixes() removes them before parsing.

parse_case_name() accepts exactly what parse_case_name() in bench/harness/naming.cpp accepts
(integers as std::from_chars reads them, repeated keys allowed), except the device alias "cuda",
which the C++ device parser takes on the command line but which no case name contains. A name
the harness writes (CaseName::str()) parses back to itself: format() is the same function.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import AnalysisError

_TOKEN = re.compile(r"[a-z0-9_]+\Z")
_DTYPE = re.compile(r"[a-z0-9_]+(->[a-z0-9_]+)?\Z")
_DEVICE = re.compile(r"(cpu|cuda:(0|[1-9][0-9]*))\Z")
_KEY = re.compile(r"[a-z_][a-z0-9_]*\Z")
_INT = re.compile(r"-?[0-9]+\Z")  # what std::from_chars takes, as in bench/harness/naming.cpp
_EXTRA_VALUE = re.compile(r"[A-Za-z0-9_.:-]+\Z")

# Suffixes that Google Benchmark (1.7.x) appends to a run's name, in BenchmarkName::str() order:
# /min_time:X /min_warmup_time:X /iterations:N /repeats:N /manual_time|/real_time|/process_time
# /threads:N. None of them contains '=', so none can be confused with a flopscope extra.
_GBENCH_SUFFIX = re.compile(
    r"/(?:manual_time|real_time|process_time|iterations:[0-9]+|repeats:[0-9]+|threads:[0-9]+"
    r"|min_time:[0-9.eE+-]+s?|min_warmup_time:[0-9.eE+-]+s?)\Z"
)


class CaseNameError(AnalysisError):
    pass


@dataclass(frozen=True)
class CaseName:
    family: str
    variant: str
    dtype: str
    device: str
    shape: tuple[tuple[str, int], ...]
    extras: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        return self.format()

    def format(self) -> str:
        text = "/".join(
            [self.family, self.variant, self.dtype, self.device,
             ",".join(f"{k}={v}" for k, v in self.shape)]
        )
        return text + "".join(f"/{k}={v}" for k, v in self.extras)

    @property
    def source_dtype(self) -> str:
        return self.dtype.split("->")[0]

    @property
    def target_dtype(self) -> str:
        return self.dtype.split("->")[-1]

    def shape_text(self) -> str:
        """The shape and extras, as they appear in the name: 'n=1024' or 'n=1024/threads=2'."""
        return "/".join([self.dims_text()] + [f"{k}={v}" for k, v in self.extras])

    def dims_text(self) -> str:
        """The shape alone, as it appears in the name: 'm=1024,n=1024'."""
        return ",".join(f"{k}={v}" for k, v in self.shape)

    def shape_dict(self) -> dict[str, int]:
        return dict(self.shape)

    def sort_key(self):
        return (self.family, self.device, self.variant, self.dtype,
                tuple(v for _, v in self.shape), self.extras)


def strip_gbench_suffixes(run_name: str) -> str:
    """Removes Google Benchmark's own suffixes (/manual_time, /iterations:N, /repeats:N, ...)."""
    while True:
        stripped = _GBENCH_SUFFIX.sub("", run_name)
        if stripped == run_name:
            return run_name
        run_name = stripped


def parse_case_name(name: str) -> CaseName:
    """Parses a flopscope case name (without Google Benchmark's suffixes); raises CaseNameError."""

    def bad(why: str) -> CaseNameError:
        return CaseNameError(
            f"case name {name!r} is outside the grammar "
            f"<family>/<variant>/<dtype>/<device>/<shape>[/<extra>=<value>...]: {why}")

    if not isinstance(name, str):
        raise CaseNameError(f"case name {name!r} is not a string")
    parts = name.split("/")
    if len(parts) < 5:
        raise bad(f"{len(parts)} '/'-separated fields, need at least 5")
    family, variant, dtype, device, shape_text, *extra_texts = parts
    if not _TOKEN.match(family):
        raise bad(f"family {family!r} is not [a-z0-9_]+")
    if not _TOKEN.match(variant):
        raise bad(f"variant {variant!r} is not [a-z0-9_]+")
    if not _DTYPE.match(dtype):
        raise bad(f"dtype {dtype!r} is not [a-z0-9_]+ or <dtype>-><dtype>")
    if not _DEVICE.match(device):
        raise bad(f"device {device!r} is not cpu or cuda:N")

    shape: list[tuple[str, int]] = []
    for item in shape_text.split(","):
        key, eq, value = item.partition("=")
        if not eq or not _KEY.match(key) or not _INT.match(value):
            raise bad(f"shape item {item!r} is not key=<integer>")
        if not -(2**63) <= int(value) < 2**63:
            raise bad(f"shape item {item!r} does not fit a 64-bit integer")
        shape.append((key, int(value)))

    extras: list[tuple[str, str]] = []
    for item in extra_texts:
        key, eq, value = item.partition("=")
        if not eq or not _KEY.match(key) or not _EXTRA_VALUE.match(value):
            raise bad(f"extra {item!r} is not key=value (value [A-Za-z0-9_.:-]+)")
        extras.append((key, value))

    return CaseName(family, variant, dtype, device, tuple(shape), tuple(extras))
