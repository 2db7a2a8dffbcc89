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
``bound_sweep``. The bound claims fit the bound to the seed-mean gap F(w^K) - F* of each
resample as an upper bound (``theory.fit``), with the median of the resampled seeds' measured
constants.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bladefl.experiments.bound_analysis import BoundOn, bound_on
from bladefl.experiments.grid import Member
from bladefl.theory.certificate import certificate
from bladefl.theory.claims import COROLLARIES, monotone, on_bound, sweep_point
from bladefl.theory.fit import Fit

VERDICTS = ("reproduced", "refuted", "inconclusive", "single seed", "not applicable")
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
        return v.holds, f"{param} = {[_g(x) for x in sweep.values]} -> {quantity} = {shown} ({v.detail})"
    return check


def _g(x: float) -> float | str:
    return "inf" if math.isinf(x) else float(f"{x:g}")


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
            return len(set(ks)) == 1, f"N >= 20: {[_g(v) for v in s.values if v >= 20]} -> K* = {ks}"
        claims.append(Claim("K* settles for N >= 20", "Fig. 4 text, Corollary 3", "experiment", settles))
    eta = sweep_varying(members, "eta")
    if eta is not None and len(eta.values) >= 3:
        def eta_loss(m: Means, s: Sweep = eta) -> tuple[bool, str]:
            ys = [m.min_loss(c) for c in s.cells]
            below = [y for v, y in zip(s.values, ys, strict=True) if v < 0.1]
            falls = monotone("eta", "experiment", [v for v in s.values if v < 0.1], below, "falls").holds
            at_01 = [y for v, y in zip(s.values, ys, strict=True) if v >= 0.1]
            rises_at_01 = not at_01 or at_01[0] > below[-1]
            return falls and rises_at_01, f"eta = {[_g(v) for v in s.values]} -> min loss = {[round(y, 4) for y in ys]}"
        claims.append(Claim("the loss falls as eta grows, except at eta = 0.1", "Fig. 5 text", "experiment", eta_loss))
    eps = sweep_varying(members, "epsilon")
    if eps is not None and len(eps.values) >= 2:
        def eps_k(m: Means, s: Sweep = eps) -> tuple[bool, str]:
            ks = [m.k_star(c) for c in s.cells]
            return max(ks) - min(ks) <= 1, f"epsilon = {[_g(v) for v in s.values]} -> K* = {ks} (holds if spread <= 1)"
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


def seed_draws(S: int, resamples: int, seed: int = 0) -> list[np.ndarray]:
    """Seed indices: the full sample first, then ``resamples`` bootstrap draws of S with
    replacement (none with one seed: nothing to resample)."""
    rng = np.random.default_rng(seed)
    return [np.arange(S)] + ([rng.integers(0, S, S) for _ in range(resamples)] if S > 1 else [])


