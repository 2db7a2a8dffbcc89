"""The paper's Tables II-VII beside ours: the transcribed values, the K* behind each cell by the
table's own formula, and the comparison table."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
import yaml

from bladefl.experiments.tables.paper_tables import (  # noqa: F401 - re-exported: the report reads them here
    DEFAULT_BETA,
    inconsistency,
    paper_k_star,
    table_beta,
    table_k,
    table_row_k_star,
)
from bladefl.report.inputs import ReportInputError


def paper_tables(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise ReportInputError(f"{path}: missing (the paper's values, transcribed from its tables)")
    doc = yaml.safe_load(path.read_text())
    return [{"t_sum": doc.get("t_sum", 100), **table} for table in doc["tables"]]


QUANTITY_LABELS = {"training_time": "τ·α·K* (time)", "mining_time": "β·K* (time)"}


def paper_quantity(quantity: str, k_star: float, beta: float, t_sum: float) -> float:
    """A table's quantity computed the paper's way from a K* (the inverse of :func:`paper_k_star`)."""
    return t_sum - beta * k_star if quantity == "training_time" else beta * k_star


def sweep_betas(summary: pd.DataFrame, sweep: str) -> dict[float, float]:
    """The beta each value of a sweep ran at."""
    part = summary[summary.sweep == sweep]
    return {float(v): float(b) for v, b in part.groupby("value").beta.first().items()}


COMPARISON_COLUMNS = ["table", "dataset", "parameter", "value", "beta", "paper_quantity", "paper_value", "quantity",
                      "paper_K_star", "K_star", "K_star_sd", "seeds", "max_accuracy", "max_accuracy_sd",
                      "paper_max_accuracy", "setting_source", "note"]
def paper_comparison(optimum: pd.DataFrame, summary: pd.DataFrame, tables: Sequence[Mapping], dataset: str,
                     t_sum: float) -> pd.DataFrame:
    """One row per row of the paper's Tables II-VII (and per swept value the grid ran that the paper
    does not list): K* (ours on the seed-mean loss curve, its sd over per-seed optima; the paper's
    derived from its table cell by the table's own formula at the paper's t_sum and beta), the
    table's quantity computed the paper's way from each K* (ours at our beta and t_sum), and the
    maximal test accuracy in percent."""
    rows = []
    for table in tables:
        quantity, sweep = table["quantity"], table["sweep"]
        ours = optimum[optimum.sweep == sweep].set_index("value")
        betas = sweep_betas(summary, sweep)
        paper = {float(r["value"]): r for r in table["rows"]}
        paper_t_sum = float(table.get("t_sum", 100))
        for v in sorted(set(map(float, ours.index)) | set(paper)):
            mine = ours.loc[v] if v in ours.index else None
            ref = paper.get(v, {})
            beta_paper = table_beta(table, v)
            beta_ours = betas.get(v, math.nan)
            paper_value = float(ref.get(dataset, math.nan))
            k_paper = table_row_k_star(table, ref, dataset) if ref else math.nan
            k_ours = float(mine["K_star_loss"]) if mine is not None else math.nan
            notes = []
            if math.isfinite(paper_value) and math.isnan(k_paper):
                notes.append(inconsistency(quantity, paper_value, beta_paper, paper_t_sum))
            if mine is not None and math.isfinite(beta_paper) and beta_ours != beta_paper:
                notes.append(f"ours ran at beta={beta_ours:g}, the paper at beta={beta_paper:g}")
            if mine is None:
                notes.append("not in our grid")
            elif not math.isfinite(paper_value):
                notes.append("not in the paper's table")
            rows.append({
                "table": table["table"], "dataset": dataset, "parameter": sweep, "value": v, "beta": beta_ours,
                "paper_quantity": quantity, "paper_value": paper_value,
                "quantity": paper_quantity(quantity, k_ours, beta_ours, t_sum),
                "paper_K_star": k_paper, "K_star": k_ours,
                "K_star_sd": float(mine["K_star_loss_std"]) if mine is not None else math.nan,
                "seeds": int(mine["seeds"]) if mine is not None else 0,
                "max_accuracy": 100 * float(mine["max_accuracy"]) if mine is not None else math.nan,
                "max_accuracy_sd": 100 * float(mine["max_accuracy_std"]) if mine is not None else math.nan,
                "paper_max_accuracy": float(ref.get(f"accuracy_{dataset}", math.nan)),
                "setting_source": table.get("beta_source", ""), "note": "; ".join(notes),
            })
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def compare_with_paper(comparison: pd.DataFrame, table: str) -> pd.DataFrame:
    """One paper table of :func:`paper_comparison` as the page shows it: (ours, paper) column pairs."""
    part = comparison[comparison.table == table]
    if part.empty:
        return part
    label = QUANTITY_LABELS.get(part.paper_quantity.iloc[0], part.paper_quantity.iloc[0])
    return pd.DataFrame({
        part.parameter.iloc[0]: part.value,
        "K* ours": part.K_star, "K* sd": part.K_star_sd, "K* paper": part.paper_K_star,
        f"{label} ours": part.quantity, f"{label} paper": part.paper_value,
        "max accuracy % ours": part.max_accuracy, "max accuracy % paper": part.paper_max_accuracy,
        "seeds": part.seeds, "note": part.note,
    }).reset_index(drop=True)


__all__ = ["paper_tables", "QUANTITY_LABELS", "table_k", "paper_k_star", "paper_quantity", "sweep_betas",
           "paper_comparison", "compare_with_paper", "COMPARISON_COLUMNS"]
