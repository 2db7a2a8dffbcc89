"""A claim on the experiment measured on the independent units, before any verdict: per part of the
claim the table [units x swept values] of its quantity, its trend test and its effect with the
equivalence margin (:class:`Judged`, made by :func:`judge`). :mod:`.experiment` turns these into
verdict rows."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from bladefl.experiments.plan.grid import Member
from bladefl.experiments.verdicts.experiment_claims import TrendClaim
from bladefl.experiments.verdicts.trend import (
    RELATIVE,
    Effect,
    Margins,
    Trend,
    effect,
    trend_test,
)
from bladefl.experiments.verdicts.units import Units
from bladefl.experiments.verdicts.vocabulary import Sweep, sweep_varying

OPPOSITE = {"rises": "falls", "falls": "rises"}
NAMES = {"K": "K*", "K_accuracy": "K* by accuracy", "mining_time": "β·K*", "training_time": "τ·α·K*",
         "min_loss": "min loss", "max_accuracy": "max accuracy"}


def _restrict(sweep: Sweep, only: Callable[[float], bool] | None) -> Sweep:
    if only is None:
        return sweep
    keep = [i for i, v in enumerate(sweep.values) if only(v)]
    return Sweep(sweep.vary, [sweep.values[i] for i in keep], [sweep.cells[i] for i in keep],
                 [sweep.betas[i] for i in keep])


def margin_quantity(quantity: str) -> str:
    return "K" if quantity in ("training_time", "K_accuracy") else quantity


@dataclass(frozen=True)
class Judged:
    """A claim's parts on the units: per part the table [units, values], its trend test and effect."""

    claim: TrendClaim
    sweep: Sweep
    tables: tuple[np.ndarray, ...]
    trends: tuple[Trend, ...]
    effects: tuple[Effect, ...]
    margins: Margins
    unit: str = "unit"  # what a unit is: draw | run

    @property
    def trend(self) -> Trend:
        return self.trends[0]

    @property
    def effect(self) -> Effect:
        return self.effects[0]

    @property
    def same(self) -> bool:
        return self.claim.direction == "same"

    def raw(self) -> tuple[float, float, float]:
        """Raw p-values (claimed direction, opposite) and the design's floor; a claim of no change:
        (either direction, nan)."""
        if self.same:
            t = self.trend
            return min(1.0, 2 * min(t.p_rises, t.p_falls)), math.nan, min(1.0, 2 * t.min_p)
        p = max(t.p(part.direction) for t, part in zip(self.trends, self.claim.parts, strict=True))
        against = min(t.p(OPPOSITE[part.direction]) for t, part in zip(self.trends, self.claim.parts, strict=True))
        floor = max(t.min_p for t in self.trends)
        return p, min(1.0, len(self.trends) * against), floor

    @property
    def equivalent(self) -> bool:
        """A part shown inside its margin: the claimed change (or, for a claim of no change, its
        absence) is shown."""
        return any(e.equivalent for e in self.effects)


def judge(claim: TrendClaim, units: Units, members: Sequence[Member], t_sum: float,
          margins: Margins) -> Judged | None:
    sweep = sweep_varying(members, claim.param)
    if sweep is None:
        return None
    sweep = _restrict(sweep, claim.only)
    if len(sweep.values) < 2:
        return None
    tables, trends, effects = [], [], []
    for part in claim.parts:
        table = units.values(sweep.cells, part.quantity, sweep.betas, t_sum)
        q = margin_quantity(part.quantity)
        tables.append(table)
        trends.append(trend_test(table))
        effects.append(effect(table, margins.of(q), relative=q in RELATIVE))
    return Judged(claim, sweep, tuple(tables), tuple(trends), tuple(effects), margins, units.kind)
