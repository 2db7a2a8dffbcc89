"""Does a device give the CPU's results? Two checks, both printed as a table of differences.

1. :func:`mixed_group_check`: the multi-run equivalence tests' mixed group (several K, seeds and
   eta; lazy clients with and without the counterfactual; local DP; detection with exclusion;
   another time model; an infeasible K) on synthetic data, run as one stacked group on the CPU
   and on the device, in ``epoch`` and ``full_batch`` modes. Per run: the status, the final
   model's largest absolute difference, each round's accuracy and loss, theta, the miner, the
   votes and the block's members, the detectors' flags and the block hashes (equal only where
   the models are bitwise equal: a block commits its model's digest).
2. :func:`summary_check`: two tidy run tables (``bladefl summarize``'s, one row per sweep, cell,
   seed and K) of the same grid computed on two devices: per run (cell and seed) K* by loss and
   by accuracy, and the largest accuracy and loss differences over its K.

A device's float arithmetic is not the CPU's (other kernels, other summation orders), so models
agree within a tolerance that grows with the number of SGD steps; what must be identical is
everything drawn from the run's random streams (miners, votes, lazy victims, orders) and, where
the differences are below a curve's gaps, K*.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch

from bladefl.core.bounded_read import read_regular
from bladefl.fl.client_data import ClientData
from bladefl.fl.engine import run_group
from bladefl.fl.execution import resolve
from bladefl.fl.records import KResult, RunSpec
from bladefl.fl.run_config import RunConfig, from_dict

# What "within tolerance" means for the mixed group (a few hundred SGD steps of a tiny model).
MODEL_TOL = 1e-3
ACCURACY_TOL = 1e-2
LOSS_TOL = 1e-3


def synthetic_data(N: int = 4, n: int = 48, d: int = 30, classes: int = 10, T: int = 64, seed: int = 0
                   ) -> ClientData:
    """Gaussian clusters, one per class: N clients of n samples, a test set of T (on the CPU)."""
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, d, generator=g) * 2
    y = torch.randint(0, classes, (N, n), generator=g)
    x = centers[y] + torch.randn(N, n, d, generator=g)
    yt = torch.randint(0, classes, (T,), generator=g)
    return ClientData(x=x, y=y, x_test=centers[yt] + torch.randn(T, d, generator=g), y_test=yt)


def small_config(device: str, **over: object) -> RunConfig:
    """A small run config (N=4, n=48, hidden 16, difficulty 8 bits) with ``over`` merged in."""
    base: dict = {"partition": {"N": 4, "n": 48}, "model": {"hidden": 16}, "train": {"eta": 0.05, "batch_size": 16},
                  "time": {"alpha": 1, "beta": 10, "t_sum": 100, "K": [3]}, "chain": {"difficulty_bits": 8},
                  "device": device}
    for key, value in over.items():
        base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    return from_dict(base)


# (overrides, K): every kind of run a round end treats differently, ending rounds together.
MIXED: tuple[tuple[dict, int], ...] = (
    ({}, 3),
    ({"seed": 1}, 2),
    ({"train": {"eta": 0.1}}, 1),
    ({"seed": 2, "lazy": {"ratio": 0.5, "sigma2": 0.01}}, 3),
    ({"seed": 3, "lazy": {"ratio": 0.25, "sigma2": 1e-4, "counterfactual": True}}, 2),
    ({"privacy": {"epsilon": 50.0, "clip": 5.0}}, 3),
    ({"lazy": {"ratio": 0.25, "sigma2": 0.01, "detectors": ["gaussian_difference"], "exclude": True}}, 4),
    ({"time": {"alpha": 2, "beta": 5}}, 9),
    ({"seed": 4, "lazy": {"ratio": 0.5, "sigma2": 0.01, "noise": "authors"}}, 3),  # copies of copies
    ({}, 10),  # infeasible (tau 0): reported, not run
)


def mixed_specs(device: str, iteration: str) -> list[RunSpec]:
    """The mixed group's runs on ``device`` in ``iteration`` mode."""
    specs = []
    for over, K in MIXED:
        train = {**dict(over.get("train", {})), "iteration": iteration}
        specs.append(RunSpec(small_config(device, **{**over, "train": train}), K))
    return specs


