"""The bound fitted to one bound cell's runs: the cell (its settings), the fit on a (re)sample of the
independent units (mean gap per K, median measured constants, the tightest upper fit), the cell a
corollary is judged on, the values it is judged at, and the fitted bound's parameters as the
theory's functions take them. :mod:`.bound` judges the statements on these fits."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from bladefl.experiments.plan.grid import Member
from bladefl.experiments.tables.bound_analysis import BoundOn, bound_on
from bladefl.experiments.verdicts.vocabulary import sweep_varying
from bladefl.fl import constants_against
from bladefl.theory.fit import Fit, fit_minimax

MEASURED = ("L", "xi", "delta", "theta", "phi_measured", "eps2_measured", "noise_norm")


@dataclass(frozen=True)
class BoundCell:
    cell: str
    alpha: float
    beta: float
    eta: float
    t_sum: float
    M: float
    N: float
    sigma2: float


@dataclass(frozen=True)
class CellFit:
    """One bound cell on one (re)sample: the mean gap per K, the median measured constants, the
    bound's fixed arguments, and its upper fit (None where none exists)."""

    cell: BoundCell
    K: np.ndarray
    gap: np.ndarray
    constants: dict[str, float]
    common: dict[str, float]
    fit: Fit | None
    bound: BoundOn | None = None  # the fit and the measured bound against the gaps (bound_analysis.bound_on)
    against: str = constants_against.AGAINST  # what L, xi, delta were measured against (constants.csv)


def cell_fit(gaps: pd.DataFrame, constants: pd.DataFrame, cell: BoundCell, seeds: Sequence[int]) -> CellFit:
    """``seeds``: the runs of the (re)sample, a run as often as it was drawn."""
    part = gaps[gaps.cell == cell.cell]
    per_seed = {s: part[part.seed == s].set_index("K").gap for s in set(seeds)}
    Ks = sorted(set().union(*(set(v.index) for v in per_seed.values())))
    gap = np.array([np.nanmean([per_seed[s].get(k, np.nan) for s in seeds]) for k in Ks])
    consts = constants[(constants.cell == cell.cell) & constants.seed.isin(seeds)]
    c = {k: float(consts[k].median()) if k in consts else math.nan for k in MEASURED}
    common: dict[str, Any] = dict(alpha=cell.alpha, beta=cell.beta, eta=cell.eta, L=c["L"], xi=c["xi"],
                                  delta=c["delta"], t_sum=cell.t_sum, M=cell.M, N=cell.N, theta=c["theta"],
                                  sigma2=cell.sigma2)
    K = np.asarray(Ks, dtype=float)
    if cell.M > 0 and "theta_last" in part:  # the plagiarism distance at each K's last round, as the bound page
        per_k = part[part.seed.isin(seeds)].groupby("K").theta_last.median()
        common = {**common, "theta": np.array([float(per_k.get(k, c["theta"])) for k in Ks])}
    bound = bound_on(K, gap, common, c["phi_measured"], c["eps2_measured"], fitter=fit_minimax)
    against = (", ".join(sorted(map(str, consts.against.unique()))) if "against" in consts
               else constants_against.LEGACY)
    return CellFit(cell, K, gap, c, common, bound.fit, bound, against)


LAZY_PARAMS = ("lazy_ratio", "sigma2")  # judged on a lazy bound cell's constants (theta, sigma2 > 0)


def base_cell(fits: Sequence[CellFit], param: str) -> CellFit:
    """The bound cell a corollary is judged on: a lazy cell (M > 0) for M/N and sigma2, whose
    theta and noise the lazy terms need; the first cell otherwise."""
    if param in LAZY_PARAMS:
        return next((f for f in fits if f.cell.M > 0), fits[0])
    return fits[0]


def corollary_values(members: Sequence[Member], param: str, delta: float) -> list[float]:
    """The values a corollary is judged at: its sweep's; delta, which no sweep varies, at half,
    once and twice the measured value."""
    sweep = sweep_varying(members, param)
    return sweep.values if sweep else ([0.5 * delta, delta, 2 * delta] if param == "delta" else [])


def fitted_base(f: CellFit) -> dict[str, float]:
    c = f.constants
    return {**{k: f.common[k] for k in ("alpha", "beta", "eta", "L", "xi", "delta", "t_sum")},
            "phi": f.fit.phi if f.fit else math.nan, "eps2": f.fit.eps2 if f.fit else math.nan, "M": f.cell.M,
            "N": f.cell.N, "theta": c["theta"], "sigma2": f.cell.sigma2}


def bound_cells_of(members: Sequence[Member], sweep: str, t_sum: float) -> list[BoundCell]:
    cells = [m.cell for m in members if m.sweep == sweep]
    return [BoundCell(c.key, c.alpha, c.beta, c.eta, t_sum, round(c.lazy_ratio * c.N), c.N, c.sigma2) for c in cells]
