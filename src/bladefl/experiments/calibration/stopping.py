"""When the calibration's search stops and which trials go on to every row: plain rules over the
trials' closeness to the targets, with no Optuna (the workflow reads a study's spec when it is parsed,
on machines that may not carry Optuna)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class StopRule:
    """When the search stops: once every named and coverage point is evaluated and the running best
    (the smallest closeness to the targets on the screen) has not fallen by more than ``tolerance``
    over the last ``patience`` evaluated trials; or at ``max_trials`` counted trials whatever it does."""

    patience: int
    tolerance: float
    max_trials: int


def improvements(closeness: Sequence[float], tolerance: float) -> list[bool]:
    """Per evaluated trial in order, whether it lowered the running best by more than ``tolerance``."""
    best, out = math.inf, []
    for c in closeness:
        better = c < best - tolerance
        out.append(better)
        best = min(best, c) if math.isfinite(c) else best
    return out


def running_best(closeness: Sequence[float]) -> list[float]:
    """The smallest closeness so far, per evaluated trial in order."""
    best, out = math.inf, []
    for c in closeness:
        best = min(best, c) if math.isfinite(c) else best
        out.append(best)
    return out


def stop_reason(closeness: Sequence[float], asked: int, waiting: int, rule: StopRule) -> str | None:
    """Why the search stops now (None: it goes on), from the evaluated trials' screen closeness in
    order, the trials counted so far (``asked``) and those still enqueued (``waiting``)."""
    if asked >= rule.max_trials:
        return f"the cap of {rule.max_trials} trials"
    if waiting or not closeness:
        return None
    better = improvements(closeness, rule.tolerance)
    last = max(i for i, b in enumerate(better) if b)
    if len(closeness) - 1 - last >= rule.patience:
        return (f"no trial lowered the running best by more than {rule.tolerance:g} in the last {rule.patience} "
                "evaluated trials")
    return None


def promoted(closeness: float, others: Sequence[float], keep: int) -> bool:
    """Successive halving's rule: a screened point goes on to every row where its closeness ranks
    within the best 1/``keep`` of the screened points so far (itself included; a tie ranks it below
    the point screened before it, so two equal points do not both go on)."""
    ranked = [c for c in others if math.isfinite(c)]
    if not math.isfinite(closeness):
        return False
    rank = 1 + sum(c <= closeness for c in ranked)
    return rank <= math.ceil((len(ranked) + 1) / keep)


__all__ = ["StopRule", "improvements", "promoted", "running_best", "stop_reason"]
