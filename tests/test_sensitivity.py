"""The sensitivity study: readings as configuration, distance to the paper, verdicts that depend on
the reading (synthetic tables), and the smoke study end to end (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from bladefl.experiments.plan import config_checks
from bladefl.experiments.plan import readings as rd
from bladefl.experiments.plan import workflow_config as wc
from bladefl.report import sensitivity as sens
from conftest import copy_workflow, snakemake

REPO = Path(__file__).resolve().parents[1]
SMOKE = {**yaml.safe_load((REPO / "config/config.yaml").read_text()),
         **yaml.safe_load((REPO / "config/sensitivity_smoke.yaml").read_text())}
TABLES = [{"table": "Table III", "sweep": "beta", "quantity": "mining_time", "beta_source": "varied",
           "rows": [{"value": 6, "mnist": 30, "accuracy_mnist": 80.0}, {"value": 8, "mnist": 16,
                                                                          "accuracy_mnist": 70.0}]}]


def test_readings_change_the_partition_file_and_the_runs_settings():
    readings = {r.name: r for r in rd.readings(SMOKE)}
    assert list(readings) == ["paper", "partition-iid", "iteration-fullbatch", "authors-code"]
    keys = {n: wc.partition_spec(rd.reading_config(SMOKE, r), 4).key for n, r in readings.items()}
    assert keys == {"paper": "shards2_N4_n128_seed0", "partition-iid": "iid_N4_n128_seed0",
                    "iteration-fullbatch": "shards2_N4_n128_seed0", "authors-code": "classes4_N4_n128_seed0"}
    plan = json.loads(wc.reading_plan(SMOKE, readings["iteration-fullbatch"], "mnist", 1, "runs"))
    assert len(plan) == 2 and all(p["out"].startswith("runs/iteration-fullbatch/mnist/") for p in plan)
    assert all("train.iteration=full_batch" in p["set"] and "seed=1" in p["set"] for p in plan)
    scaled = rd.Reading("x", "iteration", sets={}, eta_scale=8)
    plan = json.loads(wc.reading_plan(SMOKE, scaled, "mnist", 0, "runs"))
    assert all(p["set"][-1] == "train.eta=0.4" for p in plan)  # the cell's 0.05 x 8, after the cell's own eta
    iid = json.loads(wc.reading_plan(SMOKE, readings["partition-iid"], "mnist", 0, "runs"))
    assert "partition.scheme=iid" in iid[0]["set"]


@pytest.mark.parametrize("change, message", [
    ({"bad name": {"axis": "model"}}, "a name must be lower-case"),
    ({"x": {"axis": "colour"}}, "readings.x.axis must be one of"),
    ({"x": {"axis": "model", "engine": "fast"}}, "readings.x.engine must be one of"),
    ({"x": {"axis": "partition", "set": {"partition.scheme": "random"}}}, "readings.x"),
])
def test_bad_readings_are_refused_naming_the_field(change, message):
    config = {**SMOKE, "readings": {**SMOKE["readings"], **change}}
    with pytest.raises(wc.ConfigError, match=message):
        config_checks.check(config)
    with pytest.raises(wc.ConfigError, match="one reading must have axis 'baseline'"):
        config_checks.check({**SMOKE, "readings": {"x": {"axis": "model"}}})


def _summary(k_star: dict[float, int], accuracy: float, seeds=(0, 1)) -> pd.DataFrame:
    rows = []
    for seed in seeds:
        for value, best in k_star.items():
            for K in (1, 2, 3, 4):
                rows.append({"sweep": "beta", "feeds": "Table III", "vary": "beta", "value": value,
                             "cell": f"beta~{value:g}", "K": K, "tau": 1, "seed": seed,
                             "train_loss": abs(K - best) + 0.1 * seed, "test_loss": 1.0,
                             "test_accuracy": accuracy - 0.01 * abs(K - best), "training_time": 1.0,
                             "mining_time": K * value, "status": "ok", "beta": value})
    return pd.DataFrame(rows)


def _optimum(summary: pd.DataFrame) -> pd.DataFrame:
    from bladefl.experiments.tables.tidy import optimum

    return optimum(summary)


def test_the_reading_that_matches_the_paper_ranks_first():
    # the paper's Table III row beta=6 -> K* = 5 (30/6), beta=8 -> K* = 2 (16/8); accuracy 80 and 70
    near, far = _summary({6: 4, 8: 2}, 0.78), _summary({6: 1, 8: 4}, 0.50)
    summaries = {"far": far, "near": near}
    ranked = sens.ranking(summaries, TABLES, "mnist", 100, {k: _optimum(v) for k, v in summaries.items()},
                          {"far": "model", "near": "baseline"})
    assert list(ranked.reading) == ["near", "far"] and list(ranked["rank"]) == [1, 2]
    near_row = ranked.iloc[0]
    assert near_row.K_star_distance == 1  # |4 - 5| + |2 - 2|
    assert near_row.accuracy_distance == pytest.approx(abs(78 - 80) + abs(78 - 70))
    assert near_row.seeds == 2 and near_row.K_star_distance_sd == 0


def test_paper_points_give_the_tables_k_star_and_accuracy_per_swept_value():
    points = sens.paper_points(TABLES, "mnist", ["beta"])
    # Table III gives beta * K*: 30 at beta 6 -> K* 5, 16 at beta 8 -> K* 2
    assert points[["value", "paper_K_star", "paper_max_accuracy"]].values.tolist() == [[6, 5, 80], [8, 2, 70]]
    odd = [{**TABLES[0], "rows": [{"value": 6, "mnist": 31, "accuracy_mnist": 80.0}]}]  # 31/6: no integer K*
    assert sens.paper_points(odd, "mnist", ["beta"]).paper_K_star.isna().all()
    assert sens.paper_points(TABLES, "mnist", ["alpha"]).empty


def test_a_claim_reproduced_under_one_reading_and_refuted_under_another_depends_on_it():
    def verdicts(*v):
        return pd.DataFrame({"claim": ["a", "b", "c"], "source": "Table III", "verdict": list(v)})

    changes = sens.verdict_changes({"r1": verdicts("reproduced", "refuted", "inconclusive"),
                                    "r2": verdicts("refuted", "refuted", "reproduced")})
    assert dict(zip(changes.claim, changes.depends_on_reading, strict=True)) == {"a": True, "b": False, "c": False}


@pytest.mark.slow
def test_the_smoke_sensitivity_study_renders_its_page(tmp_path, data_root):
    work = copy_workflow(tmp_path)
    (work / "data").mkdir()
    (work / "data" / "raw").symlink_to(data_root.resolve(), target_is_directory=True)
    proc = snakemake(work, "--cores", "2", "--configfile", "config/sensitivity_smoke.yaml")
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranking = pd.read_csv(work / "results/sensitivity/mnist/ranking.csv")
    assert set(ranking.reading) == {"paper", "partition-iid", "iteration-fullbatch", "authors-code"}
    assert (ranking.K_star_rows > 0).all() and ranking.seeds.eq(2).all()
    runs = work / "results/sensitivity/runs"
    cfg = json.loads(next((runs / "iteration-fullbatch/mnist").glob("*/seed~0/summary.json")).read_text())["config"]
    assert cfg["train"]["iteration"] == "full_batch"
    cfg = json.loads(next((runs / "authors-code/mnist").glob("*/seed~1/summary.json")).read_text())["config"]
    assert cfg["model"]["hidden"] == 32 and cfg["partition"]["scheme"] == "classes" and cfg["seed"] == 1
    page = work / "results/report/mnist/06_sensitivity.html"
    assert page.is_file() and "Sensitivity" in page.read_text()
    index = (work / "results/report/sensitivity.html").read_text()
    assert "06_sensitivity.html" in index and "partition-iid" in index
    assert not (work / "results/runs").exists()  # the study runs only its own grid
