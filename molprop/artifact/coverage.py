"""What a model's intervals measured on its own test part: the coverage to show next to them.

A calibrated interval at level L is meant to contain the measured value for a fraction L of
molecules like the calibration ones. How often it did on the molecules the model never saw (its
test part, a scaffold split for the shipped models) is in ``metrics.json`` (the
``calibration["test"]`` entry written at calibration time: per target and level, the fraction
``coverage`` of ``n`` test molecules). :func:`measured_coverage` reads it as one
:class:`MeasuredCoverage` per target and level, with the exact 95 % (Clopper–Pearson) interval
of that fraction and a verdict: ``"holds"`` when the interval contains L, ``"below"`` when the
intervals covered significantly less than they say (they are too narrow there: read them as
wider), ``"above"`` when significantly more (too wide). The service and the web page show it
beside every interval, so that a chemist sees where an endpoint's intervals are known to fall
short, not only in the model card.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

#: the confidence of the interval around a measured coverage
CONFIDENCE = 0.95

Verdict = Literal["holds", "below", "above"]


def clopper_pearson(k: int, n: int, alpha: float = 1.0 - CONFIDENCE) -> tuple[float, float]:
    """The exact (Clopper–Pearson) ``1 - alpha`` interval of a coverage of ``k`` in ``n``."""
    from scipy.stats import beta

    low = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


@dataclass(frozen=True)
class MeasuredCoverage:
    """The ``level`` interval of one target held ``coverage`` of ``n`` test molecules; ``low``
    to ``high`` is the 95 % Clopper–Pearson interval of that fraction."""

    level: float
    coverage: float
    n: int
    low: float
    high: float

    @property
    def verdict(self) -> Verdict:
        """``holds`` (the interval contains ``level``), ``below`` or ``above`` it."""
        if self.high < self.level:
            return "below"
        if self.low > self.level:
            return "above"
        return "holds"

    def describe(self) -> str:
        """One sentence for a tooltip or a log line."""
        return (
            f"on its {self.n} test molecules the {self.level:.0%} interval contained "
            f"{self.coverage:.1%} of the measured values (95 % CI {self.low:.1%}–{self.high:.1%})"
        )


def measured_coverage(metrics: dict[str, Any]) -> dict[str, tuple[MeasuredCoverage, ...]]:
    """target -> its measured coverages by increasing level, from a ``metrics.json`` (``{}``
    when the model was not calibrated or not measured on a test part; a target with no levels,
    e.g. a classifier's, is left out)."""
    test = (metrics.get("calibration") or {}).get("test") or {}
    out: dict[str, tuple[MeasuredCoverage, ...]] = {}
    for target, entry in test.items():
        levels = entry.get("levels") if isinstance(entry, dict) else None
        found = []
        for key, measured in (levels or {}).items():
            try:
                level, n = float(key), int(measured["n"])
                coverage = float(measured["coverage"])
            except (KeyError, TypeError, ValueError):
                continue
            if n <= 0 or not (0.0 < level < 1.0) or not math.isfinite(coverage):
                continue
            low, high = clopper_pearson(int(round(coverage * n)), n)
            found.append(MeasuredCoverage(level, coverage, n, low, high))
        if found:
            out[str(target)] = tuple(sorted(found, key=lambda c: c.level))
    return out


__all__ = ["CONFIDENCE", "MeasuredCoverage", "Verdict", "clopper_pearson", "measured_coverage"]
