"""The paper's Tables II-VII beside ours: the transcribed values, the K* behind each cell by the
table's own formula, and the comparison table."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import yaml

from bladefl.report.inputs import ReportInputError


def paper_tables(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise ReportInputError(f"{path}: missing (the paper's values, transcribed from its tables)")
    doc = yaml.safe_load(path.read_text())
    return [{"t_sum": doc.get("t_sum", 100), **table} for table in doc["tables"]]


QUANTITY_LABELS = {"training_time": "τ·α·K* (time)", "mining_time": "β·K* (time)"}


def paper_k_star(quantity: str, paper_value: float, beta: float, t_sum: float) -> float:
    """K* behind a paper table cell, by that table's own formula: ``t_sum - beta*K*`` for the
    training-time tables (II, VI, VII), ``beta*K*`` for the mining-time tables (III, IV, V).
    NaN where the value does not give an integer K* at the table's beta (a paper inconsistency)."""
    if not (math.isfinite(paper_value) and math.isfinite(beta) and beta > 0):
        return math.nan
    k = (t_sum - paper_value) / beta if quantity == "training_time" else paper_value / beta
    return float(round(k)) if abs(k - round(k)) < 1e-9 and round(k) >= 1 else math.nan


def paper_quantity(quantity: str, k_star: float, beta: float, t_sum: float) -> float:
    """A table's quantity computed the paper's way from a K* (the inverse of :func:`paper_k_star`)."""
    return t_sum - beta * k_star if quantity == "training_time" else beta * k_star


def sweep_betas(summary: pd.DataFrame, sweep: str) -> dict[float, float]:
    """The beta each value of a sweep ran at."""
    part = summary[summary.sweep == sweep]
    return {float(v): float(b) for v, b in part.groupby("value").beta.first().items()}


def compare_with_paper(optimum: pd.DataFrame, table: Mapping, dataset: str, summary: pd.DataFrame,
                       t_sum: float) -> pd.DataFrame:
    """One paper table beside ours, row by swept value, in (ours, paper) column pairs: K* (ours on
    the seed-mean loss curve; the paper's derived from its table cell with the paper's t_sum and the
    table's beta), the table's quantity computed the paper's way from each K* (ours with our beta
    and t_sum), and the maximal test accuracy in percent."""
    quantity, sweep = table["quantity"], table["sweep"]
    varies_beta = table.get("vary", sweep) == "beta"
    ours = optimum[optimum.sweep == sweep].set_index("value")
    betas = sweep_betas(summary, sweep)
    paper = {float(r["value"]): r for r in table["rows"]}
    label = QUANTITY_LABELS.get(quantity, quantity)
    rows = []
    for v in sorted(set(map(float, ours.index)) | set(paper)):
        mine = ours.loc[v] if v in ours.index else None
        ref = paper.get(v, {})
        beta_paper = v if varies_beta else float(table.get("beta", math.nan))
        beta_ours = betas.get(v, math.nan)
        paper_value = float(ref.get(dataset, math.nan))
        k_paper = paper_k_star(quantity, paper_value, beta_paper, float(table.get("t_sum", 100)))
        k_ours = float(mine["K_star_loss"]) if mine is not None else math.nan
        notes = []
        if math.isfinite(paper_value) and math.isnan(k_paper):
            notes.append(f"inconsistent: the paper's {paper_value:g} gives no integer K* at its beta={beta_paper:g}")
        if mine is not None and math.isfinite(beta_paper) and beta_ours != beta_paper:
            notes.append(f"ours ran at beta={beta_ours:g}, the paper at beta={beta_paper:g}")
        if mine is None:
            notes.append("not in our grid")
        rows.append({
            sweep: v,
            "K* ours": k_ours,
            "K* paper": k_paper,
            f"{label} ours": paper_quantity(quantity, k_ours, beta_ours, t_sum),
            f"{label} paper": paper_value,
            "max accuracy % ours": 100 * float(mine["max_accuracy"]) if mine is not None else math.nan,
            "max accuracy % paper": float(ref.get(f"accuracy_{dataset}", math.nan)),
            "seeds": int(mine["seeds"]) if mine is not None else 0,
            "note": "; ".join(notes),
        })
    return pd.DataFrame(rows)


__all__ = ["paper_tables", "QUANTITY_LABELS", "paper_k_star", "paper_quantity", "sweep_betas", "compare_with_paper"]
