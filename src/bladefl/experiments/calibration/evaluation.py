"""One reading evaluated against the paper: the table rows a study compares, the runs that give a
reading's K* and maximal accuracy on them, and its two distances to the paper.

A **row** is a row of the paper's Tables II-VII for one dataset: a grid cell (the sweep's cell at
the row's value), the paper's K* behind it (its table's formula; NaN where the table's value gives
no integer K*) and the paper's maximal accuracy. A reading's runs train each row's cell on the
study's draws (run seed i on partition draw i, or on draw 0 under ``replicates: seeds``) for every
feasible K (no window: a K* is never held inside a range that hides where the curve's minimum lies).
Its **distances** are the mean over rows of |K* - K*_paper| (rounds; rows with a paper K*) and of
|max accuracy - paper's| (points), K* and the maximal accuracy read as the grid reads them
(:func:`bladefl.experiments.tables.tidy.optimum`: the draw-mean loss curve's argmin, the draw-mean
accuracy's maximum).

The **screen** is the fewest cells that hold a row of every table (:func:`screen_rows`): the
successive-halving stage every trial runs before the best go on to every row. Where the paper gives
one cell two or more values (a cell repeated across tables), no reading can match them all: its
**floor** (:func:`paper_floor`) is the smallest mean distance any reading can reach.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bladefl.experiments.calibration.space import Point
from bladefl.experiments.plan import run_id
from bladefl.experiments.plan.grid import Cell, Member, expand
from bladefl.experiments.tables.paper_tables import table_row_k_star
from bladefl.fl.timemodel import max_feasible_K


@dataclass(frozen=True)
class Row:
    table: str
    sweep: str
    value: float
    cell: Cell
    paper_K_star: float  # NaN: the table's value gives no integer K*
    paper_accuracy: float  # percent; NaN where the paper gives none

    def k_values(self, t_sum: float) -> list[int]:
        """The K values a run of this row's cell trains: every feasible K (tau >= 1)."""
        return list(range(1, max_feasible_K(self.cell.alpha, self.cell.beta, t_sum) + 1))


def rows(config: Mapping[str, Any], tables: Sequence[Mapping[str, Any]], names: Sequence[str], dataset: str
         ) -> list[Row]:
    """The rows of the paper's tables ``names`` (all with an empty list) for ``dataset``, each with
    its cell in the workflow config's grid (a row whose value the grid does not sweep is left out)."""
    members = expand(config)
    out = []
    for table in tables:
        if names and table["table"] not in names:
            continue
        for r in table["rows"]:
            value = float(r["value"])
            member = next((m for m in members if m.sweep == table["sweep"] and m.value == value), None)
            if member is None:
                continue
            out.append(Row(table["table"], table["sweep"], value, member.cell, table_row_k_star(table, r, dataset),
                           float(r.get(f"accuracy_{dataset}", math.nan))))
    return out


def row_members(study_rows: Sequence[Row]) -> list[Member]:
    """The rows as sweep members (for the grid's tidy tables)."""
    return [Member(r.sweep, r.table, r.sweep, r.value, r.cell) for r in study_rows]


def screen_rows(study_rows: Sequence[Row]) -> list[Row]:
    """The screen: the fewest cells that hold a row of every table among ``study_rows`` (greedy set
    cover: the cell with rows in most tables not yet held first; a tie goes to the cell with fewer
    K values to run, then to the first in the rows' order), and every row at those cells."""
    tables_of: dict[str, set[str]] = {}
    order: dict[str, int] = {}
    cost: dict[str, float] = {}
    for i, r in enumerate(study_rows):
        tables_of.setdefault(r.cell.key, set()).add(r.table)
        order.setdefault(r.cell.key, i)
        cost[r.cell.key] = r.cell.N / max(r.cell.alpha + r.cell.beta, 1e-9)
    left = {r.table for r in study_rows}
    chosen: list[str] = []
    while left:
        key = min(tables_of, key=lambda k: (-len(tables_of[k] & left), cost[k], order[k]))
        chosen.append(key)
        left -= tables_of[key]
    return [r for r in study_rows if r.cell.key in chosen]


