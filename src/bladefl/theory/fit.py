"""Fitting the bound to experiments as an upper bound.

For a cell, the experimental gap is F(w^K) - F* at each feasible K (F* from the reference
run). With the measured L, xi, delta (and theta) held fixed and the paper's integer
tau = floor((t_sum/K - beta)/alpha), the reciprocal of the (lazy) bound is linear in phi and
1/eps2:

    1 / G(K) = a_K phi - A_K / eps2,   a_K = K tau eta,
    A_K = K xi h(tau) + K xi (M/N theta + sqrt(M)/N sigma2),   h(x) = (delta/L)((eta L + 1)^x - 1) - eta delta x.

The paper claims the bound is above the experiment at every K and close to it (Fig. 3), so the
free constants are chosen by a small linear program in (phi, 1/eps2) >= 0:

    maximise  sum_K gap_K / G(K)        (= sum_K gap_K (a_K phi - A_K / eps2); each term <= 1)
    subject to  G(K) >= gap_K                    at every K with a positive gap,
                1/G(K) > 0                       at every feasible K (the bound is defined there).

Maximising the mean ratio gap/G minimises the bound's relative excess over the experiment while
keeping it an upper bound. ``free=("eps2",)`` keeps a measured phi and fits 1/eps2 alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from bladefl.theory.bound import ArrayLike, h_of, lazy_extra, lazy_upper_bound, tau_of


@dataclass(frozen=True)
class Fit:
    phi: float
    eps2: float
    free: tuple[str, ...]
    residual: float  # mean relative excess (G - gap) / gap over the K with a positive gap


def design(K: ArrayLike, *, alpha: float, beta: float, eta: float, L: float, xi: float, delta: float, t_sum: float, M:
           float = 0, N: float = 1, theta: ArrayLike = 0.0, sigma2: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(a_K, A_K) for each K (see module docstring), with the paper's integer tau."""
    K = np.asarray(K, dtype=float)
    tau = tau_of(K, alpha=alpha, beta=beta, t_sum=t_sum)
    h = h_of(tau, eta=eta, L=L, delta=delta)
    A = K * xi * h + lazy_extra(K, xi=xi, M=M, N=N, theta=theta, sigma2=sigma2)
    return K * tau * eta, A


