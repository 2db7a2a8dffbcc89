"""The calibration study's files held to its spec before anything is taken from them (a journal or a
picked-points file from elsewhere is hostile): a journal's trials and a pick, each value a value of the
space, each distance a finite number of at least 0; ValueError naming the trial or role and the field."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bladefl.core.values import is_finite, is_int, is_num

if TYPE_CHECKING:
    import optuna

    from bladefl.experiments.calibration.study import StudySpec


def checked_picked(spec: StudySpec, picked: Any) -> dict[str, dict[str, Any]]:  # noqa: ANN401 - parsed JSON
    """A picked-points file held to the spec before a rerun: roles of the spec, each a point of its
    space (every axis, a value of the axis), the stated role the stated reading."""
    if not isinstance(picked, Mapping) or "stated" not in picked:
        raise ValueError("--picked: a mapping of roles (stated first) to their points is needed")
    out = {}
    for role, entry in picked.items():
        if role not in spec.roles:
            raise ValueError(f"--picked: role {str(role)[:40]!r} is not one of {spec.roles}")
        values = entry.get("values") if isinstance(entry, Mapping) else None
        if not isinstance(values, Mapping) or set(values) != {a.name for a in spec.space.axes}:
            raise ValueError(f"--picked {role}.values: a value for each axis {[a.name for a in spec.space.axes]}")
        for axis, v in values.items():
            if not any(type(v) is type(u) and v == u for u in spec.space.axis(axis).values):
                raise ValueError(f"--picked {role}.values.{axis} must be one of {list(spec.space.axis(axis).values)} "
                                 f"(got {str(v)[:40]!r})")
        name = entry.get("name", "")
        trial = entry.get("trial")
        if not isinstance(name, str) or len(name) > 64 or not (trial is None or is_int(trial) and trial >= 0):
            raise ValueError(f"--picked {role}: name a string and trial a trial number or null")
        out[str(role)] = {"values": dict(values), "trial": trial, "name": name,
                          "key": spec.space.point(values).key}
    if out["stated"]["key"] != spec.space.stated.key:
        raise ValueError("--picked stated: is not the stated reading of the spec's space")
    return out


def checked_trials(spec: StudySpec, trials: Sequence[optuna.trial.FrozenTrial]) -> list[optuna.trial.FrozenTrial]:
    """A journal's trials held to the spec before anything is read from them (a journal from elsewhere is
    hostile): each trial's settings a point of the space, its distances and attributes finite and not
    negative where given; ValueError naming the trial and the field."""
    from optuna.trial import TrialState

    axes = {a.name: a.values for a in spec.space.axes}
    for t in trials:
        where = f"trial {t.number}"
        if t.state == TrialState.WAITING:
            continue
        for axis, v in t.params.items():
            if axis not in axes or not any(type(v) is type(u) and v == u for u in axes[axis]):
                raise ValueError(f"--storage {where}: {str(axis)[:40]} = {str(v)[:40]!r} is not a value of the space "
                                 f"(allowed: {list(axes.get(axis, ()))})")
        if t.state != TrialState.COMPLETE:
            continue
        if set(t.params) != set(axes):
            raise ValueError(f"--storage {where}: a complete trial sets every axis {sorted(axes)}")
        full = t.user_attrs.get("full_values")
        # a promoted reading whose runs all diverged on a row scores NaN on both, over every row (distances)
        diverged = isinstance(full, list) and len(full) == 2 and all(isinstance(x, float) and math.isnan(x)
                                                                        for x in full)
        for name, v in [("values", x) for x in (t.values or [math.nan])] + [
                ("full_values", x) for x in ([] if diverged else (full or []))] + [
                (k, t.user_attrs[k]) for k in ("screen_closeness", "full_closeness", "seconds") if k in t.user_attrs]:
            nan_ok = diverged and name == "full_closeness"  # NaN exactly where the distances are
            if not (is_finite(v) and v >= 0) and not (nan_ok and isinstance(v, float) and math.isnan(v)):
                either = " (or both NaN: a row diverged)" if name == "full_values" else ""
                raise ValueError(f"--storage {where}: {name} must be finite numbers >= 0{either} (got {str(v)[:40]!r})")
        if "full_values" in t.user_attrs and len(t.user_attrs["full_values"]) != 2:
            raise ValueError(f"--storage {where}: full_values must hold two distances")
        problem = label_problem(spec, t.params, t.user_attrs) or rows_problem(spec, t.user_attrs)
        if problem:
            raise ValueError(f"--storage {where}: {problem}")
    return list(trials)


def label_problem(spec: StudySpec, params: Mapping[str, Any], attrs: Mapping[str, Any]) -> str | None:
    """Why a trial's labels cannot be its own (None: they can): a ``point`` name that is none of the
    spec's named points, a ``coverage`` that is no axis=value of the space, a ``key`` that is not the
    key of the trial's own settings (each a name the tables and pages print and link)."""
    names = {p.name for p in spec.space.points} | {"stated"}
    point = attrs.get("point", "")
    if point and (not isinstance(point, str) or point not in names):
        return f"point {str(point)[:40]!r} is none of the spec's named points {sorted(names)}"
    coverage = attrs.get("coverage", "")
    allowed = {f"{a.name}={v}" for a in spec.space.axes for v in a.values}
    if coverage and (not isinstance(coverage, str) or coverage not in allowed):
        return f"coverage {str(coverage)[:40]!r} is no axis=value of the space"
    if "key" in attrs and set(params) == {a.name for a in spec.space.axes}:
        if attrs["key"] != spec.space.point(params).key:
            return f"key {str(attrs['key'])[:40]!r} is not the key of the trial's own settings"
    return None