def paper_floor(study_rows: Sequence[Row]) -> tuple[float, float]:
    """The smallest mean |K* - K*paper| and |accuracy - paper's| per row that any reading can reach:
    where the paper gives one cell several values (the same setting in two or more tables), one
    reading's value there is at least the sum of their deviations from their median away from them
    (0 where the paper never repeats a cell)."""
    def floor(values: dict[str, list[float]], count: int) -> float:
        total = sum(float(np.abs(np.asarray(v) - np.median(v)).sum()) for v in values.values() if len(v) > 1)
        return total / count if count else math.nan

    ks: dict[str, list[float]] = {}
    accs: dict[str, list[float]] = {}
    for r in study_rows:
        if math.isfinite(r.paper_K_star):
            ks.setdefault(r.cell.key, []).append(r.paper_K_star)
        if math.isfinite(r.paper_accuracy):
            accs.setdefault(r.cell.key, []).append(r.paper_accuracy)
    return floor(ks, sum(map(len, ks.values()))), floor(accs, sum(map(len, accs.values())))


def repeated_cells(study_rows: Sequence[Row]) -> pd.DataFrame:
    """Each cell the paper reports in more than one table row: the rows, the paper's K* and accuracy in
    each, and their spread (max - min): the paper's own disagreement with itself at one setting."""
    out = []
    by_cell: dict[str, list[Row]] = {}
    for r in study_rows:
        by_cell.setdefault(r.cell.key, []).append(r)
    for key, group in by_cell.items():
        if len(group) < 2:
            continue
        ks = [r.paper_K_star for r in group if math.isfinite(r.paper_K_star)]
        accs = [r.paper_accuracy for r in group if math.isfinite(r.paper_accuracy)]
        out.append({"cell": key, "rows": "; ".join(f"{r.table} {r.sweep} = {r.value:g}" for r in group),
                    "paper_K_star": ", ".join(f"{k:g}" for k in ks) or "none",
                    "paper_max_accuracy": ", ".join(f"{a:.2f}" for a in accs) or "none",
                    "K_star_spread": (max(ks) - min(ks)) if ks else math.nan,
                    "accuracy_spread": (max(accs) - min(accs)) if accs else math.nan})
    return pd.DataFrame(out, columns=["cell", "rows", "paper_K_star", "paper_max_accuracy", "K_star_spread",
                                      "accuracy_spread"])


def table_spreads(study_rows: Sequence[Row]) -> dict[str, tuple[float, float]]:
    """Per table, the paper's own spread: the largest K* and accuracy spread over the settings its rows
    share with another table's (:func:`repeated_cells`); tables that share none are absent."""
    by_cell: dict[str, list[Row]] = {}
    for r in study_rows:
        by_cell.setdefault(r.cell.key, []).append(r)
    out: dict[str, tuple[float, float]] = {}
    for group in (g for g in by_cell.values() if len(g) > 1):
        ks = [r.paper_K_star for r in group if math.isfinite(r.paper_K_star)]
        accs = [r.paper_accuracy for r in group if math.isfinite(r.paper_accuracy)]
        spread = (max(ks) - min(ks) if ks else math.nan, max(accs) - min(accs) if accs else math.nan)
        for table in {r.table for r in group}:
            old = out.get(table, (math.nan, math.nan))
            out[table] = (float(np.fmax(old[0], spread[0])), float(np.fmax(old[1], spread[1])))
    return out


def cell_ks(study_rows: Sequence[Row], t_sum: float) -> dict[str, list[int]]:
    """Per cell (key), the K values its runs train (every feasible K, ascending)."""
    return {r.cell.key: r.k_values(t_sum) for r in study_rows}


