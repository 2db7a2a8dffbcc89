"""Fig. 3's "the experimental results are convex with respect to K", judged on the measured
training loss: per cell and interior K the units' second differences, a one-sided t-test that
their mean is negative at each point, Holm over the points; the smallest adjusted p is the claim's
p against. Counted on Fig. 3's own cells, judged again over every cell of the grid as a reading;
each row names the significant violations and whether the integer time model makes the total
local steps K·tau drop there (a kink of tau = floor((t_sum/K - beta)/alpha), not of the loss)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from bladefl.experiments.plan.grid import Member
from bladefl.experiments.verdicts.trend import ALPHA
from bladefl.experiments.verdicts.units import Units
from bladefl.fl.timemodel import tau_for

MIN_UNITS = 3  # a one-sided t-test over fewer units has no spread worth the name


@dataclass(frozen=True)
class Point:
    cell: str
    K: int
    mean: float  # the units' mean second difference
    p: float  # Holm-adjusted over the points
    steps: tuple[int, int, int]  # K·tau at K-1, K, K+1


@dataclass(frozen=True)
class ConvexityTest:
    units: int
    points: int  # (cell, interior K) with a finite mean second difference
    negative: int  # of them with a negative mean
    p: float  # the smallest Holm-adjusted p (nan: no test)
    significant: tuple[Point, ...]


def _steps(K: int, member: Member, t_sum: float) -> int:
    c = member.cell
    return K * max(0, tau_for(K, c.alpha, c.beta, t_sum)) if K >= 1 else 0


def convexity_test(units: Units, cells: Sequence[str], members: Sequence[Member], t_sum: float) -> ConvexityTest:
    """The test over ``cells`` (see the module's docstring)."""
    c = units.curves
    index = [c.cells.index(x) for x in cells if x in c.cells]
    loss = c.loss[index]  # [cell, unit, K]
    d2 = loss[:, :, :-2] - 2 * loss[:, :, 1:-1] + loss[:, :, 2:]
    m = d2.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # infeasible K: all-nan points
        mean = np.nanmean(d2, axis=1) if m else np.full(d2.shape[::2], np.nan)
    finite = np.isfinite(mean)
    negative = int((finite & (mean < 0)).sum())
    if m < MIN_UNITS or not finite.any():
        return ConvexityTest(m, int(finite.sum()), negative, math.nan, ())
    where, ps = [], []
    for ci, ki in zip(*np.nonzero(finite), strict=True):
        x = d2[ci, :, ki]
        x = x[np.isfinite(x)]
        if len(x) < MIN_UNITS:
            continue
        if np.std(x) > 1e-9 * max(1.0, float(np.abs(x).max())):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                ps.append(float(stats.ttest_1samp(x, 0.0, alternative="less").pvalue))
        else:
            ps.append(0.0 if x[0] < 0 else 1.0)
        where.append((ci, ki))
    if not ps:
        return ConvexityTest(m, int(finite.sum()), negative, math.nan, ())
    holm = _holm(np.array(ps))
    by_key = {mb.cell.key: mb for mb in members}
    significant = []
    for (ci, ki), p in zip(where, holm, strict=True):
        if p < ALPHA:
            cell, K = c.cells[index[ci]], int(c.Ks[ki + 1])
            member = by_key[cell]
            significant.append(Point(cell, K, float(mean[ci, ki]), float(p),
                                     (_steps(K - 1, member, t_sum), _steps(K, member, t_sum),
                                      _steps(K + 1, member, t_sum))))
    return ConvexityTest(m, int(finite.sum()), negative, float(np.min(holm)), tuple(significant))


def _holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values."""
    order = np.argsort(p)
    n = len(p)
    adjusted = np.maximum.accumulate(np.minimum(1.0, (n - np.arange(n)) * p[order]))
    out = np.empty(n)
    out[order] = adjusted
    return out


def _drops(point: Point) -> bool:
    a, b, c = point.steps
    return b < a or c < b


def _where(test: ConvexityTest, labels: dict[str, str]) -> str:
    if not test.significant:
        return ""
    shown = "; ".join(f"{labels.get(p.cell, p.cell)} at K = {p.K} (K·τ {p.steps[0]}, {p.steps[1]}, {p.steps[2]})"
                      for p in test.significant[:8])
    more = f" and {len(test.significant) - 8} more" if len(test.significant) > 8 else ""
    dropping = sum(_drops(p) for p in test.significant)
    at_drops = ("every one where the time model's K·τ drops (tau's floor), a kink of the steps, not of the loss"
                if dropping == len(test.significant) else
                f"{dropping} of {len(test.significant)} where the time model's K·τ drops (tau's floor)")
    return f"significant violations: {shown}{more}: {at_drops}"


def convexity_row(test: ConvexityTest, p_adjusted: float, units: Units, labels: dict[str, str], *, statement: str,
                  claim: str, role: str, reading_of: str = "") -> dict:
    """The verdict row of one convexity test (``p_adjusted``: its p against, adjusted in its family)."""
    over = f"one-sided t-tests over {test.units} {units.kind}s at each of {test.points} (cell, K), Holm over them"
    if test.units < MIN_UNITS:
        label, why, decided = ("too few runs", f"fewer than {MIN_UNITS} units: no test",
                               f"too few runs: {test.units} {units.kind}{'s' * (test.units != 1)}, "
                               f"a t-test needs {MIN_UNITS}")
    elif math.isfinite(p_adjusted) and p_adjusted < ALPHA:
        label, why = "refuted", "a second difference is significantly negative"
        decided = f"{over}: p (against) = {p_adjusted:.2g}, FDR-adjusted"
    elif test.negative == 0:
        label, why, decided = "reproduced", "every unit-mean second difference is >= 0", f"{over}: none negative"
    else:
        label, why = "inconclusive", "negative second differences, none significant"
        decided = f"{over}: p (against) = {p_adjusted:.2g}, FDR-adjusted"
    where = _where(test, labels)
    evidence = (f"{test.negative} of {test.points} (cell, K) points with a negative mean second difference over "
                f"{test.units} {units.kind}s ({units.replication}); {over}, p (against) = {p_adjusted:.3g} "
                f"(BH-adjusted); {why}" + (f"; {where}" if where else ""))
    found = (f"{test.negative} of {test.points} points bend down, {len(test.significant)} significantly"
             + (f", {sum(_drops(p) for p in test.significant)} of them where K·τ drops" if test.significant else ""))
    return {"statement": statement, "role": role, "claim": claim, "source": "Fig. 3 text", "basis": "experiment",
            "verdict": label, "decided_by": decided, "finding": found, "p_claim": math.nan, "p_opposite": p_adjusted,
            "effect": float(len(test.significant)), "effect_low": math.nan, "effect_high": math.nan,
            "units": test.units, "unit": units.kind, "replication": units.replication, "derived_from": "",
            "reading_of": reading_of, "page": "03_bound" if role == "claim" else "02_sweeps", "evidence": evidence}


def cell_labels(members: Sequence[Member], fig3_sweep: str) -> dict[str, str]:
    """Each cell named as a reader finds it: Fig. 3(a), (b) for the bound sweep's cells, else its
    first sweep and value (``beta = 8``)."""
    labels: dict[str, str] = {}
    fig3 = [m for m in members if m.sweep == fig3_sweep]
    for i, m in enumerate(fig3):
        labels[m.cell.key] = f"Fig. 3({chr(ord('a') + i)})"
    for m in members:
        if m.cell.key not in labels and m.vary:
            labels[m.cell.key] = f"{m.vary} = {m.value:g}"
    return labels


CLAIM = "the training loss is convex in K (Fig. 3's cells)"


def convexity_family(members: Sequence[Member], t_sum: float, fig3_sweep: str
                     ) -> Callable[[Units], tuple[list[float], list[float], Callable]]:
    """The convexity tests as an extra of :func:`.experiment.experiment_verdicts`: Fig. 3's cells
    in the claims' family (where the grid has them), every cell in the readings'."""
    fig3 = sorted({m.cell.key for m in members if m.sweep == fig3_sweep})
    every = sorted({m.cell.key for m in members})
    labels = cell_labels(members, fig3_sweep)

    def extra(units: Units) -> tuple[list[float], list[float], Callable]:
        counted = convexity_test(units, fig3, members, t_sum) if fig3 else None
        reading = convexity_test(units, every, members, t_sum)

        def rows(claims_adjusted: list[float], readings_adjusted: list[float]) -> list[dict]:
            out = []
            if counted is not None:
                out.append(convexity_row(counted, claims_adjusted[0], units, labels,
                                         statement="fig3-convex-experiment", claim=CLAIM, role="claim"))
            out.append(convexity_row(reading, readings_adjusted[0], units, labels,
                                     statement="fig3-convex-experiment", role="reading" if fig3 else "claim",
                                     claim="the training loss is convex in K (every cell of the grid)",
                                     reading_of=CLAIM if fig3 else ""))
            return out

        return ([counted.p] if counted is not None else []), [reading.p], rows

    return extra


__all__ = ["ConvexityTest", "convexity_test", "convexity_row", "convexity_family", "cell_labels"]
