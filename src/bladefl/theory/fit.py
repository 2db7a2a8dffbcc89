"""Fitting the bound to experiments.

For a cell, the experimental gap is F(w^K) - F* at each feasible K (F* from the reference
run). With the measured L, xi, delta held fixed, the reciprocal of the (lazy) bound is linear
in phi and 1/eps2:

    1 / G(K) = gamma_K eta phi - A_K / eps2,
    A_K = (delta xi K / L)(lambda^(gamma_K/K) - 1) - eta xi delta gamma_K + [lazy terms],

so both are fitted by non-negative least squares on relative errors (rows scaled by the gap,
target 1), i.e. minimising sum_K (1 - gap_K / G(K))^2. Free constants: eps2 always (no
estimator of it is well defined for a non-convex model) and, by default, phi: phi depends on
||w0 - w*||, and w* of a non-convex MLP is only one of many minimisers, so its measured value
sets the bound's scale arbitrarily. ``free=("eps2",)`` keeps the measured phi.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from bladefl.theory.bound import ArrayLike, lazy_extra, lazy_upper_bound


@dataclass(frozen=True)
class Fit:
    phi: float
    eps2: float
    free: tuple[str, ...]
    residual: float  # root mean square of 1 - gap / G over the fitted K


def design(
    K: ArrayLike,
    *,
    alpha: float,
    beta: float,
    eta: float,
    L: float,
    xi: float,
    delta: float,
    t_sum: float,
    M: float = 0,
    N: float = 1,
    theta: float = 0.0,
    sigma2: float = 0.0,
) -> np.ndarray:
    """(gamma_K * eta, A_K) for each K (see module docstring)."""
    K = np.asarray(K, dtype=float)
    gamma = (t_sum - K * beta) / alpha
    lam = eta * L + 1.0
    A = (delta * xi * K / L) * (np.power(lam, gamma / K) - 1.0) - eta * xi * delta * gamma
    A = A + lazy_extra(K, xi=xi, M=M, N=N, theta=theta, sigma2=sigma2)
    return gamma * eta, A


def fit_bound(
    K: ArrayLike,
    gap: ArrayLike,
    *,
    alpha: float,
    beta: float,
    eta: float,
    L: float,
    xi: float,
    delta: float,
    t_sum: float,
    phi: float | None = None,
    M: float = 0,
    N: float = 1,
    theta: float = 0.0,
    sigma2: float = 0.0,
    free: tuple[str, ...] = ("phi", "eps2"),
) -> Fit:
    K = np.asarray(K, dtype=float)
    gap = np.asarray(gap, dtype=float)
    ok = np.isfinite(gap) & (gap > 0) & ((t_sum - K * beta) > 0)
    if ok.sum() < len(free):
        raise ValueError(f"need at least {len(free)} K values with a positive gap to fit {free}")
    g_eta, A = design(
        K[ok],
        alpha=alpha,
        beta=beta,
        eta=eta,
        L=L,
        xi=xi,
        delta=delta,
        t_sum=t_sum,
        M=M,
        N=N,
        theta=theta,
        sigma2=sigma2,
    )
    y = np.ones(ok.sum())
    if set(free) == {"phi", "eps2"}:
        coef, _ = nnls(np.column_stack([gap[ok] * g_eta, -gap[ok] * A]), y)
        phi_hat, inv_eps2 = coef
    elif tuple(free) == ("eps2",):
        if phi is None:
            raise ValueError("fitting eps2 alone needs the measured phi")
        coef, _ = nnls((-gap[ok] * A)[:, None], y - gap[ok] * g_eta * phi)
        phi_hat, inv_eps2 = phi, coef[0]
    else:
        raise ValueError(f"free must be ('phi', 'eps2') or ('eps2',) (got {free})")
    eps2 = math.inf if inv_eps2 <= 0 else 1.0 / inv_eps2
    G = np.asarray(
        lazy_upper_bound(
            K[ok],
            alpha=alpha,
            beta=beta,
            eta=eta,
            L=L,
            xi=xi,
            delta=delta,
            phi=phi_hat,
            eps2=eps2,
            t_sum=t_sum,
            M=M,
            N=N,
            theta=theta,
            sigma2=sigma2,
        )
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.isfinite(G), 1 - gap[ok] / G, 1.0)
    return Fit(phi=float(phi_hat), eps2=eps2, free=tuple(free), residual=float(np.sqrt(np.mean(rel**2))))


@dataclass(frozen=True)
class GapReport:
    relative_gap: list[float]  # (G - gap) / gap per K
    max_relative_gap: float
    mean_relative_gap: float
    bound_above_everywhere: bool


def compare(G: ArrayLike, gap: ArrayLike) -> GapReport:
    G, gap = np.asarray(G, dtype=float), np.asarray(gap, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = (G - gap) / gap
    finite = rel[np.isfinite(rel)]
    return GapReport(
        relative_gap=rel.tolist(),
        max_relative_gap=float(np.max(np.abs(finite))) if finite.size else math.inf,
        mean_relative_gap=float(np.mean(np.abs(finite))) if finite.size else math.inf,
        bound_above_everywhere=bool(np.all(G >= gap)),
    )
