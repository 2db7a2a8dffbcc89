"""Checks and derived values for the Snakemake workflow's config (beyond its JSON schema).

The schema (``workflow/schemas/config.schema.yaml``) checks types and ranges field by field;
this module checks what a schema cannot express (the profile file, N*n against the training
set size, n against the shards or classes per client, feasible K in every cell) and derives
the jobs' parameters. Both run when the Snakefile is parsed, before any job starts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bladefl.data.datasets import SPECS, TRAIN_SIZE
from bladefl.data.partition import PartitionSpec, partition_errors
from bladefl.experiments.grid import Cell, Member, cell_errors, expand, members_to_json, unique_cells
from bladefl.fl.run_config import ConfigError as RunConfigError
from bladefl.fl.run_config import RunConfig, load_config

PROFILE_DIR = Path("config/profiles")


class ConfigError(ValueError):
    """The workflow config is invalid; the message lists every problem found."""


def profile_path(config: Mapping[str, Any]) -> Path:
    return PROFILE_DIR / f"{config.get('profile', 'paper')}.yaml"


def profile(config: Mapping[str, Any]) -> RunConfig:
    path = profile_path(config)
    if not path.is_file():
        available = sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))
        raise ConfigError(f"profile must be one of {available} (got {config.get('profile')!r}: no {path})")
    return load_config(path)


def partition_spec(config: Mapping[str, Any], N: int) -> PartitionSpec:
    """The profile's partition with the config's overrides and the cell's N."""
    values = {**dataclasses.asdict(profile(config).partition), **config.get("partition", {}), "N": N}
    errors = partition_errors(SimpleNamespace(**values), train_size=TRAIN_SIZE)
    if errors:
        raise ConfigError("; ".join(errors))
    return PartitionSpec(**values)


def members(config: Mapping[str, Any]) -> list[Member]:
    try:
        return expand(config)
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"sweeps: {exc}") from None


def cells(config: Mapping[str, Any]) -> list[Cell]:
    return unique_cells(members(config))


def bound_cells(config: Mapping[str, Any]) -> list[Cell]:
    """The cells the bound is drawn for (the config's ``bound_sweep``); none without measurement."""
    if not config.get("measure_constants", True):
        return []
    return unique_cells([m for m in members(config) if m.sweep == config.get("bound_sweep", "fig3")])


def settings(config: Mapping[str, Any]) -> list[dict[str, str]]:
    """Per sweep: what it varies, its fixed settings and where each comes from (the config's
    ``source``: stated by the paper, with the section, or inferred, with the evidence)."""
    rows = []
    for sweep in config.get("sweeps", []):
        varied = f"{sweep['vary']} in {sweep['values']}" if "vary" in sweep else f"{len(sweep['cells'])} cells"
        fixed = ", ".join(f"{k}={v}" for k, v in sweep.get("with", {}).items()) or "the base cell"
        source = "; ".join(f"{k}: {v}" for k, v in sweep.get("source", {}).items()) or "not recorded"
        rows.append({"sweep": sweep["name"], "feeds": sweep.get("feeds", ""), "varies": varied, "fixed": fixed,
                     "source": source})
    return rows


def members_json(config: Mapping[str, Any]) -> str:
    return members_to_json(members(config))


def check(config: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` naming the field and the allowed values, or return None."""
    errors = []
    for name in config.get("datasets", []):
        if name not in SPECS:
            errors.append(f"datasets: each entry must be one of {sorted(SPECS)} (got {name!r})")
    try:
        profile(config)
    except (ConfigError, RunConfigError) as exc:
        raise ConfigError(f"invalid config: {exc}") from None
    try:
        grid_cells = cells(config)
    except ConfigError as exc:
        errors.append(str(exc))
        grid_cells = []
    t_sum = float(config.get("t_sum", 100))
    for N in sorted({c.N for c in grid_cells} or {20}):
        try:
            partition_spec(config, N)
        except ConfigError as exc:
            errors.append(f"{exc} (for a cell with N={N})")
    if config.get("measure_constants", True):
        names = [s.get("name") for s in config.get("sweeps", [])]
        bound = config.get("bound_sweep", "fig3")
        if bound not in names:
            errors.append(f"bound_sweep: must name one of the sweeps {names} when measure_constants is true "
                          f"(got {bound!r})")
    n = int(config.get("partition", {}).get("n", 512))
    for cell in grid_cells:
        errors.extend(cell_errors(cell, n, t_sum))
    if errors:
        raise ConfigError("invalid config: " + "; ".join(dict.fromkeys(errors)))
