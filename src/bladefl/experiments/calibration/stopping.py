"""When the calibration's search stops and which trials go on to every row: plain rules over the
trials' closeness to the targets, with no Optuna (the workflow reads a study's spec when it is parsed,
on machines that may not carry Optuna)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class StopRule:
    """When the search stops: once every named and coverage point is evaluated, at least
    ``min_proposals`` points proposed by the sampler are evaluated, and the running best (the smallest
    closeness to the targets on the screen, over every evaluated trial) has not fallen by more than
    ``tolerance`` over the last ``patience`` sampler proposals (named and coverage points never count in
    that window); or at ``max_trials`` counted trials whatever it does."""

    patience: int
    tolerance: float
    max_trials: int
    min_proposals: int = 1


def proposal_floor(axes: int) -> int:
    """The fewest sampler proposals before the rule may fire: 10, or twice the space's axes, the larger."""
    return max(10, 2 * axes)


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


def stop_reason(closeness: Sequence[float], proposed: Sequence[bool], asked: int, waiting: int,
                rule: StopRule) -> str | None:
    """Why the search stops now (None: it goes on), from the evaluated trials' screen closeness in
    order, whether each was proposed by the sampler (not a named or coverage point), the trials counted
    so far (``asked``) and those still enqueued (``waiting``)."""
    if asked >= rule.max_trials:
        return f"the cap of {rule.max_trials} trials"
    if len(proposed) != len(closeness):
        raise ValueError("one 'proposed' flag per evaluated trial")
    proposals = [i for i, p in enumerate(proposed) if p]
    if waiting or len(proposals) < max(rule.min_proposals, rule.patience):
        return None
    better = improvements(closeness, rule.tolerance)
    if not any(better[i] for i in proposals[-rule.patience:]):
        return (f"no sampler proposal lowered the running best by more than {rule.tolerance:g} in the last "
                f"{rule.patience} of its {len(proposals)} proposals")
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


__all__ = ["StopRule", "improvements", "promoted", "proposal_floor", "running_best", "stop_reason"]
