"""How far a grid's K* and best accuracy are from the paper's Tables II-VII, with the uncertainty of
the estimate: per table row, per table and over every row of a dataset, the mean distance (K* in
rounds, the best accuracy in percentage points) and a percentile bootstrap interval over the grid's
independent units (``scipy.stats.bootstrap``).

The estimator is the comparison table's own (:func:`bladefl.report.paper.paper_comparison`): K* is the
argmin of the mean training-loss curve over the runs, the best accuracy the maximum of the mean
accuracy curve. A resample draws the independent units with replacement (a partition draw with all its
runs where draws hold several seeds, else a run: :func:`bladefl.experiments.tables.tidy.draws_are_units`)
and recomputes every curve, K* and distance from them, so an interval holds everything that varies
between units, the argmin's jumps included. Every resample of every row is one batched computation.
The interval is of the mean absolute distance (a row's: of its absolute distance); a distance is
*within* a target only where the interval's upper end is at or below it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bladefl.core.rng import numpy_rng
from bladefl.experiments.tables.tidy import draws_are_units

RESAMPLES = 2000
LEVEL = 0.95
METHOD = "percentile bootstrap over the independent units"
COLUMNS = ["dataset", "scope", "table", "parameter", "value", "measure", "rows", "units", "paper", "ours",
           "ours_low", "ours_high", "distance", "signed", "low", "high", "target", "within"]
MEASURES = ("K_star", "accuracy")  # rounds; percentage points


@dataclass(frozen=True)
class Curves:
    """The mean curves' ingredients per independent unit: for each compared row r and each K of its
    cell, the sums and counts over the unit's finished runs (``[units, rows, Ks]``), the K values
    (NaN padding past a cell's last K) and the paper's K* and best accuracy per row (NaN: none)."""

    units: list
    loss_sum: np.ndarray
    acc_sum: np.ndarray
    count: np.ndarray
    k_values: np.ndarray
    paper_k: np.ndarray
    paper_acc: np.ndarray
    rows: pd.DataFrame  # table, parameter, value per compared row

    def estimate(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """K* and best accuracy (%) per row for each weighting of the units (``[B, units]``): ``[B, rows]``."""
        flat = self.count.reshape(len(self.units), -1)
        n = weights @ flat
        with np.errstate(invalid="ignore", divide="ignore"):
            loss = (weights @ self.loss_sum.reshape(len(self.units), -1)) / n
            acc = (weights @ self.acc_sum.reshape(len(self.units), -1)) / n
        shape = (weights.shape[0], *self.count.shape[1:])
        loss, acc = loss.reshape(shape), acc.reshape(shape)
        none = np.isnan(loss).all(axis=2)
        at = np.argmin(np.where(np.isnan(loss), np.inf, loss), axis=2)
        k_star = np.where(none, np.nan, np.take_along_axis(
            np.broadcast_to(self.k_values, loss.shape), at[..., None], axis=2)[..., 0])
        best = np.where(np.isnan(acc).all(axis=2), np.nan, np.nanmax(np.where(np.isnan(acc), -np.inf, acc), axis=2))
        return k_star, 100 * np.where(np.isfinite(best), best, np.nan)


def unit_column(summary: pd.DataFrame) -> str:
    """The independent unit of a summary table: ``partition`` (a draw and its seeds) where draws hold
    several seeds each, else ``seed`` (a run)."""
    return "partition" if draws_are_units(summary) else "seed"


def curves(summary: pd.DataFrame, comparison: pd.DataFrame) -> Curves:
    """:class:`Curves` of the comparison table's rows that carry a paper value and ran in ``summary``."""
    has_paper = comparison.paper_K_star.notna() | comparison.paper_max_accuracy.notna()
    wanted = comparison[has_paper].reset_index(drop=True)
    unit = unit_column(summary)
    ok = summary[summary.status == "ok"]
    units = sorted(ok[unit].unique())
    blocks, kept = [], []
    for i, r in wanted.iterrows():
        part = ok[(ok.sweep == r.parameter) & np.isclose(ok.value.astype(float), float(r.value))]
        if part.empty:
            continue
        blocks.append(part)
        kept.append(i)
    wanted = wanted.loc[kept].reset_index(drop=True)
    n_k = max((b.K.nunique() for b in blocks), default=0)
    shape = (len(units), len(blocks), n_k)
    loss, acc, count = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    k_values = np.full((len(blocks), n_k), np.nan)
    index = {u: j for j, u in enumerate(units)}
    for r, block in enumerate(blocks):
        cell_ks = sorted(int(k) for k in block.K.unique())
        k_values[r, : len(cell_ks)] = cell_ks
        at = {k: j for j, k in enumerate(cell_ks)}
        u = block[unit].map(index).to_numpy()
        kk = block.K.astype(int).map(at).to_numpy()
        np.add.at(loss, (u, r, kk), block.train_loss.to_numpy(float))
        np.add.at(acc, (u, r, kk), block.test_accuracy.to_numpy(float))
        np.add.at(count, (u, r, kk), 1.0)
    return Curves(units, loss, acc, count, k_values, wanted.paper_K_star.to_numpy(float),
                  wanted.paper_max_accuracy.to_numpy(float), wanted[["table", "parameter", "value"]])


def _scores(c: Curves, k_star: np.ndarray, best: np.ndarray) -> np.ndarray:
    """Every distance of one or many resamples (``[B, rows]`` estimates) as ``[B, outputs]``: per row the
    absolute K* and accuracy distances and the estimates themselves, per table and over all rows the
    distances' means (rows with a paper value)."""
    dk, da = np.abs(k_star - c.paper_k), np.abs(best - c.paper_acc)
    tables = list(dict.fromkeys(c.rows.table))
    parts = [dk, da, k_star, best]
    for name in [*tables, None]:
        mask = np.ones(len(c.rows), bool) if name is None else (c.rows.table == name).to_numpy()
        for d, paper in ((dk, c.paper_k), (da, c.paper_acc)):
            use = mask & np.isfinite(paper)
            parts.append(np.nanmean(d[:, use], axis=1, keepdims=True) if use.any()
                         else np.full((d.shape[0], 1), np.nan))
    return np.concatenate(parts, axis=1)


def _bootstrap(c: Curves, point: np.ndarray, resamples: int, level: float,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The percentile bootstrap interval (low, high) of every score of :func:`_scores`, resampling the
    units (NaN with fewer than two units)."""
    from scipy import stats

    n_units = len(c.units)
    if n_units < 2:
        return np.full_like(point, np.nan), np.full_like(point, np.nan)

    def statistic(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        idx = np.atleast_2d(np.asarray(idx, dtype=int))
        weights = np.zeros((idx.shape[0], n_units))
        np.add.at(weights, (np.repeat(np.arange(idx.shape[0]), idx.shape[1]), idx.ravel()), 1.0)
        return _scores(c, *c.estimate(weights)).T

    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a row whose every resample agrees is degenerate, not an error
        found = stats.bootstrap((np.arange(n_units),), statistic, vectorized=True, method="percentile",
                                n_resamples=resamples, confidence_level=level, random_state=rng)
    return found.confidence_interval.low, found.confidence_interval.high


def distances(summary: pd.DataFrame, comparison: pd.DataFrame, dataset: str,
              targets: Mapping[str, float] | None = None, resamples: int = RESAMPLES, level: float = LEVEL,
              seed: int = 0) -> pd.DataFrame:
    """The distance table (:data:`COLUMNS`): per row, per table and over the dataset's rows, for K* and the
    best accuracy, the paper's value and ours with its interval (rows), the mean absolute distance, the signed mean, the
    bootstrap interval of the absolute distance, the target (``targets``: K_star rounds, accuracy points;
    none: NaN) and whether the interval's upper end is within it."""
    c = curves(summary, comparison)
    if not len(c.rows):
        return pd.DataFrame(columns=COLUMNS)
    n_units = len(c.units)
    point_k, point_acc = c.estimate(np.ones((1, n_units)))
    point = _scores(c, point_k, point_acc)[0]
    low, high = _bootstrap(c, point, resamples, level, numpy_rng(seed, "paper-distance", dataset))
    targets = targets or {}
    out = []
    n_rows = len(c.rows)
    signed = {"K_star": point_k[0] - c.paper_k, "accuracy": point_acc[0] - c.paper_acc}
    ours = {"K_star": point_k[0], "accuracy": point_acc[0]}
    paper = {"K_star": c.paper_k, "accuracy": c.paper_acc}

    def add(scope: str, table: str, parameter: str, value: float, measure: str, rows: int, paper_v: float,
            ours_v: float, j: int, signed_v: float, estimate: int | None = None) -> None:
        target = float(targets.get(measure, math.nan))
        out.append({"dataset": dataset, "scope": scope, "table": table, "parameter": parameter, "value": value,
                    "measure": measure, "rows": rows, "units": n_units, "paper": paper_v, "ours": ours_v,
                    "ours_low": math.nan if estimate is None else low[estimate],
                    "ours_high": math.nan if estimate is None else high[estimate],
                    "distance": point[j], "signed": signed_v, "low": low[j], "high": high[j], "target": target,
                    "within": bool(math.isfinite(target) and math.isfinite(high[j]) and high[j] <= target)})

    for m, measure in enumerate(MEASURES):
        for r, row in enumerate(c.rows.itertuples()):
            if math.isfinite(paper[measure][r]):
                add("row", row.table, row.parameter, float(row.value), measure, 1, float(paper[measure][r]),
                    float(ours[measure][r]), m * n_rows + r, float(signed[measure][r]), (2 + m) * n_rows + r)
    tables = list(dict.fromkeys(c.rows.table))
    for t, name in enumerate([*tables, None]):
        mask = np.ones(n_rows, bool) if name is None else (c.rows.table == name).to_numpy()
        for m, measure in enumerate(MEASURES):
            use = mask & np.isfinite(paper[measure])
            if not use.any():
                continue
            parameter = "" if name is None else str(c.rows.parameter[mask].iloc[0])
            add("dataset" if name is None else "table", "" if name is None else str(name), parameter, math.nan,
                measure, int(use.sum()), math.nan, math.nan, 4 * n_rows + 2 * t + m,
                float(np.nanmean(signed[measure][use])))
    return pd.DataFrame(out, columns=COLUMNS)


def slope(summary: pd.DataFrame, sweep: str, measure: str = "accuracy", level: float = LEVEL) -> dict:
    """The change of a cell's best accuracy (percentage points; ``measure`` ``K_star``: of its K*) from the
    sweep's first value to its last, per independent unit (each unit's own mean curves), as the mean over
    the units with a t interval (the units paired across the sweep's cells); NaN without two units."""
    from scipy import stats

    part = summary[(summary.sweep == sweep) & (summary.status == "ok")]
    unit = unit_column(summary)
    values = sorted(part.value.astype(float).unique())
    if len(values) < 2:
        return {"sweep": sweep, "measure": measure, "first": math.nan, "last": math.nan, "change": math.nan,
                "low": math.nan, "high": math.nan, "units": 0}

    def per_unit(value: float) -> pd.Series:
        cell = part[np.isclose(part.value.astype(float), value)]
        curves_ = cell.groupby([unit, "K"]).agg(loss=("train_loss", "mean"), acc=("test_accuracy", "mean"))
        if measure == "accuracy":
            return 100 * curves_.acc.groupby(level=0).max()
        return curves_.loss.groupby(level=0).idxmin().map(lambda at: at[1]).astype(float)

    first, last = per_unit(values[0]), per_unit(values[-1])
    change = (last - first).dropna()
    if len(change) < 2:
        lo = hi = math.nan
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # units that all change alike: a zero-width interval
            interval = stats.ttest_1samp(change.to_numpy(), 0.0).confidence_interval(level)
        lo, hi = float(interval.low), float(interval.high)
    return {"sweep": sweep, "measure": measure, "first": values[0], "last": values[-1],
            "change": float(change.mean()) if len(change) else math.nan, "low": lo, "high": hi,
            "units": int(len(change))}


__all__ = ["COLUMNS", "Curves", "LEVEL", "METHOD", "RESAMPLES", "curves", "distances", "slope", "unit_column"]