@dataclass(frozen=True)
class Plan:
    """What evaluating one reading runs: the engine, the rows (every feasible K of each), the draws."""

    dataset: str
    engine: str  # the engine's config file
    t_sum: float
    rows: tuple[Row, ...]
    draws: tuple[int, ...]
    data_dir: str  # the raw data's root
    base_sets: tuple[str, ...] = ()  # the workflow config's own overrides of the engine (its partition's n)

    def run_sets(self, point: Point, cell: Cell, draw: int) -> list[str]:
        """The ``--set`` overrides of one run: the cell, its K values, the reading, the run seed ``draw``
        and the partition draw it trains on (:meth:`Point.partition_seed`)."""
        ks = cell_ks([r for r in self.rows if r.cell.key == cell.key], self.t_sum)[cell.key]
        sets = [s for s in cell.overrides(self.t_sum) if not s.startswith("time.K=")]
        return [*sets, f"time.K=[{','.join(map(str, ks))}]", *self.base_sets, *point.sets(), f"dataset={self.dataset}",
                f"seed={draw}", f"partition.seed={point.partition_seed(draw)}", f"data_dir={self.data_dir}"]

    def with_rows(self, rows: Sequence[Row]) -> Plan:
        return replace(self, rows=tuple(rows))

    def with_draws(self, count: int) -> Plan:
        """The plan on draws 0..count-1 (the first draws kept: their runs are found, not run again)."""
        return replace(self, draws=tuple(range(count)))

    def cells(self) -> list[Cell]:
        return list({r.cell.key: r.cell for r in self.rows}.values())


def summaries(root: str | Path, plan: Plan) -> list[str]:
    """The summary.json of every run of ``plan`` under a runs ``root``."""
    return [run_id.file(root, plan.dataset, c.key, d, "summary.json") for c in plan.cells() for d in plan.draws]


def run(plan: Plan, point: Point, root: str | Path, *, threads: int = 0, progress: bool = False) -> float:
    """Compute (or find finished) every run of ``point`` under ``root``: the cells of each N as one
    stacked computation over the draws (:func:`bladefl.experiments.runs.runner.run_cells`); returns
    the seconds it took."""
    from bladefl.experiments.runs.runner import CellJob, run_cells
    from bladefl.fl.client_data import load_draws
    from bladefl.fl.execution import resolve
    from bladefl.fl.run_config import load_config

    start = time.perf_counter()
    jobs = [CellJob(load_config(plan.engine, plan.run_sets(point, cell, d)), Path(run_id.folder(root, plan.dataset,
                                                                                                  cell.key, d)),
                    draw=i)
            for cell in plan.cells() for i, d in enumerate(plan.draws)]
    by_n: dict[int, list[CellJob]] = {}
    for job in jobs:
        by_n.setdefault(job.cfg.partition.N, []).append(job)
    for group in by_n.values():
        cfg = group[0].cfg
        execution = resolve(cfg.device, threads=threads)
        execution.apply()
        specs = [replace(cfg.partition, seed=point.partition_seed(d)) for d in plan.draws]
        data = load_draws(cfg, specs)
        run_cells(group, data, execution, progress=progress, resume=True)
    return time.perf_counter() - start


def run_enough(plan: Plan, point: Point, root: str | Path, targets: tuple[float, float], max_draws: int, *,
               threads: int = 0) -> tuple[Plan, float, pd.DataFrame]:
    """:func:`run`, then ``len(plan.draws)`` more draws at a time, up to ``max_draws``, while two draws of a
    row differ by more than ``targets`` (K* rounds, accuracy points; :func:`draws_disagree`): a point
    whose draws disagree is scored on more of them, not fewer. Returns the plan run, its seconds and its
    :func:`row_results`."""
    seconds = run(plan, point, root, threads=threads)
    results = row_results(plan, root)
    step = len(plan.draws)
    while len(plan.draws) < max_draws and draws_disagree(results, *targets):
        plan = plan.with_draws(min(max_draws, len(plan.draws) + step))
        seconds += run(plan, point, root, threads=threads)
        results = row_results(plan, root)
    return plan, seconds, results


