"""A small end-to-end engine run on real data through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bladefl.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_cli_run_on_mnist_writes_results_and_a_verifiable_chain(data_root, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["run", "--config", str(REPO / "config/engines/paper.yaml"), "--out", str(out), "--quiet",
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
    assert main(["chain", "verify", str(out / "chains/K5.json"), "--store", str(out / "models")]) == 3
    assert "consistent, but unanchored" in capsys.readouterr().out  # nothing outside the run folder agrees
    anchor = tmp_path / "anchors.json"
    assert main(["chain", "anchor", "--summary", str(out / "summary.json"), "--out", str(anchor)]) == 0
    assert main(["chain", "verify", str(out / "chains/K5.json"), "--summary", str(out / "summary.json"),
                 "--anchor", str(anchor)]) == 0
    assert f"chain valid, its tip is the run's ({out / 'summary.json'}), anchored by the anchor {anchor}" in \
        capsys.readouterr().out
