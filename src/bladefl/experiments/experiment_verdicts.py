"""The paper's claims on the experiment, judged by paired tests over independent units
(:mod:`bladefl.experiments.trend`): one row per claim, its p-values (false discovery rate
controlled over the dataset's claims), its effect with an interval, and its per-unit values.

Verdicts (``ALPHA`` = 0.05 on Benjamini-Hochberg adjusted p-values):

- reproduced: the claimed direction is significant and the change is not shown inside the
  equivalence margin (a claim of no change: the change is shown inside the margin and no trend
  is significant);
- refuted: the opposite direction is significant, or a claimed change is shown inside the
  margin, i.e. negligible even where consistent (a claim of no change: a trend is significant);
- inconclusive: neither, the data cannot tell;
- too few runs: the design cannot give a p-value below ALPHA (e.g. 2 units and 2 sweep values)
  and nothing refutes.

A claim that follows from another one (tau alpha K* = t_sum - beta K* at fixed beta is K* again)
is shown as ``derived`` from it, with its verdict, and counted in no tally. A K* claim is judged
again with K* read as the K of the best accuracy (``reading_of`` the K* claim, which takes the
lowest training loss, the bound's quantity): its own test, its p-values adjusted over the
readings apart from the claims, counted in no tally.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from bladefl.experiments.grid import Member
from bladefl.experiments.tidy import draws_are_units, seeds_per_draw
from bladefl.experiments.trend import (
    ALPHA,
    RELATIVE,
    Effect,
    Margins,
    Trend,
    effect,
    fdr_adjust,
    trend_test,
    units_needed,
)
from bladefl.experiments.verdict_rows import Curves, Means, Sweep, fmt, sweep_varying
from bladefl.theory.claims import COROLLARIES

EXPERIMENT_VERDICTS = ("reproduced", "refuted", "inconclusive", "too few runs")


@dataclass(frozen=True)
class Units:
    """Per-unit curves (:class:`Curves` whose "seeds" are the units) and what a unit is."""

    curves: Curves
    kind: str  # "draw" (its runs' seed mean) | "run"
    labels: list[str]
    seeds_per_unit: int

    @classmethod
    def from_table(cls, table: pd.DataFrame, runs: bool = False) -> Units:
        """Draws as units where every draw holds at least two seeds, else (or with ``runs``) runs."""
        ok = table[table.status == "ok"]
        if not runs and draws_are_units(ok):
            mean = ok.groupby(["cell", "partition", "K"], as_index=False)[["train_loss", "test_accuracy"]].mean()
            curves = Curves.from_table(mean.assign(seed=mean.partition, status="ok"))
            return cls(curves, "draw", [f"draw {u}" for u in curves.seeds], int(seeds_per_draw(ok).min()))
        curves = Curves.from_table(ok)
        return cls(curves, "run", [f"seed {u}" for u in curves.seeds], 1)

    @cached_property
    def means(self) -> list[Means]:
        """Each unit's curves (computed once, read by every claim)."""
        return [self.curves.mean(np.array([u])) for u in range(len(self.curves.seeds))]

    def values(self, cells: Sequence[str], quantity: str, betas: Sequence[float], t_sum: float) -> np.ndarray:
        """[units, cells] of a quantity: K (K* by loss), K_accuracy (K* by accuracy), mining_time
        (beta K*), training_time (t_sum - beta K*), min_loss, max_accuracy."""
        out = np.full((len(self.curves.seeds), len(cells)), np.nan)
        for u, m in enumerate(self.means):
            for j, (cell, beta) in enumerate(zip(cells, betas, strict=True)):
                if quantity in ("K", "mining_time", "training_time"):
                    k = m.k_star(cell)
                    out[u, j] = k if quantity == "K" else beta * k if quantity == "mining_time" else t_sum - beta * k
                elif quantity == "K_accuracy":
                    out[u, j] = m.k_star_accuracy(cell)
                elif quantity == "min_loss":
                    out[u, j] = m.min_loss(cell)
                else:
                    out[u, j] = m.max_accuracy(cell)
        return out


