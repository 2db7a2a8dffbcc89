"""What the pages show, computed from the tidy tables: curves per sweep, the privacy table, the
runs' provenance."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from bladefl.report.inputs import ReportInputError, read_json


def sweep_curves(summary: pd.DataFrame, sweep: str) -> pd.DataFrame:
    """Per (value, K): mean and std over seeds of the training loss and test accuracy."""
    part = summary[(summary.sweep == sweep) & (summary.status == "ok")]
    if part.empty:
        raise ReportInputError(f"sweep {sweep!r} has no rows in the summary table")
    return (part.groupby(["value", "cell", "K"], as_index=False)
            .agg(loss=("train_loss", "mean"), loss_std=("train_loss", "std"), accuracy=("test_accuracy", "mean"),
                 accuracy_std=("test_accuracy", "std"), test_loss=("test_loss", "mean"), seeds=("seed", "nunique"))
            .fillna({"loss_std": 0.0, "accuracy_std": 0.0}))


def privacy_table(optimum: pd.DataFrame) -> pd.DataFrame:
    part = optimum[optimum.sweep == "epsilon"].sort_values("value")
    if part.empty:
        raise ReportInputError("no 'epsilon' sweep in the optimum table")
    return part[["value", "K_star_loss", "K_star_accuracy", "min_train_loss", "max_accuracy"]].rename(
        columns={"value": "epsilon"}).reset_index(drop=True)


def provenance(summary_paths: Sequence[str | Path]) -> pd.DataFrame:
    rows = []
    for p in summary_paths:
        s = read_json(p)
        prov = s.get("provenance", {})
        rows.append({"run": f"{Path(p).parent.parent.name}/{Path(p).parent.name}", "seed": s["config"]["seed"],
                     "code_version": prov.get("code_version"),
                     "torch": prov.get("torch"), "host": prov.get("host"), "seconds": s.get("seconds", {}).get("total"),
                     "train_images_sha256": prov.get("data_sha256", {}).get("train-images-idx3-ubyte")})
    return pd.DataFrame(rows)


__all__ = ["sweep_curves", "privacy_table", "provenance"]
