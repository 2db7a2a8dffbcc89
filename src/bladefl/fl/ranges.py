"""The allowed values of a grid cell's parameters, in one table: the run config checks its fields
with it (:mod:`bladefl.fl.run_config`), the grid checks its cells with it
(:func:`bladefl.experiments.plan.grid.cell_errors`), and a test holds the workflow's schema
(``workflow/schemas/config.schema.yaml``, ``definitions.cell``) to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Range:
    """One parameter: its name in a cell and in the run config, and its interval."""

    cell: str  # the grid cell's field
    run: str  # the run config's dotted key
    low: float
    low_open: bool  # low itself is refused
    high: float = math.inf
    high_open: bool = True
    integer: bool = False
    finite: bool = True  # inf refused (epsilon: inf disables DP, so allowed)

    def allowed(self) -> str:
        kind = "an integer" if self.integer else ("a finite number" if self.finite else "a number")
        lo = f"{'>' if self.low_open else '>='} {self.low:g}"
        if math.isinf(self.high):
            return f"{kind} {lo}" + ("" if self.finite or self.integer else " (inf allowed)")
        return f"{kind} in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}{')' if self.high_open else ']'}"

    def holds(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if math.isnan(value) or (self.finite and math.isinf(value)):
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = math.isinf(self.high) or (value < self.high if self.high_open else value <= self.high)
        return above and below


RANGES = (
    Range("alpha", "time.alpha", 0, True),
    Range("beta", "time.beta", 0, True),
    Range("N", "partition.N", 1, False, integer=True),
    Range("eta", "train.eta", 0, True, 1, False),  # a step past 1 diverges; Lemma 1 needs eta L < 1
    Range("lazy_ratio", "lazy.ratio", 0, False, 1, True),
    # past these the float32 model overflows and every loss is NaN (measured: sigma2 = 1e300 and
    # epsilon = 1e-300 give NaN, 1e6 and 1e-3 finite losses)
    Range("sigma2", "lazy.sigma2", 0, False, 1e6, False),
    Range("epsilon", "privacy.epsilon", 1e-3, False, finite=False),
)
BY_CELL = {r.cell: r for r in RANGES}
BY_RUN_KEY = {r.run: r for r in RANGES}
# The allowed values of `lazy.detectors` (bladefl.fl.detection implements them): here, so that
# checking a config (and parsing the workflow) does not load torch.
DETECTORS = ("near_duplicate", "gaussian_update", "gaussian_difference")


def range_error(r: Range, value: Any, where: str) -> str | None:
    """``where must be <allowed> (got value)``, or None when ``value`` is allowed."""
    return None if r.holds(value) else f"{where} must be {r.allowed()} (got {value!r})"


__all__ = ["Range", "RANGES", "BY_CELL", "BY_RUN_KEY", "range_error", "DETECTORS"]