def _label(spec: RunSpec) -> str:
    cfg = spec.cfg
    parts = [f"K={spec.K}", f"seed {cfg.seed}", f"eta {cfg.train.eta:g}"]
    if cfg.lazy.ratio:
        parts.append(f"lazy {cfg.lazy.ratio:g} sigma2 {cfg.lazy.sigma2:g}"
                     + (" counterfactual" if cfg.lazy.counterfactual else "")
                     + (" detect+exclude" if cfg.lazy.exclude else ""))
    if math.isfinite(cfg.privacy.epsilon):
        parts.append(f"DP eps {cfg.privacy.epsilon:g}")
    if cfg.time.alpha != 1:
        parts.append(f"alpha {cfg.time.alpha:g} beta {cfg.time.beta:g}")
    return ", ".join(parts)


def _max_abs(a: list[float], b: list[float]) -> float:
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if not (math.isnan(x) and math.isnan(y))]
    return max((abs(x - y) for x, y in pairs), default=0.0)


def compare_results(label: str, cpu: KResult, dev: KResult) -> dict:
    """One run's differences between its CPU and device results (see the module's docstring)."""
    row: dict = {"run": label, "status": cpu.status, "same_status": cpu.status == dev.status}
    if cpu.status != "ok" or dev.status != "ok":
        return row
    assert cpu.model is not None and dev.model is not None
    a, b = cpu.rounds, dev.rounds
    row.update(
        model_max_abs=float((cpu.model - dev.model.cpu()).abs().max()),
        accuracy_max_abs=_max_abs([r.test_accuracy for r in a], [r.test_accuracy for r in b]),
        loss_max_abs=_max_abs([r.train_loss for r in a], [r.train_loss for r in b]),
        theta_max_abs=_max_abs([r.theta for r in a], [r.theta for r in b]),
        same_draws=[(r.tau, r.miner, r.votes, r.n_in_block, r.n_excluded) for r in a]
        == [(r.tau, r.miner, r.votes, r.n_in_block, r.n_excluded) for r in b],
        same_flags=[d["flag"] for d in cpu.detections] == [d["flag"] for d in dev.detections],
        same_hashes=sum(x.block_hash == y.block_hash for x, y in zip(a, b, strict=True)),
        rounds=len(a))
    return row


def within(row: dict) -> bool:
    """Whether a mixed-group row is within the tolerances (and everything drawn is identical)."""
    if not row["same_status"]:
        return False
    if row["status"] != "ok":
        return True
    return (row["model_max_abs"] <= MODEL_TOL and row["accuracy_max_abs"] <= ACCURACY_TOL
            and row["loss_max_abs"] <= LOSS_TOL and row["same_draws"] and row["same_flags"])


def mixed_group_check(device: str, iterations: tuple[str, ...] = ("epoch", "full_batch")) -> pd.DataFrame:
    """The mixed group on the CPU and on ``device``, one row per run and iteration mode."""
    rows = []
    cpu_data = synthetic_data()
    dev_data = ClientData(cpu_data.x.to(device), cpu_data.y.to(device), cpu_data.x_test.to(device),
                          cpu_data.y_test.to(device), cpu_data.partition_sha256)
    for iteration in iterations:
        cpu_specs, dev_specs = mixed_specs("cpu", iteration), mixed_specs(device, iteration)
        cpu = run_group(cpu_specs, cpu_data, resolve("cpu", chain_processes=0)).results
        dev = run_group(dev_specs, dev_data, resolve(device, chain_processes=0)).results
        for spec, a, b in zip(cpu_specs, cpu, dev, strict=True):
            rows.append({"iteration": iteration, **compare_results(_label(spec), a, b)})
    out = pd.DataFrame(rows)
    out["within"] = [within(r) for r in rows]
    return out


