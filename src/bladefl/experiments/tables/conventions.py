"""Measurement conventions: how K* and the accuracy are read from the curves a run records, chosen at
analysis time (no second training), each with a name and a source.

The paper's text reads K* as the K that minimises the global loss function F of the aggregated model
(Sec. II defines F over the clients' data; Sec. VI plots "the loss function" against K) and reports the
"corresponding accuracy" (Tables II-VII) without naming its data; the authors' public code
(``ElvisShaoYumeng/BLADE-FL``) records other curves and reports those (:mod:`bladefl.fl.client_test`).
Every K* convention pairs with every accuracy convention; the pair of the paper's text stays the
headline (:data:`HEADLINE`), the others are readings beside it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bladefl.core.run_files import Run
from bladefl.experiments.tables.paper_tables import table_row_k_star

AUTHORS = "ElvisShaoYumeng/BLADE-FL, main_FL&BL.py"


@dataclass(frozen=True)
class Convention:
    """A curve read for a minimum (K*) or a maximum (accuracy), by its column in rounds.csv."""

    name: str
    column: str
    source: str
    description: str


# K*: the K whose final aggregated model minimises this curve.
K_STAR = {c.name: c for c in (
    Convention("objective", "train_loss", "paper, Sec. II (F, the global loss) and Sec. VI",
               "F(w): the aggregated model's loss on all clients' training data"),
    Convention("test-loss", "test_loss", "a reading: the paper never names the data its loss is on",
               "the aggregated model's loss on the whole test set"),
    Convention("authors-client-test-loss", "client_test_loss", f"{AUTHORS} lines 248-253, 314",
               "the aggregated model's loss on each client's 4-class test subset, averaged over clients"),
    Convention("authors-local-loss", "local_train_loss", f"{AUTHORS} lines 184-191, 296, 312 (its CSV calls it "
               "'Test_loss', lines 345-346)", "the clients' minibatch losses during the last round's local epochs"),
)}

# Accuracy: where it is measured; how it is read off the K axis is the second half of its name.
ACCURACY_SETS = {c.name: c for c in (
    Convention("full-test", "test_accuracy", "paper, Tables II-VII ('corresponding accuracy')",
               "the whole test set"),
    Convention("client-test", "client_test_accuracy", f"{AUTHORS} lines 248-253, 315",
               "each client's 4-class test subset, averaged over clients"),
)}
ACCURACY_READS = ("max", "at-k-star")  # the best accuracy over K, or the accuracy at K*
HEADLINE = ("objective", "max", "full-test")  # the paper's text: K* from F(w), the best test accuracy


def accuracy_conventions() -> list[tuple[str, str]]:
    """Every (read, set) pair, e.g. ("at-k-star", "client-test")."""
    return [(read, where) for read in ACCURACY_READS for where in ACCURACY_SETS]


def read_as(summary: pd.DataFrame, k_star: str, where: str = "full-test") -> pd.DataFrame:
    """A tidy run table read under a convention: its ``train_loss`` (what K* and every loss claim read)
    the curve of ``k_star``, its ``test_accuracy`` the accuracy on ``where``. ValueError naming the
    convention when it is none, or when a trained row holds no value of its curve (runs made before the
    curve was recorded)."""
    if k_star not in K_STAR or where not in ACCURACY_SETS:
        raise ValueError(f"a convention is one of K*: {list(K_STAR)}, set: {list(ACCURACY_SETS)} "
                         f"(got {k_star!r}, {where!r})")
    loss, accuracy = K_STAR[k_star].column, ACCURACY_SETS[where].column
    ok = summary[summary.status == "ok"]
    for name, column in ((k_star, loss), (where, accuracy)):
        if column not in summary or ok[column].isna().any():
            raise ValueError(f"{name}: these runs do not record {column} (runs made before it was recorded)")
    return summary.assign(train_loss=summary[loss], test_accuracy=summary[accuracy])


def final_curves(runs: Iterable[Run]) -> pd.DataFrame:
    """Per K, the mean over the runs given (seeds of one cell) of each recorded curve's final-round value,
    the K of status ok only; a curve no run recorded is NaN."""
    frames = []
    for run in runs:
        rounds = run.rounds_frame()
        frames.append(rounds[(rounds.status == "ok") & (rounds["round"] == rounds.K)])
    if not frames:
        raise ValueError("no runs to read")
    return mean_curves(pd.concat(frames, ignore_index=True))


def mean_curves(rows: pd.DataFrame) -> pd.DataFrame:
    """Per K, the mean of each curve over the rows given (one per run seed and K, status ok)."""
    columns = sorted({c.column for c in (*K_STAR.values(), *ACCURACY_SETS.values())})
    return rows.reindex(columns=["K", *columns]).groupby("K")[columns].mean().sort_index()


def read(curves: pd.DataFrame, k_star: str, read: str, where: str) -> dict[str, float]:
    """K* under ``k_star`` and the accuracy read ``read`` on ``where`` from :func:`final_curves`:
    NaN where the runs did not record the curve (runs made before it was recorded)."""
    if k_star not in K_STAR or read not in ACCURACY_READS or where not in ACCURACY_SETS:
        raise ValueError(f"a convention is one of K*: {list(K_STAR)}, read: {list(ACCURACY_READS)}, "
                         f"set: {list(ACCURACY_SETS)} (got {k_star!r}, {read!r}, {where!r})")
    loss, accuracy = curves[K_STAR[k_star].column], curves[ACCURACY_SETS[where].column]
    k = float(loss.idxmin()) if loss.notna().any() else math.nan
    if read == "max":
        value = float(accuracy.max()) if accuracy.notna().any() else math.nan
    else:
        value = float(accuracy.loc[int(k)]) if not math.isnan(k) else math.nan
    return {"K_star": k, "accuracy": value}


def table(curves: pd.DataFrame) -> pd.DataFrame:
    """Every convention pair's K* and accuracy, the headline first."""
    rows = []
    for k_star in K_STAR:
        for read_name, where in accuracy_conventions():
            got = read(curves, k_star, read_name, where)
            rows.append({"k_star_from": k_star, "accuracy": f"{read_name} {where}",
                         "headline": (k_star, read_name, where) == HEADLINE, "K*": got["K_star"],
                         "accuracy_value": got["accuracy"]})
    out = pd.DataFrame(rows)
    return out.sort_values("headline", ascending=False, kind="stable", ignore_index=True)


