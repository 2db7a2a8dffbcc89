"""Tidy tables over the grid's runs: one row per (sweep, cell, K, seed), and per cell the
experimental optimum (K* by loss and by accuracy, tau*alpha*K*, beta*K*, maximal accuracy)
with its spread over seeds."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bladefl.core.run_files import CURVES
from bladefl.experiments.plan import run_id
from bladefl.experiments.plan.grid import Member
from bladefl.experiments.runs.run_checks import read_checked_run

COLUMNS = ["sweep", "feeds", "vary", "value", "cell", "alpha", "beta", "N", "eta", "lazy_ratio", "sigma2",
           "epsilon", "K", "tau", "seed", "partition", "train_loss", "test_loss", "test_accuracy", "training_time",
           "mining_time", "status"]
OPTIONAL = list(CURVES)  # the curves the measurement conventions read, NaN for runs made before them


def read_run(summary_path: str | Path) -> pd.DataFrame:
    """Per-K final values of one run (cell key from its folder, :mod:`run_id`; partition = the
    seed of the partition draw it trained on)."""
    path = Path(summary_path)
    data = read_checked_run(path).summary  # strict, and held to its rounds.csv and time model
    frame = pd.DataFrame(data["per_K"])
    frame["seed"] = data["config"]["seed"]
    frame["partition"] = data["config"].get("partition", {}).get("seed", 0)
    frame["cell"] = run_id.from_path(path).cell
    for col in ("train_loss", "test_loss", "test_accuracy", *OPTIONAL):
        if col not in frame:
            frame[col] = np.nan
    return frame


def collect(summary_paths: Sequence[str | Path], members: Sequence[Member]) -> pd.DataFrame:
    runs = pd.concat([read_run(p) for p in summary_paths], ignore_index=True)
    rows = []
    for m in members:
        part = runs[runs.cell == m.cell.key]
        if part.empty:
            raise ValueError(f"no run found for cell {m.cell.key} of sweep {m.sweep}")
        part = part.assign(sweep=m.sweep, feeds=m.feeds, vary=m.vary or "", value=m.value,
                           **{k: getattr(m.cell, k) for k in ("alpha", "beta", "N", "eta", "lazy_ratio", "sigma2",
                                                              "epsilon")})
        rows.append(part)
    return pd.concat(rows, ignore_index=True)[COLUMNS + OPTIONAL].sort_values(["sweep", "value", "cell", "seed", "K"],
                                                                    kind="stable", ignore_index=True)


def seeds_per_draw(table: pd.DataFrame) -> pd.Series:
    """Per partition draw, the run seeds that trained on it (rows with status ok); empty without a
    ``partition`` column."""
    ok = table[table.status == "ok"]
    return ok.groupby("partition").seed.nunique() if "partition" in ok else pd.Series(dtype=int)


def draws_are_units(table: pd.DataFrame) -> bool:
    """The independent unit of the verdicts (and of the figures that show their units): a partition
    draw, its seeds' mean, where two or more draws each hold at least two run seeds; else a run
    (with one draw, its runs: the authors' design, speaking for that one partition)."""
    per = seeds_per_draw(table)
    return len(per) >= 2 and int(per.min()) >= 2


def _argbest(group: pd.DataFrame, column: str, maximize: bool) -> pd.Series:
    ok = group[group.status == "ok"]
    row = ok.loc[ok[column].idxmax() if maximize else ok[column].idxmin()]
    return row


def _seed_mean_k_star(ok: pd.DataFrame) -> float:
    """K* (by loss) of the seed-mean curve of some runs of one cell."""
    curve = ok.groupby("K").train_loss.mean()
    return float(curve.idxmin())


def k_star_spread(ok: pd.DataFrame) -> dict[str, float]:
    """Where K*'s spread comes from, for the runs of one cell (status ok): over run seeds on the same
    partition draw (the within-draw standard deviation of the per-seed K*, pooled over draws; nan
    when no draw has two seeds) and over partition draws (the standard deviation of each draw's
    seed-mean K*; nan with one draw)."""
    parts = ok["partition"] if "partition" in ok else pd.Series(0, index=ok.index)
    per_draw = {d: g for d, g in ok.groupby(parts)}
    within = [np.var([_seed_mean_k_star(r) for _, r in g.groupby("seed")], ddof=1)
              for g in per_draw.values() if g.seed.nunique() > 1]
    draws = [_seed_mean_k_star(g) for g in per_draw.values()]
    return {"partitions": len(per_draw),
            "K_star_loss_std_seeds": float(np.sqrt(np.mean(within))) if within else float("nan"),
            "K_star_loss_std_partitions": float(np.std(draws, ddof=1)) if len(draws) > 1 else float("nan")}


def optimum(table: pd.DataFrame) -> pd.DataFrame:
    """Per (sweep, cell): K* by loss and by accuracy on the seed-mean curves, the optimal
    training time tau*alpha*K* and mining time beta*K* (at K* by loss), the maximal accuracy,
    and the standard deviation over seeds of each (per-seed optima); K*'s spread over run seeds on
    one partition draw and over partition draws (:func:`k_star_spread`)."""
    out = []
    for (sweep, cell), group in table.groupby(["sweep", "cell"], sort=False):
        ok = group[group.status == "ok"]
        mean = ok.groupby("K", as_index=False).agg(
            tau=("tau", "first"), train_loss=("train_loss", "mean"), test_accuracy=("test_accuracy", "mean"),
            training_time=("training_time", "first"), mining_time=("mining_time", "first"))
        mean["status"] = "ok"
        by_loss, by_acc = _argbest(mean, "train_loss", False), _argbest(mean, "test_accuracy", True)
        per_seed = [(_argbest(g, "train_loss", False), _argbest(g, "test_accuracy", True))
                    for _, g in ok.groupby("seed")]
        first = group.iloc[0]
        out.append({
            "sweep": sweep, "feeds": first.feeds, "vary": first.vary, "value": first.value, "cell": cell,
            "seeds": len(per_seed),
            "K_star_loss": int(by_loss.K), "K_star_accuracy": int(by_acc.K),
            "training_time": float(by_loss.training_time), "mining_time": float(by_loss.mining_time),
            "min_train_loss": float(by_loss.train_loss), "max_accuracy": float(by_acc.test_accuracy),
            "K_star_loss_std": float(np.std([a.K for a, _ in per_seed])),
            "K_star_accuracy_std": float(np.std([b.K for _, b in per_seed])),
            "training_time_std": float(np.std([a.training_time for a, _ in per_seed])),
            "mining_time_std": float(np.std([a.mining_time for a, _ in per_seed])),
            "max_accuracy_std": float(np.std([b.test_accuracy for _, b in per_seed])),
            **k_star_spread(ok),
        })
    return pd.DataFrame(out)