@dataclass(frozen=True)
class TrendClaim:
    """A claim that a quantity rises or falls (or stays: ``same``) over a sweep (``only``: the
    sweep values the claim speaks of)."""

    name: str
    source: str
    param: str
    quantity: str
    direction: str  # rises | falls | same
    page: str = "02_sweeps"
    derived_from: str = ""
    only: Callable[[float], bool] | None = None
    reading_of: str = ""  # another reading of this claim (judged on its own, counted in no tally)


# The paper's table of each swept parameter (a corollary's experimental evidence).
TABLE_OF = {"alpha": "Table II", "beta": "Table III", "N": "Table IV", "eta": "Table V", "lazy_ratio": "Table VI",
            "sigma2": "Table VII"}


def claims() -> list[TrendClaim]:
    out = [TrendClaim(c.name, f"{c.source}, {TABLE_OF[c.param]}{' text' if c.quantity == 'mining_time' else ''}",
                      c.param, c.quantity, c.direction) for c in COROLLARIES if c.param in TABLE_OF]
    out += [
        TrendClaim("τ·α·K* rises with alpha", "Corollary 1, Table II text", "alpha", "training_time", "rises",
                   derived_from="K* falls as alpha grows"),
        TrendClaim("τ·α·K* rises with M/N", "Table VI text", "lazy_ratio", "training_time", "rises",
                   derived_from="K* falls as M/N grows"),
        TrendClaim("τ·α·K* rises with sigma2", "Table VII text", "sigma2", "training_time", "rises",
                   derived_from="K* falls as sigma2 grows"),
        TrendClaim("the loss falls as N grows", "Fig. 4 text", "N", "min_loss", "falls"),
        TrendClaim("the loss grows with alpha", "Fig. 6 text", "alpha", "min_loss", "rises"),
        TrendClaim("the loss grows with beta", "Fig. 7 text", "beta", "min_loss", "rises"),
        TrendClaim("the loss grows with M/N", "Fig. 8 text", "lazy_ratio", "min_loss", "rises"),
        TrendClaim("the loss grows with sigma2", "Fig. 9 text", "sigma2", "min_loss", "rises"),
        TrendClaim("accuracy rises with epsilon", "Section VII, Fig. 10", "epsilon", "max_accuracy", "rises",
                   page="04_privacy"),
        TrendClaim("K* settles for N >= 20", "Fig. 4 text, Corollary 3", "N", "K", "same", only=lambda v: v >= 20),
        TrendClaim("K* does not depend on epsilon", "Section VII, Fig. 10", "epsilon", "K", "same",
                   page="04_privacy"),
        TrendClaim("K* does not depend on epsilon (epsilon >= 100: small noise, the text's reading)",
                   "Section VII, Fig. 10", "epsilon", "K", "same", page="04_privacy", only=lambda v: v >= 100),
        TrendClaim("the loss falls as eta grows below 0.1", "Fig. 5 text", "eta", "min_loss", "falls",
                   only=lambda v: v < 0.1),
        TrendClaim("the loss rises again at eta = 0.1", "Fig. 5 text", "eta", "min_loss", "rises",
                   only=lambda v: v >= 0.05),
    ]
    out += [TrendClaim(f"{c.name} (K* by accuracy)", c.source, c.param, "K_accuracy", c.direction, c.page,
                       only=c.only, reading_of=c.name) for c in out if c.quantity == "K" and not c.derived_from]
    return out


def _restrict(sweep: Sweep, only: Callable[[float], bool] | None) -> Sweep:
    if only is None:
        return sweep
    keep = [i for i, v in enumerate(sweep.values) if only(v)]
    return Sweep(sweep.vary, [sweep.values[i] for i in keep], [sweep.cells[i] for i in keep],
                 [sweep.betas[i] for i in keep])


def _shown(x: float, quantity: str) -> str:
    if not math.isfinite(x):
        return "nan"
    return f"{x:g}" if quantity in ("K", "K_accuracy", "mining_time", "training_time") else f"{x:.3f}"


