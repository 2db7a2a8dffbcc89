"""The sensitivity study against the paper: which reading of the paper's unstated settings
comes closest to its tables, and which verdicts change with the reading.

Per reading and dataset, over every row of the paper's Tables II-VII that the study ran and the
paper gives (``paper_comparison``): the distance in K* (sum of |K* - K*_paper| over the rows
with an integer paper K*) and in maximal accuracy (sum of |max accuracy - paper's| in points).
Each is computed from the seed-mean curves and, for its spread, once per seed from that seed's
own optimum (mean and standard deviation over seeds).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from bladefl.experiments.tables.tidy import optimum
from bladefl.report.paper import paper_comparison, table_row_k_star
from bladefl.report.tables import plus_minus

CHANGE_VERDICTS = ("reproduced", "refuted")


def _distances(comparison: pd.DataFrame) -> tuple[float, float, int, int]:
    k = comparison.dropna(subset=["K_star", "paper_K_star"])
    acc = comparison.dropna(subset=["max_accuracy", "paper_max_accuracy"])
    return (float((k.K_star - k.paper_K_star).abs().sum()), float((acc.max_accuracy - acc.paper_max_accuracy)
                                                                  .abs().sum()), len(k), len(acc))


def ranking(summaries: Mapping[str, pd.DataFrame], tables: Sequence[Mapping], dataset: str, t_sum: float,
            optima: Mapping[str, pd.DataFrame], axes: Mapping[str, str]) -> pd.DataFrame:
    """One row per reading: its distances to the paper (seed-mean, and mean +- sd over seeds),
    ranked by the K* distance, then the accuracy distance."""
    rows = []
    for reading, summary in summaries.items():
        k, acc, nk, nacc = _distances(paper_comparison(optima[reading], summary, tables, dataset, t_sum))
        # the spread: each seed's own optimum (the optimum table of that seed alone), compared the same way
        seeds = [_distances(paper_comparison(optimum(part), part, tables, dataset, t_sum))
                 for _, part in summary.groupby("seed")]
        rows.append({"reading": reading, "axis": axes.get(reading, ""), "dataset": dataset,
                     "K_star_distance": k, "accuracy_distance": acc,
                     "K_star_distance_seeds": float(np.mean([d[0] for d in seeds])) if seeds else math.nan,
                     "K_star_distance_sd": float(np.std([d[0] for d in seeds])) if seeds else math.nan,
                     "accuracy_distance_seeds": float(np.mean([d[1] for d in seeds])) if seeds else math.nan,
                     "accuracy_distance_sd": float(np.std([d[1] for d in seeds])) if seeds else math.nan,
                     "K_star_rows": nk, "accuracy_rows": nacc, "seeds": len(seeds),
                     "max_accuracy": float(summary[summary.status == "ok"].groupby(["cell", "K"]).test_accuracy
                                           .mean().max()) * 100})
    out = pd.DataFrame(rows).sort_values(["K_star_distance", "accuracy_distance"], kind="stable")
    return out.assign(rank=range(1, len(out) + 1)).reset_index(drop=True)


def verdict_changes(verdicts: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Claim x reading verdicts; ``depends_on_reading`` where one reading reproduces a claim that
    another refutes (inconclusive and single-seed verdicts do not count as a change)."""
    frame = pd.concat([v.assign(reading=r) for r, v in verdicts.items()], ignore_index=True)
    table = frame.pivot_table(index=["claim", "source"], columns="reading", values="verdict", aggfunc="first")
    table = table[list(verdicts)]
    decided = table.apply(lambda row: set(row.dropna()) & set(CHANGE_VERDICTS), axis=1)
    return table.assign(depends_on_reading=decided.map(len) > 1).reset_index()


def accuracy_curves(summaries: Mapping[str, pd.DataFrame], sweeps: Sequence[str]) -> pd.DataFrame:
    """Test accuracy (%) versus K per reading, sweep and swept value: mean and sd over seeds."""
    frames = []
    for reading, summary in summaries.items():
        part = summary[(summary.status == "ok") & summary.sweep.isin(sweeps)]
        frames.append(part.groupby(["sweep", "value", "K"], as_index=False)
                      .agg(accuracy=("test_accuracy", "mean"), accuracy_sd=("test_accuracy", "std"))
                      .assign(reading=reading, accuracy=lambda f: 100 * f.accuracy,
                              accuracy_sd=lambda f: 100 * f.accuracy_sd.fillna(0)))
    return pd.concat(frames, ignore_index=True)


def paper_points(tables: Sequence[Mapping], dataset: str, sweeps: Sequence[str]) -> pd.DataFrame:
    """The paper's K* and maximal accuracy (%) per swept value of the given sweeps (K* NaN where
    the table's value gives no integer K*: see :func:`bladefl.report.paper.paper_k_star`)."""
    return pd.DataFrame([{"sweep": t["sweep"], "table": t["table"], "value": float(r["value"]),
                          "paper_K_star": table_row_k_star(t, r, dataset),
                          "paper_max_accuracy": float(r.get(f"accuracy_{dataset}", math.nan))}
                         for t in tables if t["sweep"] in sweeps for r in t["rows"]])


def ranking_view(ranked: pd.DataFrame) -> pd.DataFrame:
    """The ranking as the page shows it: distances from the seed-mean curves and per seed
    (mean +- sd), the best accuracy in %."""
    return pd.DataFrame({
        "rank": ranked["rank"], "reading": ranked.reading, "axis": ranked.axis, "seeds": ranked.seeds,
        "K* distance": ranked.K_star_distance,
        "K* distance per seed": plus_minus(ranked.K_star_distance_seeds, ranked.K_star_distance_sd, ".1f"),
        "accuracy distance (points)": ranked.accuracy_distance.round(1),
        "accuracy distance per seed": plus_minus(ranked.accuracy_distance_seeds, ranked.accuracy_distance_sd, ".1f"),
        "best accuracy %": ranked.max_accuracy.round(1),
    })
