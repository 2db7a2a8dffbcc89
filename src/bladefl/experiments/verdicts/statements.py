"""The inventory of the paper's statements (``config/paper_statements.yaml``): every statement of
Sections IV-VII that asserts a direction, a relation or a number, how it is judged (or why it is
not), the reading that counts, and the paper's figures in their compiled order. The verdict table
is held to it (:func:`problems`): one counted row per judged statement, every row naming a
statement of the inventory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bladefl.core import strict_yaml
from bladefl.core.errors import BladeflError
from bladefl.data.datasets import NAMES

JUDGED = ("experiment", "bound", "mathematics", "paper error", "ambiguity", "none")  # the last three: basis paper
DATASETS = NAMES


@dataclass(frozen=True)
class Statement:
    id: str
    where: str
    quote: str
    tex: str
    judged: str
    reading: str = ""
    why_no_row: str = ""
    datasets: tuple[str, ...] = DATASETS
    if_differs: str = ""  # the likely reason where the runs do not bear it out (a mechanism, not a result)


@dataclass(frozen=True)
class Figure:
    number: int
    label: str
    shows: str
    sweep: str = ""
    table: str = ""
    datasets: tuple[str, ...] = DATASETS


@dataclass(frozen=True)
class Inventory:
    statements: tuple[Statement, ...]
    figures: tuple[Figure, ...]

    def get(self, statement: str) -> Statement | None:
        return next((s for s in self.statements if s.id == statement), None)

    def applies(self, statement: str, dataset: str | None) -> bool:
        """Whether ``statement`` is judged on ``dataset`` (any dataset when None; a row naming a
        statement the inventory lacks is kept, and :func:`problems` reports it)."""
        s = self.get(statement)
        return s is None or dataset is None or dataset in s.datasets

    def figure_of(self, sweep: str, dataset: str | None = None) -> Figure | None:
        """The paper's figure of a sweep (for the epsilon sweep, the dataset's own)."""
        found = [f for f in self.figures if f.sweep == sweep and (dataset is None or dataset in f.datasets)]
        return found[0] if found else None


class InventoryError(BladeflError):
    """The inventory file is malformed: the message names the entry and the field."""


def _text(entry: dict, key: str, where: str, required: bool = True) -> str:
    value = entry.get(key, "")
    if (required and not value) or not isinstance(value, str):
        raise InventoryError(f"{where}.{key}: {'missing' if not value else 'not text'}")
    return value


def _datasets(entry: dict, where: str, default: tuple[str, ...] = DATASETS) -> tuple[str, ...]:
    value = entry.get("datasets", list(default))
    if not isinstance(value, list) or not value or any(d not in DATASETS for d in value):
        raise InventoryError(f"{where}.datasets: {value!r} (allowed: a list of {', '.join(DATASETS)})")
    return tuple(value)


def _statement(entry: object, i: int, default: tuple[str, ...]) -> Statement:
    where = f"statements[{i}]"
    if not isinstance(entry, dict):
        raise InventoryError(f"{where}: not a mapping")
    allowed = {"id", "where", "quote", "tex", "judged", "reading", "why_no_row", "datasets", "if_differs"}
    if extra := sorted(set(entry) - allowed):
        raise InventoryError(f"{where}.{extra[0]}: unknown field (allowed: {', '.join(sorted(allowed))})")
    judged = entry.get("judged")
    if judged not in JUDGED:
        raise InventoryError(f"{where}.judged: {judged!r} (allowed: {', '.join(JUDGED)})")
    why = _text(entry, "why_no_row", where, required=judged == "none")
    if why and judged != "none":
        raise InventoryError(f"{where}.why_no_row: only a statement judged 'none' says why it has no row")
    return Statement(_text(entry, "id", where), _text(entry, "where", where), _text(entry, "quote", where),
                     _text(entry, "tex", where), judged, _text(entry, "reading", where, required=False), why,
                     _datasets(entry, where, default), _text(entry, "if_differs", where, required=False))


def _figure(entry: object, i: int, default: tuple[str, ...]) -> Figure:
    where = f"figures[{i}]"
    if not isinstance(entry, dict) or not isinstance(entry.get("number"), int):
        raise InventoryError(f"{where}.number: missing or not a whole number")
    return Figure(entry["number"], _text(entry, "label", where), _text(entry, "shows", where),
                  _text(entry, "sweep", where, required=False), _text(entry, "table", where, required=False),
                  _datasets(entry, where, default))


def read_inventory(path: str | Path) -> Inventory:
    """The inventory at ``path``, every entry checked (:class:`InventoryError` naming the field)."""
    doc = strict_yaml.read_file(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("statements"), list):
        raise InventoryError(f"{path}: needs a list 'statements'")
    # the datasets a statement or figure naming none is on (the paper's experiments'), every registry one if unsaid
    default = _datasets(doc, "datasets")
    statements = tuple(_statement(e, i, default) for i, e in enumerate(doc["statements"]))
    figures = tuple(_figure(e, i, default) for i, e in enumerate(doc.get("figures", [])))
    ids = [s.id for s in statements]
    if dup := sorted({x for x in ids if ids.count(x) > 1}):
        raise InventoryError(f"statements: id {dup[0]!r} given twice")
    if [f.number for f in figures] != list(range(1, len(figures) + 1)):
        raise InventoryError("figures: numbers must run 1, 2, ... in the paper's order")
    return Inventory(statements, figures)


def problems(table: pd.DataFrame, inventory: Inventory, dataset: str, expected: Sequence[str] = ()) -> list[str]:
    """Where a dataset's verdict table and the inventory disagree: a row naming no statement of
    the inventory, a judged statement with more than one counted row (or, for ``expected``
    statements, none), a row of a statement judged 'none', a counted row whose basis is not the
    statement's."""
    out = []
    known = {s.id: s for s in inventory.statements}
    for r in table.itertuples():
        s = known.get(str(r.statement))
        if s is None:
            out.append(f"row {r.claim!r} names statement {r.statement!r}, not in the inventory")
        elif s.judged == "none":
            out.append(f"row {r.claim!r} judges {s.id!r}, which the inventory says has no row")
    counted = table[table.role.isin(["claim", "paper error"])]
    for s in inventory.statements:
        if s.judged == "none" or dataset not in s.datasets:
            continue
        mine = counted[counted.statement == s.id]
        if len(mine) > 1:
            out.append(f"statement {s.id!r} counted {len(mine)} times: {list(mine.claim)}")
        elif len(mine) == 0 and s.id in expected:
            out.append(f"statement {s.id!r} ({s.where}) has no counted row")
        elif len(mine) == 1 and mine.basis.iloc[0] != ("paper" if s.judged in ("paper error", "ambiguity")
                                                       else s.judged):
            out.append(f"statement {s.id!r} is judged on the {s.judged}, its row on the {mine.basis.iloc[0]}")
    return out


__all__ = ["Statement", "Figure", "Inventory", "InventoryError", "read_inventory", "problems", "JUDGED"]