def _change(e: Effect, quantity: str) -> str:
    rel = quantity in RELATIVE
    f = (lambda v: f"{v:+.1%}") if rel else (lambda v: f"{v:+.3g}")
    if not e.per_unit:
        return "no unit"
    out = f"change {'(relative) ' if rel else ''}{f(e.mean)} (units {f(min(e.per_unit))}..{f(max(e.per_unit))}"
    return out + (f"; 95% CI {f(e.low)}..{f(e.high)})" if math.isfinite(e.low) else ")")


@dataclass(frozen=True)
class Judged:
    claim: TrendClaim
    sweep: Sweep
    table: np.ndarray  # [units, values]
    trend: Trend
    effect: Effect


def judge(claim: TrendClaim, units: Units, members: Sequence[Member], t_sum: float,
          margins: Margins) -> Judged | None:
    sweep = sweep_varying(members, claim.param)
    if sweep is None:
        return None
    sweep = _restrict(sweep, claim.only)
    if len(sweep.values) < 2:
        return None
    table = units.values(sweep.cells, claim.quantity, sweep.betas, t_sum)
    quantity = "K" if claim.quantity in ("training_time", "K_accuracy") else claim.quantity
    return Judged(claim, sweep, table, trend_test(table), effect(table, margins.of(quantity),
                                                                relative=quantity in RELATIVE))


def verdict(j: Judged, p_claim: float, p_opposite: float) -> tuple[str, str]:
    """The verdict and why (see the module's table)."""
    t, e, k = j.trend, j.effect, len(j.sweep.values)
    too_few = t.min_p > ALPHA
    if j.claim.direction == "same":
        if p_claim < ALPHA:  # p_claim: either direction, adjusted
            return "refuted", "a trend is significant"
        if e.equivalent:
            return "reproduced", "the change is inside the margin"
        if too_few:
            return "too few runs", f"at least {units_needed(k)} units needed for {k} values"
        return "inconclusive", "no significant trend, but the change is not shown inside the margin"
    if e.equivalent:  # significant or not, a change shown to be negligible is not the claimed change
        return "refuted", "no change: the change is inside the margin" + (
            " (though consistently in the claimed direction)" if p_claim < ALPHA else "")
    if p_claim < ALPHA:
        return "reproduced", "the claimed direction is significant"
    if p_opposite < ALPHA:
        return "refuted", "the opposite direction is significant"
    if too_few:
        return "too few runs", f"at least {units_needed(k)} units needed for {k} values"
    return "inconclusive", "neither direction is significant and the change is not inside the margin"


def _evidence(j: Judged, units: Units, p_claim: float, p_opposite: float, why: str) -> str:
    c, q = j.claim, j.claim.quantity
    rows = "; ".join(f"{label}: [{', '.join(_shown(v, q) for v in row)}]"
                     for label, row in zip(units.labels, j.table, strict=True))
    name = {"K": "K*", "K_accuracy": "K* by accuracy", "mining_time": "β·K*", "training_time": "τ·α·K*",
            "min_loss": "min loss",
            "max_accuracy": "max accuracy"}[q]
    test = (f"{j.trend.test} test, {j.trend.units} units: " if j.trend.test != "none" else "no test: ")
    ps = (f"p (either direction) = {p_claim:.3g}" if c.direction == "same" else
          f"p ({c.direction}) = {p_claim:.3g}, p (opposite) = {p_opposite:.3g}")
    return (f"{c.param} = {[fmt(x) for x in j.sweep.values]} -> {name} per {units.kind}: {rows}; "
            f"{_change(j.effect, q)}; {test}{ps} (BH-adjusted); {why}")


COLUMNS = ["claim", "source", "basis", "verdict", "p_claim", "p_opposite", "effect", "effect_low", "effect_high",
           "units", "unit", "derived_from", "reading_of", "page", "evidence"]


