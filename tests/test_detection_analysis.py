"""Detection quality and exclusion over the grid, on synthetic detections and runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bladefl.experiments.plan.grid import Cell, Member
from bladefl.experiments.tables import detection_analysis as da
from bladefl.fl.detection_quality import roc_auc
from conftest import write_run_folder

LAZY = Cell(lazy_ratio=0.25, sigma2=0.01, N=4)
NONE = Cell(N=4)
MEMBERS = [Member("lazy_ratio", "Table VI", "lazy_ratio", 0.0, NONE),
           Member("lazy_ratio", "Table VI", "lazy_ratio", 0.25, LAZY),
           Member("sigma2", "Table VII", "sigma2", 0.01, LAZY)]


def detections(seed: int, catch: bool) -> pd.DataFrame:
    """Two rounds of 4 clients, client 3 lazy; the detector catches it or flags client 0 instead."""
    rows = []
    for rnd in (1, 2):
        for client in range(4):
            lazy = client == 3
            flag = lazy if catch else client == 0
            rows.append({"K": 2, "round": rnd, "client": client, "lazy": lazy, "detector": "d",
                         "score": float(flag) + 0.1 * client, "flag": flag, "excluded": False})
    return pd.DataFrame(rows).assign(cell=LAZY.key, seed=seed)


def test_quality_pools_a_seed_and_averages_over_seeds():
    frame = pd.concat([detections(0, True), detections(1, False)], ignore_index=True)
    q = da.quality(frame, MEMBERS)
    assert len(q) == 2 and set(q.sweep) == {"lazy_ratio", "sigma2"}  # the shared cell, once per sweep point
    row = q.iloc[0]
    assert row.seeds == 2
    assert row.recall == pytest.approx(0.5) and row.recall_std == pytest.approx(0.5)  # 1 and 0
    assert row.fpr == pytest.approx(1 / 6)  # 0 and 1/3
    rounds = da.per_round(frame)
    assert len(rounds) == 4 and set(rounds.recall) == {0.0, 1.0}


def test_roc_curve_runs_from_0_to_1_and_its_area_is_the_auc():
    rng = np.random.default_rng(0)
    truth = rng.random(300) < 0.3
    scores = np.round(rng.normal(size=300) + truth, 1)  # ties included
    fpr, tpr = da.roc_curve(scores, truth, max_points=10_000)
    assert (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0, 0, 1, 1)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    assert np.trapezoid(tpr, fpr) == pytest.approx(roc_auc(scores, truth), abs=1e-12)
    thin_f, _ = da.roc_curve(scores, truth, max_points=20)
    assert len(thin_f) <= 21


def _run(root, cell: Cell, seed: int, accuracy: list[float]):
    finals = [{"train_loss": 1 - a, "test_loss": 1 - a, "test_accuracy": a, "training_time": 10.0 * k,
               "mining_time": 5.0 * k} for k, a in enumerate(accuracy, start=1)]
    return write_run_folder(root / cell.key / f"seed~{seed}", seed, finals)


def test_exclusion_compares_the_optimum_with_and_without_exclusion_and_without_lazy(tmp_path):
    cut = Cell(lazy_ratio=0.25, sigma2=0.01, N=4, exclude=True)
    paths = [_run(tmp_path, NONE, s, [0.5, 0.8, 0.7]) for s in (0, 1)]
    paths += [_run(tmp_path, LAZY, s, [0.6, 0.5, 0.4]) for s in (0, 1)]
    paths += [_run(tmp_path, cut, s, [0.5, 0.7 + 0.02 * s, 0.6]) for s in (0, 1)]
    table = da.exclusion(paths, MEMBERS, ["lazy_ratio"])
    got = table.set_index("condition")
    assert list(table.condition) == ["no lazy clients", "lazy clients", "lazy, flagged excluded"]
    assert got.loc["no lazy clients", "K_star_accuracy"] == 2
    assert got.loc["lazy clients", "K_star_accuracy"] == 1
    assert got.loc["lazy, flagged excluded", "max_accuracy"] == pytest.approx(0.71)
    assert got.loc["lazy, flagged excluded", "max_accuracy_std"] == pytest.approx(0.01)
    curves = da.exclusion_curves(paths, MEMBERS, ["lazy_ratio"])
    assert set(curves.condition) == {"no lazy clients", "lazy clients", "lazy, flagged excluded"}
    assert set(curves.sweep) == {"lazy_ratio"} and (curves.seeds == 2).all()
    assert Cell.from_key(cut.key) == cut and cut.key.endswith("_exclude~1")


def test_a_run_whose_detectors_ran_without_its_detections_file_is_an_error_not_a_smaller_table(tmp_path):
    """A lazy run whose validators ran detectors wrote detections.csv; with the file gone (a run folder
    copied without it) the detection tables would shrink without a word: they refuse, naming it."""
    import json

    path = _run(tmp_path, LAZY, 0, [0.5, 0.6])
    summary = json.loads(path.read_text())
    summary["config"].update(lazy={"ratio": 0.25, "detectors": ["near_duplicate"]}, partition={"N": 4})
    path.write_text(json.dumps(summary))
    with pytest.raises(ValueError, match="detections.csv: missing, though the run's validators ran detectors"):
        da.read_detections([path])
    row = "1,0,0,True,near_duplicate,0.5,1,0"
    (path.parent / "detections.csv").write_text(",".join(da.DETECTION_COLUMNS) + f"\n{row}\n")
    assert len(da.read_detections([path])) == 1
    summary["config"]["lazy"]["detectors"] = []  # no detectors: no file expected
    path.write_text(json.dumps(summary))
    (path.parent / "detections.csv").unlink()
    assert da.read_detections([path]).empty
