"""The partition schemes (Flower's partitioner shape): each scheme's draw, the one parameter it owns and how a
page words it, registered in :data:`SCHEME_REGISTRY`. A scheme is a pure function ``(labels, N, n, rng[, value])
-> int64 array [N, n]`` of indices into the training set; all randomness comes from the
``numpy.random.Generator`` passed in.

- ``shards``:    sort by label, cut into shards of n/s samples, give each client s random shards
                 (McMahan et al. 2017; the paper's non-IID setting, s = 2).
- ``classes``:   each client gets c distinct classes with n/c samples of each (the authors' code,
                 c = 4, 128 per class).
- ``dirichlet``: per-client label proportions ~ Dirichlet(a), with exact client sizes.
- ``iid``:       a uniform random draw.

Everything else about a scheme is derived from its entry (:mod:`bladefl.data.partition`): the partition key
(``shards2_N20_n512_seed0``) and its parsing, the config fields and their checks, what a run records, the
calibration's ``partition`` axis, a group's shared settings and the report's wording. A new scheme is its draw
and one entry here (and its name in the workflow schema's enum, with its parameter's property).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bladefl.core.values import is_int, is_num

MAX_DIRICHLET = 1e6  # Dirichlet(1e308) gives NaN proportions without a word


@dataclass(frozen=True)
class Parameter:
    """The one parameter a scheme owns: its config field (``partition.<field>``), its kind (int or float; a float
    takes an integer too), its default, the allowed range [low, high] (``low`` excluded where ``low_open``) and
    advice the error adds."""

    field: str
    kind: type
    default: int | float
    low: int | float
    high: int | float | None = None
    low_open: bool = False
    advice: str = ""

    def error(self, value: Any) -> str | None:
        """Why ``value`` is not a value of this parameter, naming the field and the allowed values (None: it is)."""
        if (is_int(value) if self.kind is int else is_num(value)) and (
                value > self.low if self.low_open else value >= self.low) and (self.high is None or value <= self.high):
            return None
        noun = "an integer" if self.kind is int else "a number"
        if self.high is None:
            allowed = f"{noun} {'>' if self.low_open else '>='} {self.low:g}"
        else:
            allowed = f"{noun} in {'(' if self.low_open else '['}{self.low:g}, {self.high:g}]"
        return f"partition.{self.field} must be {allowed} (got {value!r}{'; ' + self.advice if self.advice else ''})"


def no_checks(n: int, value: Any, num_classes: int) -> list[str]:
    return []


@dataclass(frozen=True)
class Scheme:
    """A partition scheme: its name, the parameter it owns (None: none), its draw, how a page words it (a format
    of the parameter's value) and its checks beyond the parameter's range, ``(n, value, num_classes) -> errors``."""

    name: str
    parameter: Parameter | None
    draw: Callable[..., np.ndarray]
    wording: str
    checks: Callable[[int, Any, int], list[str]] = no_checks

    def describe(self, value: Any) -> str:
        """The scheme as a page words it: ``shards, 2 per client``, ``Dirichlet(0.3) label proportions``."""
        return self.wording.format(value)


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



def divides_n(field: str) -> Callable[[int, Any, int], list[str]]:
    """The check that the parameter ``field`` divides the client size n."""
    def check(n: int, value: Any, num_classes: int) -> list[str]:
        return [] if n % value == 0 else [
            f"partition.n must be divisible by partition.{field}={value} (got n={n})"]
    return check


def classes_checks(n: int, value: Any, num_classes: int) -> list[str]:
    if value > num_classes:
        return [f"partition.classes_per_client must be in 1..{num_classes} (got {value})"]
    return divides_n("classes_per_client")(n, value, num_classes)


SCHEME_REGISTRY: dict[str, Scheme] = {s.name: s for s in (
    Scheme("shards", Parameter("shards_per_client", int, 2, 1), shards, "shards, {} per client",
           divides_n("shards_per_client")),
    Scheme("classes", Parameter("classes_per_client", int, 4, 1), classes, "{} classes per client", classes_checks),
    Scheme("dirichlet", Parameter("dirichlet_alpha", float, 0.5, 0, MAX_DIRICHLET, low_open=True,
                                  advice="far above 100 every client's proportions are the data's own: use scheme iid"),
           dirichlet, "Dirichlet({:g}) label proportions"),
    Scheme("iid", None, iid, "IID"),
)}


def parameters() -> dict[str, Parameter]:
    """Every scheme's parameter by its config field, read from the registry when asked (an entry added since
    import counts)."""
    return {s.parameter.field: s.parameter for s in SCHEME_REGISTRY.values() if s.parameter}
