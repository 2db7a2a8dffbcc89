"""The independent units of a verdict: what was replicated independently, and their curves.

With several run seeds on each of several partition draws (``config/paper.yaml``'s crossed
design) the unit is the draw, its value the seed-mean curve of its runs: the seeds inside a draw
are near copies (they share the split) and replicate nothing the draw does not. With one seed per
draw (the default design pairs seed i with draw i) each run is a unit. With one draw and several
seeds (the authors' design) the runs are the units, and every verdict speaks for that one
partition (:func:`replication` says so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from bladefl.experiments.tables.tidy import draws_are_units, seeds_per_draw
from bladefl.experiments.verdicts.vocabulary import Curves, Means, Replicates


def replication(table: pd.DataFrame) -> Replicates:
    """The replication of ``table``'s runs (status ok), in words a reader takes as meant:
    "5 draws (4 seeds each)", "20 runs (one seed on each draw)", "20 runs on one partition draw
    (speaks for that partition)"."""
    ok = table[table.status == "ok"]
    seeds = int(ok.seed.nunique()) if len(ok) else 0
    per = seeds_per_draw(ok)
    if draws_are_units(ok):
        lo, hi = int(per.min()), int(per.max())
        each = f"{lo} seeds each" if lo == hi else f"{lo}-{hi} seeds each"
        return Replicates(len(per), "draw", seeds, f"{len(per)} draws ({each})")
    if len(per) == 1 and seeds > 1:
        return Replicates(seeds, "run", seeds, f"{seeds} runs on one partition draw (speaks for that partition)")
    noun = "run" if seeds == 1 else "runs"
    suffix = " (one seed on each draw)" if len(per) > 1 else ""
    return Replicates(seeds, "run", seeds, f"{seeds} {noun}{suffix}")


def unit_groups(table: pd.DataFrame, seeds: Sequence[int]) -> list[list[int]]:
    """Each independent unit's positions in ``seeds`` (the curves' seed order): a draw's seeds
    where draws are the units, else one run each."""
    ok = table[table.status == "ok"]
    if not draws_are_units(ok):
        return [[i] for i in range(len(seeds))]
    draw_of = ok.drop_duplicates("seed").set_index("seed").partition
    index = {int(s): i for i, s in enumerate(seeds)}
    groups: dict[int, list[int]] = {}
    for s in seeds:
        groups.setdefault(int(draw_of[s]), []).append(index[int(s)])
    return [groups[d] for d in sorted(groups)]


@dataclass(frozen=True)
class Units:
    """Per-unit curves (:class:`Curves` whose "seeds" are the units) and what a unit is."""

    curves: Curves
    kind: str  # "draw" (its runs' seed mean) | "run"
    labels: list[str]
    seeds_per_unit: int
    replication: str = ""

    @classmethod
    def from_table(cls, table: pd.DataFrame, runs: bool = False) -> Units:
        """Draws as units where several draws each hold at least two seeds, else (or with
        ``runs``) runs."""
        ok = table[table.status == "ok"]
        reps = replication(ok)
        if not runs and draws_are_units(ok):
            mean = ok.groupby(["cell", "partition", "K"], as_index=False)[["train_loss", "test_accuracy"]].mean()
            curves = Curves.from_table(mean.assign(seed=mean.partition, status="ok"))
            return cls(curves, "draw", [f"draw {u}" for u in curves.seeds], int(seeds_per_draw(ok).min()),
                       reps.replication)
        curves = Curves.from_table(ok)
        return cls(curves, "run", [f"seed {u}" for u in curves.seeds], 1,
                   reps.replication if not runs else f"{len(curves.seeds)} runs")

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
                out[u, j] = _quantity(m, cell, quantity, beta, t_sum)
        return out


def _quantity(m: Means, cell: str, quantity: str, beta: float, t_sum: float) -> float:
    if quantity in ("K", "mining_time", "training_time"):
        k = m.k_star(cell)
        return k if quantity == "K" else beta * k if quantity == "mining_time" else t_sum - beta * k
    if quantity == "K_accuracy":
        return m.k_star_accuracy(cell)
    if quantity == "min_loss":
        return m.min_loss(cell)
    if quantity == "max_accuracy":
        return m.max_accuracy(cell)
    return math.nan


__all__ = ["Units", "replication", "unit_groups"]
