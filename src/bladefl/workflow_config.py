"""Checks and derived values for the Snakemake workflow's config (beyond its JSON schema).

The schema (``workflow/schemas/config.schema.yaml``) checks types and ranges field by field;
this module checks what a schema cannot express (N*n against the training set size, n against
the shards or classes per client) and derives the jobs' parameters. Both run when the
Snakefile is parsed, before any job starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .datasets import SPECS, TRAIN_SIZE
from .partition import PartitionSpec, partition_errors

PARTITION_FIELDS = ("scheme", "N", "n", "seed", "shards_per_client", "classes_per_client", "dirichlet_alpha")


class ConfigError(ValueError):
    """The workflow config is invalid; the message lists every problem found."""


def partition_spec(config: Mapping[str, Any]) -> PartitionSpec:
    part = dict(config.get("partition", {}))
    unknown = sorted(set(part) - set(PARTITION_FIELDS))
    if unknown:
        raise ConfigError(f"partition: unknown field(s) {unknown}; allowed: {list(PARTITION_FIELDS)}")
    defaults = PartitionSpec.__dataclass_fields__
    values = {k: part.get(k, defaults[k].default) for k in PARTITION_FIELDS}
    errors = partition_errors(_Plain(**values), train_size=TRAIN_SIZE)
    if errors:
        raise ConfigError("; ".join(errors))
    return PartitionSpec(**values)


class _Plain:
    """Attribute bag used to validate raw values before building a (validating) dataclass."""

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


def check(config: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` naming the field and the allowed values, or return None."""
    errors = []
    for name in config.get("datasets", []):
        if name not in SPECS:
            errors.append(f"datasets: each entry must be one of {sorted(SPECS)} (got {name!r})")
    try:
        partition_spec(config)
    except ConfigError as exc:
        errors.append(str(exc))
    if errors:
        raise ConfigError("invalid config: " + "; ".join(errors))
