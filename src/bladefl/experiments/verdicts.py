"""Every claim of the paper that the grid can test, with one verdict path and its uncertainty.

Each claim is a function of seed-mean curves (training loss and test accuracy per cell and K).
K* is an argmin over a noisy curve, so a claim is judged by a bootstrap over seeds: resample
the seeds with replacement, recompute the seed-mean curves and the claim; the share of resamples
in which it holds is its support. ``reproduced`` at support >= 0.9, ``refuted`` at <= 0.1,
``inconclusive`` between; with one seed there is nothing to resample: ``single seed``, support
1 or 0 from that seed alone. ``not applicable``: the claim's preconditions fail (the measured
bound is undefined at some K: its bracket is not positive there, so it bounds nothing), which
is not a refutation; the evidence names where.

With partition replicates (run seeds paired with draws of the same non-IID scheme), each claim is
judged again on each draw's runs alone (full sample, no resampling): ``draws_holding`` says on how
many draws it holds and ``across_partitions`` whether it holds on every draw, fails on every draw
or flips with the draw.

Sweeps are found by the parameter they vary; the bound's cells (Fig. 3) are the config's
``bound_sweep`` and their claims live in :mod:`bound_verdicts`; the vocabulary, curves and rows
in :mod:`verdict_rows`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bladefl.experiments.bound_verdicts import (
    BoundCell,
    CellFit,
    bound_cells_of,
    bound_claims,
    bound_corollaries,
    cell_fit,
)
from bladefl.experiments.grid import Member
from bladefl.experiments.verdict_rows import (
    COLUMNS,
    POOLED,
    VERDICTS,
    Curves,
    Means,
    Sweep,
    claim_row,
    fmt,
    seed_draws,
    sweep_varying,
    verdict_of,
)
from bladefl.theory.claims import COROLLARIES, monotone


@dataclass(frozen=True)
class Claim:
    name: str
    source: str
    basis: str  # experiment | bound
    check: Callable[[Means], tuple[bool, str]]
    page: str = "02_sweeps"  # the report page (notebook) whose figures it rests on


def page_of(param: str) -> str:
    """The report page showing a sweep of ``param``: privacy for epsilon, the sweeps page else."""
    return "04_privacy" if param == "epsilon" else "02_sweeps"


def _direction(param: str, quantity: str, direction: str, sweep: Sweep, t_sum: float,
               noise: Callable[[Sweep, str], list[float]] | None = None) -> Callable[[Means], tuple[bool, str]]:
    tolerance = noise(sweep, quantity) if noise is not None and quantity in ("min_loss", "max_accuracy") else 0.0

    def check(m: Means) -> tuple[bool, str]:
        ks = [m.k_star(c) for c in sweep.cells]
        if quantity == "K":
            ys = ks
        elif quantity == "mining_time":
            ys = [b * k for b, k in zip(sweep.betas, ks, strict=True)]
        elif quantity == "training_time":  # the paper's tau*alpha*K* = t_sum - beta*K*
            ys = [t_sum - b * k for b, k in zip(sweep.betas, ks, strict=True)]
        elif quantity == "min_loss":
            ys = [m.min_loss(c) for c in sweep.cells]
        else:  # max_accuracy
            ys = [m.max_accuracy(c) for c in sweep.cells]
        v = monotone(param, "experiment", sweep.values, ys, direction, tolerance)
        shown = [round(y, 4) for y in ys]
        return v.holds, f"{param} = {[fmt(x) for x in sweep.values]} -> {quantity} = {shown} ({v.detail})"
    return check



def step_noise(curves: Curves) -> Callable[[Sweep, str], list[float]]:
    """For a sweep's measured optimum (minimal loss, maximal accuracy), the tolerance of each step
    between neighbouring values: two standard errors of the difference, from the per-seed optima
    (0 with one seed). A step against the claimed direction within it is a tie, not a break."""
    def noise(sweep: Sweep, quantity: str) -> list[float]:
        index = [curves.cells.index(c) for c in sweep.cells]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            per_seed = (np.nanmin(curves.loss[index], axis=2) if quantity == "min_loss"
                        else np.nanmax(curves.accuracy[index], axis=2))  # [cell, seed]
        S = per_seed.shape[1]
        se = np.nanstd(per_seed, axis=1, ddof=1) / math.sqrt(S) if S > 1 else np.zeros(len(index))
        return [2 * math.sqrt(a**2 + b**2) for a, b in zip(se[:-1], se[1:], strict=True)]
    return noise


# The paper's table of each swept parameter (a corollary's experimental evidence).
TABLE_OF = {"alpha": "Table II", "beta": "Table III", "N": "Table IV", "eta": "Table V", "lazy_ratio": "Table VI",
            "sigma2": "Table VII"}


def experiment_claims(members: Sequence[Member], t_sum: float, curves: Curves | None = None) -> list[Claim]:
    specs = [(c.name, f"{c.source}, {TABLE_OF[c.param]}{' text' if c.quantity == 'mining_time' else ''}", c.param,
              c.quantity, c.direction) for c in COROLLARIES if c.param in TABLE_OF]
    specs += [
        ("τ·α·K* rises with alpha", "Corollary 1, Table II text", "alpha", "training_time", "rises"),
        ("τ·α·K* rises with M/N", "Table VI text", "lazy_ratio", "training_time", "rises"),
        ("τ·α·K* rises with sigma2", "Table VII text", "sigma2", "training_time", "rises"),
        ("the loss falls as N grows", "Fig. 4 text", "N", "min_loss", "falls"),
        ("the loss grows with alpha", "Fig. 6 text", "alpha", "min_loss", "rises"),
        ("the loss grows with beta", "Fig. 7 text", "beta", "min_loss", "rises"),
        ("the loss grows with M/N", "Fig. 8 text", "lazy_ratio", "min_loss", "rises"),
        ("the loss grows with sigma2", "Fig. 9 text", "sigma2", "min_loss", "rises"),
        ("accuracy rises with epsilon", "Section VII, Fig. 10", "epsilon", "max_accuracy", "rises"),
    ]
    claims = []
    for name, source, param, quantity, direction in specs:
        sweep = sweep_varying(members, param)
        if sweep is not None and len(sweep.values) >= 2:
            noise = step_noise(curves) if curves is not None else None
            check = _direction(param, quantity, direction, sweep, t_sum, noise)
            claims.append(Claim(name, source, "experiment", check, page_of(param)))
    n_sweep = sweep_varying(members, "N")
    if n_sweep is not None and sum(v >= 20 for v in n_sweep.values) >= 2:
        def settles(m: Means, s: Sweep = n_sweep) -> tuple[bool, str]:
            ks = [m.k_star(c) for v, c in zip(s.values, s.cells, strict=True) if v >= 20]
            return len(set(ks)) == 1, f"N >= 20: {[fmt(v) for v in s.values if v >= 20]} -> K* = {ks}"
        claims.append(Claim("K* settles for N >= 20", "Fig. 4 text, Corollary 3", "experiment", settles))
    eta = sweep_varying(members, "eta")
    if eta is not None and len(eta.values) >= 3:
        def eta_loss(m: Means, s: Sweep = eta) -> tuple[bool, str]:
            ys = [m.min_loss(c) for c in s.cells]
            below = [y for v, y in zip(s.values, ys, strict=True) if v < 0.1]
            falls = monotone("eta", "experiment", [v for v in s.values if v < 0.1], below, "falls").holds
            at_01 = [y for v, y in zip(s.values, ys, strict=True) if v >= 0.1]
            rises_at_01 = not at_01 or at_01[0] > below[-1]
            shown = [round(y, 4) for y in ys]
            return falls and rises_at_01, f"eta = {[fmt(v) for v in s.values]} -> min loss = {shown}"
        claims.append(Claim("the loss falls as eta grows, except at eta = 0.1", "Fig. 5 text", "experiment", eta_loss))
    eps = sweep_varying(members, "epsilon")
    if eps is not None and len(eps.values) >= 2:
        def eps_k(m: Means, s: Sweep = eps) -> tuple[bool, str]:
            ks = [m.k_star(c) for c in s.cells]
            return max(ks) - min(ks) <= 1, f"epsilon = {[fmt(v) for v in s.values]} -> K* = {ks} (holds if spread <= 1)"
        claims.append(Claim("K* does not depend on epsilon", "Section VII, Fig. 10", "experiment", eps_k, "04_privacy"))
    return claims


def convexity_claim(curves: Curves, cells: Sequence[str]) -> Claim:
    """Theorem 2 on the experiment: every cell's seed-mean loss curve is convex in K, up to a
    tolerance of two standard errors (over seeds) of each second difference."""
    index = [curves.cells.index(c) for c in cells]
    d2_seeds = curves.loss[index][:, :, :-2] - 2 * curves.loss[index][:, :, 1:-1] + curves.loss[index][:, :, 2:]
    S = len(curves.seeds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        tol = 2 * np.nanstd(d2_seeds, axis=1) / math.sqrt(max(S, 1)) if S > 1 else np.zeros(d2_seeds[:, 0].shape)

    def check(m: Means) -> tuple[bool, str]:
        loss = m.loss[index]
        d2 = loss[:, :-2] - 2 * loss[:, 1:-1] + loss[:, 2:]
        bad = np.isfinite(d2) & (d2 < -tol - 1e-12)
        broken = [cells[i] for i in np.flatnonzero(bad.any(axis=1))]
        return not broken, f"{len(broken)} of {len(cells)} cells non-convex" + (f": {broken[:3]}" if broken else "")
    return Claim("the training loss is convex in K", "Theorem 2", "experiment", check)


def bootstrap(curves: Curves, claims: Sequence[Claim], resamples: int, seed: int = 0) -> pd.DataFrame:
    """Each claim on the full sample (its evidence) and its support over seed resamples."""
    means = [curves.mean(d) for d in seed_draws(len(curves.seeds), resamples, seed)]
    rows = []
    for claim in claims:
        checks = [claim.check(m) for m in means]
        rows.append(claim_row(claim.name, claim.source, claim.basis, [ok for ok, _ in checks], len(curves.seeds),
                         checks[0][1], page=claim.page))
    return pd.DataFrame(rows, columns=POOLED)


def all_verdicts(table: pd.DataFrame, members: Sequence[Member], t_sum: float, bound_cells: Sequence[BoundCell],
                 gaps: pd.DataFrame | None, constants: pd.DataFrame | None, resamples: int = 1000,
                 bound_resamples: int = 100) -> pd.DataFrame:
    """The verdict table of one dataset (:func:`pooled_verdicts` over every run) with, per claim,
    whether it holds on each partition draw (:func:`across_partitions`)."""
    pooled = pooled_verdicts(table, members, t_sum, bound_cells, gaps, constants, resamples, bound_resamples)
    draws = sorted(table.partition.unique()) if "partition" in table else [0]
    every = Curves.from_table(table) if len(draws) > 1 else None  # the noise every draw is judged with
    per_draw = {} if every is None else {
        int(d): pooled_verdicts(table[table.partition == d], members, t_sum, bound_cells, gaps, constants, 0, 0,
                                noise=every)
        for d in draws}
    return across_partitions(pooled, per_draw)


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
                    bound_resamples: int = 100, noise: Curves | None = None) -> pd.DataFrame:
    """The verdict table of the runs in ``table``: experiment claims, convexity, and (when the
    bound's constants were measured) the Fig. 3 claims and the corollaries on the bound. The bound
    is fitted once per bound cell and draw, for both. With no resamples, each claim's support is
    its answer on the full sample (1 or 0). ``noise``: the curves whose seed-to-seed spread sets the
    tolerance of the noisy claims (a step within it is a tie); by default ``table``'s own; a
    partition draw's verdict uses every run's, so that it is judged by the pooled verdict's rule
    (one seed on a draw has no spread of its own)."""
    curves = Curves.from_table(table)
    reference = noise if noise is not None else curves
    claims = experiment_claims(members, t_sum, reference)
    claims.append(convexity_claim(reference, sorted({m.cell.key for m in members})))
    frames = [bootstrap(curves, claims, resamples)]
    if gaps is not None and constants is not None and bound_cells:
        S = len(curves.seeds)
        draws = seed_draws(S, bound_resamples)
        fits = [[cell_fit(gaps, constants, c, [curves.seeds[i] for i in rows]) for c in bound_cells] for rows in draws]
        k_exp = [[curves.mean(rows).k_star(c.cell) for c in bound_cells] for rows in draws]
        frames.append(bound_claims(fits, k_exp, S))
        frames.append(bound_corollaries([row[0] for row in fits], members, S))
    return pd.concat(frames, ignore_index=True)


__all__ = ["VERDICTS", "COLUMNS", "across_partitions", "pooled_verdicts", "verdict_of", "Curves", "Means", "Sweep",
           "sweep_varying", "Claim", "experiment_claims", "convexity_claim", "seed_draws", "bootstrap", "BoundCell",
           "CellFit", "cell_fit", "bound_claims", "bound_corollaries", "all_verdicts", "bound_cells_of"]
