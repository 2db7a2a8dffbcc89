"""Lazy-client detection over the grid (issue "Catch the lazy clients"): how well each detector
finds the lazy clients, per round and overall, and what excluding the flagged uploads recovers.

Inputs are the runs' ``detections.csv`` (one row per K, round, client and detector: score, flag,
true role, excluded) and ``summary.json`` files. Outputs, per dataset:

- ``quality.csv``: per sweep point and detector, precision, recall, false-positive rate and ROC
  AUC, each pooled over every K and round of a seed, then mean and standard deviation over seeds;
- ``per_round.csv``: the same per seed, K and round;
- ``roc.csv``: the ROC curve of each sweep point and detector, pooled over seeds, K and rounds;
- ``exclusion.csv``: per lazy ratio of the exclusion sweeps, K* (by loss and by accuracy) and the
  maximal accuracy without lazy clients, with lazy clients, and with their flagged uploads
  excluded from the block, each with its spread over seeds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bladefl.core.run_files import DETECTION_COLUMNS, expects_detections, read_summary
from bladefl.experiments.plan import run_id
from bladefl.experiments.plan.grid import Member
from bladefl.experiments.tables.tidy import collect, optimum
from bladefl.fl.detection_quality import precision_recall, roc_auc

METRICS = ["precision", "recall", "fpr", "auc"]


def read_detections(summary_paths: Sequence[str | Path]) -> pd.DataFrame:
    """Every run's detections with its cell and seed (runs without detectors add nothing); a run
    whose detectors ran but whose ``detections.csv`` is missing is an error, not a smaller table."""
    frames = []
    for path in map(Path, summary_paths):
        file = path.parent / "detections.csv"
        if not file.is_file() and expects_detections(read_summary(path)):
            raise ValueError(f"{file}: missing, though the run's validators ran detectors on its lazy clients "
                             f"(a run folder copied without it? the detection tables would lose this run)")
        if file.is_file():
            frame = pd.read_csv(file)
            missing = sorted(set(DETECTION_COLUMNS) - set(frame.columns))
            if missing:
                raise ValueError(f"{file}: missing columns {missing}")
            run = run_id.from_path(path)
            frames.append(frame.assign(cell=run.cell, seed=run.seed))
    if not frames:
        return pd.DataFrame(columns=[*DETECTION_COLUMNS, "cell", "seed"])
    return pd.concat(frames, ignore_index=True)


def _metrics(group: pd.DataFrame) -> pd.Series:
    truth, flags = group.lazy.to_numpy(bool), group.flag.to_numpy(bool)
    precision, recall, fpr = precision_recall(flags, truth)
    return pd.Series({"precision": precision, "recall": recall, "fpr": fpr,
                      "auc": roc_auc(group.score.to_numpy(float), truth), "samples": len(group)})


def per_round(detections: pd.DataFrame) -> pd.DataFrame:
    """Precision, recall, false-positive rate and AUC per cell, detector, seed, K and round."""
    keys = ["cell", "detector", "seed", "K", "round"]
    if detections.empty:
        return pd.DataFrame(columns=[*keys, *METRICS, "samples"])
    return detections.groupby(keys).apply(_metrics, include_groups=False).reset_index()


def _points(members: Sequence[Member]) -> pd.DataFrame:
    return pd.DataFrame([{"sweep": m.sweep, "vary": m.vary or "", "value": m.value, "cell": m.cell.key,
                          "lazy_ratio": m.cell.lazy_ratio, "sigma2": m.cell.sigma2} for m in members
                         if m.cell.lazy_ratio > 0])


def quality(detections: pd.DataFrame, members: Sequence[Member]) -> pd.DataFrame:
    """Per sweep point (with lazy clients) and detector: each metric pooled over a seed's K and
    rounds, then mean and standard deviation over seeds."""
    points = _points(members)
    if detections.empty or points.empty:
        return pd.DataFrame(columns=["sweep", "value", "cell", "detector", "seeds",
                                     *[f"{m}{s}" for m in METRICS for s in ("", "_std")]])
    per_seed = detections.groupby(["cell", "detector", "seed"]).apply(_metrics, include_groups=False).reset_index()
    agg = per_seed.groupby(["cell", "detector"]).agg(
        seeds=("seed", "nunique"), **{m: (m, "mean") for m in METRICS},
        **{f"{m}_std": (m, lambda v: float(np.std(v))) for m in METRICS}).reset_index()
    out = points.merge(agg, on="cell", how="inner")
    return out.sort_values(["sweep", "value", "detector"], kind="stable", ignore_index=True)


def roc_curve(scores: np.ndarray, truth: np.ndarray, max_points: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """(false-positive rate, true-positive rate) at every threshold, from (0, 0) to (1, 1);
    thinned to at most ``max_points`` points. Ties move both rates at once."""
    order = np.argsort(-scores, kind="stable")
    s, t = scores[order], truth[order].astype(bool)
    last = np.r_[np.flatnonzero(np.diff(s) != 0), len(s) - 1]  # the end of each run of equal scores
    tp, fp = np.cumsum(t)[last], np.cumsum(~t)[last]
    fpr = np.r_[0.0, fp / max(1, (~t).sum())]
    tpr = np.r_[0.0, tp / max(1, t.sum())]
    if len(fpr) > max_points:
        keep = np.unique(np.r_[np.linspace(0, len(fpr) - 1, max_points).round().astype(int), len(fpr) - 1])
        fpr, tpr = fpr[keep], tpr[keep]
    return fpr, tpr


def roc_table(detections: pd.DataFrame, members: Sequence[Member]) -> pd.DataFrame:
    """The ROC curve of every cell with lazy clients (once, whatever sweeps share it) and every
    detector, pooled over seeds, K and rounds."""
    rows: list[dict[str, Any]] = []
    points = _points(members)
    for point in points.drop_duplicates("cell").itertuples() if len(points) else []:
        part = detections[detections.cell == point.cell]
        for detector, group in part.groupby("detector"):
            fpr, tpr = roc_curve(group.score.to_numpy(float), group.lazy.to_numpy(bool))
            rows.extend({"cell": point.cell, "lazy_ratio": point.lazy_ratio, "sigma2": point.sigma2,
                         "detector": detector, "fpr": f, "tpr": t} for f, t in zip(fpr, tpr, strict=True))
    return pd.DataFrame(rows, columns=["cell", "lazy_ratio", "sigma2", "detector", "fpr", "tpr"])


def _with_exclusion(summary_paths: Sequence[str | Path], members: Sequence[Member],
                    exclude_sweeps: Sequence[str]) -> pd.DataFrame:
    """The tidy table of the exclusion sweeps' points and of their exclusion runs (as the sweep
    ``<sweep>+exclusion``)."""
    chosen = [m for m in members if m.sweep in exclude_sweeps]
    excluded = [dataclasses.replace(m, sweep=f"{m.sweep}+exclusion", cell=dataclasses.replace(m.cell, exclude=True))
                for m in chosen if m.cell.lazy_ratio > 0]
    return collect(summary_paths, [*chosen, *excluded]) if chosen else pd.DataFrame()


def _condition(sweep: str, value: float) -> str:
    if sweep.endswith("+exclusion"):
        return "lazy, flagged excluded"
    return "no lazy clients" if value == 0 else "lazy clients"


def exclusion(summary_paths: Sequence[str | Path], members: Sequence[Member],
              exclude_sweeps: Sequence[str]) -> pd.DataFrame:
    """Per lazy ratio of each exclusion sweep: the optimum (K* by loss and by accuracy, maximal
    accuracy, with their spread over seeds) without lazy clients (the sweep's point at 0), with
    lazy clients, and with the flagged uploads excluded."""
    table = _with_exclusion(summary_paths, members, exclude_sweeps)
    if table.empty:
        return pd.DataFrame()
    best = optimum(table)
    rows = []
    for sweep in exclude_sweeps:
        base = best[best.sweep == sweep]
        for lazy in base[base.value > 0].value:
            for _, r in best[best.sweep.isin([sweep, f"{sweep}+exclusion"])].iterrows():
                if r.value == lazy or (r.value == 0 and r.sweep == sweep):
                    rows.append({"sweep": sweep, "lazy_ratio": lazy, "condition": _condition(r.sweep, r.value),
                                 "cell": r.cell, "seeds": int(r.seeds), "K_star_loss": int(r.K_star_loss),
                                 "K_star_loss_std": float(r.K_star_loss_std),
                                 "K_star_accuracy": int(r.K_star_accuracy),
                                 "K_star_accuracy_std": float(r.K_star_accuracy_std),
                                 "max_accuracy": float(r.max_accuracy), "max_accuracy_std": float(r.max_accuracy_std)})
    return pd.DataFrame(rows)


def exclusion_curves(summary_paths: Sequence[str | Path], members: Sequence[Member],
                     exclude_sweeps: Sequence[str]) -> pd.DataFrame:
    """Test accuracy and training loss versus K (mean and standard deviation over seeds) for every
    point of the exclusion sweeps, with and without exclusion."""
    table = _with_exclusion(summary_paths, members, exclude_sweeps)
    if table.empty:
        return pd.DataFrame()
    ok = table[table.status == "ok"]
    ok = ok.assign(condition=[_condition(s, v) for s, v in zip(ok.sweep, ok.value, strict=True)])
    return (ok.groupby(["sweep", "value", "condition", "K"], as_index=False)
            .agg(test_accuracy=("test_accuracy", "mean"), test_accuracy_std=("test_accuracy", "std"),
                 train_loss=("train_loss", "mean"), train_loss_std=("train_loss", "std"), seeds=("seed", "nunique"))
            .assign(sweep=lambda f: f.sweep.str.removesuffix("+exclusion")))
