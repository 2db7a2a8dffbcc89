"""The paper's time model: K integrated rounds in a budget t_sum, alpha per training
iteration and beta per block, give tau = floor((t_sum/K - beta)/alpha) iterations per round.

The authors' code computes tau otherwise (``main_FL&BL.py`` lines 37 and 111-113 of
ElvisShaoYumeng/BLADE-FL: ``tau = local_frequence * (total_time - bl_antifrequence * epochs)``, then
``tau // epochs``, its ``local_frequence`` commented "alpha" and set to 1): floor(alpha (t_sum - beta K)/K),
the same rule at alpha = 1 and alpha^2 times the paper's iterations elsewhere, past the budget for alpha > 1.
``rule="authors"`` (``time.tau_rule``) reads it so; the time spent is still alpha per iteration."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any


def _exact(x: float) -> Fraction:
    return Fraction(str(x))  # decimal literal, so 0.1 is 1/10 and floors are not off by one


TAU_RULES = ("paper", "authors")


def tau_for(K: int, alpha: float, beta: float, t_sum: float, rule: str = "paper") -> int:
    """Local iterations per round under ``rule`` (:data:`TAU_RULES`); may be <= 0 (then K is infeasible)."""
    if K < 1:
        raise ValueError(f"K must be an integer >= 1 (got {K})")
    if rule == "authors":
        return math.floor(_exact(alpha) * (_exact(t_sum) - _exact(beta) * K) / K)
    if rule != "paper":
        raise ValueError(f"tau rule must be one of {list(TAU_RULES)} (got {rule!r})")
    return math.floor((_exact(t_sum) / K - _exact(beta)) / _exact(alpha))


def iteration_errors(t_sum: float, alpha: float, rule: str, most: float) -> list[str]:
    """The budget's bound on a round's local iterations (t_sum / alpha, or t_sum alpha under the authors'
    rule) above ``most``: one line naming the fields."""
    op, bound = ("*", t_sum * alpha) if rule == "authors" else ("/", t_sum / alpha)
    if bound <= most:
        return []
    return [f"time.t_sum {op} time.alpha must be at most {most:g} local iterations (got {t_sum!r} {op} {alpha!r})"]


@dataclass(frozen=True)
class Allocation:
    K: int
    tau: int
    feasible: bool
    training_time: float  # K * tau * alpha
    mining_time: float  # K * beta
    unused_time: float  # t_sum - K (tau alpha + beta): below 0 where the authors' rule overspends

    @property
    def iterations(self) -> int:
        """Local iterations of the whole run: K * tau (0 when infeasible)."""
        return self.K * max(self.tau, 0)


def allocate(K: int, alpha: float, beta: float, t_sum: float, rule: str = "paper") -> Allocation:
    tau = tau_for(K, alpha, beta, t_sum, rule)
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


def allocation(K: int, time: Any) -> Allocation:  # noqa: ANN401 - a TimeConfig (alpha, beta, t_sum, tau_rule)
    """:func:`allocate` under a run's time config: its alpha, beta, t_sum and tau rule."""
    return allocate(K, time.alpha, time.beta, time.t_sum, time.tau_rule)


def max_feasible_K(alpha: float, beta: float, t_sum: float) -> int:
    """The largest K with tau >= 1, i.e. floor(t_sum / (alpha + beta))."""
    return math.floor(_exact(t_sum) / (_exact(alpha) + _exact(beta)))
