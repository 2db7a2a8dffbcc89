"""Cifar-10 through the dataset registry (Fig. 11's other half): its python batches read as data only,
held to their shape and pins, its images flattened into the model's 3,072 inputs, a run trained on files
in Cifar-10's own format (made here), and its statement judged only on Cifar-10 runs."""

from __future__ import annotations

import json
import math
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from bladefl.data import cifar, datasets
from conftest import HANG_S

SPEC = datasets.get_spec("cifar10")


def write_batches(root: Path, per_batch: int = 10) -> Path:
    """Six batches in Cifar-10's own format under ``root``'s torchvision folder: image i of a batch has
    every red value i, green 100 + i, blue 200 - i; labels cycle through the 10 classes."""
    raw = SPEC.raw_dir(root)
    raw.mkdir(parents=True)
    i = np.arange(per_batch, dtype=np.uint8)[:, None]
    planes = np.hstack([np.repeat(i, 1024, 1), np.repeat(100 + i, 1024, 1), np.repeat(200 - i, 1024, 1)])
    for f in SPEC.files:
        (raw / f).write_bytes(cifar.encode(planes, np.arange(per_batch) % 10))
    return raw


@pytest.fixture
def unpinned(monkeypatch):
    monkeypatch.setenv(datasets.ALLOW_UNPINNED, "1")


def test_the_batches_load_flattened_plane_by_plane_with_their_labels(tmp_path, unpinned):
    write_batches(tmp_path)
    train, test = (datasets.load("cifar10", tmp_path, train=t) for t in (True, False))
    assert train.x.shape == (50, 3072) == (5 * len(test.x), SPEC.pixels) and train.x.dtype == np.float32
    assert np.allclose(train.x[3, :1024], 3 / 255) and np.allclose(train.x[3, 1024:2048], 103 / 255)
    assert np.allclose(train.x[3, 2048:], 197 / 255)
    assert train.y.tolist() == list(range(10)) * 5 and test.y.tolist() == list(range(10))
    standard = datasets.load("cifar10", tmp_path, train=False, normalize=True)
    assert np.allclose(standard.x, (test.x - SPEC.mean) / SPEC.std, atol=1e-6)


def test_a_batch_off_its_pin_is_refused_with_the_md5_named(tmp_path):
    write_batches(tmp_path)
    with pytest.raises(ValueError, match="data_batch_1 has MD5 .* the pinned value is c99cafc15224"):
        datasets.load("cifar10", tmp_path, train=True)
    assert datasets.checksums("cifar10")["test_batch"] == "md5:40351d587109b95175f43aff81a1287e"


class Evil:
    def __reduce__(self):
        return (os.system, (f"touch {Path.cwd() / 'PWNED'}",))


@pytest.mark.parametrize("payload, said", [
    (pickle.dumps({"data": Evil(), "labels": [0]}), "refusing to unpickle"),
    (pickle.dumps([1, 2]), "a pickled list, not a dict"),
    (pickle.dumps({"labels": [0]}), "lacks ['data']"),
    (pickle.dumps({"data": np.zeros((2, 3072), np.float32), "labels": [0, 1]}), "'data' must be uint8"),
    (pickle.dumps({"data": np.zeros((2, 784), np.uint8), "labels": [0, 1]}), "3072 values each"),
    (pickle.dumps({"data": np.zeros((2, 3072), np.uint8), "labels": [0]}), "2 images and 1 labels"),
    (pickle.dumps({"data": np.zeros((1, 3072), np.uint8), "labels": [10]}), "label 10 is outside 0..9"),
    (pickle.dumps({"data": np.zeros((1, 3072), np.uint8), "labels": ["0"]}), "a list of integers"),
    (b"\x80\x02garbage", "not a Cifar-10 python batch"),
])
def test_a_batch_that_is_not_one_is_refused_naming_its_file_and_nothing_runs(tmp_path, unpinned, monkeypatch,
                                                                             payload, said):
    monkeypatch.chdir(tmp_path)
    raw = write_batches(tmp_path)
    (raw / "test_batch").write_bytes(payload)
    with pytest.raises(ValueError, match="test_batch: .*" + said.replace("[", r"\[").replace("(", r"\(")):
        datasets.load("cifar10", tmp_path, train=False)
    assert not (tmp_path / "PWNED").exists()


