"""Every claim of the paper that the grid can test, one verdict table per dataset.

- The experiment's claims (:mod:`experiment_verdicts`): paired trend tests over independent units
  (partition draws holding several seeds, else runs), p-values with the false discovery rate
  controlled over the dataset's claims, effects with intervals, an equivalence margin; verdicts
  ``reproduced``, ``refuted``, ``inconclusive``, ``too few runs``. Claims that follow from another
  are ``derived`` and counted once. Where draws hold several seeds each claim is tested again
  inside each draw (``draws_holding``, ``across_partitions``).
- The bound's claims (:mod:`bound_verdicts`): the bound fitted to each bootstrap resample of the
  seeds; the share of resamples in which a claim holds is its support (``reproduced`` at >= 0.9,
  ``refuted`` at <= 0.1, ``inconclusive`` between, ``single seed`` with one seed); ``not
  applicable`` where the bound's preconditions fail.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from bladefl.experiments.bound_verdicts import (
    BoundCell,
    CellFit,
    bound_cells_of,
    bound_claims,
    bound_corollaries,
    cell_fit,
    eta_claim,
)
from bladefl.experiments.experiment_verdicts import EXPERIMENT_VERDICTS, experiment_verdicts, per_draw
from bladefl.experiments.grid import Member
from bladefl.experiments.trend import Margins
from bladefl.experiments.verdict_rows import COLUMNS, POOLED, VERDICTS, Curves, seed_draws, verdict_of

ALL_COLUMNS = ["claim", "source", "basis", "verdict", "p_claim", "p_opposite", "effect", "effect_low", "effect_high",
               "units", "unit", "support", "seeds", "derived_from", "reading_of", "draws_holding", "across_partitions",
               "page", "evidence"]


def all_verdicts(table: pd.DataFrame, members: Sequence[Member], t_sum: float, bound_cells: Sequence[BoundCell],
                 gaps: pd.DataFrame | None, constants: pd.DataFrame | None, resamples: int = 1000,
                 bound_resamples: int = 100, margins: Margins | None = None) -> pd.DataFrame:
    """The verdict table of one dataset: the experiment's claims by paired tests over independent
    units (:mod:`experiment_verdicts`, with each claim tested again inside each partition draw
    where draws hold several seeds), then the bound's claims (a bootstrap over seeds refitting the
    bound, judged on each draw's runs too)."""
    seeds = int(table[table.status == "ok"].seed.nunique())
    experiment = per_draw(experiment_verdicts(table, members, t_sum, margins), table, members, t_sum, margins)
    experiment = experiment.assign(support=math.nan, seeds=seeds)
    frames = [experiment]
    pooled = pooled_verdicts(table, members, t_sum, bound_cells, gaps, constants, resamples, bound_resamples)
    if len(pooled):
        draws = sorted(table.partition.unique()) if "partition" in table else [0]
        per = {} if len(draws) < 2 else {
            # each draw's verdict only (its evidence is not kept): no scan of the constants, the full sample's
            int(d): pooled_verdicts(table[table.partition == d], members, t_sum, bound_cells, gaps, constants, 0, 0,
                                    scan_constants=False)
            for d in draws}
        bound = across_partitions(pooled, per)
        frames.append(bound.assign(p_claim=math.nan, p_opposite=math.nan, effect=math.nan, effect_low=math.nan,
                                   effect_high=math.nan, units=math.nan, unit="", derived_from="",
                                   reading_of=""))
    return pd.concat(frames, ignore_index=True)[ALL_COLUMNS]


def across_partitions(pooled: pd.DataFrame, per_draw: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """``pooled`` with two columns: ``draws_holding`` (on how many partition draws the claim holds,
    each judged on its own runs' seed-mean curves, e.g. "3/5") and ``across_partitions``: "one draw"
    (nothing to compare), "not applicable", "holds on every draw", "fails on every draw" or "flips"
    (a verdict another draw of the same scheme would change)."""
    out = pooled.copy()
    if not per_draw:
        out["draws_holding"], out["across_partitions"] = "", "one draw"
        return out[COLUMNS]
    holding, label = [], []
    for _, row in pooled.iterrows():
        found = [frame.loc[frame.claim == row.claim] for frame in per_draw.values()]
        applicable = [f.iloc[0] for f in found if len(f) and f.iloc[0].verdict != "not applicable"]
        holds = sum(bool(r.support >= 0.5) for r in applicable)
        holding.append(f"{holds}/{len(applicable)}" if applicable else "")
        if row.verdict == "not applicable" or not applicable:
            label.append("not applicable")
        elif holds == len(applicable):
            label.append("holds on every draw")
        else:
            label.append("fails on every draw" if holds == 0 else "flips")
    out["draws_holding"], out["across_partitions"] = holding, label
    return out[COLUMNS]


def pooled_verdicts(table: pd.DataFrame, members: Sequence[Member], t_sum: float, bound_cells: Sequence[BoundCell],
                    gaps: pd.DataFrame | None, constants: pd.DataFrame | None, resamples: int = 1000,
                    bound_resamples: int = 100, scan_constants: bool = True) -> pd.DataFrame:
    """The bound's verdict rows of the runs in ``table`` (when the bound's constants were
    measured): the Fig. 3 claims and the corollaries on the bound, the bound fitted once per bound
    cell and (re)sample of seeds. With no resamples, each claim's support is its answer on the
    full sample (1 or 0)."""
    if gaps is None or constants is None or not bound_cells:
        return pd.DataFrame(columns=POOLED)
    curves = Curves.from_table(table)
    S = len(curves.seeds)
    draws = seed_draws(S, bound_resamples)
    fits = [[cell_fit(gaps, constants, c, [curves.seeds[i] for i in rows]) for c in bound_cells] for rows in draws]
    k_exp = [[curves.mean(rows).k_star(c.cell) for c in bound_cells] for rows in draws]
    return pd.concat([bound_claims(fits, k_exp, S), bound_corollaries(fits, members, S, scan_constants),
                      eta_claim(fits, members, S)], ignore_index=True)


__all__ = ["ALL_COLUMNS", "VERDICTS", "EXPERIMENT_VERDICTS", "COLUMNS", "across_partitions", "pooled_verdicts",
           "verdict_of", "Curves", "all_verdicts", "BoundCell", "CellFit", "cell_fit", "bound_claims",
           "bound_corollaries", "bound_cells_of", "Margins"]
