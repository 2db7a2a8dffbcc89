"""The curves every measurement convention reads (the authors' client test subsets, the clients' local
training loss), recorded per round by the engine, and K* and accuracy read under each convention."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from bladefl.core.rng import numpy_rng
from bladefl.experiments.runs.device_check import small_config, synthetic_data
from bladefl.experiments.runs.runner import run_cell
from bladefl.experiments.tables import conventions
from bladefl.fl import mlp
from bladefl.fl.client_test import client_test_subsets
from bladefl.fl.engine import run_k
from bladefl.fl.run_config import RunConfigError, from_dict
from bladefl.fl.stacked import initial_model, model_shape


def test_client_test_subsets_cut_the_test_set_the_authors_way():
    y = np.repeat(np.arange(10), 900)
    cut = client_test_subsets(y, 20, 4, 64, np.random.default_rng(3))
    assert cut.shape == (20, 256)
    combos = set()
    for row in cut:
        labels, counts = np.unique(y[row], return_counts=True)
        assert len(labels) == 4 and set(counts) == {64} and len(np.unique(row)) == 256
        combos.add(tuple(labels))
    assert len(combos) == 20  # distinct 4-class combinations, one per client
    assert len(np.unique(cut)) == cut.size  # without replacement across clients while a class lasts
    assert np.array_equal(cut, client_test_subsets(y, 20, 4, 64, np.random.default_rng(3)))
    assert not np.array_equal(cut, client_test_subsets(y, 20, 4, 64, np.random.default_rng(4)))


def test_client_test_subsets_go_on_where_the_authors_sampler_fails():
    y = np.repeat(np.arange(3), 5)  # 3 labels of 5 samples: fewer labels and smaller classes than asked
    cut = client_test_subsets(y, 4, 4, 64, np.random.default_rng(0))  # 4 clients, one combination
    assert cut.shape == (4, 15)
    assert all(len(np.unique(row)) == 15 for row in cut)
    with pytest.raises(ValueError, match="classes >= 1"):
        client_test_subsets(y, 4, 0, 64, np.random.default_rng(0))


def test_the_measure_fields_are_checked_and_left_out_of_a_default_config():
    with pytest.raises(RunConfigError, match="measure.client_test_classes"):
        from_dict({"measure": {"client_test_classes": -1}})
    with pytest.raises(RunConfigError, match="measure.client_test_per_class"):
        from_dict({"measure": {"client_test_per_class": "x"}})
    assert "client_test_classes" not in from_dict({}).to_dict()["measure"]  # a run recorded before trains the same
    assert from_dict({"measure": {"client_test_classes": 0}}).to_dict()["measure"]["client_test_classes"] == 0


def test_a_run_records_the_local_loss_and_the_client_subsets_curves():
    data = synthetic_data(N=4, n=48, d=30, classes=10, T=200, seed=0)
    # one full-batch step per round, K=1: the round's local loss is F(w0), the clients' loss before it
    cfg = small_config("cpu", train={"iteration": "full_batch"}, time={"alpha": 10, "beta": 10, "t_sum": 20,
                                                                     "K": [1]}, measure={"client_test_per_class": 5})
    result = run_k(cfg, data, 1)
    shape = model_shape(cfg, data.x.shape[2])
    w0 = initial_model(cfg, shape)
    v = mlp.views(w0.unsqueeze(0).expand(data.N, -1).contiguous(), shape)
    f_w0 = float(mlp.losses(v, data.x, data.y, shape).mean())
    record = result.rounds[0]
    assert record.tau == 1 and math.isclose(record.local_train_loss, f_w0, rel_tol=1e-5)
    # the client subsets' accuracy and loss are the final model's on the subsets drawn from the partition seed
    cut = client_test_subsets(data.y_test.numpy(), data.N, 4, 5, numpy_rng(cfg.partition.seed, "client-test"))
    x, y = data.x_test[cut.reshape(-1)], data.y_test[cut.reshape(-1)]
    logits = mlp.shared_logits(result.model.unsqueeze(0), x, shape)[0]
    assert math.isclose(record.client_test_accuracy, float((logits.argmax(1) == y).float().mean()), rel_tol=1e-6)
    loss = float(torch.nn.functional.cross_entropy(logits, y))
    assert math.isclose(record.client_test_loss, loss, rel_tol=1e-5)
    off = run_k(small_config("cpu", train={"iteration": "full_batch"}, time=cfg.to_dict()["time"],
                             measure={"client_test_classes": 0}), data, 1)
    assert math.isnan(off.rounds[0].client_test_accuracy)
    assert off.rounds[0].train_loss == record.train_loss  # a measurement: the training is the same


def _curves(**columns):
    return pd.DataFrame({"K": [1, 2, 3], **columns}).set_index("K")


def test_each_convention_reads_its_own_curve_and_nan_where_none_was_recorded():
    nan = math.nan
    curves = _curves(train_loss=[3, 1, 2], test_loss=[1, 2, 3], client_test_loss=[nan] * 3,
                     local_train_loss=[3, 2, 1], test_accuracy=[0.5, 0.9, 0.7],
                     client_test_accuracy=[0.2, 0.3, 0.8])
    assert conventions.read(curves, "objective", "max", "full-test") == {"K_star": 2.0, "accuracy": 0.9}
    assert conventions.read(curves, "test-loss", "at-k-star", "full-test") == {"K_star": 1.0, "accuracy": 0.5}
    assert conventions.read(curves, "authors-local-loss", "at-k-star", "client-test") == {"K_star": 3.0,
                                                                                        "accuracy": 0.8}
    got = conventions.read(curves, "authors-client-test-loss", "at-k-star", "full-test")
    assert math.isnan(got["K_star"]) and math.isnan(got["accuracy"])
    table = conventions.table(curves)
    assert len(table) == len(conventions.K_STAR) * len(conventions.accuracy_conventions())
    assert table.headline.tolist()[0] and table.headline.sum() == 1
    with pytest.raises(ValueError, match="a convention is one of"):
        conventions.read(curves, "loss", "max", "full-test")


def test_the_cli_reads_a_run_folder_under_every_convention(tmp_path):
    data = synthetic_data(N=4, n=48, d=30, classes=10, T=200, seed=0)
    run_cell(small_config("cpu", time={"K": [1, 2, 3]}, measure={"client_test_per_class": 5}), tmp_path / "run",
             data=data, progress=False)
    out = subprocess.run([sys.executable, "-m", "bladefl", "conventions", str(tmp_path / "run"), "--csv",
                          str(tmp_path / "c.csv")], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    table = pd.read_csv(tmp_path / "c.csv")
    assert table.iloc[0].k_star_from == "objective" and table["K*"].between(1, 3).all()
    assert table.accuracy_value.between(0, 1).all() and "authors-local-loss" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "bladefl", "conventions", str(tmp_path)], capture_output=True,
                         text=True, check=False)
    assert bad.returncode != 0 and "not a run folder" in bad.stderr


def test_the_paper_tables_are_read_per_convention_pair_from_the_same_runs():
    rows = []
    for seed in (0, 1):
        for k, (loss, test_loss, acc) in {1: (3.0, 1.0, 0.5), 2: (1.0, 2.0, 0.9), 3: (2.0, 3.0, 0.7)}.items():
            rows.append({"sweep": "beta", "value": 10.0, "K": k, "seed": seed, "status": "ok", "train_loss": loss,
                         "test_loss": test_loss, "test_accuracy": acc})
    summary = pd.DataFrame(rows)
    tables = [{"table": "Table III", "sweep": "beta", "quantity": "mining_time", "t_sum": 100,
               "rows": [{"value": 10, "mnist": 30, "accuracy_mnist": 80.0}, {"value": 12, "mnist": 36}]}]
    d = conventions.paper_distances(summary, tables, "mnist")
    head = d[(d.k_star_from == "objective") & (d.accuracy == "max full-test")].iloc[0]
    assert (head.K_star, head.paper_K_star, head.K_star_distance) == (2.0, 3.0, 1.0)
    assert math.isclose(head.accuracy_distance, 10.0) and head.runs == 2
    test = d[(d.k_star_from == "test-loss") & (d.accuracy == "at-k-star full-test")].iloc[0]
    assert (test.K_star, test.K_star_distance) == (1.0, 2.0) and math.isclose(test.accuracy_distance, 30.0)
    assert d[d.k_star_from == "authors-local-loss"].K_star.isna().all()  # not recorded by these runs
    assert conventions.distance_summary(conventions.paper_distances(summary.assign(sweep="N"), tables, "mnist")).empty
    s = conventions.distance_summary(d)
    assert s.iloc[0].headline and s.iloc[0].K_rows == 1 and len(s) == len(d)  # the row of value 12 is not in the grid



def test_a_kept_bundle_judged_under_a_convention_reads_k_star_and_the_losses_from_its_curve():
    """`judge` under `read_as`: the paper's text's convention gives the bundle's own experiment verdicts
    back; the test loss is another curve (its losses become the table's), and a curve the runs never
    recorded is refused naming it, before any verdict."""
    from pathlib import Path

    from bladefl.experiments.bundles import kept_results
    from bladefl.report.front_page import counted

    repo = Path(__file__).resolve().parents[1]
    bundle = repo / "reference/default-2seeds"
    summary = pd.read_csv(bundle / "results/summary/mnist.csv")
    moved = conventions.read_as(summary, "test-loss")
    assert moved.train_loss.equals(summary.test_loss) and moved.test_accuracy.equals(summary.test_accuracy)
    with pytest.raises(ValueError, match="authors-client-test-loss: these runs do not record client_test_loss"):
        conventions.read_as(summary, "authors-client-test-loss")
    with pytest.raises(ValueError, match="a convention is one of"):
        conventions.read_as(summary, "nope")
    args = (bundle, repo / "config/paper_statements.yaml", repo / "config/paper_values.yaml")
    read = []  # each dataset's table goes through the reading
    same = kept_results.judge(*args, scan_settings=20, log=lambda m: None,
                              reading=lambda t: read.append(len(t)) or conventions.read_as(t, "objective"))
    assert len(read) == len(same) == 2
    for dataset, frame in same.items():
        kept = counted(pd.read_csv(bundle / f"results/verdicts/{dataset}.csv"))
        ours = counted(frame)
        on_runs = kept.basis == "experiment"
        assert ours[ours.basis == "experiment"].verdict.tolist() == kept[on_runs].verdict.tolist(), dataset


def test_the_nearest_convention_per_table_is_the_smallest_distance_beside_the_headline_and_the_papers_spread():
    def row(role, table, k_from, acc, dk, da, sd=0.5):
        return {"role": role, "table": table, "k_star_from": k_from, "accuracy": acc, "K_star_distance": dk,
                "K_rows": 1, "K_star_sd": sd, "accuracy_distance": da, "accuracy_rows": 1, "accuracy_sd_pct": sd,
                "headline": (k_from, acc) == ("objective", "max full-test")}
    summary = pd.DataFrame([
        row("stated", "Table II", "objective", "max full-test", 2.0, 10.0),
        row("stated", "Table II", "test-loss", "at-k-star client-test", 1.0, 4.0),
        row("best1", "Table II", "objective", "max full-test", 1.0, 3.0, sd=0.1),  # ties on K*: the smaller sd
        row("best1", "Table II", "authors-local-loss", "max full-test", math.nan, math.nan),  # not recorded
        row("stated", "Table V", "objective", "max full-test", 0.0, 5.0)])
    near = conventions.nearest(summary, {"Table II": (0.0, 4.58)}).set_index("table")
    two = near.loc["Table II"]
    assert (two.headline_K_star_distance, two.headline_accuracy_distance) == (2.0, 10.0)  # the stated reading's
    assert (two.K_star_reading, two.K_star_from, two.K_star_distance, two.K_star_sd) == ("best1", "objective", 1.0, 0.1)
    assert (two.accuracy_reading, two.accuracy_from, two.accuracy_distance) == ("best1", "max full-test", 3.0)
    assert (two.paper_K_star_spread, two.paper_accuracy_spread) == (0.0, 4.58)
    assert math.isnan(near.loc["Table V"].paper_K_star_spread)  # shares no setting with another table
    at_k = conventions.nearest(summary[summary.role == "stated"]).set_index("table").loc["Table II"]
    assert at_k.accuracy_from == "at-k-star client-test at test-loss's K*"  # read at that curve's K*
