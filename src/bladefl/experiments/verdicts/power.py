"""What a design of m independent units can decide, before any data: the smallest p-value each
exact test can give over k swept values, whether it can reach the 5% level at all, how many units it
would need, and the smallest change the paired t-test finds with 80% power (in standard deviations
of the units' changes). The report prints it beside the verdicts so that "inconclusive" and "too few
runs" read against what the design allows."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd
from scipy import optimize, stats

from bladefl.experiments.verdicts.trend import ALPHA, min_p, units_needed


def detectable_change(units: int, power: float = 0.8, alpha: float = ALPHA) -> float:
    """The smallest mean change, in standard deviations of the per-unit changes, that the two-sided
    paired t-test at ``alpha`` detects with ``power`` over ``units`` units (noncentral t; nan below 2)."""
    if units < 2:
        return math.nan
    df, crit = units - 1, stats.t.ppf(1 - alpha / 2, units - 1)

    def short(d: float) -> float:
        nc = d * math.sqrt(units)
        reached = float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))
        return (reached if math.isfinite(reached) else 1.0) - power

    return float(optimize.brentq(short, 1e-6, 100.0))


def design_limits(units: int, values: Sequence[int] = (2, 3, 4, 5, 6), alpha: float = ALPHA) -> pd.DataFrame:
    """One row per number of swept values k: the exact test used (sign test for two values, Page's
    test above), its smallest one- and two-sided p over ``units`` units, whether a one-sided p can go
    below ``alpha`` before any false-discovery adjustment, and the units that would take."""
    rows = []
    for k in values:
        floor = min_p(units, k)
        rows.append({"swept values": k, "exact test": "sign test" if k == 2 else "Page's test",
                     "smallest p, one-sided": floor, "smallest p, two-sided": min(1.0, 2 * floor),
                     f"one-sided p < {alpha:g} reachable": floor < alpha,
                     f"two-sided p < {alpha:g} reachable": 2 * floor < alpha,
                     "units a one-sided test needs": units_needed(k, alpha)})
    return pd.DataFrame(rows)


__all__ = ["design_limits", "detectable_change"]
