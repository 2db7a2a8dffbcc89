"""The paper's qualitative claims as checks that return a verdict and its evidence.

Each check takes (x, y) pairs, from the bound or from experiments, and asks whether y moves
with x in the claimed direction (ties allowed). ``on_bound`` computes K* (the exact real
minimiser) over a parameter sweep: the corollaries as properties of the bound function, checked
by the tests. The report's verdicts (experiment and fitted bound, with seeds) are computed in
:mod:`bladefl.experiments.verdicts`, which uses :func:`monotone`. The claims:

- Corollary 1: K* falls as alpha grows; K* falls as beta grows; beta K* rises with beta.
- Corollary 2: K* rises with delta.            - Corollary 3: K* falls as N grows.
- Corollary 4: K* rises with eta; the bound falls as eta grows while eta L < 1.
- Corollary 5: K* falls as M/N grows; K* falls as sigma2 grows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from bladefl.theory.bound import k_star_exact, upper_bound


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


CLAIMS = {
    # name: (parameter, quantity, direction)
    "K* falls as alpha grows (Corollary 1)": ("alpha", "K", "falls"),
    "K* falls as beta grows (Corollary 1)": ("beta", "K", "falls"),
    "beta K* rises with beta (Corollary 1)": ("beta", "mining_time", "rises"),
    "K* rises with delta (Corollary 2)": ("delta", "K", "rises"),
    "K* falls as N grows (Corollary 3)": ("N", "K", "falls"),
    "K* rises with eta (Corollary 4)": ("eta", "K", "rises"),
    "K* falls as M/N grows (Corollary 5)": ("lazy_ratio", "K", "falls"),
    "K* falls as sigma2 grows (Corollary 5)": ("sigma2", "K", "falls"),
}


def on_bound(claim: str, params: Mapping[str, float], values: Sequence[float]) -> Verdict:
    """Evaluate a claim on the bound: K* (real minimiser, Theorem 4's bound) per value.
    A sweep of N scales delta by sqrt(N0/N); a sweep of sigma2 uses M = lazy_ratio * N
    (lazy_ratio from ``params``, default 0.2 as in Table VII)."""
    param, quantity, direction = CLAIMS[claim]
    ks, ys = [], []
    for v in values:
        p = dict(params)
        if param == "N":
            # delta falls as N grows (the paper's argument): delta_N = delta * sqrt(N0 / N)
            p["delta"] = params["delta"] * math.sqrt(params.get("N", 20) / v)
            p["N"] = v
        elif param == "lazy_ratio":
            p["M"] = v * params.get("N", 20)
        else:
            p[param] = v
        if param == "sigma2":  # the noise matters only with lazy clients: Table VII's M/N = 0.2 by default
            p["M"] = params.get("lazy_ratio", 0.2) * params.get("N", 20)
        k = k_star_exact(**{key: p[key] for key in ("alpha", "beta", "eta", "L", "xi", "delta", "phi", "eps2",
                                                    "t_sum")},
                         M=p.get("M", 0), N=p.get("N", 20), theta=p.get("theta", 0.0), sigma2=p.get("sigma2", 0.0),
                         integer=False)
        ks.append(k)
        ys.append(k * p["beta"] if quantity == "mining_time" else k)
    return monotone(claim, "bound", list(values), ys, direction)


def bound_falls_with_eta(params: Mapping[str, float], etas: Sequence[float], K: float) -> Verdict:
    """Corollary 4, second part: G at fixed K falls as eta grows, over the etas with eta L < 1."""
    keep = [e for e in etas if e * params["L"] < 1]
    G = [float(upper_bound(K, **{**{k: params[k] for k in ("alpha", "beta", "L", "xi", "delta", "phi", "eps2",
                                                            "t_sum")}, "eta": e})) for e in keep]
    return monotone("the bound falls as eta grows while eta L < 1 (Corollary 4)", "bound", keep, G, "falls")
