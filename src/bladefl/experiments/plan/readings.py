"""Readings of what the paper leaves unstated (issue "What the paper does not say"), as
configuration for the sensitivity study.

A reading is an engine (``config/engines/<name>.yaml``) plus overrides of its run configuration, named by the axis it
changes: the non-IID partition, what one local iteration is, input scaling, the model; or an
engine as a whole (the authors' public code). ``eta_scale`` multiplies every cell's eta (the
full-batch reading scales eta by n / batch so that one full-batch step moves as far as one epoch
of minibatch steps). A sensitivity config (``config/sensitivity.yaml``) lists its readings under
``readings``; the grid (its sweeps) runs once under each.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bladefl.experiments.plan.grid import Cell

AXES = ("baseline", "partition", "iteration", "scaling", "model", "engine")
_NAME = re.compile(r"[a-z0-9][a-z0-9.-]*")


@dataclass(frozen=True)
class Reading:
    name: str
    axis: str
    engine: str = "paper"
    sets: Mapping[str, Any] = field(default_factory=dict)  # run-config overrides, dotted keys
    eta_scale: float = 1.0
    description: str = ""

    def partition_overrides(self) -> dict[str, Any]:
        return {k.split(".", 1)[1]: v for k, v in self.sets.items() if k.startswith("partition.")}

    def run_sets(self) -> list[str]:
        """The reading's ``--set`` overrides other than the partition's (the partition file is
        written for the reading's partition)."""
        return [f"{k}={_yaml(v)}" for k, v in self.sets.items() if not k.startswith("partition.")]

    def cell_sets(self, cell: Cell) -> list[str]:
        return [f"train.eta={cell.eta * self.eta_scale:g}"] if self.eta_scale != 1.0 else []


def _yaml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def readings(config: Mapping[str, Any]) -> list[Reading]:
    """The config's readings, in order (empty without a ``readings`` key)."""
    out = []
    for name, spec in (config.get("readings") or {}).items():
        out.append(Reading(name=name, axis=spec.get("axis", ""), engine=spec.get("engine", "paper"),
                           sets=dict(spec.get("set", {})), eta_scale=float(spec.get("eta_scale", 1.0)),
                           description=spec.get("description", "")))
    return out


def reading_errors(config: Mapping[str, Any], engines: list[str]) -> list[str]:
    """What is wrong with the config's readings (names, axes, engines), field by field."""
    errors = []
    for r in readings(config):
        where = f"readings.{r.name}"
        if not _NAME.fullmatch(r.name):
            errors.append(f"{where}: a name must be lower-case letters, digits, '.' and '-' (got {r.name!r})")
        if r.axis not in AXES:
            errors.append(f"{where}.axis must be one of {list(AXES)} (got {r.axis!r})")
        if r.engine not in engines:
            errors.append(f"{where}.engine must be one of {engines} (got {r.engine!r})")
        if not r.eta_scale > 0:
            errors.append(f"{where}.eta_scale must be > 0 (got {r.eta_scale!r})")
    if config.get("readings") and not any(r.axis == "baseline" for r in readings(config)):
        errors.append("readings: one reading must have axis 'baseline' (the one the others change one axis of)")
    return errors


def reading_config(config: Mapping[str, Any], reading: Reading) -> dict[str, Any]:
    """The workflow config as one reading sees it: its engine, its partition (a reading that sets
    the partition's seed replaces the config's replicate draws with that one draw)."""
    part = {**config.get("partition", {}), **reading.partition_overrides()}
    if "seed" in reading.partition_overrides():
        part.pop("seeds", None)
    return {**config, "engine": reading.engine, "partition": part}
