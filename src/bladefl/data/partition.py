"""Non-IID partitions of a labelled training set into N disjoint clients of exactly n samples.

Each scheme is a pure function ``(labels, N, n, rng, ...) -> int64 array [N, n]`` of indices
into the training set, registered with its parameter in :data:`SCHEME_REGISTRY` (whence the keys,
their parsing and the calibration's partition axis); all randomness comes from the
``numpy.random.Generator`` passed in.

- ``shards``:    sort by label, cut into shards of n/s samples, give each client s random shards
                 (McMahan et al. 2017; the paper's non-IID setting, s = 2).
- ``classes``:   each client gets c distinct classes with n/c samples of each (the authors' code,
                 c = 4, 128 per class).
- ``dirichlet``: per-client label proportions ~ Dirichlet(a), with exact client sizes.
- ``iid``:       a uniform random draw.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

MAX_DIRICHLET = 1e6  # Dirichlet(1e308) gives NaN proportions without a word
_KEY = re.compile(r"(?P<detail>[a-z]+[0-9.e+-]*)_N(?P<N>\d+)_n(?P<n>\d+)_seed(?P<seed>\d+)")
_DETAIL = re.compile(r"(?P<scheme>[a-z]+)(?P<param>[0-9][0-9.e+-]*)?")


@dataclass(frozen=True)
class PartitionSpec:
    """What defines a partition (besides the dataset)."""

    scheme: str = "shards"
    N: int = 20
    n: int = 512
    seed: int = 0
    shards_per_client: int = 2
    classes_per_client: int = 4
    dirichlet_alpha: float = 0.5

    def __post_init__(self) -> None:
        errors = partition_errors(self)
        if errors:
            raise ValueError("; ".join(errors))

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
        return cls(N=int(m["N"]), n=int(m["n"]), seed=int(m["seed"]), **fields)


def scheme_detail(spec: PartitionSpec) -> str:
    """The scheme and its parameter as a key names them: ``shards2``, ``dirichlet0.3``, ``iid``."""
    scheme = SCHEME_REGISTRY[spec.scheme]
    if scheme.parameter is None:
        return scheme.name
    value = getattr(spec, scheme.parameter)
    return f"{scheme.name}{value:g}" if scheme.kind is float else f"{scheme.name}{value}"


def parse_detail(detail: str) -> dict[str, Any] | None:
    """The spec's fields a scheme detail names (``shards2`` -> scheme shards, shards_per_client 2), or
    None when it names none: an unknown scheme, a parameter missing, given to a scheme without one, or
    not of the parameter's kind (``shards2.5``)."""
    m = _DETAIL.fullmatch(detail)
    scheme = SCHEME_REGISTRY.get(m["scheme"]) if m else None
    if m is None or scheme is None or (m["param"] is None) != (scheme.parameter is None):
        return None
    if scheme.parameter is None:
        return {"scheme": scheme.name}
    try:
        value = scheme.kind(m["param"])
    except ValueError:
        return None
    return {"scheme": scheme.name, scheme.parameter: value}


def partition_errors(spec: PartitionSpec | SimpleNamespace, train_size: int | None = None, num_classes: int = 10
                     ) -> list[str]:
    """Every problem with a partition spec (or a namespace of its fields read from a config not yet
    checked), each naming the field and the allowed values."""
    errors = []
    if spec.scheme not in SCHEMES:
        errors.append(f"partition.scheme must be one of {list(SCHEMES)} (got {spec.scheme!r})")
    for field in ("N", "n", "shards_per_client", "classes_per_client"):
        value = getattr(spec, field)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            errors.append(f"partition.{field} must be an integer >= 1 (got {value!r})")
    if not isinstance(spec.seed, int) or isinstance(spec.seed, bool) or spec.seed < 0:
        errors.append(f"partition.seed must be an integer >= 0 (got {spec.seed!r})")
    if (not isinstance(spec.dirichlet_alpha, (int, float)) or isinstance(spec.dirichlet_alpha, bool)
            or not 0 < spec.dirichlet_alpha <= MAX_DIRICHLET):
        errors.append(f"partition.dirichlet_alpha must be a number in (0, {MAX_DIRICHLET:g}] (got "
                      f"{spec.dirichlet_alpha!r}; far above 100 every client's proportions are the data's own: "
                      "use scheme iid)")
    if errors:
        return errors
    if spec.scheme == "shards" and spec.n % spec.shards_per_client:
        errors.append(
            f"partition.n must be divisible by partition.shards_per_client={spec.shards_per_client} "
            f"(got n={spec.n})"
        )
    if spec.scheme == "classes":
        if spec.classes_per_client > num_classes:
            errors.append(
                f"partition.classes_per_client must be in 1..{num_classes} (got {spec.classes_per_client})"
            )
        elif spec.n % spec.classes_per_client:
            errors.append(
                f"partition.n must be divisible by partition.classes_per_client={spec.classes_per_client} "
                f"(got n={spec.n})"
            )
    if train_size is not None and spec.N * spec.n > train_size:
        errors.append(
            f"partition.N * partition.n must be at most the training set size {train_size} "
            f"(got {spec.N} * {spec.n} = {spec.N * spec.n})"
        )
    return errors


