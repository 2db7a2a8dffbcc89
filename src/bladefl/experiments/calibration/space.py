"""The space of readings the calibration searches: each setting the paper leaves unstated as an axis
of named values, each value a set of run-config overrides of the engine.

A **point** of the space gives every axis a value (axes it does not name keep their ``stated``
value: the paper engine's reading); its run-config overrides (``--set`` lines) turn the engine
into that reading. The axes a config may use and what their values mean:

- ``partition``: ``shards<s>`` (s shards per client), ``classes<c>`` (c classes per client),
  ``dirichlet<a>`` (label proportions from Dirichlet(a)), ``iid``;
- ``samples``: samples per client (``partition.n``);
- ``iteration``: ``epoch`` (a pass over the client's data), ``steps<s>`` (s minibatch steps),
  ``full_batch`` (one gradient step on all its data);
- ``batch_size``; ``scaling``: ``standardised`` or ``raw`` pixels; ``width`` (hidden units);
  ``activation``: ``relu`` or ``none``;
- ``lazy_noise``: ``parameter`` (sigma2 per parameter), ``model`` (sigma2 over the model) or ``authors``
  (as the authors' lazy script draws it, :mod:`bladefl.fl.lazy`);
- ``eta_scale``: every step is eta x scale (where the iteration changes the number of steps);
- ``tau_rule``: ``paper`` (tau = floor((t_sum/K - beta)/alpha)) or ``authors`` (the authors' code's
  floor(alpha (t_sum - beta K)/K), :mod:`bladefl.fl.timemodel`: the same at alpha 1, alpha^2 times the
  iterations elsewhere, so a point with it costs up to 30 times more on Table II's alpha = 5 rows);
- ``replicates``: what the scored runs replicate: ``draws`` (run seed i on partition draw i, the
  paper engine's design) or ``seeds`` (every run seed on partition draw 0: the authors' code averages
  20 runs of one split). It sets no run-config field; the study's plan reads it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bladefl.core.values import is_int as _is_int
from bladefl.core.values import is_num as _is_num
from bladefl.fl.run_config import LAZY_NOISE
from bladefl.fl.timemodel import TAU_RULES

AXES = ("partition", "samples", "iteration", "batch_size", "scaling", "width", "activation", "lazy_noise",
        "eta_scale", "tau_rule", "replicates")
REPLICATES = ("draws", "seeds")
_ITERATION = re.compile(r"epoch|full_batch|steps(?P<s>[1-9][0-9]{0,3})")
_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{0,63}")


def _partition_fields(value: str) -> dict[str, Any] | None:
    """A partition value's fields (the scheme registry's grammar, :func:`bladefl.data.partition.parse_detail`;
    a parameter in plain decimals: ``shards2``, ``dirichlet0.3``, ``iid``); None otherwise."""
    from bladefl.data.partition import parse_detail

    if not re.fullmatch(r"[a-z]+([0-9]+(\.[0-9]+)?)?", value):
        return None
    return parse_detail(value)


def value_error(axis: str, value: Any) -> str | None:
    """Why ``value`` is not a value of ``axis`` (None when it is)."""
    ok = {
        "partition": lambda v: isinstance(v, str) and _partition_fields(v) is not None,
        "samples": lambda v: _is_int(v) and 8 <= v <= 3000,
        "iteration": lambda v: isinstance(v, str) and _ITERATION.fullmatch(v) is not None,
        "batch_size": lambda v: _is_int(v) and 1 <= v <= 4096,
        "scaling": lambda v: v in ("standardised", "raw"),
        "width": lambda v: _is_int(v) and 1 <= v <= 4096,
        "activation": lambda v: v in ("relu", "none"),
        "lazy_noise": lambda v: v in LAZY_NOISE,
        "eta_scale": lambda v: _is_num(v) and 0 < v <= 1000,
        "tau_rule": lambda v: v in TAU_RULES,
        "replicates": lambda v: v in REPLICATES,
    }[axis]
    if ok(value):
        return None
    allowed = {
        "partition": "shards<s>, classes<c>, dirichlet<a> or iid",
        "samples": "an integer in 8..3000",
        "iteration": "epoch, full_batch or steps<s> (s in 1..9999)",
        "batch_size": "an integer in 1..4096",
        "scaling": "standardised or raw",
        "width": "an integer in 1..4096",
        "activation": "relu or none",
        "lazy_noise": " or ".join(LAZY_NOISE),
        "eta_scale": "a number in (0, 1000]",
        "tau_rule": " or ".join(TAU_RULES),
        "replicates": "draws or seeds",
    }[axis]
    return f"must be {allowed} (got {value!r})"


def overrides(axis: str, value: Any) -> dict[str, Any]:
    """The run-config fields (dotted) one axis value sets."""
    if axis == "partition":
        fields = _partition_fields(value)
        assert fields is not None
        return {f"partition.{k}": v for k, v in fields.items()}
    if axis == "iteration":
        if value.startswith("steps"):
            return {"train.iteration": "steps", "train.steps": int(value[5:])}
        return {"train.iteration": value}
    if axis == "scaling":
        return {"normalize": value == "standardised"}
    if axis == "replicates":
        return {}  # the plan's pairing of run seeds and partition draws (evaluation.Plan.run_sets)
    return {_FIELD[axis]: value}


_FIELD = {"samples": "partition.n", "batch_size": "train.batch_size", "width": "model.hidden",
          "activation": "model.activation", "lazy_noise": "lazy.noise", "eta_scale": "train.eta_scale",
          "tau_rule": "time.tau_rule"}


@dataclass(frozen=True)
class Axis:
    """One unstated setting: the values the search may give it, the paper engine's (``stated``) and
    where the axis comes from (what the paper says or does not say, what others do)."""

    name: str
    values: tuple[Any, ...]
    stated: Any
    source: str = ""


@dataclass(frozen=True)
class Point:
    """A reading: a value per axis (every axis of the space)."""

    values: Mapping[str, Any]
    name: str = ""  # a named point (the stated reading, a sensitivity reading); "" for a searched one

    @property
    def key(self) -> str:
        """A short name of the values alone (a run folder's name: the same values reuse its runs)."""
        text = json.dumps({k: self.values[k] for k in sorted(self.values)}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def sets(self) -> list[str]:
        """The ``--set`` overrides of the reading, axis by axis."""
        out: dict[str, Any] = {}
        for axis in AXES:
            if axis in self.values:
                out.update(overrides(axis, self.values[axis]))
        return [f"{k}={_yaml(v)}" for k, v in out.items()]

    def partition_seed(self, draw: int) -> int:
        """The partition draw the run of seed ``draw`` trains on: its own (``replicates: draws``) or
        draw 0 for every seed (``replicates: seeds``)."""
        return 0 if self.values.get("replicates") == "seeds" else draw

    def differs(self, stated: Point) -> dict[str, Any]:
        """The axes where this point leaves the stated reading, with its values."""
        return {k: v for k, v in self.values.items() if stated.values.get(k) != v}


def settings_words(differs: Mapping[str, Any]) -> str:
    """What a reading changes, in words (``partition classes4, width 32``; none: the stated settings)."""
    return ", ".join(f"{k} {v}" for k, v in differs.items()) or "the stated settings"


def _yaml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class Space:
    axes: tuple[Axis, ...]
    points: tuple[Point, ...] = field(default_factory=tuple)  # evaluated first, the stated reading first

    def axis(self, name: str) -> Axis:
        return next(a for a in self.axes if a.name == name)

    @property
    def size(self) -> int:
        """How many points the space holds: the product of its axes' value counts."""
        return math.prod(len(a.values) for a in self.axes)

    @property
    def stated(self) -> Point:
        return Point({a.name: a.stated for a in self.axes}, "stated")

    def point(self, values: Mapping[str, Any], name: str = "") -> Point:
        return Point({a.name: values.get(a.name, a.stated) for a in self.axes}, name)


def space_errors(block: Mapping[str, Any]) -> list[str]:
    """What is wrong with a config's ``calibration`` block's space and points, field by field."""
    errors: list[str] = []
    axes = block.get("space")
    if not isinstance(axes, Mapping) or not axes:
        return ["calibration.space: a mapping of axes (at least one) is needed"]
    for name, spec in axes.items():
        where = f"calibration.space.{name}"
        if name not in AXES:
            errors.append(f"{where}: not an axis; allowed: {list(AXES)}")
            continue
        if not isinstance(spec, Mapping) or not isinstance(spec.get("values"), list) or not spec["values"]:
            errors.append(f"{where}.values: a non-empty list is needed")
            continue
        for v in [*spec["values"], spec.get("stated")]:
            if (wrong := value_error(name, v)) is not None:
                errors.append(f"{where}: each value and `stated` {wrong}")
        if spec.get("stated") not in spec["values"]:
            errors.append(f"{where}.stated must be one of its values {spec['values']} (got {spec.get('stated')!r})")
        if len({json.dumps(v) for v in spec["values"]}) != len(spec["values"]):
            errors.append(f"{where}.values: each value once")
    points = block.get("points") or {}
    if not isinstance(points, Mapping):
        return [*errors, "calibration.points: a mapping of named points is needed"]
    for name, values in points.items():
        where = f"calibration.points.{name}"
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            errors.append(f"{where}: a name is lower-case letters, digits, '.' and '-' (got {name!r})")
        if not isinstance(values, Mapping):
            errors.append(f"{where}: a mapping of axis values is needed (got {values!r})")
            continue
        for axis, v in values.items():
            spec = axes.get(axis) if isinstance(axes, Mapping) else None
            if not isinstance(spec, Mapping) or not isinstance(spec.get("values"), list):
                errors.append(f"{where}.{axis}: not an axis of calibration.space {sorted(axes)}")
            elif v not in spec["values"]:
                errors.append(f"{where}.{axis} must be one of calibration.space.{axis}.values {spec['values']} "
                              f"(got {v!r})")
    for name in block.get("first") or []:
        if name != "stated" and name not in points:
            errors.append(f"calibration.first: {name!r} is not a point of calibration.points {sorted(points)} "
                          "(or 'stated')")
    return errors


def space(block: Mapping[str, Any]) -> Space:
    """The space of a checked ``calibration`` block, with its first points in order (the stated
    reading first, then ``first``'s named points; without ``first``, every named point)."""
    axes = tuple(Axis(name, tuple(spec["values"]), spec["stated"], str(spec.get("source", "")))
                 for name, spec in block["space"].items())
    plain = Space(axes)
    named = block.get("points") or {}
    order = [n for n in (block.get("first") or ["stated", *named]) if n != "stated"]
    points = (plain.stated, *(plain.point(named[n], n) for n in order))
    return Space(axes, tuple(points))


def named_values(points: Sequence[Point]) -> dict[str, str]:
    """Each named point's key (its values' name) to its name: a searched trial that lands on a
    named point is that point."""
    return {p.key: p.name for p in points if p.name}