def sources() -> Mapping[str, str]:
    """Each convention's name and source, for a page or a help text."""
    return {**{f"K* {c.name}": c.source for c in K_STAR.values()},
            **{f"accuracy {c.name}": c.source for c in ACCURACY_SETS.values()}}


def cell_distances(cell: pd.DataFrame, k_paper: float, acc_paper: float,
                   pairs: Sequence[tuple[str, str, str]] | None = None) -> list[dict]:
    """Per convention pair (``pairs``: (K* curve, accuracy read, accuracy set); all of them where None), one
    cell's K* and accuracy (%) read from its tidy rows' seed-mean curves, their distances to the paper's
    (``k_paper``, ``acc_paper`` in percent) and their spread over the runs (a run seed on its partition
    draw; sd, NaN with one run)."""
    curves = mean_curves(cell)
    runs = ["seed", "partition"] if "partition" in cell else ["seed"]  # a run: its seed on its draw
    per_run = [mean_curves(rows_of_run) for _, rows_of_run in cell.groupby(runs)]
    out = []
    every = [(k, r, w) for k in K_STAR for r, w in accuracy_conventions()]
    for k_star, read_name, where in every if pairs is None else pairs:
        got = read(curves, k_star, read_name, where)
        spread = pd.DataFrame([read(c, k_star, read_name, where) for c in per_run]).std(ddof=1)
        out.append({"k_star_from": k_star, "accuracy": f"{read_name} {where}", "K_star": got["K_star"],
                    "K_star_sd": float(spread.K_star), "paper_K_star": k_paper,
                    "K_star_distance": abs(got["K_star"] - k_paper), "accuracy_pct": 100 * got["accuracy"],
                    "accuracy_sd_pct": 100 * float(spread.accuracy), "paper_accuracy_pct": acc_paper,
                    "accuracy_distance": abs(100 * got["accuracy"] - acc_paper), "runs": len(per_run)})
    return out


def paper_distances(summary: pd.DataFrame, tables: Sequence[Mapping], dataset: str) -> pd.DataFrame:
    """Per row of the paper's Tables II-VII and per convention pair, from the same runs (the tidy run
    table's seed-mean curves of the row's cell): K* and the accuracy in percent, ours and the paper's,
    their distances (NaN where the runs did not record a curve or the paper gives no integer K*), and
    the spread over the runs (a run seed on its partition draw) of each run's own K* and accuracy (sd;
    NaN with one run)."""
    ok = summary[summary.status == "ok"]
    rows = []
    for table in tables:
        part = ok[ok.sweep == table["sweep"]]
        for ref in table["rows"]:
            cell = part[np.isclose(part.value.astype(float), float(ref["value"]))]
            if cell.empty:
                continue
            k_paper = table_row_k_star(table, ref, dataset)
            acc_paper = float(ref.get(f"accuracy_{dataset}", math.nan))
            rows += [{"table": table["table"], "value": float(ref["value"]), **r}
                     for r in cell_distances(cell, k_paper, acc_paper)]
    return pd.DataFrame(rows)


