"""The paper's qualitative claims as checks that return a verdict and its evidence.

Each check takes (x, y) pairs, from the bound or from experiments, and asks whether y moves
with x in the claimed direction (ties allowed). :data:`COROLLARIES` is the one table of the
corollaries; :func:`on_bound` computes K* over a parameter sweep, the corollaries as properties
of the bound function. The report's verdicts (experiment and fitted bound, with seeds,
:mod:`bladefl.experiments.verdicts`) use this table, :func:`on_bound` and :func:`monotone`. The
claims:

- Corollary 1: K* falls as alpha grows; K* falls as beta grows; beta K* rises with beta.
- Corollary 2: K* rises with delta.            - Corollary 3: K* falls as N grows.
- Corollary 4: K* rises with eta (its proof: falls); the bound falls as eta grows while eta L < 1.
- Corollary 5: K* falls as M/N grows; K* falls as sigma2 grows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from bladefl.theory.bound import k_star_exact, k_star_real, upper_bound


@dataclass(frozen=True)
class Verdict:
    claim: str
    source: str  # "bound" or "experiment"
    holds: bool
    x: list[float] = field(default_factory=list)
    y: list[float] = field(default_factory=list)
    detail: str = ""


def monotone(claim: str, source: str, x: Sequence[float], y: Sequence[float], direction: str,
             tolerance: Sequence[float] | float = 0.0) -> Verdict:
    """``direction``: "rises" or "falls" as x grows: monotone with ties allowed, but not flat
    (a quantity that never changes shows no effect, so it does not support the claim).
    ``tolerance`` (per step between neighbours in x order, or one value): a step against the
    direction no larger than it counts as a tie (noise of a measured quantity); 0 for exact
    quantities such as K*."""
    order = np.argsort(np.asarray(x, dtype=float), kind="stable")
    xs = [float(np.asarray(x, dtype=float)[i]) for i in order]
    ys = [float(np.asarray(y, dtype=float)[i]) for i in order]
    if any(not math.isfinite(v) for v in ys) or len(ys) < 2:
        return Verdict(claim, source, False, xs, ys, "undefined values or fewer than two points")
    steps = np.diff(ys)
    tol = np.broadcast_to(np.asarray(tolerance, dtype=float), steps.shape) + 1e-12
    bad = steps < -tol if direction == "rises" else steps > tol
    flat = bool(np.all(np.abs(steps) <= tol))
    if bad.any():
        detail = "breaks between x=" + ", ".join(f"{xs[i]:g}->{xs[i + 1]:g}" for i in np.flatnonzero(bad))
    else:
        detail = "flat: no change over the sweep" if flat else "monotone"
    return Verdict(claim, source, not bad.any() and not flat, xs, ys, detail)


RESOLUTION = 1e-8  # relative: the real minimiser's golden-section search resolves K* to about sqrt(eps) of itself
FLAT = 1e-6  # relative: a K* that moves less than this over the whole sweep is not resolved (unresolved)


@dataclass(frozen=True)
class Corollary:
    """One of the paper's corollaries: how K* (or beta K*) moves with a parameter."""

    name: str
    source: str
    param: str  # the swept parameter: alpha, beta, delta, N, eta, lazy_ratio, sigma2
    quantity: str  # K | mining_time (beta K*)
    direction: str  # rises | falls
    statement: str = ""  # its id in config/paper_statements.yaml


# The one table of the corollaries: the verdicts judge each on the experiment (where a sweep
# varies its parameter) and on the fitted bound; the tests test these entries.
COROLLARIES = (
    Corollary("K* falls as alpha grows", "Corollary 1", "alpha", "K", "falls", "cor1-alpha"),
    Corollary("K* falls as beta grows", "Corollary 1", "beta", "K", "falls", "cor1-beta"),
    Corollary("β·K* rises with beta", "Corollary 1", "beta", "mining_time", "rises", "cor1-mining"),
    Corollary("K* rises with delta", "Corollary 2", "delta", "K", "rises", "cor2-delta"),
    Corollary("K* falls as N grows", "Corollary 3", "N", "K", "falls", "cor3-N"),
    Corollary("K* rises with eta", "Corollary 4", "eta", "K", "rises", "cor4-eta"),
    # the proof of Corollary 4 concludes the opposite of its statement: judged under that paper error
    Corollary("K* falls as eta grows (Corollary 4's proof)", "Appendix, proof of Corollary 4", "eta", "K", "falls",
              "cor4-proof"),
    Corollary("K* falls as M/N grows", "Corollary 5", "lazy_ratio", "K", "falls", "cor5-MN"),
    Corollary("K* falls as sigma2 grows", "Corollary 5", "sigma2", "K", "falls", "cor5-sigma"),
)


