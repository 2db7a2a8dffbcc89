"""The verdict vocabulary and what every verdict is computed from: per-seed curves of the grid,
their seed means, resamples of the seeds, and one table row per claim.

A claim is judged by a bootstrap over seeds: the share of resamples in which it holds is its
support; ``reproduced`` at support >= 0.9, ``refuted`` at <= 0.1, ``inconclusive`` between;
``single seed`` with nothing to resample; ``not applicable`` when the claim's preconditions fail.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bladefl.experiments.grid import Member

VERDICTS = ("reproduced", "refuted", "inconclusive", "too few runs", "single seed", "not applicable")
COLUMNS = ["claim", "source", "basis", "verdict", "support", "seeds", "draws_holding", "across_partitions",
           "page", "evidence"]
POOLED = [c for c in COLUMNS if c not in ("draws_holding", "across_partitions")]


def verdict_of(support: float, seeds: int, reproduced: float = 0.9, refuted: float = 0.1) -> str:
    if seeds < 2:
        return "single seed"
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
    chosen = sorted((m for m in members if m.sweep == names[0]), key=lambda m: m.value)
    return Sweep(param, [float(m.value) for m in chosen], [m.cell.key for m in chosen], [m.cell.beta for m in chosen])



def fmt(x: float) -> float | str:
    return "inf" if math.isinf(x) else float(f"{x:g}")


def seed_draws(S: int, resamples: int, seed: int = 0) -> list[np.ndarray]:
    """Seed indices: the full sample first, then ``resamples`` bootstrap draws of S with
    replacement (none with one seed: nothing to resample)."""
    rng = np.random.default_rng(seed)
    return [np.arange(S)] + ([rng.integers(0, S, S) for _ in range(resamples)] if S > 1 else [])


def claim_row(name: str, source: str, basis: str, holds: Sequence[bool], seeds: int, evidence: str,
         not_applicable: str = "", page: str = "03_bound") -> dict:
    """A verdict row: ``holds`` on the full sample, then on each resample; support is the share of
    resamples in which the claim holds (the full sample's answer with one seed). With
    ``not_applicable`` (why: which precondition fails, where) the verdict is ``not applicable``."""
    if not_applicable:
        return {"claim": name, "source": source, "basis": basis, "verdict": "not applicable", "support": math.nan,
                "seeds": seeds, "page": page, "evidence": f"{not_applicable}; {evidence}"}
    support = float(np.mean(holds[1:] if len(holds) > 1 else holds[:1]))
    return {"claim": name, "source": source, "basis": basis, "verdict": verdict_of(support, seeds),
            "support": support, "seeds": seeds, "page": page, "evidence": evidence}


__all__ = ["VERDICTS", "COLUMNS", "POOLED", "verdict_of", "Curves", "Means", "Sweep", "sweep_varying", "fmt",
           "seed_draws", "claim_row"]
