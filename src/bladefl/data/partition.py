"""What a partition is: :class:`PartitionSpec` (the dataset's training set split into N disjoint clients of
exactly n samples by a scheme of :mod:`bladefl.data.schemes`, with that scheme's parameter and a seed), its key,
its checks, what a run records of it, and its draw.

The scheme owns its parameter (:class:`bladefl.data.schemes.Parameter`): the spec holds the scheme's name and the
parameter's value, and the key grammar, the config fields and their checks, the record and the report's wording
are derived from the registry, so a new scheme touches its own entry there and nothing here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from bladefl.core.values import is_int
from bladefl.data.schemes import SCHEME_REGISTRY, parameters

_KEY = re.compile(r"(?P<detail>[a-z]+[0-9.e+-]*)_N(?P<N>\d+)_n(?P<n>\d+)_seed(?P<seed>\d+)")
_DETAIL = re.compile(r"(?P<scheme>[a-z]+)(?P<param>[0-9][0-9.e+-]*)?")
BASE_FIELDS = ("scheme", "N", "n", "seed")
# The parameters every run recorded, whatever its scheme, before the schemes owned them: a record keeps them
# (at their defaults under another scheme), so those runs stay runs of the same config. A parameter added
# since is recorded only where it leaves its default (as run_config.LATER_FIELDS does for the other sections).
RECORDED_ALWAYS = ("shards_per_client", "classes_per_client", "dirichlet_alpha")


@dataclass(frozen=True)
class PartitionSpec:
    """What defines a partition (besides the dataset): the scheme, N clients of n samples, the draw's seed and the
    scheme's parameter ``value`` (None: its default; None for a scheme without one). :meth:`of` builds one from
    config fields (``shards_per_client=2``), :meth:`record` gives them back."""

    scheme: str = "shards"
    N: int = 20
    n: int = 512
    seed: int = 0
    value: int | float | None = None

    def __post_init__(self) -> None:
        own = SCHEME_REGISTRY[self.scheme].parameter if self.scheme in SCHEME_REGISTRY else None
        if self.value is None and own is not None:
            object.__setattr__(self, "value", own.default)
        errors = partition_errors(self)
        if errors:
            raise ValueError("; ".join(errors))

    @classmethod
    def of(cls, **fields: Any) -> PartitionSpec:
        """The spec of config fields (``scheme``, ``N``, ``n``, ``seed`` and parameters by their field names).
        A parameter of another scheme is not read (a config may override an engine's scheme and leave the
        engine's parameter behind); one of no scheme is refused."""
        errors = partition_errors(fields)
        if errors:
            raise ValueError("; ".join(errors))
        scheme = SCHEME_REGISTRY[fields.get("scheme", "shards")]
        value = fields.get(scheme.parameter.field) if scheme.parameter else None
        return cls(**{k: fields[k] for k in BASE_FIELDS if k in fields}, value=value)

    def record(self) -> dict[str, Any]:
        """The spec as a run's summary and a partition's manifest record it: the base fields, then each
        registered parameter (this scheme's value, the others' defaults), those not in :data:`RECORDED_ALWAYS`
        only where they leave their default."""
        out: dict[str, Any] = {"scheme": self.scheme, "N": self.N, "n": self.n, "seed": self.seed}
        for field, parameter in parameters().items():
            value = self.value if SCHEME_REGISTRY[self.scheme].parameter is parameter else parameter.default
            if field in RECORDED_ALWAYS or value != parameter.default:
                out[field] = value
        return out

    @property
    def key(self) -> str:
        """A file-name-safe key that identifies the partition, e.g. ``shards2_N20_n512_seed0``."""
        return f"{scheme_detail(self)}_N{self.N}_n{self.n}_seed{self.seed}"

    @classmethod
    def from_key(cls, key: str) -> PartitionSpec:
        """Inverse of :attr:`key`."""
        m = _KEY.fullmatch(key)
        fields = parse_detail(m["detail"]) if m else None
        if m is None or fields is None:
            raise ValueError(f"not a partition key: {key!r} (expected e.g. 'shards2_N20_n512_seed0')")
        return cls.of(N=int(m["N"]), n=int(m["n"]), seed=int(m["seed"]), **fields)


def config_fields() -> dict[str, Any]:
    """Every field a config's partition may set, with its default: the base fields and every scheme's parameter."""
    base = {f.name: f.default for f in dataclasses.fields(PartitionSpec) if f.name in BASE_FIELDS}
    return {**base, **{f: p.default for f, p in parameters().items()}}


def _fields_of(spec: PartitionSpec) -> tuple[dict[str, Any], Any]:
    """A spec's config fields, and a value given to a scheme that owns no parameter (None: none was)."""
    fields = {k: getattr(spec, k) for k in BASE_FIELDS}
    scheme = SCHEME_REGISTRY.get(spec.scheme)
    if scheme is not None and scheme.parameter is not None:
        fields[scheme.parameter.field] = spec.value
        return fields, None
    return fields, spec.value


def scheme_detail(spec: PartitionSpec) -> str:
    """The scheme and its parameter as a key names them: ``shards2``, ``dirichlet0.3``, ``iid``."""
    parameter = SCHEME_REGISTRY[spec.scheme].parameter
    if parameter is None:
        return spec.scheme
    return f"{spec.scheme}{spec.value:g}" if parameter.kind is float else f"{spec.scheme}{spec.value}"


def parse_detail(detail: str) -> dict[str, Any] | None:
    """The config fields a scheme detail names (``shards2`` -> scheme shards, shards_per_client 2), or
    None when it names none: an unknown scheme, a parameter missing, given to a scheme without one, or
    not of the parameter's kind (``shards2.5``)."""
    m = _DETAIL.fullmatch(detail)
    scheme = SCHEME_REGISTRY.get(m["scheme"]) if m else None
    if m is None or scheme is None or (m["param"] is None) != (scheme.parameter is None):
        return None
    if scheme.parameter is None:
        return {"scheme": scheme.name}
    try:
        value = scheme.parameter.kind(m["param"])
    except ValueError:
        return None
    return {"scheme": scheme.name, scheme.parameter.field: value}


def partition_errors(spec: PartitionSpec | Mapping[str, Any], train_size: int | None = None, num_classes: int = 10
                     ) -> list[str]:
    """Every problem with a partition spec (or the config fields of one, not yet checked; a field left out takes
    its default), each naming the field and the allowed values."""
    fields, stray = _fields_of(spec) if isinstance(spec, PartitionSpec) else (spec, None)
    errors = []
    known = parameters()
    unknown = sorted(set(fields) - set(BASE_FIELDS) - set(known))
    if unknown:
        errors.append(f"partition: unknown field(s) {unknown}; allowed: {sorted({*BASE_FIELDS, *known})}")
    get = {**config_fields(), **fields}
    if get["scheme"] not in SCHEME_REGISTRY:
        errors.append(f"partition.scheme must be one of {list(SCHEME_REGISTRY)} (got {get['scheme']!r})")
    for field in ("N", "n"):
        if not (is_int(get[field]) and get[field] >= 1):
            errors.append(f"partition.{field} must be an integer >= 1 (got {get[field]!r})")
    if not (is_int(get["seed"]) and get["seed"] >= 0):
        errors.append(f"partition.seed must be an integer >= 0 (got {get['seed']!r})")
    errors.extend(wrong for f, p in known.items() if f in fields and (wrong := p.error(fields[f])))
    if errors:
        return errors
    scheme = SCHEME_REGISTRY[get["scheme"]]
    if stray is not None:
        return [f"partition: scheme {scheme.name!r} takes no parameter (got {stray!r})"]
    if scheme.parameter is not None:
        value = get[scheme.parameter.field]
        errors.extend(scheme.checks(get["n"], value, num_classes))
    if train_size is not None and get["N"] * get["n"] > train_size:
        errors.append(
            f"partition.N * partition.n must be at most the training set size {train_size} "
            f"(got {get['N']} * {get['n']} = {get['N'] * get['n']})"
        )
    return errors


def make_partition(labels: np.ndarray, spec: PartitionSpec) -> np.ndarray:
    """Indices [N, n] for ``spec`` on ``labels`` (deterministic given ``spec.seed``)."""
    errors = partition_errors(spec, train_size=len(labels), num_classes=int(labels.max()) + 1)
    if errors:
        raise ValueError("; ".join(errors))
    rng = np.random.default_rng(spec.seed)
    scheme = SCHEME_REGISTRY[spec.scheme]
    return scheme.draw(labels, spec.N, spec.n, rng, *([spec.value] if scheme.parameter else []))


def label_histogram(labels: np.ndarray, indices: np.ndarray, num_classes: int = 10) -> np.ndarray:
    """Per-client label counts, shape [N, num_classes]."""
    return np.stack([np.bincount(labels[row], minlength=num_classes) for row in indices])


def indices_digest(indices: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(indices, dtype="<i8").tobytes()).hexdigest()