def corollary(name: str) -> Corollary:
    return next(c for c in COROLLARIES if c.name == name)


BOUND_ARGS = ("alpha", "beta", "eta", "L", "xi", "delta", "phi", "eps2", "t_sum")


def sweep_point(base: Mapping[str, Any], param: str, value: Any) -> dict[str, Any]:
    """The bound's arguments at one value of a swept parameter, from a base point (the arguments
    of :func:`k_star_exact` plus M, N, theta, sigma2). N: delta falls as sqrt(N0/N) (the paper's
    argument) and M keeps its ratio; M/N: M = ratio N0 with noise sigma2 of at least 0.01 (Table
    VI's); sigma2: at least M/N = 0.2 (Table VII's); any other parameter is set. Values are numbers,
    or arrays of settings for a parameter other than N, lazy_ratio and sigma2."""
    p = {"M": 0.0, "N": 20.0, "theta": 0.0, "sigma2": 0.0, **base}
    N0, M0 = p["N"], p["M"]
    if param == "N":
        p.update(delta=base["delta"] * math.sqrt(N0 / value), N=value, M=M0 / N0 * value)
    elif param == "lazy_ratio":
        p.update(M=value * N0, sigma2=max(p["sigma2"], 0.01))
    elif param == "sigma2":
        p.update(M=max(M0, 0.2 * N0), sigma2=value)
    else:
        p[param] = value
    return p


def on_bound(claim: Corollary, base: Mapping[str, float], values: Sequence[float], integer: bool = True) -> Verdict:
    """A corollary on the bound: its K* (Theorem 4's bound; over integer K with the paper's tau by
    default, the experiment's time model; ``integer=False``: the real minimiser of the
    continuous analysis) at each value of the parameter (:func:`sweep_point`), and whether it
    moves as claimed."""
    return on_bounds(claim, [base], values, integer)[0]


def on_bounds(claim: Corollary, bases: Sequence[Mapping[str, float]], values: Sequence[float],
              integer: bool = True) -> list[Verdict]:
    """:func:`on_bound` for many base points (a fit's resamples) over one sweep: with ``integer=False``
    every (base, value) setting's real minimiser in one batched :func:`k_star_real` call."""
    points = [sweep_point(base, claim.param, v) for base in bases for v in values]
    lazy = ("M", "N", "theta", "sigma2")
    if integer:
        ks = [k_star_exact(**{key: p[key] for key in (*BOUND_ARGS, *lazy)}, integer=True) for p in points]
    else:
        settings: dict[str, Any] = {key: np.array([float(p[key]) for p in points]) for key in (*BOUND_ARGS, *lazy)}
        ks = k_star_real(**settings).tolist()
    ys = [k * p["beta"] if claim.quantity == "mining_time" else k for k, p in zip(ks, points, strict=True)]
    n = len(values)
    return [_moves(claim, values, ys[i * n:(i + 1) * n], integer) for i in range(len(bases))]


def _moves(claim: Corollary, values: Sequence[float], ys: Sequence[float], integer: bool) -> Verdict:
    # The real minimiser resolves K* to RESOLUTION of itself: a step below it is a tie, not a move (a flat
    # K* whose last digits differ between machines neither rises nor falls).
    finite = [abs(y) for y in ys if math.isfinite(y)]
    scale = max(finite, default=0.0)
    verdict = monotone(claim.name, "bound", list(values), ys, claim.direction,
                       tolerance=0.0 if integer else RESOLUTION * scale)
    if not integer and len(finite) == len(ys) and max(ys) - min(ys) <= FLAT * scale:
        return replace(verdict, holds=False, detail="flat: K* moves less than the minimiser resolves over the sweep")
    return verdict


def bound_falls_with_eta(params: Mapping[str, float], etas: Sequence[float], K: float) -> Verdict:
    """Corollary 4, second part: G at fixed K falls as eta grows, over the etas with eta L < 1."""
    keep = [e for e in etas if e * params["L"] < 1]
    fixed: dict[str, Any] = {k: params[k] for k in ("alpha", "beta", "L", "xi", "delta", "phi", "eps2", "t_sum")}
    G = [float(upper_bound(K, **fixed, eta=e)) for e in keep]
    return monotone("the bound falls as eta grows while eta L < 1 (Corollary 4)", "bound", keep, G, "falls")
