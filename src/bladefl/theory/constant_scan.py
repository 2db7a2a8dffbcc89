"""Corollaries 1-5 as mathematics: each checked on the bound's real-valued minimiser over a scan
of valid constants, not only at the fitted ones.

A corollary says how K* moves with a parameter for *any* constants satisfying the theorems'
conditions. :func:`scan` draws ``settings`` constant vectors (L, xi, delta, phi, eps2, theta),
each log-uniform within a factor ``spread`` of a centre (a cell's measured constants), with L
redrawn so that eta L is log-uniform in (1e-3, 1) at the largest eta the sweep reaches (Lemma
1's eta L < 1 at every point), computes the real K* (:func:`bladefl.theory.bound.k_star_real`)
at every swept value, and counts the settings where K* does not move as claimed. Settings where
the bound is undefined (its bracket never positive) at some swept value say nothing, nor do those
whose K* sits on the edge of the feasible range (tau = 1, K = t_sum/(alpha+beta)) at some value:
the corollaries set the derivative to zero, an interior minimum; both are counted apart, as are
settings where K* moves less than the minimiser's numerical resolution over the whole sweep
(``unresolved``: a term too small to move it measurably, not a move against the claim). One
failing setting is kept as a witness.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bladefl.core.rng import numpy_rng
from bladefl.theory.bound import k_star_real
from bladefl.theory.claims import FLAT, RESOLUTION, Corollary, monotone, sweep_point

SCANNED = ("L", "xi", "delta", "phi", "eps2", "theta")
ETA_L_RANGE = (1e-3, 1.0)


@dataclass(frozen=True)
class Scan:
    claim: str
    settings: int  # drawn
    defined: int  # with the bound defined at every swept value
    edge: int  # of the defined, with K* on the feasible range's edge (tau = 1) at some swept value
    failing: int  # of the defined inside the range, where K* does not move as claimed
    values: tuple[float, ...]
    witness: dict[str, float] | None = None  # the constants of one failing setting
    witness_k: tuple[float, ...] = ()  # its K* at each swept value
    unresolved: int = 0  # of the defined inside the range, where K* moves less than the solver resolves

    @property
    def holds(self) -> bool:
        return self.judged > 0 and self.failing == 0

    @property
    def judged(self) -> int:
        return self.defined - self.edge - self.unresolved

    def summary(self) -> str:
        if self.judged == 0:
            return (f"no scanned setting of {self.settings} has the bound defined with an interior K* at every "
                    f"swept value")
        head = (f"as mathematics, over {self.judged} of {self.settings} scanned settings of ({', '.join(SCANNED)}) "
                f"with eta L < 1, the bound defined and K* inside the range at every value "
                f"({self.settings - self.defined} undefined, {self.edge} on the edge"
                + (f", {self.unresolved} where K* moves less than {FLAT:g} of itself over the sweep, below the "
                   f"solver's "
                   f"resolution" if self.unresolved else "") + "): ")
        if self.failing == 0:
            return head + "holds in every one"
        w = ", ".join(f"{k} = {v:.3g}" for k, v in (self.witness or {}).items())
        ks = ", ".join(f"{k:.4g}" for k in self.witness_k)
        return (head + f"fails (K* moves against the claim) in {self.failing / self.judged:.0%} "
                       f"({self.failing}); witness {w}: "
                       f"K* = [{ks}] at {list(self.values)}")


DIGITS = 9  # the significant digits K* is compared at (the scan's counts): far above the solver's last bits


def quantised(values: np.ndarray) -> np.ndarray:
    """``values`` rounded to :data:`DIGITS` significant digits (non-finite ones kept), so that the scan's counts
    (defined, on the edge, flat, failing) do not turn on the last bits in which two machines' libm differ: a
    count moves only where a K* lies within about 1e-16 of a 9th-digit boundary, not wherever it lies within
    1e-16 of a threshold."""
    values = np.asarray(values, dtype=float)
    finite = np.isfinite(values) & (values != 0)
    scale = np.ones_like(values)
    scale[finite] = 10.0 ** (DIGITS - 1 - np.floor(np.log10(np.abs(values[finite]))))
    return np.where(finite, np.round(values * scale) / scale, values)


def _centre(base: Mapping[str, float]) -> dict[str, float]:
    """The scan's centre: the base point's constants, with a finite positive stand-in (1) for any
    that is not (an unfitted eps2, theta 0 without lazy clients)."""
    return {k: float(base[k]) if math.isfinite(float(base.get(k, math.nan))) and float(base[k]) > 0 else 1.0
            for k in SCANNED}


def _largest_eta(base: Mapping[str, float], param: str, values: Sequence[float]) -> float:
    return max(map(float, values)) if param == "eta" else float(base["eta"])


def scan(claim: Corollary, base: Mapping[str, float], values: Sequence[float], *, settings: int = 2000,
         spread: float = 100.0, seed: int = 0) -> Scan:
    """``claim`` on the bound over ``settings`` drawn constant vectors around ``base`` (the
    arguments of :func:`bladefl.theory.claims.sweep_point`), at the swept ``values``."""
    rng = numpy_rng(seed, "constant-scan", claim.name)
    centre = _centre(base)
    drawn = {k: centre[k] * np.exp(rng.uniform(-math.log(spread), math.log(spread), settings)) for k in SCANNED}
    lo, hi = (math.log(v) for v in ETA_L_RANGE)
    drawn["L"] = np.exp(rng.uniform(lo, hi, settings)) / _largest_eta(base, claim.param, values)
    k_at, edge = [], np.zeros(settings, dtype=bool)
    for v in values:
        # a scanned constant's swept values are read as multiples of its centre (delta: 0.5, 1, 2 x)
        value = drawn[claim.param] * (v / centre[claim.param]) if claim.param in SCANNED else v
        p = sweep_point({**base, **drawn}, claim.param, value)
        k = k_star_real(**{a: p[a] for a in ("alpha", "beta", "eta", "L", "xi", "delta", "phi", "eps2", "t_sum",
                                             "M", "N", "theta", "sigma2")})
        k_max = np.asarray(p["t_sum"] / (p["alpha"] + p["beta"]), dtype=float)
        edge |= np.isfinite(k) & (quantised(k) >= quantised(k_max * (1 - 1e-6)))
        k_at.append(k * p["beta"] if claim.quantity == "mining_time" else k)
    raw = np.stack(k_at, axis=1)  # [settings, values]
    K = quantised(raw)
    defined = np.isfinite(K).all(axis=1)
    safe = np.where(defined[:, None], K, 1.0)  # undefined settings are left out below
    tol = RESOLUTION * np.abs(safe).max(axis=1)  # per step between neighbouring values
    flat = defined & (safe.max(axis=1) - safe.min(axis=1) <= FLAT / RESOLUTION * tol)
    inside = defined & ~edge & ~flat
    failing = [i for i in np.flatnonzero(inside)
               if not monotone(claim.name, "bound", list(values), K[i], claim.direction, tolerance=tol[i]).holds]
    witness = None if not failing else {k: float(drawn[k][failing[0]]) for k in SCANNED}
    return Scan(claim.name, settings, int(defined.sum()), int((defined & edge).sum()), len(failing),
                tuple(float(v) for v in values), witness,
                tuple(float(k) for k in raw[failing[0]]) if failing else (), int((defined & ~edge & flat).sum()))



__all__ = ["DIGITS", "Scan", "quantised", "scan", "SCANNED"]