def row_results(plan: Plan, root: str | Path) -> pd.DataFrame:
    """Per row, ours beside the paper's: the runs and the partition draws they trained on, K* (run-mean
    curve) and its sd over the runs, the maximal accuracy (%) and its sd, each row's |difference|; from
    the runs under ``root``."""
    from bladefl.experiments.tables.tidy import collect, optimum

    table = collect(summaries(root, plan), row_members(plan.rows))
    trained = table[table.status == "ok"]  # a cell whose every run diverged has no optimum: its row is NaN
    best = optimum(trained).set_index(["sweep", "cell"]) if len(trained) else None
    ranges = draw_ranges(trained)
    # the partition draws each cell's runs trained on (a point that replicates seeds runs them on one draw)
    draws = trained.groupby(["sweep", "cell"]).partition.nunique().to_dict() if len(trained) else {}
    out = []
    for r in plan.rows:
        o = best.loc[(r.sweep, r.cell.key)] if best is not None and (r.sweep, r.cell.key) in best.index else None
        k, acc = (float(o.K_star_loss), 100 * float(o.max_accuracy)) if o is not None else (math.nan, math.nan)
        out.append({"table": r.table, "sweep": r.sweep, "value": r.value, "cell": r.cell.key,
                    "runs": int(o.seeds) if o is not None else 0,
                    "draws": int(draws.get((r.sweep, r.cell.key), 0)),
                    "K_values": f"1-{max(r.k_values(plan.t_sum))}",
                    "K_star": k, "K_star_sd": float(o.K_star_loss_std) if o is not None else math.nan,
                    "paper_K_star": r.paper_K_star, "max_accuracy": acc,
                    "max_accuracy_sd": 100 * float(o.max_accuracy_std) if o is not None else math.nan,
                    "paper_max_accuracy": r.paper_accuracy,
                    "K_star_distance": abs(k - r.paper_K_star), "accuracy_distance": abs(acc - r.paper_accuracy),
                    "K_star_range": ranges.get((r.sweep, r.cell.key), (math.nan, math.nan))[0],
                    "max_accuracy_range": ranges.get((r.sweep, r.cell.key), (math.nan, math.nan))[1]})
    return pd.DataFrame(out)


def draw_ranges(trained: pd.DataFrame) -> dict[tuple[str, str], tuple[float, float]]:
    """Per (sweep, cell) of a tidy table's trained runs: how far its draws disagree, the range (max - min)
    over run seeds of each one's K* (its loss curve's argmin) and of its maximal accuracy (points)."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for (sweep, cell), group in trained.groupby(["sweep", "cell"], sort=False):
        ks = group.loc[group.groupby("seed").train_loss.idxmin(), "K"]
        accuracies = group.groupby("seed").test_accuracy.max()
        out[(str(sweep), str(cell))] = (float(ks.max() - ks.min()), 100 * float(accuracies.max() - accuracies.min()))
    return out


def draws_disagree(results: pd.DataFrame, k_target: float, accuracy_target: float) -> bool:
    """Whether two draws of some row differ by more than the targets (K* by more than ``k_target`` rounds
    or the maximal accuracy by more than ``accuracy_target`` points): the point needs more draws."""
    return bool((results.K_star_range > k_target).any() or (results.max_accuracy_range > accuracy_target).any())


def distances(results: pd.DataFrame) -> tuple[float, float]:
    """The two objectives: mean |K* - K*_paper| over rows with a paper K*, mean |accuracy -
    paper's| (points) over rows with a paper accuracy (NaN when no row has one, or when a row's runs
    all diverged: a reading that cannot train a row is no reading of the paper)."""
    if results.K_star.isna().any():
        return math.nan, math.nan
    k = results.K_star_distance.dropna()
    acc = results.accuracy_distance.dropna()
    return (float(k.mean()) if len(k) else math.nan, float(acc.mean()) if len(acc) else math.nan)


def run_seconds(plan: Plan, root: str | Path) -> float:
    """What computing a reading's runs cost: the seconds its run folders under ``root`` record (each
    run's own total, however long ago it was computed); NaN where a run is missing."""
    from bladefl.core.run_files import read_summary

    total = 0.0
    for path in summaries(root, plan):
        try:
            total += float(read_summary(path)["seconds"]["total"])
        except (OSError, ValueError, KeyError, TypeError):
            return math.nan
    return total


def closeness(k_distance: float, accuracy_distance: float, k_target: float, accuracy_target: float) -> float:
    """How far a reading is from the study's targets (``k_target`` rounds and ``accuracy_target``
    points per row), the larger of the two ratios: at most 1 where both are met. Chooses among the
    Pareto front's points (which to run again, which is the calibrated one); the search keeps the
    two objectives apart."""
    return float(np.nanmax([k_distance / k_target, accuracy_distance / accuracy_target]))
