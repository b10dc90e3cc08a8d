"""How sure a case's median is: the distribution-free confidence interval of the median from
order statistics (the interval [x(j), x(n+1-j)] of the sorted samples covers the true median
with probability 1 - 2 P(Binomial(n, 1/2) < j)), as nvbench and Google Benchmark's users compute
it by hand. With fewer than 6 samples no such interval reaches 95% (3 samples: min..max covers
75%), and that is said instead of a cv flag that flags cases by luck."""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from typing import Optional, Sequence

CI_LEVEL = 0.95
RESOLVED_WITHIN = 0.03  # a median is resolved when its 95% CI lies within +-3% of it


def _below(n: int, j: int) -> float:
    """P(Binomial(n, 1/2) < j)."""
    return sum(comb(n, i) for i in range(j)) / 2 ** n


@dataclass(frozen=True)
class MedianCI:
    median: float
    low: float
    high: float
    coverage: float  # the probability that [low, high] holds the true median
    n: int

    @property
    def reaches_level(self) -> bool:
        return self.coverage >= CI_LEVEL

    @property
    def half_width(self) -> float:
        """The larger distance of a bound from the median, as a fraction of it."""
        if not self.median:
            return float("inf")
        return max(self.median - self.low, self.high - self.median) / abs(self.median)

    @property
    def resolved(self) -> bool:
        return self.reaches_level and self.half_width <= RESOLVED_WITHIN

    def text(self) -> str:
        """'-1.2/+2.0%' (the bounds against the median); ' (75% CI, 3 runs)' appended where no
        interval of the samples reaches 95%."""
        if not self.median:
            return "—"
        down = 100 * (self.median - self.low) / self.median
        up = 100 * (self.high - self.median) / self.median
        text = f"-{down:.1f}/+{up:.1f}%"
        if not self.reaches_level:
            text += f" ({100 * self.coverage:.0f}% CI, {self.n} runs)"
        return text


def median_ci(samples: Sequence[float], level: float = CI_LEVEL) -> Optional[MedianCI]:
    """The narrowest symmetric order-statistic interval of the median that covers it with at
    least `level`; where none does (n < 6 at 95%), min..max with its own coverage. None with
    fewer than 2 samples."""
    values = sorted(samples)
    n = len(values)
    if n < 2:
        return None
    middle = values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2
    best = 1
    for j in range(1, n // 2 + 1):
        if 1 - 2 * _below(n, j) >= level:
            best = j
        else:
            break
    return MedianCI(middle, values[best - 1], values[n - best], 1 - 2 * _below(n, best), n)


def against_target(ci: MedianCI, target: float) -> str:
    """Whether a ratio whose median has the interval `ci` reaches `target` (higher is better):
    'met' where the whole interval is at or above it, 'missed' where it is all below, 'within
    noise' where it straddles it (the run cannot tell)."""
    if ci.low >= target:
        return "met"
    if ci.high < target:
        return "missed"
    return "within noise"