def test_a_run_trains_the_mlp_on_the_3072_flattened_values(tmp_path, unpinned):
    from bladefl.cli import main

    write_batches(tmp_path / "raw")
    repo = Path(__file__).resolve().parents[1]
    engine = tmp_path / "engine.yaml"
    engine.write_text((repo / "config/engines/authors-code.yaml").read_text().replace(
        "N: 20, n: 512", "N: 2, n: 8").replace("K: [1, 2, 3, 4, 5, 6, 7, 8, 9]", "K: [1, 2]"))
    assert main(["run", "--config", str(engine), "--out", str(tmp_path / "run"), "--quiet", "--set",
                 f"data_dir={tmp_path / 'raw'}", "--set", "dataset=cifar10"]) == 0
    summary = json.loads((tmp_path / "run/summary.json").read_text())
    assert summary["config"]["dataset"] == "cifar10"
    assert set(summary["provenance"]["data_sha256"]) == set(SPEC.files)
    assert [r["status"] for r in summary["per_K"]] == ["ok", "ok"]  # a 784-input model could not take these
    from bladefl.fl.run_config import from_dict

    hidden = summary["config"]["model"]["hidden"]
    assert from_dict(summary["config"]).parameters == 3072 * hidden + hidden + hidden * 10 + 10


def test_the_cifar_statement_is_judged_on_cifar_runs_only():
    from bladefl.experiments.plan.grid import expand
    from bladefl.experiments.verdicts.statements import read_inventory
    from bladefl.experiments.verdicts.table import all_verdicts
    from bladefl.report.front_page import unjudged_section

    repo = Path(__file__).resolve().parents[1]
    inventory = read_inventory(repo / "config/paper_statements.yaml")
    grid = {"base": {"alpha": 1, "beta": 10, "N": 20, "eta": 0.01, "lazy_ratio": 0.0, "sigma2": 0.0},
            "sweeps": [{"name": "epsilon", "vary": "epsilon", "values": [10, 100, math.inf]}]}
    members = expand(grid)
    rows = [{"sweep": m.sweep, "vary": m.vary, "value": m.value, "cell": m.cell.key, "K": k, "seed": s,
             "partition": s, "beta": m.cell.beta, "train_loss": 5 + (k - 4) ** 2, "status": "ok",
             "test_accuracy": 0.2 + 0.1 * i + 0.01 * s - 0.01 * abs(k - 4)}
            for i, m in enumerate(members) for s in range(6) for k in range(1, 9)]
    import pandas as pd

    def judged(dataset: str) -> pd.DataFrame:
        return all_verdicts(pd.DataFrame(rows), members, 100.0, [], None, None, dataset=dataset, inventory=inventory)

    on_cifar, on_mnist = judged("cifar10"), judged("mnist")
    cifar_rows = on_cifar[on_cifar.statement == "fig11-cifar"]
    assert list(cifar_rows.claim) == ["Cifar-10's accuracy rises with epsilon"]
    assert cifar_rows.verdict.iloc[0] == "reproduced"
    assert set(on_cifar.statement) == {"fig11-cifar"}  # no statement of the paper's other datasets
    assert "fig11-cifar" not in set(on_mnist.statement)
    assert "needs runs on Cifar-10" in unjudged_section(inventory.statements, ["mnist", "fashion_mnist"])
    assert "needs runs on Cifar-10" not in unjudged_section(inventory.statements, ["mnist", "cifar10"])


def test_the_cifar_config_plans_fig_11s_epsilon_runs(tmp_path):
    """`snakemake -n --configfile config/cifar10.yaml` plans the Cifar-10 fetch, its partitions and the
    epsilon sweep's runs: every value of the sweep, every seed, nothing of the other datasets."""
    import re

    import yaml

    from conftest import copy_workflow, snakemake

    work = copy_workflow(tmp_path)
    proc = snakemake(work, "-n", "--cores", "1", "--configfile", "config/cifar10.yaml", timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    config = yaml.safe_load((work / "config/cifar10.yaml").read_text())
    seeds = yaml.safe_load((work / "config/config.yaml").read_text())["seeds"]
    runs = set(re.findall(r"output: results/cifar10/runs/paper/cifar10/([^/]+)/seed~(\d+)/rounds.csv", out))
    epsilons = sorted(re.search(r"eps~([^_/]+)$", cell).group(1) for cell, _ in runs)
    assert len(runs) == len(config["sweeps"][0]["values"]) * len(seeds)
    assert sorted(set(epsilons)) == sorted(str(v) if v != math.inf else "inf" for v in config["sweeps"][0]["values"])
    assert "rule fetch_data_cifar10:" in out and "mnist" not in out.replace("cifar10", "")