ROW_NUMBERS = {"K_star": (1, 10_000), "max_accuracy": (0, 100), "K_star_sd": (0, 10_000),
               "max_accuracy_sd": (0, 100), "K_star_distance": (0, 10_000), "accuracy_distance": (0, 100)}


def rows_problem(spec: StudySpec, attrs: Mapping[str, Any]) -> str | None:
    """Why a trial's per-row results (``screen_rows``, ``full_rows``) cannot be the study's (None: they
    can): not the plan's rows in its order (table, sweep, cell), a draw count that is not a whole number
    in the plan's range, a K* outside 1..10,000 or an accuracy outside 0..100 (NaN: a row that trained
    nothing), or a paper value that is not the plan's."""
    for name, plan in (("screen_rows", spec.screen), ("full_rows", spec.full)):
        rows = attrs.get(name)
        if rows is None:
            continue
        if not isinstance(rows, list) or len(rows) != len(plan.rows) or not all(isinstance(r, Mapping) for r in rows):
            return f"{name} must be the plan's {len(plan.rows)} rows"
        for got, row in zip(rows, plan.rows, strict=True):
            if (got.get("table"), got.get("sweep"), got.get("cell")) != (row.table, row.sweep, row.cell.key):
                return f"{name}: a row that is not the plan's ({str(got.get('cell'))[:60]!r})"
            draws = got.get("draws")
            if not (is_int(draws) and 0 <= draws <= len(plan.draws) * 1000):
                return f"{name} {row.cell.key}: draws must be a count of runs (got {str(draws)[:40]!r})"
            for field, (lo, hi) in ROW_NUMBERS.items():
                v = got.get(field)
                if not (isinstance(v, float) and math.isnan(v)) and not (is_finite(v) and lo <= v <= hi):
                    return f"{name} {row.cell.key}: {field} must be NaN or in {lo}..{hi} (got {str(v)[:40]!r})"
            for field, want in (("paper_K_star", row.paper_K_star), ("paper_max_accuracy", row.paper_accuracy)):
                if not _same_number(got.get(field), want):
                    return f"{name} {row.cell.key}: {field} is not the paper's ({str(got.get(field))[:40]!r})"
    return None


def _same_number(a: Any, b: Any) -> bool:  # noqa: ANN401 - parsed JSON
    """Two parsed numbers equal, None and NaN the same (a row the paper gives no value)."""
    def plain(x: Any) -> float | str | None:  # noqa: ANN401
        return None if x is None or (is_num(x) and math.isnan(x)) else float(x) if is_num(x) else "not a number"

    return plain(a) == plain(b) != "not a number"


__all__ = ["checked_picked", "checked_trials", "label_problem", "rows_problem"]