KEY = ["sweep", "cell", "seed"]
COMPARED = [*KEY, "K", "status", "test_accuracy", "train_loss"]  # what a tidy run table holds that is compared
MAX_TABLE_BYTES = 256 << 20  # the 20-draw grid's tidy table is a few MB


def read_table(path: str | Path) -> pd.DataFrame:
    """A tidy run table (``bladefl summarize``'s) read as hostile: a regular file of bounded size, a CSV with
    the compared columns, numbers where numbers are compared (ValueError naming the file and the column)."""
    data = read_regular(path, MAX_TABLE_BYTES, "tidy run table")
    try:
        frame = pd.read_csv(io.BytesIO(data))
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' parser and empty-data errors are ValueErrors
        raise ValueError(f"{path}: not a CSV table ({exc.__class__.__name__})") from None
    missing = [c for c in COMPARED if c not in frame]
    if missing:
        raise ValueError(f"{path}: columns {missing} missing (not the tidy run table `bladefl summarize` writes)")
    for column in ("seed", "K", "test_accuracy", "train_loss"):
        if not pd.api.types.is_numeric_dtype(frame[column]):
            raise ValueError(f"{path}: {column} must be numbers")
    return frame


def _k_star(runs: pd.DataFrame, column: str, maximize: bool) -> pd.Series:
    ok = runs[runs.status == "ok"]
    best = ok.groupby(KEY)[column].transform("max" if maximize else "min")
    return ok[ok[column] == best].groupby(KEY).K.min()


@dataclass(frozen=True)
class SummaryCheck:
    """Per run (sweep, cell, seed) on both devices, and the totals."""

    runs: pd.DataFrame
    compared: int
    k_star_loss_same: int
    k_star_accuracy_same: int
    accuracy_max_abs: float
    loss_max_abs: float


def summary_check(reference: pd.DataFrame, other: pd.DataFrame) -> SummaryCheck:
    """Two tidy run tables of the same grid (e.g. CPU and GPU), on the runs both hold."""
    cols = [*KEY, "K"]
    merged = reference.merge(other, on=cols, suffixes=("_ref", "_dev"))
    merged = merged[(merged.status_ref == "ok") & (merged.status_dev == "ok")]
    if merged.empty:
        raise ValueError("the two tables hold no run in common (sweep, cell, seed, K)")
    diff = merged.assign(acc=(merged.test_accuracy_ref - merged.test_accuracy_dev).abs(),
                         loss=(merged.train_loss_ref - merged.train_loss_dev).abs())
    per_run = diff.groupby(KEY).agg(accuracy_max_abs=("acc", "max"), loss_max_abs=("loss", "max"),
                                    K_values=("K", "count"))
    ref = merged.rename(columns={"test_accuracy_ref": "test_accuracy", "train_loss_ref": "train_loss",
                                 "status_ref": "status"})
    dev = merged.rename(columns={"test_accuracy_dev": "test_accuracy", "train_loss_dev": "train_loss",
                                 "status_dev": "status"})
    per_run["K_star_loss_ref"] = _k_star(ref, "train_loss", False)
    per_run["K_star_loss_dev"] = _k_star(dev, "train_loss", False)
    per_run["K_star_accuracy_ref"] = _k_star(ref, "test_accuracy", True)
    per_run["K_star_accuracy_dev"] = _k_star(dev, "test_accuracy", True)
    per_run = per_run.reset_index()
    return SummaryCheck(
        runs=per_run, compared=len(per_run),
        k_star_loss_same=int((per_run.K_star_loss_ref == per_run.K_star_loss_dev).sum()),
        k_star_accuracy_same=int((per_run.K_star_accuracy_ref == per_run.K_star_accuracy_dev).sum()),
        accuracy_max_abs=float(per_run.accuracy_max_abs.max()), loss_max_abs=float(per_run.loss_max_abs.max()))