def iid(labels: np.ndarray, N: int, n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.permutation(len(labels))[: N * n].reshape(N, n).astype(np.int64)


def shards(labels: np.ndarray, N: int, n: int, rng: np.random.Generator, per_client: int = 2) -> np.ndarray:
    size = n // per_client
    order = np.lexsort((rng.permutation(len(labels)), labels))  # by label, random within a label
    n_shards = len(labels) // size
    chosen = rng.permutation(n_shards)[: N * per_client]
    pieces = order[: n_shards * size].reshape(n_shards, size)[chosen]
    return pieces.reshape(N, n).astype(np.int64)


def classes(labels: np.ndarray, N: int, n: int, rng: np.random.Generator, per_client: int = 4) -> np.ndarray:
    num_classes = int(labels.max()) + 1
    per_class = n // per_client
    pools = [rng.permutation(np.flatnonzero(labels == c)) for c in range(num_classes)]
    used = np.zeros(num_classes, dtype=np.int64)
    out = np.empty((N, n), dtype=np.int64)
    for i in range(N):  # N is tiny; this is set-up, not the training hot path
        room = np.flatnonzero(len_pools(pools) - used >= per_class)
        if len(room) < per_client:
            raise ValueError(
                f"classes partition ran out of samples: client {i} needs {per_client} classes with "
                f"{per_class} samples left; lower partition.N or partition.n"
            )
        picked = np.sort(rng.choice(room, size=per_client, replace=False))
        for j, c in enumerate(picked):
            out[i, j * per_class : (j + 1) * per_class] = pools[c][used[c] : used[c] + per_class]
            used[c] += per_class
    return out


def len_pools(pools: list[np.ndarray]) -> np.ndarray:
    return np.array([len(p) for p in pools], dtype=np.int64)


def dirichlet_counts(
    available: np.ndarray, N: int, n: int, a: float, rng: np.random.Generator
) -> np.ndarray:
    """Per-client class counts [N, C]: rows sum to n, columns never exceed ``available``.

    Proportions p_i ~ Dirichlet(a); counts ~ Multinomial(n, p_i) clipped to what is left, and the
    deficit re-drawn over the classes that still have room (weighted by p_i, uniform when p_i has
    no mass there). Each pass either finishes a client or fills a class, so it ends in at most C
    passes per client, whatever a is.
    """
    C = len(available)
    left = available.astype(np.int64).copy()
    counts = np.zeros((N, C), dtype=np.int64)
    for i in range(N):
        p = rng.dirichlet(np.full(C, float(a)))
        need = n
        while need > 0:
            open_ = left > 0
            w = np.where(open_, p, 0.0)
            w = w / w.sum() if w.sum() > 0 else open_ / open_.sum()
            draw = np.minimum(rng.multinomial(need, w), left)
            counts[i] += draw
            left -= draw
            need -= int(draw.sum())
    return counts


def dirichlet(labels: np.ndarray, N: int, n: int, rng: np.random.Generator, a: float = 0.5) -> np.ndarray:
    num_classes = int(labels.max()) + 1
    pools = [rng.permutation(np.flatnonzero(labels == c)) for c in range(num_classes)]
    counts = dirichlet_counts(len_pools(pools), N, n, a, rng)
    starts = np.concatenate([np.zeros((1, num_classes), np.int64), np.cumsum(counts, axis=0)])
    out = np.empty((N, n), dtype=np.int64)
    for i in range(N):
        out[i] = np.concatenate([pools[c][starts[i, c] : starts[i + 1, c]] for c in range(num_classes)])
    return out


def make_partition(labels: np.ndarray, spec: PartitionSpec) -> np.ndarray:
    """Indices [N, n] for ``spec`` on ``labels`` (deterministic given ``spec.seed``)."""
    errors = partition_errors(spec, train_size=len(labels), num_classes=int(labels.max()) + 1)
    if errors:
        raise ValueError("; ".join(errors))
    rng = np.random.default_rng(spec.seed)
    scheme = SCHEME_REGISTRY[spec.scheme]
    return scheme.draw(labels, spec.N, spec.n, rng, *([getattr(spec, scheme.parameter)] if scheme.parameter else []))


@dataclass(frozen=True)
class Scheme:
    """A partition scheme (Flower's partitioner shape): its name, the one field of
    :class:`PartitionSpec` it reads (None: none) and that field's kind, and its draw
    ``(labels, N, n, rng[, parameter]) -> indices [N, n]``. The key grammar, the checks and the
    calibration's axis are derived from these; a new scheme is one entry and its draw."""

    name: str
    parameter: str | None
    kind: type
    draw: Callable[..., np.ndarray]


SCHEME_REGISTRY: dict[str, Scheme] = {s.name: s for s in (
    Scheme("shards", "shards_per_client", int, shards),
    Scheme("classes", "classes_per_client", int, classes),
    Scheme("dirichlet", "dirichlet_alpha", float, dirichlet),
    Scheme("iid", None, int, iid),
)}
SCHEMES = tuple(SCHEME_REGISTRY)


def label_histogram(labels: np.ndarray, indices: np.ndarray, num_classes: int = 10) -> np.ndarray:
    """Per-client label counts, shape [N, num_classes]."""
    return np.stack([np.bincount(labels[row], minlength=num_classes) for row in indices])


def indices_digest(indices: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(indices, dtype="<i8").tobytes()).hexdigest()
