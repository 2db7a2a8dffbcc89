"""The experiment grid: cells of (alpha, beta, N, eta, lazy ratio, sigma2, epsilon), the
sweeps (paper tables and figures) they feed, and the K values each cell runs.

A sweep varies one parameter from the base (``vary`` + ``values``, other parameters from
``with``) or lists explicit ``cells``. Identical cells shared by several sweeps run once:
a cell is identified by its key, e.g. ``alpha~1_beta~6_N~20_eta~0.01_lazy~0_sigma2~0_eps~inf``,
which is also the name of its result folder (the workflow's wildcard).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bladefl.fl.ranges import RANGES, range_error
from bladefl.fl.timemodel import max_feasible_K

PARAMS = ("alpha", "beta", "N", "eta", "lazy_ratio", "sigma2", "epsilon")
_KEY_NAMES = {"alpha": "alpha", "beta": "beta", "N": "N", "eta": "eta", "lazy_ratio": "lazy",
              "sigma2": "sigma2", "epsilon": "eps"}


def _fmt(value: float) -> str:
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return f"{value:g}"


@dataclass(frozen=True)
class Cell:
    alpha: float = 1.0
    beta: float = 10.0
    N: int = 20
    eta: float = 0.01
    lazy_ratio: float = 0.0
    sigma2: float = 0.0
    epsilon: float = math.inf
    exclude: bool = False  # the validators exclude the uploads their detector flags (a detection cell)

    @property
    def key(self) -> str:
        key = "_".join(f"{_KEY_NAMES[p]}~{_fmt(getattr(self, p))}" for p in PARAMS)
        return key + "_exclude~1" if self.exclude else key

    @classmethod
    def from_key(cls, key: str) -> Cell:
        parts = dict(item.split("~", 1) for item in key.split("_"))
        names = {v: k for k, v in _KEY_NAMES.items()}
        exclude = parts.pop("exclude", "0") == "1"
        if set(parts) != set(names):
            raise ValueError(f"not a cell key: {key!r}")
        values: dict[str, Any] = {names[k]: float(v) for k, v in parts.items()}
        values["N"] = int(values["N"])
        return cls(**values, exclude=exclude)

    def k_values(self, t_sum: float) -> list[int]:
        """Every feasible K: 1 .. floor(t_sum / (alpha + beta))."""
        return list(range(1, max_feasible_K(self.alpha, self.beta, t_sum) + 1))

    def overrides(self, t_sum: float) -> list[str]:
        """``--set`` arguments that turn an engine into this cell."""
        return [
            f"time.alpha={_fmt(self.alpha)}", f"time.beta={_fmt(self.beta)}", f"time.t_sum={_fmt(t_sum)}",
            f"time.K=[{','.join(str(k) for k in self.k_values(t_sum))}]",
            f"partition.N={self.N}", f"train.eta={_fmt(self.eta)}", f"lazy.ratio={_fmt(self.lazy_ratio)}",
            f"lazy.sigma2={_fmt(self.sigma2)}", f"privacy.epsilon={_fmt(self.epsilon)}",
        ] + (["lazy.exclude=true"] if self.exclude else [])


@dataclass(frozen=True)
class Member:
    """A cell as a point of a sweep."""

    sweep: str
    feeds: str
    vary: str | None
    value: float | None
    cell: Cell


def _cell(base: Mapping[str, Any], over: Mapping[str, Any], where: str) -> Cell:
    unknown = sorted(set(over) - set(PARAMS))
    if unknown:
        raise ValueError(f"{where}: unknown parameter(s) {unknown}; allowed: {list(PARAMS)}")
    values = {**base, **over}
    values = {k: (math.inf if isinstance(v, str) and v.lower() in ("inf", ".inf") else v) for k, v in values.items()}
    fields: dict[str, Any] = {k: (int(values[k]) if k == "N" else float(values[k])) for k in PARAMS}
    cell = Cell(**fields)
    # Without lazy clients the noise variance has no effect: one canonical cell, run once.
    return cell if cell.lazy_ratio > 0 else Cell(**{**asdict(cell), "sigma2": 0.0})


def expand(grid: Mapping[str, Any]) -> list[Member]:
    """Every (sweep, cell) membership, in config order (worked out once per base and sweeps: the
    workflow asks for it for every job it plans)."""
    spec = json.dumps({"base": grid.get("base", {}), "sweeps": grid.get("sweeps", [])}, sort_keys=True,
                      default=repr)
    return list(_expand(spec))


@functools.lru_cache(maxsize=16)
def _expand(spec: str) -> tuple[Member, ...]:
    grid = json.loads(spec)
    base = {**asdict(Cell()), **grid.get("base", {})}
    out: list[Member] = []
    for i, sweep in enumerate(grid.get("sweeps", [])):
        name, feeds = sweep["name"], sweep.get("feeds", "")
        if "cells" in sweep:
            for j, over in enumerate(sweep["cells"]):
                out.append(Member(name, feeds, None, None, _cell(base, {**sweep.get("with", {}), **over},
                                                                 f"sweeps[{i}].cells[{j}]")))
        else:
            vary = sweep["vary"]
            if vary not in PARAMS:
                raise ValueError(f"sweeps[{i}].vary must be one of {list(PARAMS)} (got {vary!r})")
            for value in sweep["values"]:
                cell = _cell(base, {**sweep.get("with", {}), vary: value}, f"sweeps[{i}]")
                out.append(Member(name, feeds, vary, getattr(cell, vary), cell))
    return tuple(out)


def members_to_json(members: Sequence[Member]) -> str:
    return json.dumps([{"sweep": m.sweep, "feeds": m.feeds, "vary": m.vary, "value": m.value, "cell": m.cell.key}
                       for m in members])


def members_from_json(text: str) -> list[Member]:
    return [Member(m["sweep"], m["feeds"], m["vary"], m["value"], Cell.from_key(m["cell"])) for m in json.loads(text)]


def unique_cells(members: Sequence[Member]) -> list[Cell]:
    seen: dict[str, Cell] = {}
    for m in members:
        seen.setdefault(m.cell.key, m.cell)
    return list(seen.values())


def lazy_count_errors(members: Sequence[Member]) -> list[str]:
    """A lazy ratio that does not make a whole number of lazy clients, M = lazy_ratio x N (the run
    would round it: ``base: {N: 3}`` makes the M/N sweep 0, 0, 1, 1 clients), named with the sweep
    and where N comes from (the sweep's own N, else ``base.N`` or the sweep's fixed setting)."""
    errors = []
    for m in members:
        lazy = m.cell.lazy_ratio * m.cell.N
        if abs(lazy - round(lazy)) > 1e-9:
            where = "the sweep's N" if m.vary == "N" else "N from base.N or the sweep's fixed settings"
            errors.append(f"sweeps[{m.sweep}]: lazy_ratio {m.cell.lazy_ratio:g} x N {m.cell.N} = {lazy:g} lazy "
                          f"clients ({where}): lazy_ratio x N must be a whole number")
    return errors


def cell_errors(cell: Cell, n: int, t_sum: float, train_size: int = 60_000) -> list[str]:
    """Each parameter against its range (:data:`bladefl.fl.ranges.RANGES`, the run config's), then
    what depends on several: a feasible K, N clients of n samples in the training set, an honest
    client left beside the lazy ones."""
    e = [wrong for r in RANGES if (wrong := range_error(r, getattr(cell, r.cell), f"cell {cell.key}: {r.cell}"))]
    if e:
        return e
    if max_feasible_K(cell.alpha, cell.beta, t_sum) < 1:
        e.append(f"cell {cell.key}: alpha + beta must be at most t_sum={t_sum} (no feasible K)")
    if cell.N * n > train_size:
        e.append(f"cell {cell.key}: N must be in 1..{train_size // n} for n={n} (got {cell.N})")
    if round(cell.lazy_ratio * cell.N) >= cell.N:
        e.append(f"cell {cell.key}: lazy_ratio must leave an honest client (M = {round(cell.lazy_ratio * cell.N)} "
                 f"of N = {cell.N})")
    return e