def _p_values(judged: Sequence[Judged]) -> list[float]:
    """Each claim's raw p-values: (claimed direction, opposite); a claim of no change: (either, nan)."""
    raw: list[float] = []
    for j in judged:
        if j.claim.direction == "same":
            raw += [min(1.0, 2 * min(j.trend.p_rises, j.trend.p_falls)), math.nan]
        else:
            raw += [j.trend.p(j.claim.direction), j.trend.p("falls" if j.claim.direction == "rises" else "rises")]
    return raw


def _row(j: Judged, units: Units, p_claim: float, p_opp: float) -> dict:
    label, why = verdict(j, p_claim, p_opp if math.isfinite(p_opp) else 1.0)
    return {"claim": j.claim.name, "source": j.claim.source, "basis": "experiment", "verdict": label,
            "p_claim": p_claim, "p_opposite": p_opp, "effect": j.effect.mean, "effect_low": j.effect.low,
            "effect_high": j.effect.high, "units": j.trend.units, "unit": units.kind, "derived_from": "",
            "reading_of": j.claim.reading_of, "page": j.claim.page,
            "evidence": _evidence(j, units, p_claim, p_opp, why)}


def experiment_verdicts(table: pd.DataFrame, members: Sequence[Member], t_sum: float,
                        margins: Margins | None = None, convexity: bool = True) -> pd.DataFrame:
    """Every experiment claim the grid can test, one row each (see the module's docstring)."""
    margins = margins or Margins()
    units = Units.from_table(table)
    judged = [j for c in claims() if (j := judge(c, units, members, t_sum, margins)) is not None]
    primary = [j for j in judged if not j.claim.derived_from and not j.claim.reading_of]
    raw = _p_values(primary)
    convex = convexity_row(units, sorted({m.cell.key for m in members})) if convexity else None
    if convex is not None:
        raw += [math.nan, convex[1]]
    adjusted = fdr_adjust(raw)
    rows, by_name = [], {}
    for i, j in enumerate(primary):
        row = _row(j, units, adjusted[2 * i], adjusted[2 * i + 1])
        rows.append(row)
        by_name[j.claim.name] = row
    for j in judged:
        if j.claim.derived_from and j.claim.derived_from in by_name:
            base = by_name[j.claim.derived_from]
            rows.append({**base, "claim": j.claim.name, "source": j.claim.source, "derived_from": base["claim"],
                         "effect": j.effect.mean, "effect_low": j.effect.low, "effect_high": j.effect.high,
                         "evidence": f"= t_sum - beta K* at fixed beta: the verdict of \"{base['claim']}\"; "
                                     + _evidence(j, units, base["p_opposite"], base["p_claim"], "derived")})
    if convex is not None:
        rows.append(convex[0](adjusted[-1]))
    readings = [j for j in judged if j.claim.reading_of and j.claim.reading_of in by_name]
    read = fdr_adjust(_p_values(readings))  # a family of their own: they do not dilute the claims'
    rows += [_row(j, units, read[2 * i], read[2 * i + 1]) for i, j in enumerate(readings)]
    return pd.DataFrame(rows, columns=COLUMNS)


