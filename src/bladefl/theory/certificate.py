"""What the bound's form allows before any constant is fitted: the K* that some choice of
constants can give, and where the bound must be undefined for it (issue "The bound, told
truthfully").

With the paper's integer tau_K = floor((t_sum/K - beta)/alpha), Theorem 1's (and Theorem 4's)
bound is G(K) = 1 / (eta phi F(K)) with

    F(K) = K (tau_K - b g_x(tau_K) - d),   g_x(tau) = ((1 + x)^tau - 1) / x - tau,

where x = eta L, b = xi delta eta / (eta phi eps2) >= 0 (so xi h(tau) / eps2 = eta phi b g_x(tau))
and d = xi (M/N theta + sqrt(M)/N sigma2) / (eta phi eps2) >= 0, zero without lazy clients. So
every choice of L, xi, delta, phi, eps2 (and theta, sigma2) is one (x, b, d), and the bound is
defined exactly where F(K) > 0. g_x(1) = 0: wherever tau = 1, G(K) = 1 / (K eta phi) whatever the
other constants.

K0 is the bound's minimiser for some constants exactly when some (x, b, d) has F(K0) > 0 and
F(K0) >= F(K) at every K (an undefined K has F <= 0 < F(K0), so it competes with nothing). For a
fixed x these conditions are linear in (b, d): a one-dimensional interval without lazy clients,
a two-variable feasibility problem with them (solved
exactly on candidate points, see :func:`_feasible_2d`). :func:`certificate` decides them over a grid of x and
also asks, for each K0, from which smallest K the bound can be defined at the same time (the
bound's defined set is a range of K: F(K)/K is concave in tau). The paper's Fig. 3 claims need
the experiment's K*; the certificate says whether any constants give it, and at what price.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from bladefl.theory.bound import tau_of

# eta L scanned: from a nearly linear h (1e-6) up to the lemma's condition eta L < 1, log-spaced
# (beyond it the theorem says nothing; from eta L >= 2 its phi is not positive).
ETA_L_GRID = np.logspace(-6, math.log10(0.999), 241)

# Relative slack of a comparison (the terms span many orders of magnitude: an absolute slack
# turns a bound of 1e-50 into a pass).
RELATIVE_SLACK = 1e-9


def g(x: float | np.ndarray, tau: np.ndarray) -> np.ndarray:
    """g_x(tau) = ((1 + x)^tau - 1) / x - tau (>= 0, 0 at tau = 1), stable for small x."""
    x = np.asarray(x, dtype=float)
    tau = np.asarray(tau, dtype=float)
    value = np.expm1(np.multiply.outer(np.log1p(x), tau)) / x[..., None] - tau
    return np.where(tau == 1, 0.0, value)  # exactly 0 at tau = 1 (h(1) = 0), not a rounding residue


@dataclass(frozen=True)
class Certificate:
    """For a cell (alpha, beta, t_sum, eta; lazy clients or not), over every constant choice
    with eta L on :data:`ETA_L_GRID`:

    ``achievable[K]``: some constants make K the bound's minimiser; ``defined_from[K]``: the
    smallest K' from which the bound can be defined while K is its minimiser (so K* = K forces
    the bound to be undefined at every K below it); ``largest_if_defined_at_1``: the largest
    minimiser of any bound defined at K = 1; ``eta_L[K]``: the eta L range over which K is a
    minimiser of a bound defined from ``defined_from[K]``; ``witness[K]`` (without lazy clients):
    an (eta L, b) that does it."""

    Ks: list[int]
    taus: list[int]
    lazy: bool
    achievable: dict[int, bool] = field(default_factory=dict)
    defined_from: dict[int, int | None] = field(default_factory=dict)
    eta_L: dict[int, tuple[float, float] | None] = field(default_factory=dict)
    witness: dict[int, tuple[float, float]] = field(default_factory=dict)  # K -> (x, b), without lazy clients

    @property
    def largest_if_defined_at_1(self) -> int:
        return max(K for K in self.Ks if self.defined_from.get(K) == 1)

    def undefined_below(self, K: int) -> int | None:
        """K* = K forces the bound to be undefined at every K' below this (None: K is unachievable)."""
        return self.defined_from.get(K)

    def summary(self, k_experiments: float | list[float] | None = None) -> str:
        """One sentence a reader can check against the bound page: the headline, then what each of
        the experiment's K* (one or several, e.g. per seed) needs."""
        text = (f"with the bound defined at K = 1, no choice of constants puts its minimiser above "
                f"K = {self.largest_if_defined_at_1}")
        if k_experiments is None:
            ks: list[float] = []
        elif isinstance(k_experiments, (int, float, np.number)):
            ks = [float(k_experiments)]
        else:
            ks = list(k_experiments)
        for k in sorted({int(k) for k in ks if math.isfinite(k)}):
            start = self.defined_from.get(k)
            if start is None:
                text += f"; no choice of constants gives the experiment's K* = {k}"
            elif start > 1:
                text += (f"; the experiment's K* = {k} needs a bound undefined at K = 1..{start - 1} "
                         f"(preconditions failing there)")
            else:
                text += f"; the experiment's K* = {k} is reachable with a bound defined everywhere"
        return text


