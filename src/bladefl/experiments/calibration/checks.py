"""The calibration study's files held to its spec before anything is taken from them (a journal or a
picked-points file from elsewhere is hostile): a journal's trials and a pick, each value a value of the
space, each distance a finite number of at least 0; ValueError naming the trial or role and the field."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bladefl.core.values import is_finite, is_int

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
        for name, v in [("values", x) for x in (t.values or [math.nan])] + [
                (k, x) for k in ("full_values",) for x in (t.user_attrs.get(k) or [])] + [
                (k, t.user_attrs[k]) for k in ("screen_closeness", "full_closeness", "seconds") if k in t.user_attrs]:
            if not (is_finite(v) and v >= 0):
                raise ValueError(f"--storage {where}: {name} must be finite numbers >= 0 (got {str(v)[:40]!r})")
        if "full_values" in t.user_attrs and len(t.user_attrs["full_values"]) != 2:
            raise ValueError(f"--storage {where}: full_values must hold two distances")
    return list(trials)


__all__ = ["checked_picked", "checked_trials"]
