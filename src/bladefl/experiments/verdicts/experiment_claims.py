"""The paper's statements about the experiment as trend claims: which quantity moves which way
over which sweep, the statement of ``config/paper_statements.yaml`` each judges and in which role
(the counted ``claim``, a ``reading``, or ``derived`` from another claim). The claims are data: the
statements file's ``trends`` list, read and checked here; only the readings by accuracy are made in code."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Part:
    """One quantity and the direction it is claimed to move: rises | falls | same."""

    quantity: str  # K | K_accuracy | mining_time | training_time | min_loss | max_accuracy
    direction: str


@dataclass(frozen=True)
class TrendClaim:
    """A claim that quantities move over a sweep (``only``: the sweep values it speaks of). With
    several ``parts`` every one must move as claimed (learning performance: loss and accuracy)."""

    name: str
    statement: str
    source: str
    param: str
    parts: tuple[Part, ...]
    role: str = "claim"  # claim | reading | derived
    page: str = "02_sweeps"
    derived_from: str = ""
    reading_of: str = ""
    only: Callable[[float], bool] | None = None
    by_accuracy: bool = True  # a claim of K also read by K* of the accuracy curve

    @property
    def quantity(self) -> str:
        return self.parts[0].quantity

    @property
    def direction(self) -> str:
        return self.parts[0].direction


QUANTITIES = ("K", "K_accuracy", "mining_time", "training_time", "min_loss", "max_accuracy")
DIRECTIONS = ("rises", "falls", "same")
SWEEPS = ("alpha", "beta", "N", "eta", "lazy_ratio", "sigma2", "epsilon")
ROLES = ("claim", "reading", "derived")
_ONLY = re.compile(r"(>=|<)\s*([0-9]+(?:\.[0-9]+)?)")
FIELDS = {"claim", "statement", "source", "sweep", "parts", "only", "page", "role", "from", "of", "by_accuracy"}


def _one(quantity: str, direction: str) -> tuple[Part, ...]:
    return (Part(quantity, direction),)


def _only(text: str) -> Callable[[float], bool]:
    m = _ONLY.fullmatch(text)
    if m is None:
        raise ValueError(f"only must be '>= <number>' or '< <number>' (got {text[:40]!r})")
    op, low = m[1], float(m[2])
    return (lambda v: v >= low) if op == ">=" else (lambda v: v < low)


def trend_claim(entry: Any, where: str) -> TrendClaim:  # noqa: ANN401 - parsed YAML
    """One ``trends`` entry of the statements file as a claim; ValueError naming ``where`` and the field."""
    if not isinstance(entry, Mapping) or not {"claim", "statement", "source", "sweep", "parts"} <= set(entry):
        raise ValueError(f"{where}: needs claim, statement, source, sweep and parts")
    if set(entry) - FIELDS:
        raise ValueError(f"{where}: unknown field {sorted(set(entry) - FIELDS)[0]!r} (allowed: {sorted(FIELDS)})")
    if not all(isinstance(entry[k], str) and 0 < len(entry[k]) <= 200 for k in ("claim", "statement", "source")):
        raise ValueError(f"{where}: claim, statement and source must be texts of at most 200 characters")
    if entry["sweep"] not in SWEEPS:
        raise ValueError(f"{where}: sweep must be one of {list(SWEEPS)} (got {str(entry['sweep'])[:40]!r})")
    parts = entry["parts"]
    words = [str(p).split() for p in parts] if isinstance(parts, list) and parts else [[]]
    if not all(len(w) == 2 and w[0] in QUANTITIES and w[1] in DIRECTIONS for w in words):
        raise ValueError(f"{where}: parts must be a list of '<quantity> <direction>', quantity one of "
                         f"{list(QUANTITIES)}, direction one of {list(DIRECTIONS)}")
    role = entry.get("role", "claim")
    if role not in ROLES:
        raise ValueError(f"{where}: role must be one of {list(ROLES)} (got {str(role)[:40]!r})")
    only = entry.get("only")
    if only is not None and not (isinstance(only, str) and _ONLY.fullmatch(only)):
        raise ValueError(f"{where}: only must be '>= <number>' or '< <number>' (got {str(only)[:40]!r})")
    if entry.get("by_accuracy", True) not in (True, False):
        raise ValueError(f"{where}: by_accuracy must be true or false")
    return TrendClaim(entry["claim"], entry["statement"], entry["source"], entry["sweep"],
                      tuple(Part(q, d) for q, d in words), role=role, page=str(entry.get("page", "02_sweeps")),
                      derived_from=str(entry.get("from", "")), reading_of=str(entry.get("of", "")),
                      only=_only(only) if only else None, by_accuracy=entry.get("by_accuracy", True))


def read_trends(path: str) -> tuple[TrendClaim, ...]:
    """The ``trends`` of a statements file (``config/paper_statements.yaml``), each checked (read once
    per version of the file)."""
    info = Path(path).stat()
    return _read_trends(path, info.st_mtime_ns, info.st_size)


@functools.lru_cache(maxsize=8)
def _read_trends(path: str, mtime_ns: int, size: int) -> tuple[TrendClaim, ...]:
    from bladefl.core import strict_yaml

    doc = strict_yaml.read_file(path)
    entries = doc.get("trends") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path}: needs a list 'trends'")
    out = tuple(trend_claim(e, f"{path}: trends[{i}]") for i, e in enumerate(entries))
    names = [c.name for c in out]
    if dup := sorted({n for n in names if names.count(n) > 1}):
        raise ValueError(f"{path}: trends: claim {dup[0]!r} given twice")
    known = set(names)
    for c in out:
        if (c.derived_from or c.reading_of) and (c.derived_from or c.reading_of) not in known:
            raise ValueError(f"{path}: trends: {c.name!r} names {c.derived_from or c.reading_of!r}, no claim of "
                             "the file")
    return out


def default_statements() -> Path:
    from bladefl.experiments.runs import provenance

    return provenance.project_root() / "config" / "paper_statements.yaml"


def claims(path: str | Path | None = None) -> list[TrendClaim]:
    """Every experiment claim of the statements file (default the project's): the counted claims, their
    derived rows and readings as the file lists them, then the reading by accuracy of each claim or reading
    of K (but those the file says ``by_accuracy: false``)."""
    out = list(read_trends(str(path or default_statements())))
    by_loss = [c for c in out if c.quantity == "K" and c.role != "derived" and c.by_accuracy]
    out += [TrendClaim(f"{c.name} (K* by accuracy)", c.statement, c.source, c.param, _one("K_accuracy", c.direction),
                       role="reading", page=c.page, reading_of=c.name, only=c.only) for c in by_loss]
    return out


__all__ = ["Part", "TrendClaim", "QUANTITIES", "DIRECTIONS", "SWEEPS", "claims", "read_trends", "trend_claim"]
