"""Theorems 2 and 3 and Corollary 4's second part as mathematics: each checked on the bound's
formula over a scan of valid constants (log-uniform within a factor ``spread`` of a centre, eta L
log-uniform below 1, as :mod:`bladefl.theory.constant_scan` draws them), with one failing setting
kept as a witness.

- Theorem 2, G(K) convex in K: second differences of G on a fine grid of real K (tau = gamma/K,
  the theorem's analysis) or at the integer K and tau of the time model, wherever G is defined.
- Theorem 3, the closed form K* = t_sum / sqrt(2 alpha beta/(eta L) + alpha beta + beta^2) when
  eta L gamma/K << 1: read as eta L tau* <= 0.1 at the bound's real minimiser tau*, the closed form
  within 10% of that minimiser; eps2 free (the theorem's words) or eps2 = delta xi / phi (its
  proof's assumption). eta L is drawn down to 1e-6 there: the precondition needs it small.
- Corollary 4, second part, the bound drops as eta grows while eta L < 1: G at each integer K
  (tau = gamma/K) over the swept etas, wherever G is defined at every one of them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bladefl.core.rng import numpy_rng
from bladefl.theory.bound import _bound_tau, k_star_closed_form, k_star_real, tau_of
from bladefl.theory.constant_scan import ETA_L_RANGE

CONSTANTS = ("L", "xi", "delta", "phi", "eps2")
PRECONDITION = 0.1  # eta L tau* <= this reads the theorem's "eta L gamma / K << 1"
CLOSE = 0.10  # the closed form within this fraction of the bound's real minimiser


@dataclass(frozen=True)
class Check:
    """A statement over scanned settings: how many could be judged, how many failed, a witness."""

    name: str
    settings: int
    judged: int
    failing: int
    skipped: str  # why the others were not judged
    witness: str = ""
    note: str = ""
    witness_at: dict[str, float] | None = None  # the witness's constants (and K where one is named)

    @property
    def holds(self) -> bool:
        return self.judged > 0 and self.failing == 0

    def summary(self) -> str:
        if self.judged == 0:
            return f"no scanned setting of {self.settings} can be judged ({self.skipped})"
        head = (f"as mathematics, over {self.judged} of {self.settings} scanned settings of "
                f"({', '.join(CONSTANTS)}) ({self.skipped}): ")
        body = "holds in every one" if not self.failing else (
            f"fails in {self.failing / self.judged:.0%} ({self.failing}); witness {self.witness}")
        return head + body + (f"; {self.note}" if self.note else "")


def draw(centre: Mapping[str, float], settings: int, eta: float, key: str, spread: float = 100.0,
         eta_L: tuple[float, float] = ETA_L_RANGE, seed: int = 0) -> dict[str, np.ndarray]:
    """``settings`` constant vectors log-uniform within ``spread`` of ``centre``, L redrawn so that
    eta L is log-uniform in ``eta_L`` at ``eta``."""
    rng = numpy_rng(seed, "theorem-scan", key)
    c = {k: float(centre[k]) if math.isfinite(float(centre.get(k, math.nan))) and float(centre[k]) > 0 else 1.0
         for k in CONSTANTS}
    out = {k: c[k] * np.exp(rng.uniform(-math.log(spread), math.log(spread), settings)) for k in CONSTANTS}
    out["L"] = np.exp(rng.uniform(math.log(eta_L[0]), math.log(eta_L[1]), settings)) / eta
    return out


def _witness(d: Mapping[str, np.ndarray], i: int) -> str:
    return ", ".join(f"{k} = {float(d[k][i]):.3g}" for k in CONSTANTS)


def convexity(base: Mapping[str, float], *, tau_rule: str = "real", settings: int = 2000, points: int = 400) -> Check:
    """Theorem 2 over the scan (see the module's docstring); ``base``: alpha, beta, eta, t_sum and
    the centre's constants."""
    a, b, eta, T = (float(base[k]) for k in ("alpha", "beta", "eta", "t_sum"))
    d = draw(base, settings, eta, f"convexity-{tau_rule}")
    k_max = T / (a + b)
    Ks = (np.linspace(k_max / points, k_max, points) if tau_rule == "real"
          else np.arange(1, math.floor(k_max + 1e-12) + 1, dtype=float))
    tau = tau_of(Ks, alpha=a, beta=b, t_sum=T, tau_rule=tau_rule)
    judged, failing, witness = 0, 0, ""
    for i in range(settings):
        G = _bound_tau(Ks, tau, eta=eta, **{k: float(d[k][i]) for k in CONSTANTS})
        ok = np.isfinite(G)
        triple = ok[:-2] & ok[1:-1] & ok[2:]
        if not triple.any():
            continue
        judged += 1
        with np.errstate(invalid="ignore"):
            d2 = G[:-2] - 2 * G[1:-1] + G[2:]
        bad = triple & (d2 < -1e-9 * np.abs(G[1:-1]))
        if bad.any():
            failing += 1
            if not witness:
                j = int(np.flatnonzero(bad)[0])
                witness = (f"{_witness(d, i)}: G = {G[j]:.4g}, {G[j + 1]:.4g}, {G[j + 2]:.4g} at K = "
                           f"{Ks[j]:.3g}, {Ks[j + 1]:.3g}, {Ks[j + 2]:.3g}")
    skipped = f"the others defined at fewer than three {'points' if tau_rule == 'real' else 'consecutive K'}"
    return Check(f"G convex in K ({tau_rule} tau)", settings, judged, failing, skipped, witness)


def closed_form(base: Mapping[str, float], *, eps2_rule: str = "free", settings: int = 2000) -> Check:
    """Theorem 3 over the scan (see the module's docstring): ``eps2_rule`` "free" or "proof"."""
    a, b, eta, T = (float(base[k]) for k in ("alpha", "beta", "eta", "t_sum"))
    d = draw(base, settings, eta, f"closed-form-{eps2_rule}", eta_L=(1e-6, 1.0))
    eps2 = d["eps2"] if eps2_rule == "free" else d["delta"] * d["xi"] / d["phi"]
    k_exact = k_star_real(alpha=a, beta=b, eta=eta, L=d["L"], xi=d["xi"], delta=d["delta"], phi=d["phi"], eps2=eps2,
                          t_sum=T)
    k_closed = np.array([k_star_closed_form(alpha=a, beta=b, eta=eta, L=float(L), t_sum=T) for L in d["L"]])
    k_max = T / (a + b)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (T - k_exact * b) / a / k_exact
        # judged only where the bound's K* is a number of rounds the time budget allows: 1 <= K* < t_sum / (alpha
        # + beta) (a K* below one round is no allocation: the statement is about none there)
        met = (np.isfinite(k_exact) & (k_exact >= 1) & (k_exact < k_max * (1 - 1e-6))
               & (eta * d["L"] * tau <= PRECONDITION))
        rel = np.abs(k_closed - k_exact) / k_exact
    bad = met & ~(rel <= CLOSE)
    witness = ""
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        witness = (f"{_witness(d, i)}: the bound's K* = {k_exact[i]:.4g}, the closed form {k_closed[i]:.4g} "
                   f"(eta L tau* = {eta * d['L'][i] * tau[i]:.2g})")
    note = ""
    if met.any():
        worst = float(np.nanmax(rel[met]))
        note = (f"the closed form is off by up to {worst:.0%}; the bound's K* there is {np.nanmin(k_exact[met]):.3g}.."
                f"{np.nanmax(k_exact[met]):.3g}")
    below = int((np.isfinite(k_exact) & (k_exact < 1) & (eta * d["L"] * tau <= PRECONDITION)).sum())
    skipped = (f"the others miss the precondition eta L tau* <= {PRECONDITION}, have K* on the range's edge or "
               f"below one round ({below} meet the precondition only there: no feasible allocation); eps2 "
               f"{'free' if eps2_rule == 'free' else '= delta xi / phi'}")
    return Check(f"closed form within {CLOSE:.0%}", settings, int(met.sum()), int(bad.sum()), skipped, witness, note)


def bound_falls_with_eta(base: Mapping[str, float], etas: Sequence[float], *, settings: int = 2000) -> Check:
    """Corollary 4's second part over the scan (see the module's docstring)."""
    a, b, T = (float(base[k]) for k in ("alpha", "beta", "t_sum"))
    eta_values = np.asarray(sorted(map(float, etas)))
    d = draw(base, settings, float(eta_values.max()), "bound-falls-with-eta")
    Ks = np.arange(1, math.floor(T / (a + b) + 1e-12) + 1, dtype=float)
    tau = tau_of(Ks, alpha=a, beta=b, t_sum=T, tau_rule="real")
    judged, failing, witness = 0, 0, ""
    at: dict[str, float] | None = None
    for i in range(settings):
        G = np.stack([_bound_tau(Ks, tau, eta=float(e), **{k: float(d[k][i]) for k in CONSTANTS}) for e in eta_values])
        ok = np.isfinite(G).all(axis=0)
        if not ok.any():
            continue
        judged += 1
        with np.errstate(invalid="ignore"):
            bad = ok & (np.diff(G, axis=0) > -1e-12 * G[:-1]).any(axis=0)
        if bad.any():
            failing += 1
            if not witness:
                k = int(np.flatnonzero(bad)[0])
                at = {c: float(d[c][i]) for c in CONSTANTS} | {"K": float(Ks[k]), "tau": float(tau[k])}
                shown = ", ".join(f"{g:.4g}" for g in G[:, k])
                witness = (f"{_witness(d, i)}: at K = {Ks[k]:g}, G = {shown} at eta = {[float(e) for e in eta_values]} "
                           f"(eta L <= {eta_values.max() * d['L'][i]:.2g})")
    return Check("the bound falls as eta grows", settings, judged, failing,
                 "eta L < 1 at every swept eta; the others undefined at every K for some eta", witness,
                 witness_at=at)


SMALL_CHANGE = 0.5  # rounds: a change of K* below half a round leaves the integer K* where it was


def small_noise(base: Mapping[str, float], sigma2: float, *, settings: int = 2000) -> Check:
    """Section VI's "a small noise does not affect the optimal integrated round", on Theorem 4's bound
    as written: over the scan, the real K* with the lazy noise ``sigma2`` against sigma2 = 0 (the same
    M, N and plagiarism theta of ``base``), judged where both are feasible (1 <= K* < t_sum/(alpha +
    beta)); it fails where the two differ by half a round or more."""
    a, b, eta, T = (float(base[k]) for k in ("alpha", "beta", "eta", "t_sum"))
    d = draw(base, settings, eta, "small-noise")
    lazy = {k: float(base[k]) for k in ("M", "N", "theta")}
    common: dict[str, Any] = {"alpha": a, "beta": b, "eta": eta, "t_sum": T, **{k: d[k] for k in CONSTANTS}, **lazy}
    quiet, noisy = k_star_real(**common, sigma2=0.0), k_star_real(**common, sigma2=float(sigma2))
    k_max = T / (a + b)
    with np.errstate(invalid="ignore"):
        met = np.ones(settings, dtype=bool)
        for k in (quiet, noisy):
            met &= np.isfinite(k) & (k >= 1) & (k < k_max * (1 - 1e-6))
        moved = np.abs(noisy - quiet)
    bad = met & (moved >= SMALL_CHANGE)
    witness = ""
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        witness = f"{_witness(d, i)}: K* = {quiet[i]:.4g} without noise, {noisy[i]:.4g} at sigma2 = {sigma2:g}"
    note = f"K* moves by at most {np.nanmax(moved[met]):.3g} rounds there" if met.any() else ""
    skipped = (f"the others have a K* on the range's edge or below one round; M = {lazy['M']:g} of N = {lazy['N']:g}, "
               f"theta = {lazy['theta']:.3g}, the noise term as written (sqrt(M) sigma2)")
    return Check(f"K* within {SMALL_CHANGE} rounds at sigma2 = {sigma2:g}", settings, int(met.sum()), int(bad.sum()),
                 skipped, witness, note)


def eta_derivatives(*, eta: float, K: float, tau: float, L: float, xi: float, delta: float, phi: float, eps2: float,
                    alpha: float, beta: float, t_sum: float) -> tuple[float, float]:
    """d g / d eta of g = 1/G at fixed K: as Corollary 4's proof writes it, gamma (phi + delta xi / eps2),
    and as it is, gamma (phi - (xi delta / eps2)((1 + eta L)^(tau - 1) - 1)) (lambda = 1 + eta L
    depends on eta)."""
    gamma = (t_sum - K * beta) / alpha
    written = gamma * (phi + delta * xi / eps2)
    true = gamma * (phi - xi * delta / eps2 * math.expm1((tau - 1) * math.log1p(eta * L)))
    return written, true


__all__ = ["Check", "convexity", "closed_form", "bound_falls_with_eta", "eta_derivatives", "draw", "small_noise"]