def _row(name: str, source: str, basis: str, holds: Sequence[bool], seeds: int, evidence: str,
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


def bootstrap(curves: Curves, claims: Sequence[Claim], resamples: int, seed: int = 0) -> pd.DataFrame:
    """Each claim on the full sample (its evidence) and its support over seed resamples."""
    means = [curves.mean(d) for d in seed_draws(len(curves.seeds), resamples, seed)]
    rows = []
    for claim in claims:
        checks = [claim.check(m) for m in means]
        rows.append(_row(claim.name, claim.source, claim.basis, [ok for ok, _ in checks], len(curves.seeds),
                         checks[0][1], page=claim.page))
    return pd.DataFrame(rows, columns=POOLED)


# --- the bound (Fig. 3) ------------------------------------------------------------------------


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
    """One bound cell on one (re)sample of seeds: the seed-mean gap per K, the median measured
    constants, the bound's fixed arguments, and its upper fit (None where none exists)."""

    cell: BoundCell
    K: np.ndarray
    gap: np.ndarray
    constants: dict[str, float]
    common: dict[str, float]
    fit: Fit | None
    bound: BoundOn | None = None  # the fit and the measured bound against the gaps (bound_analysis.bound_on)


def cell_fit(gaps: pd.DataFrame, constants: pd.DataFrame, cell: BoundCell, seeds: Sequence[int]) -> CellFit:
    part = gaps[gaps.cell == cell.cell]
    per_seed = {s: part[part.seed == s].set_index("K").gap for s in set(seeds)}
    Ks = sorted(set().union(*(set(v.index) for v in per_seed.values())))
    gap = np.array([np.nanmean([per_seed[s].get(k, np.nan) for s in seeds]) for k in Ks])
    consts = constants[(constants.cell == cell.cell) & constants.seed.isin(seeds)]
    c = {k: float(consts[k].median()) for k in ("L", "xi", "delta", "theta", "phi_measured", "eps2_measured")}
    common = dict(alpha=cell.alpha, beta=cell.beta, eta=cell.eta, L=c["L"], xi=c["xi"], delta=c["delta"],
                  t_sum=cell.t_sum, M=cell.M, N=cell.N, theta=c["theta"], sigma2=cell.sigma2)
    K = np.asarray(Ks, dtype=float)
    bound = bound_on(K, gap, common, c["phi_measured"], c["eps2_measured"])
    return CellFit(cell, K, gap, c, common, bound.fit, bound)


def _fig3_checks(f: CellFit, exp_k: float) -> dict:
    """Fig. 3's checks of one cell on one resample: the upper fit's worst relative excess, whether
    the measured bound is defined and above at every K, the fitted bound's K* and the experiment's."""
    b = f.bound if f.bound is not None else bound_on(f.K, f.gap, f.common, f.constants["phi_measured"],
                                                     f.constants["eps2_measured"])
    finite_meas = bool(np.isfinite(b.G_measured[np.isfinite(f.gap)]).all())
    return {"within": b.fitted.max_relative_gap, "above": b.measured.bound_above_everywhere and finite_meas,
            "k_fit": b.k_star_fit, "k_exp": exp_k, "undefined": b.undefined_measured}


def certificate_of(cell: BoundCell, k_experiment: float) -> str:
    """What no choice of constants can do in ``cell`` (:mod:`bladefl.theory.certificate`)."""
    cert = certificate(alpha=cell.alpha, beta=cell.beta, t_sum=cell.t_sum, lazy=cell.M > 0)
    return f"{cell.cell}: {cert.summary(k_experiment)}"


def bound_claims(fits: Sequence[Sequence[CellFit]], k_exp: Sequence[Sequence[float]], seeds: int,
                 within: float = 0.05) -> pd.DataFrame:
    """Fig. 3's three claims over the bound cells: the upper fit within ``within`` of the
    experiment at every feasible K; the measured bound (every constant measured) above the
    experiment at every K; the fitted bound's K* equal to the experiment's. ``fits[d][c]`` and
    ``k_exp[d][c]``: draw d (the full sample first), bound cell c."""
    results = [[_fig3_checks(f, k) for f, k in zip(row, ks, strict=True)] for row, ks in zip(fits, k_exp, strict=True)]
    full = results[0]
    names = ", ".join(f.cell.cell for f in fits[0])
    empty = [f"{f.cell.cell} at K = {x['undefined']}" for f, x in zip(fits[0], full, strict=True) if x["undefined"]]
    empty_reason = ("with every constant measured the bound's bracket eta phi - xi h(tau) / (tau eps2) is not "
                    "positive, so the bound is undefined (bounds nothing), in " + "; ".join(empty)) if empty else ""
    certified = [certificate_of(f.cell, x["k_exp"]) for f, x in zip(fits[0], full, strict=True)]
    specs = [
        (f"the bound is within {within:.0%} of the experiment", "Fig. 3",
         lambda r: all(x["within"] <= within for x in r),
         f"max relative excess of the upper fit per cell: {[round(x['within'], 3) for x in full]}", ""),
        ("the bound is above the experiment at every K", "Fig. 3",
         lambda r: all(x["above"] for x in r),
         f"measured-constants bound above and defined at every K, per cell: {[x['above'] for x in full]}",
         empty_reason),
        ("the bound's K* is the experiment's K*", "Fig. 3, Theorem 3",
         lambda r: all(x["k_fit"] == x["k_exp"] for x in r),
         f"K* of the upper fit {[x['k_fit'] for x in full]} vs experiment {[x['k_exp'] for x in full]}; for any "
         f"constants: {' / '.join(certified)}", ""),
    ]
    rows = [_row(name, source, "bound", [holds(r) for r in results], seeds, f"{evidence} (cells: {names})", why)
            for name, source, holds, evidence, why in specs]
    return pd.DataFrame(rows, columns=POOLED)


def _corollaries_on(f: CellFit, members: Sequence[Member]) -> dict[str, tuple[bool, list[float], list[float], str]]:
    """Each corollary (:data:`bladefl.theory.claims.COROLLARIES`) on one resample's fitted bound of
    the base cell (:func:`bladefl.theory.claims.on_bound`, integer tau): K* over the swept
    values (delta, which no sweep varies: half, once and twice the measured value)."""
    if f.fit is None:
        return {}
    c = f.constants
    base = {**{k: f.common[k] for k in ("alpha", "beta", "eta", "L", "xi", "delta", "t_sum")},
            "phi": f.fit.phi, "eps2": f.fit.eps2, "M": f.cell.M, "N": f.cell.N, "theta": c["theta"],
            "sigma2": f.cell.sigma2}
    results = {}
    for claim in COROLLARIES:
        sweep = sweep_varying(members, claim.param)
        values = sweep.values if sweep else ([0.5 * c["delta"], c["delta"], 2 * c["delta"]]
                                             if claim.param == "delta" else [])
        if len(values) < 2:
            continue
        v = on_bound(claim, base, values)
        results[claim.name] = (v.holds, values, v.y if claim.quantity == "K" else
                               [y / sweep_point(base, claim.param, x)["beta"] for x, y in zip(v.x, v.y, strict=True)],
                               v.detail)
    return results


def bound_corollaries(base_fits: Sequence[CellFit], members: Sequence[Member], seeds: int) -> pd.DataFrame:
    """Corollaries 1-5 on the bound itself: K* (integer tau, the fitted phi and eps2 of the base
    bound cell, median measured constants) over each swept parameter's values; ``base_fits``: the
    base cell's fit per draw (the full sample first)."""
    per_draw = [_corollaries_on(f, members) for f in base_fits]
    full = per_draw[0]
    rows = []
    for claim in COROLLARIES:
        if claim.name not in full:
            continue
        _, values, ks, detail = full[claim.name]
        rows.append(_row(f"{claim.name} (on the bound)", claim.source, "bound",
                         [d.get(claim.name, (False,))[0] for d in per_draw], seeds,
                         f"{claim.param} = {[_g(x) for x in values]} -> K* of the fitted bound = {ks} ({detail}); "
                         f"base cell {base_fits[0].cell.cell}"))
    return pd.DataFrame(rows, columns=POOLED)


def all_verdicts(table: pd.DataFrame, members: Sequence[Member], t_sum: float, bound_cells: Sequence[BoundCell],
                 gaps: pd.DataFrame | None, constants: pd.DataFrame | None, resamples: int = 1000,
                 bound_resamples: int = 100) -> pd.DataFrame:
    """The verdict table of one dataset (:func:`pooled_verdicts` over every run) with, per claim,
    whether it holds on each partition draw (:func:`across_partitions`)."""
    pooled = pooled_verdicts(table, members, t_sum, bound_cells, gaps, constants, resamples, bound_resamples)
    draws = sorted(table.partition.unique()) if "partition" in table else [0]
    per_draw = {} if len(draws) < 2 else {
        int(d): pooled_verdicts(table[table.partition == d], members, t_sum, bound_cells, gaps, constants, 0, 0)
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
                    bound_resamples: int = 100) -> pd.DataFrame:
    """The verdict table of the runs in ``table``: experiment claims, convexity, and (when the
    bound's constants were measured) the Fig. 3 claims and the corollaries on the bound. The bound
    is fitted once per bound cell and draw, for both. With no resamples, each claim's support is
    its answer on the full sample (1 or 0)."""
    curves = Curves.from_table(table)
    claims = experiment_claims(members, t_sum, curves)
    claims.append(convexity_claim(curves, sorted({m.cell.key for m in members})))
    frames = [bootstrap(curves, claims, resamples)]
    if gaps is not None and constants is not None and bound_cells:
        S = len(curves.seeds)
        draws = seed_draws(S, bound_resamples)
        fits = [[cell_fit(gaps, constants, c, [curves.seeds[i] for i in rows]) for c in bound_cells] for rows in draws]
        k_exp = [[curves.mean(rows).k_star(c.cell) for c in bound_cells] for rows in draws]
        frames.append(bound_claims(fits, k_exp, S))
        frames.append(bound_corollaries([row[0] for row in fits], members, S))
    return pd.concat(frames, ignore_index=True)


def bound_cells_of(members: Sequence[Member], sweep: str, t_sum: float) -> list[BoundCell]:
    cells = [m.cell for m in members if m.sweep == sweep]
    return [BoundCell(c.key, c.alpha, c.beta, c.eta, t_sum, round(c.lazy_ratio * c.N), c.N, c.sigma2) for c in cells]


__all__ = ["VERDICTS", "COLUMNS", "across_partitions", "pooled_verdicts", "verdict_of", "Curves", "Means", "Sweep",
           "sweep_varying", "Claim", "experiment_claims", "convexity_claim", "seed_draws", "bootstrap", "BoundCell",
           "CellFit", "cell_fit", "bound_claims", "bound_corollaries", "all_verdicts", "bound_cells_of"]
