"""Number formatting shared by the report, the summary and the plots. Missing values print as '—'."""

from __future__ import annotations

import math
from typing import Optional

MISSING = "—"


def sig(x: Optional[float], digits: int = 3) -> str:
    """x with `digits` significant digits, no exponent below 1e6: 12.3, 1234, 0.0123."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return MISSING
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if x == 0:
        return "0"
    x = float(f"{x:.{digits}g}")  # round first, so that 0.99996 prints as 1.00, not 1.000
    magnitude = math.floor(math.log10(abs(x)))
    if magnitude >= 6:
        return f"{x:.{digits - 1}e}"
    decimals = max(digits - 1 - magnitude, 0)
    return f"{x:.{decimals}f}"


def giga(x: Optional[float]) -> str:
    """A rate in units of 1e9 (GFLOP/s, GB/s), 3 significant digits."""
    return MISSING if x is None else sig(x / 1e9)


def percent(x: Optional[float]) -> str:
    """A value that is already a percentage (pct_* counters): 87.3%."""
    return MISSING if x is None else f"{x:.1f}%"


def fraction_percent(x: Optional[float]) -> str:
    """A fraction shown as a percentage (cv 0.0123 -> 1.23%)."""
    return MISSING if x is None else f"{100 * x:.2f}%"


def duration(seconds: Optional[float]) -> str:
    """1.23 ms, 456 µs, 12.3 ns, 2.50 s."""
    if seconds is None:
        return MISSING
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if abs(seconds) >= scale:
            return f"{sig(seconds / scale)} {unit}"
    return f"{sig(seconds / 1e-9)} ns"


def size(n_bytes: Optional[float]) -> str:
    """Binary sizes: 48 KiB, 2 MiB, 1.5 GiB, 100 B."""
    if n_bytes is None:
        return MISSING
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n_bytes) >= scale:
            value = n_bytes / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{sig(value)} {unit}"
    return f"{n_bytes:.0f} B"


def hz(x: Optional[float]) -> str:
    return MISSING if x is None else f"{x / 1e9:.3f} GHz"


def intensity(x: Optional[float]) -> str:
    return sig(x)


def rate(x: Optional[float], unit: str) -> str:
    """A rate with an SI prefix: rate(4.8e12, 'B/s') -> '4.80 TB/s', rate(3.3e11, 'FLOP/s') ->
    '333 GFLOP/s'."""
    if x is None:
        return MISSING
    for prefix, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{sig(x / scale)} {prefix}{unit}"
    return f"{sig(x)} {unit}"
