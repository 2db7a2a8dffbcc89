"""The verdict vocabulary and what every verdict is computed from: the table's columns, per-seed
curves of the grid, their seed means, resamples of the independent units, and one row per bound
claim.

A bound claim is judged by a bootstrap over the units (partition draws holding several seeds, else
runs): the share of resamples in which it holds is its support; ``reproduced`` at support >= 0.9,
``refuted`` at <= 0.1, ``inconclusive`` between; ``single seed`` with nothing to resample; ``not
applicable`` when the claim's preconditions fail. ``vacuous``: a reading that holds whatever the
data (listed, never counted); ``paper error``: where the paper contradicts itself.

Every row names the paper's ``statement`` it judges (``config/paper_statements.yaml``) and its
``role``: the ``claim`` (one counted row per statement), a ``reading`` (another reading of the
statement, judged, not counted), ``derived`` (the same test as the claim it follows from) or a
``paper error``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bladefl.experiments.plan.grid import Member

VERDICTS = ("reproduced", "refuted", "inconclusive", "too few runs", "single seed", "not applicable", "vacuous",
            "paper error", "ambiguous")  # ambiguous: a statement of the paper's own that two readings fit (both judged)
ROLES = ("claim", "reading", "derived", "paper error")
ALL_COLUMNS = ["statement", "role", "claim", "source", "basis", "verdict", "decided_by", "finding", "p_claim",
               "p_opposite", "effect", "effect_low", "effect_high", "units", "unit", "replication", "support", "seeds",
               "derived_from", "reading_of", "draws_holding", "across_partitions", "page", "quote", "evidence"]
COLUMNS = ["statement", "role", "claim", "source", "basis", "verdict", "decided_by", "support", "seeds", "units",
           "unit", "replication", "draws_holding", "across_partitions", "page", "evidence"]
POOLED = [c for c in COLUMNS if c not in ("draws_holding", "across_partitions")]


def verdict_of(support: float, units: int, reproduced: float = 0.9, refuted: float = 0.1) -> str:
    if units < 2:
        return "too few runs"
    if support >= reproduced:
        return "reproduced"
    return "refuted" if support <= refuted else "inconclusive"


@dataclass(frozen=True)
class Curves:
    """Per-seed curves of the grid: loss and accuracy [cell, seed, K] (nan where K is infeasible)."""

    cells: list[str]
    seeds: list[int]
    Ks: np.ndarray
    loss: np.ndarray
    accuracy: np.ndarray

    @classmethod
    def from_table(cls, table: pd.DataFrame) -> Curves:
        ok = table[table.status == "ok"].drop_duplicates(["cell", "seed", "K"])
        cells, seeds = sorted(ok.cell.unique()), sorted(ok.seed.unique())
        Ks = np.arange(1, int(ok.K.max()) + 1)
        shape = (len(cells), len(seeds), len(Ks))
        loss, acc = np.full(shape, np.nan), np.full(shape, np.nan)
        c = ok.cell.map({k: i for i, k in enumerate(cells)}).to_numpy()
        s = ok.seed.map({k: i for i, k in enumerate(seeds)}).to_numpy()
        k = ok.K.to_numpy(dtype=int) - 1
        loss[c, s, k] = ok.train_loss.to_numpy(dtype=float)
        acc[c, s, k] = ok.test_accuracy.to_numpy(dtype=float)
        return cls(cells, [int(x) for x in seeds], Ks, loss, acc)

    def mean(self, rows: np.ndarray) -> Means:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-nan K columns (infeasible K)
            return Means({c: i for i, c in enumerate(self.cells)}, self.Ks, np.nanmean(self.loss[:, rows], axis=1),
                         np.nanmean(self.accuracy[:, rows], axis=1))


@dataclass(frozen=True)
class Means:
    """Seed-mean curves of one (re)sample of seeds."""

    index: dict[str, int]
    Ks: np.ndarray
    loss: np.ndarray  # [cell, K]
    accuracy: np.ndarray

    def k_star(self, cell: str) -> float:
        curve = self.loss[self.index[cell]]
        return float(self.Ks[int(np.nanargmin(curve))]) if np.isfinite(curve).any() else math.nan

    def k_star_accuracy(self, cell: str) -> float:
        curve = self.accuracy[self.index[cell]]
        return float(self.Ks[int(np.nanargmax(curve))]) if np.isfinite(curve).any() else math.nan

    def min_loss(self, cell: str) -> float:
        return float(np.nanmin(self.loss[self.index[cell]]))

    def max_accuracy(self, cell: str) -> float:
        return float(np.nanmax(self.accuracy[self.index[cell]]))


@dataclass(frozen=True)
class Sweep:
    vary: str
    values: list[float]
    cells: list[str]
    betas: list[float]


def sweep_varying(members: Sequence[Member], param: str) -> Sweep | None:
    """The first sweep of the config that varies ``param`` (by parameter, not by name)."""
    names = [m.sweep for m in members if m.vary == param]
    if not names:
        return None
    chosen = sorted(((m.value, m) for m in members if m.sweep == names[0] and m.value is not None),
                    key=lambda p: p[0])
    return Sweep(param, [float(v) for v, _ in chosen], [m.cell.key for _, m in chosen],
                 [m.cell.beta for _, m in chosen])



def fmt(x: float) -> float | str:
    return "inf" if math.isinf(x) else float(f"{x:g}")


def unit_resamples(groups: Sequence[Sequence[int]], resamples: int, seed: int = 0) -> list[np.ndarray]:
    """Seed indices of bootstrap resamples of the independent units: ``groups`` lists each unit's
    seed indices (a partition draw's seeds, or one run each); the full sample first, then
    ``resamples`` draws of as many units with replacement, each unit with all its seeds (none with
    one unit: nothing to resample)."""
    from bladefl.core.rng import numpy_rng

    rng = numpy_rng(seed, "unit-bootstrap")
    full = np.concatenate([np.asarray(g, dtype=int) for g in groups]) if groups else np.arange(0)
    U = len(groups)
    if U < 2:
        return [full]
    return [full] + [np.concatenate([np.asarray(groups[u], dtype=int) for u in rng.integers(0, U, U)])
                     for _ in range(resamples)]


@dataclass(frozen=True)
class Replicates:
    """What a bound row's bootstrap resamples: ``units`` independent units of kind ``unit`` ("draw"
    or "run"), ``seeds`` runs in all, and the words for it (``replication``)."""

    units: int
    unit: str
    seeds: int
    replication: str


def claim_row(name: str, source: str, basis: str, holds: Sequence[bool], reps: Replicates, evidence: str,
              not_applicable: str = "", page: str = "03_bound", statement: str = "", role: str = "claim",
              finding: str = "") -> dict:
    """A bound verdict row: ``holds`` on the full sample, then on each resample of the units;
    support is the share of resamples in which the claim holds (the full sample's answer with one
    unit). With ``not_applicable`` (why: which precondition fails, where) the verdict is ``not
    applicable``."""
    common = {"statement": statement, "role": role, "claim": name, "source": source, "basis": basis,
              "seeds": reps.seeds, "units": reps.units, "unit": reps.unit, "replication": reps.replication,
              "page": page, "finding": finding}
    if not_applicable:
        return {**common, "verdict": "not applicable", "support": math.nan,
                "decided_by": f"not applicable: {not_applicable.split(';')[0]}",
                "evidence": f"{not_applicable}; {evidence}"}
    support = float(np.mean(holds[1:] if len(holds) > 1 else holds[:1]))
    verdict = verdict_of(support, reps.units)
    decided = (f"holds on the full sample only (1 {reps.unit}: no resample)" if reps.units < 2 else
               f"holds in {support:.0%} of {len(holds) - 1} bootstrap resamples of the {reps.units} {reps.unit}s")
    if reps.units == 2:  # a bootstrap of 2 units takes 3 distinct resamples: its share is no probability
        decided = (f"too few runs to tally: holds in {support:.0%} of {len(holds) - 1} bootstrap resamples of 2 "
                   f"{reps.unit}s, which take only 3 distinct values (a look, not evidence)")
        verdict = "too few runs" if verdict in ("reproduced", "refuted") else verdict
    return {**common, "verdict": verdict, "support": support, "decided_by": decided, "evidence": evidence}


__all__ = ["VERDICTS", "ROLES", "ALL_COLUMNS", "COLUMNS", "POOLED", "verdict_of", "Curves", "Means", "Sweep",
           "sweep_varying", "fmt", "unit_resamples", "Replicates", "claim_row"]
