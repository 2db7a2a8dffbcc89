"""The paper's analytical results: the loss bound G(K) (Theorem 1), its lazy-client version
G-tilde (Theorem 4), the closed-form K* (Theorem 3), the exact minimiser, and a convexity check
(Theorem 2).

G(K) = 1 / ( gamma * ( eta*phi - [ (delta*xi*K/L) (lambda^(gamma/K) - 1) - eta*xi*delta*gamma ]
                                  / (eps2 * gamma) ) ),
gamma = (t_sum - K beta) / alpha,  lambda = eta L + 1,

which is Wang et al.'s (2019) 1 / (K tau (eta phi - xi h(tau) / (tau eps2))) with
h(x) = (delta/L)((eta L + 1)^x - 1) - eta delta x and tau = gamma / K. Where the bound is not
valid (gamma <= 0 or the bracket <= 0) the functions return inf, never a negative number.

Lazy clients (Theorem 4) add K xi (M/N) theta + K xi (sqrt(M)/N) sigma2 to the bracket's
numerator. The paper's appendix writes this noise term once with sigma (the norm of a sum of M
noise vectors scales with sigma, not sigma^2) and elsewhere with sigma^2; the theorem and
Corollary 5 use sigma^2, and so does this implementation (``noise_power="sigma2"``);
``noise_power="sigma"`` gives the other reading.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bladefl.fl.timemodel import tau_for

ArrayLike = float | np.ndarray


def h_of(tau: ArrayLike, *, eta: ArrayLike, L: ArrayLike, delta: ArrayLike) -> np.ndarray:
    """h(tau) = (delta/L)((eta L + 1)^tau - 1) - eta delta tau, with (eta L + 1)^tau - 1 as
    expm1(tau log1p(eta L)): no cancellation at small eta L."""
    tau = np.asarray(tau, dtype=float)
    return (delta / L) * np.expm1(tau * np.log1p(eta * L)) - eta * delta * tau


def _bracket(K: ArrayLike, tau: ArrayLike, *, eta: ArrayLike, L: ArrayLike, xi: ArrayLike, delta: ArrayLike,
             phi: ArrayLike, eps2: ArrayLike, extra: ArrayLike = 0.0) -> np.ndarray:
    h = h_of(tau, eta=eta, L=L, delta=delta)
    return eta * phi - (xi * h + extra) / (tau * eps2)


def _bound_tau(K: ArrayLike, tau: ArrayLike, **kw: ArrayLike) -> np.ndarray:
    K = np.asarray(K, dtype=float)
    tau = np.asarray(tau, dtype=float)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        br = _bracket(K, tau, **kw)
        value = 1.0 / (K * tau * br)
    bad = ~(tau > 0) | ~(br > 0) | ~np.isfinite(value)
    return np.where(bad, np.inf, value)


def _out(value: np.ndarray, K: ArrayLike) -> ArrayLike:
    return float(value) if np.ndim(K) == 0 else value


TAU_RULES = ("integer", "real")


def tau_of(K: ArrayLike, *, alpha: float, beta: float, t_sum: float, tau_rule: str = "integer") -> np.ndarray:
    """Local iterations per round: the paper's time model floor((t_sum/K - beta)/alpha) (``integer``,
    what the experiments run, the default everywhere) or Theorem 1's real gamma/K (``real``, for the
    continuous analysis: convexity, the closed form)."""
    K_arr = np.asarray(K, dtype=float)
    if tau_rule == "real":
        return (t_sum - K_arr * beta) / alpha / K_arr
    if tau_rule != "integer":
        raise ValueError(f"tau_rule must be one of {TAU_RULES} (got {tau_rule!r})")
    if np.any(K_arr != np.round(K_arr)):
        raise ValueError(f"tau_rule 'integer' needs whole numbers of rounds K (got {K!r})")
    # The engine's own rule (exact decimal arithmetic), element by element: the bound's tau is the
    # tau the runs used.
    return np.vectorize(lambda k: float(tau_for(round(k), alpha, beta, t_sum)), otypes=[float])(K_arr)


def upper_bound(K: ArrayLike, *, alpha: float, beta: float, eta: float, L: float, xi: float, delta: float, phi: float,
                eps2: float, t_sum: float, tau_rule: str = "integer") -> ArrayLike:
    """G(K) of Theorem 1, 1 / (K tau (eta phi - xi h(tau) / (tau eps2))), with tau by ``tau_rule``."""
    K_arr = np.asarray(K, dtype=float)
    tau = tau_of(K_arr, alpha=alpha, beta=beta, t_sum=t_sum, tau_rule=tau_rule)
    return _out(_bound_tau(K_arr, tau, eta=eta, L=L, xi=xi, delta=delta, phi=phi, eps2=eps2), K)


def lazy_extra(K: ArrayLike, *, xi: ArrayLike, M: ArrayLike, N: ArrayLike, theta: ArrayLike, sigma2: ArrayLike,
               noise_power: str = "sigma2") -> np.ndarray:
    noise = sigma2 if noise_power == "sigma2" else np.sqrt(sigma2)
    return np.asarray(K, dtype=float) * xi * (M / N * theta + np.sqrt(M) / N * noise)


def lazy_upper_bound(K: ArrayLike, *, alpha: float, beta: float, eta: float, L: float, xi: float, delta: float, phi:
                     float, eps2: ArrayLike, t_sum: float, M: float, N: float, theta: ArrayLike, sigma2: float,
                     noise_power: str = "sigma2", tau_rule: str = "integer") -> ArrayLike:
    """G-tilde of Theorem 4; equals :func:`upper_bound` at M = 0."""
    K_arr = np.asarray(K, dtype=float)
    tau = tau_of(K_arr, alpha=alpha, beta=beta, t_sum=t_sum, tau_rule=tau_rule)
    extra = lazy_extra(K_arr, xi=xi, M=M, N=N, theta=theta, sigma2=sigma2, noise_power=noise_power)
    # the extra term sits over eps2 * gamma = eps2 * K * tau; _bracket divides by tau * eps2
    value = _bound_tau(K_arr, tau, eta=eta, L=L, xi=xi, delta=delta, phi=phi, eps2=eps2, extra=extra / K_arr)
    return _out(value, K)


def k_star_closed_form(*, alpha: float, beta: float, eta: float, L: float, t_sum: float) -> float:
    """Theorem 3: K* = t_sum / sqrt(2 alpha beta / (eta L) + alpha beta + beta^2) (eta L tau << 1)."""
    return t_sum / math.sqrt(2 * alpha * beta / (eta * L) + alpha * beta + beta**2)


def k_star_exact(*, alpha: float, beta: float, eta: float, L: float, xi: float, delta: float, phi: float, eps2: float,
                 t_sum: float, M: float = 0, N: float = 1, theta: float = 0.0, sigma2: float = 0.0, integer: bool =
                 True, floor_tau: bool = True) -> float:
    """The minimiser of the (lazy) bound over feasible K.

    ``integer``: over K = 1 .. floor(t_sum/(alpha+beta)), with tau = floor((t_sum/K - beta)/alpha)
    when ``floor_tau`` (the paper's time model) or gamma/K otherwise. Else the real minimiser
    over K in (0, t_sum/(alpha+beta)] without the floor (golden-section refinement of a grid).
    Returns nan if the bound is invalid everywhere.
    """
    kw = dict(eta=eta, L=L, xi=xi, delta=delta, phi=phi, eps2=eps2)

    def bound_at(K: ArrayLike, tau: ArrayLike) -> np.ndarray:
        extra = lazy_extra(K, xi=xi, M=M, N=N, theta=theta, sigma2=sigma2) / np.asarray(K, dtype=float)
        return _bound_tau(K, tau, extra=extra, **kw)

    k_max = t_sum / (alpha + beta)
    if integer:
        Ks = np.arange(1, math.floor(k_max + 1e-12) + 1, dtype=float)
        if len(Ks) == 0:
            return math.nan
        tau = tau_of(Ks, alpha=alpha, beta=beta, t_sum=t_sum, tau_rule="integer" if floor_tau else "real")
        values = bound_at(Ks, tau)
        return math.nan if not np.isfinite(values).any() else float(Ks[int(np.argmin(values))])
    return float(k_star_real(alpha=alpha, beta=beta, t_sum=t_sum, M=M, N=N, theta=theta, sigma2=sigma2, eta=eta, L=L,
                             xi=xi, delta=delta, phi=phi, eps2=eps2))


def k_star_real(*, alpha: ArrayLike, beta: ArrayLike, eta: ArrayLike, L: ArrayLike, xi: ArrayLike, delta: ArrayLike,
                phi: ArrayLike, eps2: ArrayLike, t_sum: ArrayLike, M: ArrayLike = 0.0, N: ArrayLike = 1.0,
                theta: ArrayLike = 0.0, sigma2: ArrayLike = 0.0, grid: int = 2000, steps: int = 100) -> np.ndarray:
    """The real minimiser of the (lazy) bound over K in (0, t_sum/(alpha+beta)] with tau = gamma/K
    (no floor: the paper's continuous analysis), for many settings at once: every argument an
    array (broadcast together) or a number. A grid of ``grid`` K per setting, then ``steps`` of
    golden-section refinement around its best point, all settings together; nan where the bound
    is invalid at every K."""
    args = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in
                                 (alpha, beta, eta, L, xi, delta, phi, eps2, t_sum, M, N, theta, sigma2)))
    shape = args[0].shape
    a, b, et, L_, xi_, de, ph, e2, T, M_, N_, th, s2 = (v.reshape(-1, 1) for v in args)
    extra = lazy_extra(1.0, xi=xi_, M=M_, N=N_, theta=th, sigma2=s2)  # lazy_extra(K) / K: the same at every K

    def bound_at(K: np.ndarray) -> np.ndarray:
        return _bound_tau(K, (T - K * b) / a / K, eta=et, L=L_, xi=xi_, delta=de, phi=ph, eps2=e2, extra=extra)

    k_max = T / (a + b)
    Ks = k_max / grid + (k_max - k_max / grid) * (np.arange(grid) / (grid - 1))
    values = bound_at(Ks)
    defined = np.isfinite(values).any(axis=1)
    i = np.argmin(values, axis=1)
    rows = np.arange(len(Ks))
    lo, hi = Ks[rows, np.maximum(i - 1, 0)][:, None], Ks[rows, np.minimum(i + 1, grid - 1)][:, None]
    g = (math.sqrt(5) - 1) / 2
    for _ in range(steps):
        x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
        left = bound_at(x1) < bound_at(x2)
        hi, lo = np.where(left, x2, hi), np.where(left, lo, x1)
    return np.where(defined, ((lo + hi) / 2)[:, 0], np.nan).reshape(shape)


@dataclass(frozen=True)
class Convexity:
    convex: bool
    checked: int  # how many interior points had a finite second difference
    violations: list[float]  # K values where the second difference is negative


def check_convexity(*, alpha: float, beta: float, eta: float, L: float, xi: float, delta: float, phi: float, eps2:
                    float, t_sum: float, points: int = 400, rtol: float = 1e-9) -> Convexity:
    """Theorem 2: second differences of G on a fine grid of the valid (finite) range of K."""
    k_max = t_sum / (alpha + beta)
    Ks = np.linspace(k_max / points, k_max, points)
    G = np.asarray(
        upper_bound(Ks, alpha=alpha, beta=beta, eta=eta, L=L, xi=xi, delta=delta, phi=phi, eps2=eps2, t_sum=t_sum,
                    tau_rule="real")
    )
    with np.errstate(invalid="ignore"):
        d2 = G[:-2] - 2 * G[1:-1] + G[2:]
    finite = np.isfinite(d2)
    bad = finite & (d2 < -rtol * np.abs(G[1:-1]))
    return Convexity(convex=not bad.any(), checked=int(finite.sum()), violations=Ks[1:-1][bad].tolist())


@dataclass(frozen=True)
class Preconditions:
    """Where the bound holds (Wang et al. 2019, Theorem 2): eta L < 1 and a positive bracket
    eta phi - (xi h(tau) + lazy terms / K) / (tau eps2), per K."""

    eta_L_below_1: bool
    bracket_positive: list[bool]


def preconditions(K: ArrayLike, *, alpha: float, beta: float, eta: float, L: float, xi: float, delta: float, phi:
                  float, eps2: float, t_sum: float, M: float = 0, N: float = 1, theta: float = 0.0, sigma2: float =
                  0.0) -> Preconditions:
    K_arr = np.atleast_1d(np.asarray(K, dtype=float))
    tau = tau_of(K_arr, alpha=alpha, beta=beta, t_sum=t_sum)
    extra = lazy_extra(K_arr, xi=xi, M=M, N=N, theta=theta, sigma2=sigma2) / K_arr
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        br = _bracket(K_arr, tau, eta=eta, L=L, xi=xi, delta=delta, phi=phi, eps2=eps2, extra=extra)
    ok = (tau >= 1) & np.isfinite(br) & (br > 0)
    return Preconditions(eta_L_below_1=bool(eta * L < 1), bracket_positive=ok.tolist())


def noise_term_magnitudes(*, M: float, sigma2: float, P: int) -> tuple[float, float]:
    """Theorem 4's lazy noise term as written, sqrt(M) sigma^2, against the quantity its proof
    bounds, E||sum of the M lazy clients' noise vectors|| ~ sigma sqrt(M P) for N(0, sigma^2)
    noise on each of P parameters (the norm of a Gaussian vector of M P entries)."""
    return math.sqrt(M) * sigma2, math.sqrt(sigma2) * math.sqrt(M * P)
