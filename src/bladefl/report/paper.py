"""The paper's Tables II-VII beside ours: the transcribed values, the K* behind each cell by the
table's own formula, the comparison table, our best accuracy per table beside the paper's
(``accuracy_gap``) and, for a claim, the paper's numbers over its sweep beside ours (``paper_beside``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from bladefl.experiments.tables.paper_tables import (  # noqa: F401 - re-exported: the report reads them here
    DEFAULT_BETA,
    inconsistency,
    paper_k_star,
    table_beta,
    table_k,
    table_row_k_star,
)
from bladefl.report.inputs import ReportInputError
from bladefl.report.tables import run_span


def paper_tables(path: str | Path) -> list[dict]:
    from bladefl.experiments.tables.paper_tables import read_paper_tables

    path = Path(path)
    if not path.exists():
        raise ReportInputError(f"{path}: missing (the paper's values, transcribed from its tables)")
    return read_paper_tables(path)


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


def accuracy_gap(comparisons: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per dataset and paper table, the same row on both sides: the row of the table where the paper's
    accuracy is highest, the paper's accuracy (%) there, ours at that row and its spread (sd over the
    runs there), the difference."""
    rows = []
    for dataset, frame in comparisons.items():
        for table, part in frame.groupby("table", sort=False):
            ours, paper = pd.to_numeric(part.max_accuracy), pd.to_numeric(part.paper_max_accuracy)
            if not paper.notna().any():
                continue
            at = paper.idxmax()
            if not math.isfinite(float(ours.get(at, math.nan))):
                continue
            sd = pd.to_numeric(part.max_accuracy_sd).get(at, math.nan) if "max_accuracy_sd" in part else math.nan
            value = part.value.get(at, math.nan) if "value" in part else math.nan
            rows.append({"dataset": dataset, "table": table, "parameter": part.parameter.iloc[0], "value": value,
                         "ours": float(ours[at]), "sd": float(sd), "paper": float(paper[at]),
                         "difference": float(ours[at] - paper[at])})
    return pd.DataFrame(rows, columns=["dataset", "table", "parameter", "value", "ours", "sd", "paper", "difference"])


def paper_beside(claim: str, comparison: pd.DataFrame | None) -> str:
    """For an experiment claim about K* or a table's time quantity: the paper's numbers over the
    sweep beside ours (the paper-comparison table: its K* and time per swept value, ours from the
    mean curves); "" where the paper gives no numbers for it (a loss read off its figures)."""
    from bladefl.experiments.verdicts.experiment_claims import claims
    from bladefl.report.plots import param_name

    found = next((c for c in claims() if c.name == claim), None)
    if found is None or comparison is None or found.quantity not in ("K", "mining_time", "training_time"):
        return ""
    part = comparison[comparison.parameter == found.param].sort_values("value")
    if part.empty:
        return ""
    if found.quantity != "K" and not (part.paper_quantity == found.quantity).all():
        return ""
    paper, ours = ((part.paper_K_star, part.K_star) if found.quantity == "K" else (part.paper_value, part.quantity))

    def shown(values: pd.Series) -> str:
        return ", ".join("?" if pd.isna(v) else f"{float(v):g}" for v in values)

    name = "K*" if found.quantity == "K" else "β·K*" if found.quantity == "mining_time" else "τ·α·K*"
    return (f"{param_name(found.param)} = {shown(part.value)}: paper {name} {shown(paper)}; ours {shown(ours)} "
            f"({str(part.table.iloc[0])}; ? = not in the paper or no integer K*)")


_ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII")


def table_span(tables: Sequence[str]) -> str:
    """``Tables II-VII`` for a run of consecutive tables, else the tables listed."""
    numerals = [t.split()[-1] for t in tables]
    span = run_span([_ROMAN.index(n) for n in numerals]) if all(n in _ROMAN for n in numerals) else None
    return f"Tables {_ROMAN[span[0]]}-{_ROMAN[span[1]]}" if span else ", ".join(tables)


__all__ = ["accuracy_gap", "paper_beside", "paper_tables", "QUANTITY_LABELS", "table_k", "paper_k_star",
           "paper_quantity", "sweep_betas", "paper_comparison", "compare_with_paper", "COMPARISON_COLUMNS",
           "table_span"]
