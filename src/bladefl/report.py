"""What the report shows, computed: curves per sweep, tables beside the paper's numbers,
the verdict table and provenance. Notebooks call these and only present the results.

Every reader of an input file goes through :func:`read_csv` / :func:`read_json`, which fail
with the path and the reason (missing file, unreadable, missing columns, no rows).
"""

from __future__ import annotations

import html
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
    return yaml.safe_load(path.read_text())["tables"]


def compare_with_paper(optimum: pd.DataFrame, table: Mapping, dataset: str) -> pd.DataFrame:
    """One paper table beside ours: the optimum time (training or mining) and maximal accuracy."""
    quantity = table["quantity"]
    ours = optimum[optimum.sweep == table["sweep"]].set_index("value")
    rows = []
    values = sorted(set(ours.index.tolist()) | {float(r["value"]) for r in table["rows"]})
    paper = {float(r["value"]): r for r in table["rows"]}
    for v in values:
        mine = ours.loc[v] if v in ours.index else None
        ref = paper.get(v, {})
        rows.append({
            table["sweep"]: v,
            f"ours {quantity}": float(mine[quantity]) if mine is not None else math.nan,
            f"paper {quantity}": float(ref.get(dataset, math.nan)),
            "ours K*": float(mine["K_star_loss"]) if mine is not None else math.nan,
            "ours max accuracy %": 100 * float(mine["max_accuracy"]) if mine is not None else math.nan,
            "paper max accuracy %": float(ref.get(f"accuracy_{dataset}", math.nan)),
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
        rows.append({"run": str(Path(p).parent), "seed": s["config"]["seed"], "code_version": prov.get("code_version"),
                     "torch": prov.get("torch"), "seconds": s.get("seconds", {}).get("total"),
                     "train_images_sha256": prov.get("data_sha256", {}).get("train-images-idx3-ubyte")})
    return pd.DataFrame(rows)


def write_index(path: str | Path, verdict_tables: Sequence[str | Path], pages: Sequence[str | Path],
                title: str = "BLADE-FL reproduction report") -> Path:
    """The report's front page: the verdict table first, then a link to every rendered notebook."""
    path = Path(path)
    frames = [read_csv(p, ("dataset", "claim", "reproduced", "evidence")) for p in verdict_tables]
    table = pd.concat(frames, ignore_index=True)
    rows = "\n".join(
        f"<tr class='{'ok' if str(r.reproduced) == 'True' else 'no'}'><td>{html.escape(r.dataset)}</td>"
        f"<td>{html.escape(r.claim)}</td><td>{'reproduced' if str(r.reproduced) == 'True' else 'not reproduced'}"
        f"</td><td>{html.escape(str(r.evidence))}</td></tr>" for r in table.itertuples())
    links = "\n".join(f"<li><a href='{html.escape(str(Path(p).relative_to(path.parent)))}'>"
                      f"{html.escape(Path(p).stem)}</a></li>" for p in pages)
    n_ok = int((table.reproduced.astype(str) == "True").sum())
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:70em;margin:2em auto}}td,th{{border:1px solid #ccc;padding:.3em}}
table{{border-collapse:collapse}}tr.ok td:nth-child(3){{background:#dfd}}tr.no td:nth-child(3){{background:#fdd}}</style>
</head><body><h1>{html.escape(title)}</h1>
<h2>Verdicts: {n_ok} of {len(table)} claims reproduced</h2>
<table><tr><th>dataset</th><th>claim</th><th>verdict</th><th>evidence</th></tr>
{rows}
</table>
<h2>Rendered notebooks</h2><ul>
{links}
</ul></body></html>
"""
    atomic.write_text(path, page)
    return path


__all__ = ["ReportInputError", "read_csv", "read_json", "sweep_curves", "paper_tables", "compare_with_paper",
           "privacy_table", "verdicts", "markdown", "write_table", "provenance", "write_index"]