def distance_summary(distances: pd.DataFrame) -> pd.DataFrame:
    """Per paper table and convention pair: the mean distances over the table's rows that have one, how
    many rows that is, and the mean of the rows' spreads over seeds (what one seed's K* or accuracy varies
    by); the headline pair first in each table."""
    if distances.empty:  # no row of the paper's tables in the runs' grid
        return pd.DataFrame(columns=["table", "k_star_from", "accuracy", "K_star_distance", "K_rows", "K_star_sd",
                                     "accuracy_distance", "accuracy_rows", "accuracy_sd_pct", "headline"])
    grouped = distances.groupby(["table", "k_star_from", "accuracy"], sort=False)
    out = grouped.agg(K_star_distance=("K_star_distance", "mean"), K_rows=("K_star_distance", "count"),
                      K_star_sd=("K_star_sd", "mean"), accuracy_distance=("accuracy_distance", "mean"),
                      accuracy_rows=("accuracy_distance", "count"),
                      accuracy_sd_pct=("accuracy_sd_pct", "mean")).reset_index()
    head = (out.k_star_from == HEADLINE[0]) & (out.accuracy == f"{HEADLINE[1]} {HEADLINE[2]}")
    return out.assign(headline=head).sort_values(["table", "headline"], ascending=[True, False], kind="stable",
                                                   ignore_index=True)


def accuracy_name(k_star: str, accuracy: str) -> str:
    """An accuracy convention's name ("max full-test"), with the K* convention it is read at where it is
    read at K* ("at-k-star full-test at test-loss's K*")."""
    return f"{accuracy} at {k_star}'s K*" if accuracy.startswith("at-k-star") else accuracy


def nearest(summary: pd.DataFrame, spreads: Mapping[str, tuple[float, float]] | None = None) -> pd.DataFrame:
    """Per paper table, from a :func:`distance_summary` (a ``role`` column where several readings are
    scored, the ``stated`` one among them): the headline pair's distances (the stated reading's), the
    (reading, K* convention) with the smallest mean K* distance and the (reading, accuracy convention) with
    the smallest mean accuracy distance, each with the mean spread of one run's value there, beside the
    paper's own spread in that table (``spreads``: per table, its K* and accuracy spread at a setting it
    shares with another table; NaN where it shares none). A minimum over many readings is optimistic:
    the run spread beside it says how far noise alone moves one."""
    cols = ["table", "headline_K_star_distance", "headline_accuracy_distance", "K_star_reading", "K_star_from",
            "K_star_distance", "K_star_sd", "accuracy_reading", "accuracy_from", "accuracy_distance",
            "accuracy_sd_pct", "paper_K_star_spread", "paper_accuracy_spread"]
    frame = summary if "role" in summary else summary.assign(role="stated")
    out = []
    for table, part in frame.groupby("table", sort=False):
        head = part[part.headline & (part.role == "stated")]
        k = part.dropna(subset=["K_star_distance"]).sort_values(["K_star_distance", "K_star_sd"], kind="stable")
        a = part.dropna(subset=["accuracy_distance"]).sort_values(["accuracy_distance", "accuracy_sd_pct"],
                                                                   kind="stable")
        paper = (spreads or {}).get(str(table), (math.nan, math.nan))
        out.append({"table": table,
                    "headline_K_star_distance": float(head.K_star_distance.iloc[0]) if len(head) else math.nan,
                    "headline_accuracy_distance": float(head.accuracy_distance.iloc[0]) if len(head) else math.nan,
                    "K_star_reading": k.role.iloc[0] if len(k) else "", "K_star_from": k.k_star_from.iloc[0]
                    if len(k) else "", "K_star_distance": float(k.K_star_distance.iloc[0]) if len(k) else math.nan,
                    "K_star_sd": float(k.K_star_sd.iloc[0]) if len(k) else math.nan,
                    "accuracy_reading": a.role.iloc[0] if len(a) else "",
                    "accuracy_from": accuracy_name(a.k_star_from.iloc[0], a.accuracy.iloc[0]) if len(a) else "",
                    "accuracy_distance": float(a.accuracy_distance.iloc[0]) if len(a) else math.nan,
                    "accuracy_sd_pct": float(a.accuracy_sd_pct.iloc[0]) if len(a) else math.nan,
                    "paper_K_star_spread": float(paper[0]), "paper_accuracy_spread": float(paper[1])})
    return pd.DataFrame(out, columns=cols)
