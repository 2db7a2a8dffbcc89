"""The paper's claims on the experiment, judged by paired tests over independent units
(:mod:`.trend`, :mod:`.units`): one row per claim, its p-values (false discovery rate controlled
over the dataset's counted claims), the number that decided it, its effect with an interval, and
its per-unit values.

Verdicts (``ALPHA`` = 0.05 on Benjamini-Hochberg adjusted p-values):

- reproduced: the claimed direction is significant and the change is not shown inside the
  equivalence margin (a claim of no change: the change is shown inside the margin and no trend
  is significant);
- refuted: the opposite direction is significant, or a claimed change is shown inside the
  margin, i.e. negligible even where consistent (a claim of no change: a trend is significant);
- too few runs: the smallest p-value this design could give, adjusted with the other claims'
  (:func:`.trend.reachable`), does not reach ALPHA; the row says which way the units went;
- inconclusive: neither, the data cannot tell.

A claim whose parts must all hold (learning performance: loss and accuracy) takes the larger of
its parts' p-values (an intersection-union test) and is refuted when either part's opposite is
significant (Bonferroni over the parts). Derived rows (tau alpha K* = t_sum - beta K* at fixed
beta) repeat their claim's test; readings (K* read as the K of the best accuracy, another range)
are tested on their own, their p-values adjusted apart, and counted in no tally.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from bladefl.experiments.plan.grid import Member
from bladefl.experiments.tables.tidy import draws_are_units, seeds_per_draw
from bladefl.experiments.verdicts.experiment_claims import Part, TrendClaim, claims
from bladefl.experiments.verdicts.judged import NAMES, OPPOSITE, Judged, judge, margin_quantity
from bladefl.experiments.verdicts.trend import (
    ALPHA,
    RELATIVE,
    Effect,
    Margins,
    directions,
    fdr_adjust,
    reachable,
    shape,
    updown,
)
from bladefl.experiments.verdicts.units import Units
from bladefl.experiments.verdicts.vocabulary import fmt, sweep_varying

EXPERIMENT_VERDICTS = ("reproduced", "refuted", "inconclusive", "too few runs")


def _margin_text(quantity: str, margins: Margins) -> str:
    q = margin_quantity(quantity)
    m = margins.of(q)
    if q in RELATIVE:
        return f"±{m:.0%}"
    if q == "max_accuracy":
        return f"±{100 * m:g} point{'s' * (m != 0.01)}"
    return f"±{m:g} round{'s' * (m != 1)}"


def _shown_change(v: float, quantity: str) -> str:
    q = margin_quantity(quantity)
    if q in RELATIVE:
        return f"{v:+.1%}"
    if q == "max_accuracy":
        return f"{100 * v:+.1f} points"
    if quantity in ("K", "K_accuracy"):
        return f"{v:+.2g} round{'' if abs(v) == 1 else 's'}"
    return f"{v:+.3g}"


def _equivalence_text(j: Judged) -> str:
    i = next((i for i, e in enumerate(j.effects) if e.equivalent), 0)
    e, part = j.effects[i], j.claim.parts[i]
    lo, hi = (e.low90, e.high90) if math.isfinite(e.low90) else (min(e.per_unit), max(e.per_unit))
    what = "90% CI" if math.isfinite(e.low90) and e.high90 > e.low90 else "every unit's change"
    values = j.tables[i].shape[1]
    where = (f"the change between every two of its {values} values (the widest, value {e.pair[0] + 1} to "
             f"{e.pair[1] + 1}: " if values > 2 else "the change's (")
    return (f"equivalence: {NAMES[part.quantity]}, {where}{what} {_shown_change(lo, part.quantity)}.."
            f"{_shown_change(hi, part.quantity)}) lies inside {_margin_text(part.quantity, j.margins)}")


def _moved(j: Judged) -> str:
    """What the series did on the unit means (first part), e.g. "β·K* 60, 56, 70, 60: goes up and down"."""
    mean = np.nanmean(j.tables[0], axis=0)
    shown = ", ".join(f"{v:.3g}" for v in mean)
    return f"mean {NAMES[j.claim.quantity]} {shown}: {shape(mean)}"


def verdict(j: Judged, p_claim: float, p_opposite: float, reach: float) -> tuple[str, str, str]:
    """The verdict, why, and the number that decided it (see the module's docstring)."""
    c, t = j.claim, j.trend
    over = f"{t.test} test over {t.units} {j.unit}s" if t.test != "none" else "no test"
    if len(c.parts) > 1:  # every part must hold: name each part's test
        over = "; ".join(f"{NAMES[part.quantity]} {part.direction}: {tr.test} test over {tr.units} {j.unit}s"
                         for part, tr in zip(c.parts, j.trends, strict=True)) + " (intersection-union: the larger p)"
    change = np.concatenate([tab[:, -1] - tab[:, 0] for tab in j.tables[:1]])
    if j.same:
        if p_claim < ALPHA:
            return "refuted", "a trend is significant", f"{over}: p (either direction) = {p_claim:.2g}, FDR-adjusted"
        if j.equivalent:
            return "reproduced", "the change is inside the margin", _equivalence_text(j)
        if reach > ALPHA:
            return ("too few runs", f"this design cannot reach p < {ALPHA} after adjustment",
                    f"too few runs: the smallest adjusted p this design reaches is {reach:.2g} ({over}); {_moved(j)}")
        return ("inconclusive", "no significant trend, but the change is not shown inside the margin",
                f"{over}: p (either direction) = {p_claim:.2g}, FDR-adjusted; not inside "
                f"{_margin_text(c.quantity, j.margins)}")
    if j.equivalent:
        consistent = " (though consistently in the claimed direction)" if p_claim < ALPHA else ""
        return "refuted", f"no change: the change is inside the margin{consistent}; {_moved(j)}", _equivalence_text(j)
    if p_claim < ALPHA:
        return ("reproduced", "the claimed direction is significant",
                f"{over}: p ({c.direction}) = {p_claim:.2g}, FDR-adjusted")
    if p_opposite < ALPHA:
        return ("refuted", "the opposite direction is significant",
                f"{over}: p (opposite, {OPPOSITE[c.direction]}) = {p_opposite:.2g}, FDR-adjusted")
    moved = directions(change, c.direction, j.unit)
    if shape(np.nanmean(j.tables[0], axis=0)) not in ("rises", "falls", "stays"):  # the endpoints hide the path
        moved = f"{moved}; {_moved(j)}"
    if reach > ALPHA:
        return ("too few runs", f"this design cannot reach p < {ALPHA} after adjustment: {moved}",
                f"too few runs: the smallest adjusted p this design reaches is {reach:.2g} ({over}); {moved}")
    return ("inconclusive", "neither direction is significant and the change is not inside the margin",
            f"{over}: p ({c.direction}) = {p_claim:.2g}, p (opposite) = {p_opposite:.2g}, FDR-adjusted; {moved}")


def _change(e: Effect, quantity: str) -> str:
    rel = margin_quantity(quantity) in RELATIVE
    f = (lambda v: f"{v:+.1%}") if rel else (lambda v: f"{v:+.3g}")
    if not e.per_unit:
        return "no unit"
    out = f"change {'(relative) ' if rel else ''}{f(e.mean)} (units {f(min(e.per_unit))}..{f(max(e.per_unit))}"
    return out + (f"; 95% CI {f(e.low)}..{f(e.high)}, unadjusted)" if math.isfinite(e.low) else ")")


def _shown(x: float, quantity: str) -> str:
    if not math.isfinite(x):
        return "nan"
    return f"{x:g}" if quantity in ("K", "K_accuracy", "mining_time", "training_time") else f"{x:.3f}"


def _part_text(j: Judged, i: int, units: Units) -> str:
    part, table, trend = j.claim.parts[i], j.tables[i], j.trends[i]
    rows = "; ".join(f"{label}: [{', '.join(_shown(v, part.quantity) for v in row)}]"
                     for label, row in zip(units.labels, table, strict=True))
    test = f"{trend.test} test, {trend.units} units" if trend.test != "none" else "no test"
    raw = (f"p (either direction) = {min(1.0, 2 * min(trend.p_rises, trend.p_falls)):.3g}" if part.direction == "same"
           else f"p ({part.direction}) = {trend.p(part.direction):.3g}, p (opposite) = "
                f"{trend.p(OPPOSITE[part.direction]):.3g}")
    return f"{NAMES[part.quantity]} per {units.kind}: {rows}; {_change(j.effects[i], part.quantity)}; {test}: {raw}"


def evidence(j: Judged, units: Units, p_claim: float, p_opposite: float, why: str) -> str:
    """Every unit's values, the change, each part's raw test and the row's adjusted p-values (the
    same numbers as its columns) and why."""
    c = j.claim
    head = f"{c.param} = {[fmt(x) for x in j.sweep.values]} ({units.replication}) -> "
    parts = " | ".join(_part_text(j, i, units) for i in range(len(c.parts)))
    joint = " (intersection-union over the parts: the larger p; the opposite: Bonferroni)" if len(c.parts) > 1 else ""
    adjusted = (f"p (either direction) = {p_claim:.3g}" if j.same else
                f"p ({c.direction}) = {p_claim:.3g}, p (opposite) = {p_opposite:.3g}")
    return f"{head}{parts}; BH-adjusted{joint}: {adjusted}; {why}"


def _shown_value(v: float, quantity: str) -> str:
    if not math.isfinite(v):
        return "nan"
    if quantity == "max_accuracy":
        return f"{100 * v:.1f}%"
    return f"{v:.3g}" if quantity == "min_loss" else f"{v:.3g}"


def finding(j: Judged) -> str:
    """What the data show, in one line: each part's unit-mean first and last value, the change, the
    shape where it is not monotone, how the units moved."""
    parts = []
    for part, table, e in zip(j.claim.parts, j.tables, j.effects, strict=True):
        mean = np.nanmean(table, axis=0)
        how = shape(mean)
        bent = "" if how in ("rises", "falls", "stays") else f", {how}"
        change = _shown_change(e.mean, part.quantity) if e.per_unit else "no unit"
        parts.append(f"{NAMES[part.quantity]} {_shown_value(mean[0], part.quantity)} → "
                     f"{_shown_value(mean[-1], part.quantity)} ({change}{bent}), "
                     f"{updown(table[:, -1] - table[:, 0], j.unit)}")
    values = j.sweep.values
    return f"{' and '.join(parts)}, {j.claim.param} {values[0]:g} → {values[-1]:g}"


def row(j: Judged, units: Units, p_claim: float, p_opposite: float, reach: float, note: str = "") -> dict:
    label, why, decided = verdict(j, p_claim, p_opposite if math.isfinite(p_opposite) else 1.0, reach)
    why += note
    if j.trend.units == 2 and label in ("reproduced", "refuted"):  # two units show a direction, they prove none
        why = f"two {units.kind}s show a direction, not evidence: they would say {label} ({why})"
        decided = f"too few runs to tally: {decided} (2 {units.kind}s: a look, not evidence)"
        label = "too few runs"
    c = j.claim
    return {"statement": c.statement, "role": c.role, "claim": c.name, "source": c.source, "basis": "experiment",
            "verdict": label, "decided_by": decided, "p_claim": p_claim, "p_opposite": p_opposite,
            "finding": (f"no change inside {_margin_text(c.quantity, j.margins)}: "
                        if label in ("reproduced", "refuted") and j.equivalent and not (j.same and p_claim < ALPHA)
                        else "") + finding(j),
            "effect": j.effect.mean, "effect_low": j.effect.low, "effect_high": j.effect.high,
            "units": j.trend.units, "unit": units.kind, "replication": units.replication,
            "derived_from": c.derived_from, "reading_of": c.reading_of, "page": c.page,
            "evidence": evidence(j, units, p_claim, p_opposite, why)}


def _vacuous_note(j: Judged, units: Units, members: Sequence[Member], t_sum: float) -> str:
    """A claim of no change over part of a sweep whose quantity never moves over the whole sweep
    holds trivially there: say so."""
    if not (j.same and j.claim.only is not None):
        return ""
    whole = sweep_varying(members, j.claim.param)
    if whole is None:
        return ""
    table = units.values(whole.cells, j.claim.quantity, whole.betas, t_sum)
    if table.size and np.all(np.nanmax(table, axis=1) == np.nanmin(table, axis=1)):
        return (f"; vacuous here: {NAMES[j.claim.quantity]} is the same at every {j.claim.param} of the sweep "
                f"({[fmt(v) for v in whole.values]}), so it has nothing to settle from")
    return ""


def judge_family(judged: Sequence[Judged], units: Units, members: Sequence[Member], t_sum: float,
                 extra_raw: Sequence[float] = ()) -> tuple[list[dict], list[float]]:
    """The rows of one FDR family (``extra_raw``: more raw p-values in it, e.g. convexity's, whose
    adjusted values come back as the second item)."""
    raw: list[float] = []
    floors: list[float] = []
    for j in judged:
        p, against, floor = j.raw()
        raw += [p, against]
        floors.append(floor)
    raw += list(extra_raw)
    adjusted = fdr_adjust(raw)
    rows = []
    for i, j in enumerate(judged):
        reach = reachable(raw, 2 * i, floors[i])
        rows.append(row(j, units, adjusted[2 * i], adjusted[2 * i + 1], reach,
                        _vacuous_note(j, units, members, t_sum)))
    return rows, adjusted[2 * len(judged):]


def derived_row(j: Judged, base: dict, units: Units) -> dict:
    """A derived claim (rises exactly when its base claim falls): the base's verdict and adjusted
    p-values, stated for the derived quantity's own direction, with its own per-unit values."""
    why = f"derived: the test of \"{base['claim']}\" (= t_sum - beta K* at fixed beta)"
    return {**base, "statement": j.claim.statement, "role": "derived", "claim": j.claim.name, "finding": finding(j),
            "decided_by": f"as \"{base['claim']}\": {base['decided_by']}",
            "source": j.claim.source, "derived_from": base["claim"], "reading_of": "",
            "effect": j.effect.mean, "effect_low": j.effect.low, "effect_high": j.effect.high,
            "evidence": evidence(j, units, base["p_claim"], base["p_opposite"], why)}


def experiment_verdicts(table: pd.DataFrame, members: Sequence[Member], t_sum: float,
                        margins: Margins | None = None, applies: Callable[[str], bool] | None = None,
                        extra: Callable[[Units], tuple[list[float], list[float], Callable]] | None = None
                        ) -> pd.DataFrame:
    """Every experiment claim the grid can test, one row each (see the module's docstring).
    ``applies(statement)``: whether the statement is judged on this dataset. ``extra(units)``: more
    tests in the families (convexity): raw p's of the claims' family and of the readings', and a
    function of their adjusted p's returning their rows."""
    margins = margins or Margins()
    applies = applies or (lambda s: True)
    units = Units.from_table(table)
    judged = [j for c in claims() if applies(c.statement) and (j := judge(c, units, members, t_sum, margins))]
    extra_claims, extra_readings, extra_rows = extra(units) if extra else ([], [], None)
    primary = [j for j in judged if j.claim.role == "claim"]
    rows, extra_adjusted = judge_family(primary, units, members, t_sum, extra_claims)
    by_name = {r["claim"]: r for r in rows}
    rows += [derived_row(j, by_name[j.claim.derived_from], units) for j in judged
             if j.claim.role == "derived" and j.claim.derived_from in by_name]
    readings = [j for j in judged if j.claim.role == "reading"]
    read_rows, read_adjusted = judge_family(readings, units, members, t_sum, extra_readings)
    rows += read_rows
    if extra_rows is not None:
        rows += extra_rows(extra_adjusted, read_adjusted)
    return pd.DataFrame(rows)


def _state(j: Judged) -> str:
    """One partition draw's answer (its seeds as units, unadjusted)."""
    p, against, _ = j.raw()
    if j.same:
        return "holds" if j.equivalent else "fails" if p < ALPHA else "unresolved"
    return "holds" if p < ALPHA else "fails" if against < ALPHA else "unresolved"


def per_draw(verdicts: pd.DataFrame, table: pd.DataFrame, members: Sequence[Member], t_sum: float,
             margins: Margins | None = None) -> pd.DataFrame:
    """``verdicts`` with ``draws_holding`` and ``across_partitions``: each claim tested again inside
    each partition draw, its seeds as units (unadjusted, at ALPHA), where draws are the units;
    else the columns say that seed and draw cannot be told apart."""
    margins = margins or Margins()
    out = verdicts.copy()
    seeds_on = seeds_per_draw(table)
    if len(seeds_on) < 2 or not draws_are_units(table):
        out["draws_holding"] = ""
        out["across_partitions"] = ("one draw" if len(seeds_on) < 2
                                    else "one seed per draw: seed and draw not separable")
        return out
    found: dict[str, list[str]] = {}
    for d in sorted(seeds_on.index):
        units = Units.from_table(table[table.partition == d], runs=True)
        for c in claims():
            if (j := judge(c, units, members, t_sum, margins)) is not None:
                found.setdefault(c.name, []).append(_state(j))
    holding, label = [], []
    for name in out.claim:
        states = found.get(name, [])
        holding.append(f"{states.count('holds')}/{len(states)}" if states else "")
        label.append(_across(states))
    out["draws_holding"], out["across_partitions"] = holding, label
    return out


def _across(states: list[str]) -> str:
    if not states:
        return ""
    if all(s == "holds" for s in states):
        return "holds on every draw"
    if all(s == "fails" for s in states):
        return "fails on every draw"
    if "holds" in states and "fails" in states:
        return "differs between draws"
    if all(s == "unresolved" for s in states):
        return f"unresolved on every draw ({len(states)})"
    return (f"holds on {states.count('holds')}, fails on {states.count('fails')}, "
            f"unresolved on {states.count('unresolved')} of {len(states)} draws")


__all__ = ["EXPERIMENT_VERDICTS", "Judged", "Part", "TrendClaim", "claims", "judge", "verdict", "experiment_verdicts",
           "per_draw", "Units"]