def _interval_1d(c: np.ndarray, B: np.ndarray, strict: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row (one x each): the interval [lower, upper] of b >= 0 with c_i - b B_i >= 0 (> 0
    where ``strict``), and whether it is non-empty. c, B: [X, n]."""
    eps = 1e-12 * np.maximum(1.0, np.abs(c))
    need = c - np.where(strict, eps, 0.0)  # c_i - b B_i >= need_i - c_i ... i.e. b B_i <= need_i
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = need / B
    upper = np.where(B > 0, ratio, np.inf).min(axis=1)
    lower = np.maximum(0.0, np.where(B < 0, ratio, -np.inf).max(axis=1))
    flat_ok = np.where(B == 0, need >= 0, True).all(axis=1)
    return lower, upper, flat_ok & (lower <= upper)


def _feasible_2d(c: np.ndarray, B: np.ndarray, D: np.ndarray, strict: np.ndarray) -> np.ndarray:
    """Per row (one x each): is there (b, d) >= 0 with c_i - b B_i - d D_i >= 0 (> 0 where
    ``strict``)? c, D, strict: [n]; B: [X, n].

    For a fixed d the feasible b form an interval [lower(d), upper(d)], lower the largest and
    upper the smallest of lines in d, so lower - upper is convex and piecewise linear in d: it is
    minimal at d = 0, at an end of the d range the rows with B_i = 0 allow, or where two lines
    cross, and those candidates are all evaluated."""
    X, n = B.shape
    eps = 1e-12 * np.maximum(1.0, np.abs(c))
    need = np.broadcast_to(c - np.where(strict, eps, 0.0), (X, n))
    Dx = np.broadcast_to(D, (X, n))
    zero = B == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(zero, np.nan, need / B)  # b <= or >= a + m d
        m = np.where(zero, np.nan, -Dx / B)
        d_hi = np.where(zero & (Dx > 0), need / Dx, np.inf).min(axis=1)
        d_lo = np.maximum(0.0, np.where(zero & (Dx < 0), need / Dx, -np.inf).max(axis=1))
    ok_flat = np.where(zero & (Dx == 0), need >= 0, True).all(axis=1)
    lower = B < 0
    # candidate d: 0, the range's ends, every crossing of two lines (and of a line with b = 0)
    a0, m0 = np.concatenate([a, np.zeros((X, 1))], axis=1), np.concatenate([m, np.zeros((X, 1))], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (a0[:, None, :] - a0[:, :, None]) / (m0[:, :, None] - m0[:, None, :])
    cand = np.concatenate([cross.reshape(X, -1), d_lo[:, None], np.where(np.isfinite(d_hi), d_hi, d_lo)[:, None]],
                          axis=1)
    cand = np.where(np.isfinite(cand), cand, d_lo[:, None])
    cand = np.clip(cand, d_lo[:, None], np.maximum(d_lo, d_hi)[:, None])  # [X, C]
    values = a[:, None, :] + m[:, None, :] * cand[:, :, None]  # [X, C, n]
    low = np.maximum(0.0, np.where(lower[:, None, :], values, -np.inf).max(axis=2))
    high = np.where((B > 0)[:, None, :], values, np.inf).min(axis=2)
    gap_ok = (low <= high + RELATIVE_SLACK * np.maximum(np.abs(low), np.abs(high))) | np.isinf(high)
    return ok_flat & (d_lo <= d_hi) & gap_ok.any(axis=1)


def certificate(*, alpha: float, beta: float, t_sum: float, lazy: bool,
                eta_L: np.ndarray = ETA_L_GRID) -> Certificate:
    """The :class:`Certificate` of a cell (see the module docstring). ``lazy``: the lazy bound's
    extra term d is free (M > 0), else d = 0."""
    k_max = math.floor(t_sum / (alpha + beta) + 1e-12)
    Ks = np.arange(1, k_max + 1)
    taus = tau_of(Ks.astype(float), alpha=alpha, beta=beta, t_sum=t_sum)
    Ks, taus = Ks[taus >= 1], taus[taus >= 1]
    cert = Certificate([int(k) for k in Ks], [int(t) for t in taus], lazy)
    x = np.asarray(eta_L, dtype=float)
    G = g(x, taus)  # [X, n]
    Kt = Ks * taus  # F's b- and d-free part
    n = len(Ks)
    for i0, K0 in enumerate(Ks):
        # rows: F(K0) - F(K) >= 0 for every K != K0; F(K0) > 0; then F(j) > 0 for the defined-from row
        others = [i for i in range(n) if i != i0]
        c = np.concatenate([Kt[i0] - Kt[others], [Kt[i0]]])
        D = np.concatenate([K0 - Ks[others], [K0]]).astype(float)
        B = np.concatenate([K0 * G[:, [i0]] - Ks[others] * G[:, others], K0 * G[:, [i0]]], axis=1)
        strict = np.concatenate([np.zeros(len(others), bool), [True]])
        found = None
        for j in range(i0 + 1):  # the bound defined from Ks[j] (and so at every K up to K0)
            cj = np.concatenate([c, [Kt[j]]])
            Bj = np.concatenate([B, Ks[j] * G[:, [j]]], axis=1)
            Dj = np.concatenate([D, [float(Ks[j])]])
            sj = np.concatenate([strict, [True]])
            if lazy:
                ok = _feasible_2d(cj, Bj, Dj, sj)
            else:
                lower, upper, ok = _interval_1d(np.broadcast_to(cj, Bj.shape), Bj, np.broadcast_to(sj, Bj.shape))
            if ok.any():
                found = (int(Ks[j]), float(x[ok].min()), float(x[ok].max()))
                if not lazy:  # a witness: the middle of the interval of b at the largest x that works
                    r = int(np.flatnonzero(ok)[-1])
                    b = lower[r] if not np.isfinite(upper[r]) else (lower[r] + upper[r]) / 2
                    cert.witness[int(K0)] = (float(x[r]), float(b))
                break
        cert.achievable[int(K0)] = found is not None
        cert.defined_from[int(K0)] = None if found is None else found[0]
        cert.eta_L[int(K0)] = None if found is None else (found[1], found[2])
    return cert


def closed_form_eta_L(k_target: float, *, alpha: float, beta: float, t_sum: float) -> float:
    """The eta L at which Theorem 3's closed form K* = t_sum / sqrt(2 alpha beta / (eta L) + alpha
    beta + beta^2) equals ``k_target`` (nan where no positive eta L does)."""
    rest = (t_sum / k_target) ** 2 - alpha * beta - beta**2
    return 2 * alpha * beta / rest if rest > 0 else math.nan
