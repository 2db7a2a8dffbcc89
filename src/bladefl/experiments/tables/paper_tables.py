"""The paper's Tables II-VII as data: the K* a table cell stands for by that table's own formula,
and both readings of a cell that gives no integer K* at the table's stated beta."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path


def table_k(quantity: str, paper_value: float, beta: float, t_sum: float) -> float:
    """The (real) K a table cell stands for, by that table's own formula: ``t_sum - beta*K*`` for the
    training-time tables (II, VI, VII), ``beta*K*`` for the mining-time tables (III, IV, V)."""
    return (t_sum - paper_value) / beta if quantity == "training_time" else paper_value / beta


def paper_k_star(quantity: str, paper_value: float, beta: float, t_sum: float) -> float:
    """K* behind a paper table cell (:func:`table_k`); NaN where the value does not give an
    integer K* at the table's beta (a paper inconsistency)."""
    if not (math.isfinite(paper_value) and math.isfinite(beta) and beta > 0):
        return math.nan
    k = table_k(quantity, paper_value, beta, t_sum)
    return float(round(k)) if abs(k - round(k)) < 1e-9 and round(k) >= 1 else math.nan


def table_row_k_star(table: Mapping, row: Mapping, dataset: str) -> float:
    """K* behind one row of a paper table for a dataset (:func:`paper_k_star` at the row's beta:
    the swept value when the table varies beta, else the table's beta)."""
    return paper_k_star(table["quantity"], float(row.get(dataset, math.nan)), table_beta(table, float(row["value"])),
                        float(table.get("t_sum", 100)))


def table_beta(table: Mapping, value: float) -> float:
    """The beta behind a paper table's row of swept ``value``: the value itself when the table
    varies beta, else the table's beta (NaN where it states none)."""
    return value if table.get("vary", table["sweep"]) == "beta" else float(table.get("beta", math.nan))


DEFAULT_BETA = 10.0  # the paper's default (Sec. VI-A 3)), the other reading of an inconsistent cell


def inconsistency(quantity: str, value: float, beta: float, t_sum: float) -> str:
    """Both readings of a paper value that gives no integer K* at the table's stated beta."""
    def k(b: float) -> float:
        return table_k(quantity, value, b, t_sum)

    formula = "t_sum - beta*K*" if quantity == "training_time" else "beta*K*"
    alt = paper_k_star(quantity, value, DEFAULT_BETA, t_sum)
    second = f"reading 2: at the default beta={DEFAULT_BETA:g}, K* = " + (
        f"{alt:g}" if math.isfinite(alt) else f"{k(DEFAULT_BETA):.2f} (not an integer either)")
    return (f"inconsistent: {value:g} is not {formula} for an integer K* at the stated beta={beta:g} "
            f"(reading 1: K* = {k(beta):.2f}); {second}")


__all__ = ["table_k", "paper_k_star", "table_row_k_star", "table_beta", "inconsistency", "DEFAULT_BETA"]


def read_paper_tables(path: str | Path) -> list[dict]:
    """The paper's tables (``config/paper_values.yaml``), each with the document's t_sum, read strictly
    (a regular file of bounded size, a key given twice refused) and held to their shape: ValueError
    naming the file otherwise."""
    from bladefl.core import strict_yaml

    doc = strict_yaml.read_file(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("tables"), list) or not all(
            isinstance(t, dict) and isinstance(t.get("rows"), list) and isinstance(t.get("table"), str)
            for t in doc["tables"]):
        raise ValueError(f"{path}: not the paper's tables (a mapping whose `tables` each name a table and list rows)")
    return [{"t_sum": doc.get("t_sum", 100), **table} for table in doc["tables"]]
