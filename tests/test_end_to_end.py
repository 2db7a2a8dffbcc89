"""Small end-to-end runs on real data: the CLI engine run, and the workflow's data steps."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from bladefl.cli import main
from conftest import copy_workflow, snakemake

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_cli_run_on_mnist_writes_results_and_a_verifiable_chain(data_root, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["run", "--config", str(REPO / "config/profiles/paper.yaml"), "--out", str(out), "--quiet",
                 "--set", f"data_dir={data_root}", "--set", "partition.N=5", "--set", "partition.n=128",
                 "--set", "model.hidden=32", "--set", "time.K=[5, 9, 10]", "--set", "chain.save_models=true",
                 "--set", "device=cpu"])
    assert code == 0
    rows = pd.read_csv(out / "rounds.csv")
    assert set(rows.columns) >= {"K", "round", "tau", "train_loss", "test_loss", "test_accuracy", "status"}
    assert rows[rows.K == 10].status.tolist() == ["infeasible"]
    ok = rows[rows.status == "ok"]
    assert sorted(ok.groupby("K").size().to_dict().items()) == [(5, 5), (9, 9)]
    assert (ok.tau == ok.K.map({5: 10, 9: 1})).all()
    assert ok.test_accuracy.max() > 0.2  # better than chance on real digits
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provenance"]["data_sha256"]["train-images-idx3-ubyte"].startswith("ba8910")
    assert main(["chain", "verify", str(out / "chains/K5.json"), "--store", str(out / "models")]) == 0
    assert "chain valid" in capsys.readouterr().out


@pytest.mark.slow
def test_workflow_fetches_offline_and_writes_partitions(tmp_path):
    copy_workflow(tmp_path)
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config.update(fetch_sources=["existing", "registry"],
                  partition={"scheme": "classes", "N": 6, "n": 128, "seed": 3, "classes_per_client": 4})
    (tmp_path / "smoke.yaml").write_text(yaml.safe_dump(config))
    proc = snakemake(tmp_path, "--cores", "2", "--configfile", "smoke.yaml")
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name, tv in (("mnist", "MNIST"), ("fashion_mnist", "FashionMNIST")):
        log = (tmp_path / f"logs/fetch/{tv}.log").read_text()
        assert "source registry: installed" in log and "all 4 files verified" in log
        base = tmp_path / f"data/partitions/{name}/classes4_N6_n128_seed3"
        indices = np.load(base.with_suffix(".npy"))
        manifest = json.loads(base.with_suffix(".json").read_text())
        assert indices.shape == (6, 128) and len(np.unique(indices)) == 6 * 128
        hist = np.asarray(manifest["label_histogram"])
        assert (np.sort(hist, axis=1)[:, -4:] == 32).all() and (hist.sum(axis=1) == 128).all()
        assert base.with_suffix(".png").stat().st_size > 1000
    again = snakemake(tmp_path, "--cores", "2", "--configfile", "smoke.yaml", "-n")
    assert "Nothing to be done" in again.stdout + again.stderr