def _feasible(K: ArrayLike, gap: ArrayLike, theta: ArrayLike, *, alpha: float, beta: float, t_sum: float
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The feasible K (tau >= 1), their gaps and thetas, and which K have a positive gap."""
    K = np.asarray(K, dtype=float)
    gap = np.asarray(gap, dtype=float)
    keep = tau_of(K, alpha=alpha, beta=beta, t_sum=t_sum) >= 1
    theta = np.broadcast_to(np.asarray(theta, dtype=float), keep.shape)[keep]
    gap = gap[keep]
    return K[keep], gap, theta, np.isfinite(gap) & (gap > 0)


def fit_bound(K: ArrayLike, gap: ArrayLike, *, alpha: float, beta: float, eta: float, L: float, xi: float, delta:
              float, t_sum: float, phi: float | None = None, M: float = 0, N: float = 1, theta: ArrayLike = 0.0,
              sigma2: float = 0.0, free: tuple[str, ...] = ("phi", "eps2")) -> Fit:
    """The tightest upper bound of the given form over the gaps (module docstring). ``K`` are the
    feasible K of the cell; a gap that is not finite or not positive constrains nothing but its K
    must still have a defined bound. Raises ValueError when no such bound exists."""
    K, gap, theta, has_gap = _feasible(K, gap, theta, alpha=alpha, beta=beta, t_sum=t_sum)
    if has_gap.sum() < len(free):
        raise ValueError(f"need at least {len(free)} K values with a positive gap to fit {free}")
    a, A = design(K, alpha=alpha, beta=beta, eta=eta, L=L, xi=xi, delta=delta, t_sum=t_sum, M=M, N=N, theta=theta,
                  sigma2=sigma2)
    g = gap[has_gap]
    margin = 1e-9 / float(np.median(g))  # 1/G must be positive, not merely non-negative
    if set(free) == {"phi", "eps2"}:
        # variables (phi, v = 1/eps2) >= 0; linprog minimises, so negate the objective
        c = -np.array([np.sum(g * a[has_gap]), -np.sum(g * A[has_gap])])
        A_ub = np.vstack([np.column_stack([g * a[has_gap], -g * A[has_gap]]),  # gap/G <= 1
                          np.column_stack([-a, A])])  # -(1/G) <= -margin
        b_ub = np.concatenate([np.ones(len(g)), -margin * np.ones(len(K))])
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=[(0, None), (0, None)], method="highs")
        if res.status != 0:
            raise ValueError(f"no upper bound of this form fits the gaps ({res.message})")
        phi_hat, inv_eps2 = float(res.x[0]), float(res.x[1])
    elif tuple(free) == ("eps2",):
        if phi is None:
            raise ValueError("fitting eps2 alone needs the measured phi")
        c = np.array([np.sum(g * A[has_gap])])  # maximise sum g (a phi - A v) <=> minimise sum g A v
        A_ub = np.vstack([(-g * A[has_gap])[:, None], A[:, None]])
        b_ub = np.concatenate([1 - g * a[has_gap] * phi, a * phi - margin])
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=[(0, None)], method="highs")
        if res.status != 0:
            raise ValueError(f"no upper bound with the measured phi fits the gaps ({res.message})")
        phi_hat, inv_eps2 = float(phi), float(res.x[0])
    else:
        raise ValueError(f"free must be ('phi', 'eps2') or ('eps2',) (got {free})")
    eps2 = math.inf if inv_eps2 <= 0 else 1.0 / inv_eps2
    G = np.asarray(lazy_upper_bound(K[has_gap], alpha=alpha, beta=beta, eta=eta, L=L, xi=xi, delta=delta, phi=phi_hat,
                                    eps2=eps2, t_sum=t_sum, M=M, N=N, theta=theta[has_gap], sigma2=sigma2))
    return Fit(phi=phi_hat, eps2=eps2, free=tuple(free), residual=float(np.mean((G - g) / g)))


@dataclass(frozen=True)
class GapReport:
    relative_gap: list[float]  # (G - gap) / gap per K
    max_relative_gap: float  # over every K with a gap; inf if the bound is undefined (inf) at any
    mean_relative_gap: float
    bound_above_everywhere: bool  # G >= gap (to 1e-6 relative) at every K with a finite gap


def compare(G: ArrayLike, gap: ArrayLike) -> GapReport:
    """The bound against the gaps: an infinite or undefined G at a K counts against closeness."""
    G, gap = np.asarray(G, dtype=float), np.asarray(gap, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = (G - gap) / gap
    has_gap = np.isfinite(gap)
    undefined = bool((~np.isfinite(G[has_gap])).any())
    finite = rel[has_gap & np.isfinite(rel)]
    worst = math.inf if undefined or not finite.size else float(np.max(np.abs(finite)))
    mean = math.inf if undefined or not finite.size else float(np.mean(np.abs(finite)))
    return GapReport(
        relative_gap=rel.tolist(),
        max_relative_gap=worst,
        mean_relative_gap=mean,
        # a relative 1e-6 allows for the linear program's feasibility tolerance
        bound_above_everywhere=bool(np.all(G[has_gap] >= gap[has_gap] * (1 - 1e-6))),
    )


def fit_minimax(K: ArrayLike, gap: ArrayLike, *, alpha: float, beta: float, eta: float, L: float, xi: float,
                delta: float, t_sum: float, M: float = 0, N: float = 1, theta: ArrayLike = 0.0,
                sigma2: float = 0.0) -> Fit:
    """The upper bound of the given form (phi and eps2 free) whose largest relative excess
    (G - gap) / gap over the K with a positive gap is smallest: the measure Fig. 3's "within 5%"
    claim uses. With s = 1 / (1 + largest excess), a linear program in (phi, 1/eps2, s):

        maximise s  subject to  s <= gap_K / G(K) <= 1 at every K with a gap,  1/G(K) > 0 at every K.

    ``residual`` is the largest relative excess. Raises ValueError when no upper bound fits."""
    K, gap, theta, has_gap = _feasible(K, gap, theta, alpha=alpha, beta=beta, t_sum=t_sum)
    if has_gap.sum() < 2:
        raise ValueError("need at least 2 K values with a positive gap to fit (phi, eps2)")
    a, A = design(K, alpha=alpha, beta=beta, eta=eta, L=L, xi=xi, delta=delta, t_sum=t_sum, M=M, N=N, theta=theta,
                  sigma2=sigma2)
    g = gap[has_gap]
    ga, gA = g * a[has_gap], g * A[has_gap]
    margin = 1e-9 / float(np.median(g))
    n = len(g)
    A_ub = np.vstack([np.column_stack([ga, -gA, np.zeros(n)]),  # gap/G <= 1
                      np.column_stack([-ga, gA, np.ones(n)]),  # s <= gap/G
                      np.column_stack([-a, A, np.zeros(len(K))])])  # 1/G >= margin
    b_ub = np.concatenate([np.ones(n), np.zeros(n), -margin * np.ones(len(K))])
    res = linprog(np.array([0.0, 0.0, -1.0]), A_ub=A_ub, b_ub=b_ub, bounds=[(0, None), (0, None), (0, 1)],
                  method="highs")
    if res.status != 0 or res.x[2] <= 0:
        raise ValueError(f"no upper bound of this form fits the gaps ({res.message})")
    phi_hat, inv_eps2 = float(res.x[0]), float(res.x[1])
    eps2 = math.inf if inv_eps2 <= 0 else 1.0 / inv_eps2
    G = np.asarray(lazy_upper_bound(K[has_gap], alpha=alpha, beta=beta, eta=eta, L=L, xi=xi, delta=delta, phi=phi_hat,
                                    eps2=eps2, t_sum=t_sum, M=M, N=N, theta=theta[has_gap], sigma2=sigma2))
    return Fit(phi=phi_hat, eps2=eps2, free=("phi", "eps2"), residual=float(np.max((G - g) / g)))


# L scanned around the measured value (the fit absorbs xi, delta and eps2 without lazy clients;
# L alone shapes h).
L_FACTORS = np.logspace(-3, 3, 61)


def best_over_L(K: ArrayLike, gap: ArrayLike, *, L: float, factors: np.ndarray = L_FACTORS, **kw: float
                ) -> tuple[float, Fit] | None:
    """The minimax fit at each L = ``L`` x factor; the L whose fit has the smallest largest
    relative excess, and that fit (None where no L admits an upper bound)."""
    best: tuple[float, Fit] | None = None
    for factor in factors:
        try:
            fit = fit_minimax(K, gap, L=L * float(factor), **kw)
        except ValueError:
            continue
        if best is None or fit.residual < best[1].residual:
            best = (L * float(factor), fit)
    return best