def convexity_row(units: Units, cells: Sequence[str]) -> tuple[Callable[[float], dict], float] | None:
    """Theorem 2 on the experiment (the training loss convex in K): per cell and interior K the
    units' second differences; a one-sided t-test that the mean is negative at each, the smallest
    p-value (Holm-corrected over the points) is the claim's p against it. Returns the row (given
    that p adjusted over the dataset) and the raw p."""
    from scipy import stats

    c = units.curves
    index = [c.cells.index(x) for x in cells if x in c.cells]
    d2 = c.loss[index][:, :, :-2] - 2 * c.loss[index][:, :, 1:-1] + c.loss[index][:, :, 2:]  # [cell, unit, K]
    m = d2.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # infeasible K: all-nan points
        mean = np.nanmean(d2, axis=1) if m else np.full(d2.shape[::2], np.nan)
    negative = np.isfinite(mean) & (mean < 0)
    points = int(np.isfinite(mean).sum())
    p = math.nan
    if m >= 2 and points:
        ps = []
        for ci, ki in zip(*np.nonzero(np.isfinite(mean)), strict=True):
            x = d2[ci, :, ki]
            x = x[np.isfinite(x)]
            if len(x) >= 2 and np.std(x) > 1e-9 * max(1.0, float(np.abs(x).max())):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    ps.append(stats.ttest_1samp(x, 0.0, alternative="less").pvalue)
            elif len(x) >= 2:
                ps.append(0.0 if x[0] < 0 else 1.0)
        p = min(1.0, min(ps) * len(ps)) if ps else math.nan
    worst = [(cells[i], int(c.Ks[k + 1])) for i, k in zip(*np.nonzero(negative), strict=True)][:3]

    def row(p_adj: float) -> dict:
        if m < 2:
            label, why = "too few runs", "one unit: no test"
        elif math.isfinite(p_adj) and p_adj < ALPHA:
            label, why = "refuted", "a second difference is significantly negative"
        elif not negative.any():
            label, why = "reproduced", "every unit-mean second difference is >= 0"
        else:
            label, why = "inconclusive", "negative second differences, none significant"
        return {"claim": "the training loss is convex in K", "source": "Theorem 2", "basis": "experiment",
                "verdict": label, "p_claim": math.nan, "p_opposite": p_adj, "effect": float(negative.sum()),
                "effect_low": math.nan, "effect_high": math.nan, "units": m, "unit": units.kind, "derived_from": "",
                "page": "02_sweeps",
                "evidence": f"{int(negative.sum())} of {points} (cell, K) points with a negative mean second "
                            f"difference over {m} {units.kind}s" + (f", e.g. {worst}" if worst else "")
                            + f"; one-sided t-tests, Holm over points, p (against) = {p_adj:.3g} (BH-adjusted); {why}"}
    return row, p


def per_draw(verdicts: pd.DataFrame, table: pd.DataFrame, members: Sequence[Member], t_sum: float,
             margins: Margins | None = None) -> pd.DataFrame:
    """``verdicts`` with ``draws_holding`` and ``across_partitions``: each claim tested again inside
    each partition draw, its seeds as units (unadjusted, at ALPHA), where every draw holds at least
    two seeds; else the columns say that seed and draw cannot be told apart."""
    margins = margins or Margins()
    out = verdicts.copy()
    seeds_on = seeds_per_draw(table)
    if len(seeds_on) < 2 or not draws_are_units(table):
        out["draws_holding"] = ""
        out["across_partitions"] = ("one draw" if len(seeds_on) < 2
                                    else "one seed per draw: seed and draw not separable")
        return out
    found: dict[str, list[str]] = {}
    for d in sorted(seeds_on.index):
        units = Units.from_table(table[table.partition == d], runs=True)
        for c in claims():
            j = judge(c, units, members, t_sum, margins)
            if j is None:
                continue
            if c.direction == "same":
                state = "holds" if j.effect.equivalent else (
                    "fails" if min(j.trend.p_rises, j.trend.p_falls) * 2 < ALPHA else "unresolved")
            else:
                opposite = "falls" if c.direction == "rises" else "rises"
                state = "holds" if j.trend.p(c.direction) < ALPHA else (
                    "fails" if j.trend.p(opposite) < ALPHA else "unresolved")
            found.setdefault(c.name, []).append(state)
    holding, label = [], []
    for name in out.claim:
        states = found.get(name, [])
        holding.append(f"{states.count('holds')}/{len(states)}" if states else "")
        if not states:
            label.append("")
        elif all(s == "holds" for s in states):
            label.append("holds on every draw")
        elif all(s == "fails" for s in states):
            label.append("fails on every draw")
        elif "holds" in states and "fails" in states:
            label.append("differs between draws")
        else:
            label.append(f"holds on {states.count('holds')}, fails on {states.count('fails')}, "
                         f"unresolved on {states.count('unresolved')} draws")
    out["draws_holding"], out["across_partitions"] = holding, label
    return out
