"""What the report shows, computed: curves per sweep, tables beside the paper's numbers,
the verdict table and provenance. Notebooks call these and only present the results.

Every reader of an input file goes through :func:`read_csv` / :func:`read_json`, which fail
with the path and the reason (missing file, unreadable, missing columns, no rows).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd
import yaml

from . import atomic
from .claims import CLAIMS, on_experiment


class ReportInputError(RuntimeError):
    """An input of the report is missing or malformed."""


def read_csv(path: str | Path, required: Iterable[str] = ()) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise ReportInputError(f"{path}: missing (run the workflow step that writes it first)")
    try:
        frame = pd.read_csv(path)
    except Exception as exc:  # noqa: BLE001 - any parse failure is reported with the path
        raise ReportInputError(f"{path}: unreadable CSV ({exc})") from None
    missing = sorted(set(required) - set(frame.columns))
    if missing:
        raise ReportInputError(f"{path}: malformed, missing column(s) {missing}")
    if frame.empty:
        raise ReportInputError(f"{path}: malformed, no rows")
    return frame


def read_json(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise ReportInputError(f"{path}: missing (run the workflow step that writes it first)")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ReportInputError(f"{path}: malformed JSON ({exc})") from None


SUMMARY_COLUMNS = ("sweep", "vary", "value", "cell", "K", "tau", "seed", "train_loss", "test_loss", "test_accuracy",
                   "status")
OPTIMUM_COLUMNS = ("sweep", "vary", "value", "cell", "K_star_loss", "K_star_accuracy", "training_time",
                   "mining_time", "max_accuracy", "min_train_loss")


def sweep_curves(summary: pd.DataFrame, sweep: str) -> pd.DataFrame:
    """Per (value, K): mean and std over seeds of the training loss and test accuracy."""
    part = summary[(summary.sweep == sweep) & (summary.status == "ok")]
    if part.empty:
        raise ReportInputError(f"sweep {sweep!r} has no rows in the summary table")
    return (part.groupby(["value", "cell", "K"], as_index=False)
            .agg(loss=("train_loss", "mean"), loss_std=("train_loss", "std"), accuracy=("test_accuracy", "mean"),
                 accuracy_std=("test_accuracy", "std"), test_loss=("test_loss", "mean"), seeds=("seed", "nunique"))
            .fillna({"loss_std": 0.0, "accuracy_std": 0.0}))


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


def privacy_table(optimum: pd.DataFrame) -> pd.DataFrame:
    part = optimum[optimum.sweep == "epsilon"].sort_values("value")
    if part.empty:
        raise ReportInputError("no 'epsilon' sweep in the optimum table")
    return part[["value", "K_star_loss", "K_star_accuracy", "min_train_loss", "max_accuracy"]].rename(
        columns={"value": "epsilon"}).reset_index(drop=True)


def verdicts(dataset: str, optimum: pd.DataFrame, kstar: pd.DataFrame | None, members: pd.DataFrame | None,
             within: float = 0.05) -> pd.DataFrame:
    """Each of the paper's claims, reproduced or not on this dataset, with the numbers behind it."""
    rows = []
    for claim, (param, _, _) in CLAIMS.items():
        part = optimum[optimum.vary == param]
        if part.empty:
            continue
        v = on_experiment(claim, part.to_dict(orient="records"))
        rows.append({"dataset": dataset, "claim": claim, "reproduced": v.holds,
                     "evidence": f"{param} = {v.x} -> {'beta K*' if 'beta K*' in claim else 'K*'} = {v.y}"})
    if kstar is not None and members is not None:
        fig3 = kstar[kstar.cell.isin(members[members.sweep == "fig3"].cell)]
        if not fig3.empty:
            gaps = fig3.max_rel_gap_fit.tolist()
            rows.append({"dataset": dataset, "claim": f"the bound is within {within:.0%} of the experiment (Fig. 3)",
                         "reproduced": bool(all(g <= within for g in gaps) and fig3.fit_above_everywhere.all()),
                         "evidence": f"max relative gap of the fitted bound per condition: "
                                     f"{[round(g, 4) for g in gaps]}; above at every K: "
                                     f"{fig3.fit_above_everywhere.tolist()}"})
            same = (fig3.K_exact_fit == fig3.K_experiment).tolist()
            rows.append({"dataset": dataset, "claim": "the bound's K* minimises the experimental loss (Fig. 3)",
                         "reproduced": bool(all(same)),
                         "evidence": f"K* bound {fig3.K_exact_fit.tolist()} vs experiment "
                                     f"{fig3.K_experiment.tolist()}"})
    eps = optimum[(optimum.sweep == "epsilon")]
    if len(eps) >= 2:
        ks = eps.sort_values("value").K_star_loss.tolist()
        rows.append({"dataset": dataset, "claim": "K* does not depend on epsilon (privacy)",
                     "reproduced": bool(max(ks) - min(ks) <= 1),
                     "evidence": f"epsilon = {eps.sort_values('value').value.tolist()} -> K* = {ks} "
                                 "(reproduced if the spread is at most 1)"})
    return pd.DataFrame(rows, columns=["dataset", "claim", "reproduced", "evidence"])


def markdown(frame: pd.DataFrame, digits: int = 4) -> str:
    def cell(v: object) -> str:
        if isinstance(v, float):
            return "" if math.isnan(v) else f"{v:.{digits}g}"
        return str(v).replace("|", "\\|")

    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body]) + "\n"


def write_table(frame: pd.DataFrame, name: str, folder: str | Path) -> list[Path]:
    """``<folder>/<name>.csv`` and ``.md``."""
    folder = Path(folder)
    atomic.write_csv(folder / f"{name}.csv", frame)
    atomic.write_text(folder / f"{name}.md", markdown(frame))
    return [folder / f"{name}.csv", folder / f"{name}.md"]


def provenance(summary_paths: Sequence[str | Path]) -> pd.DataFrame:
    rows = []
    for p in summary_paths:
        s = read_json(p)
        prov = s.get("provenance", {})
        rows.append({"run": f"{Path(p).parent.parent.name}/{Path(p).parent.name}", "seed": s["config"]["seed"], "code_version": prov.get("code_version"),
                     "torch": prov.get("torch"), "host": prov.get("host"), "seconds": s.get("seconds", {}).get("total"),
                     "train_images_sha256": prov.get("data_sha256", {}).get("train-images-idx3-ubyte")})
    return pd.DataFrame(rows)


__all__ = ["ReportInputError", "read_csv", "read_json", "sweep_curves", "paper_tables", "compare_with_paper",
           "privacy_table", "verdicts", "markdown", "write_table", "provenance", "paper_k_star",
           "paper_quantity", "sweep_betas"]
