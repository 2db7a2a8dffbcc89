"""The paper's time model: K integrated rounds in a budget t_sum, alpha per training
iteration and beta per block, give tau = floor((t_sum/K - beta)/alpha) iterations per round."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction


def _exact(x: float) -> Fraction:
    return Fraction(str(x))  # decimal literal, so 0.1 is 1/10 and floors are not off by one


def tau_for(K: int, alpha: float, beta: float, t_sum: float) -> int:
    """Local iterations per round; may be <= 0 (then K is infeasible)."""
    if K < 1:
        raise ValueError(f"K must be an integer >= 1 (got {K})")
    return math.floor((_exact(t_sum) / K - _exact(beta)) / _exact(alpha))


@dataclass(frozen=True)
class Allocation:
    K: int
    tau: int
    feasible: bool
    training_time: float  # K * tau * alpha
    mining_time: float  # K * beta
    unused_time: float  # t_sum - K (tau alpha + beta)

    @property
    def iterations(self) -> int:
        """Local iterations of the whole run: K * tau (0 when infeasible)."""
        return self.K * max(self.tau, 0)


def allocate(K: int, alpha: float, beta: float, t_sum: float) -> Allocation:
    tau = tau_for(K, alpha, beta, t_sum)
    feasible = tau >= 1
    t = max(tau, 0)
    used = K * (t * _exact(alpha) + _exact(beta))
    return Allocation(
        K=K,
        tau=tau,
        feasible=feasible,
        training_time=float(K * t * _exact(alpha)),
        mining_time=float(K * _exact(beta)),
        unused_time=float(_exact(t_sum) - used) if feasible else float(_exact(t_sum)),
    )


def max_feasible_K(alpha: float, beta: float, t_sum: float) -> int:
    """The largest K with tau >= 1, i.e. floor(t_sum / (alpha + beta))."""
    return math.floor(_exact(t_sum) / (_exact(alpha) + _exact(beta)))
