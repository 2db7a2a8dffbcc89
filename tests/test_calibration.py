"""The calibration study: the space's readings as run configs, the engine's new readings (s minibatch
steps, the step's scale, the lazy noise over the model), the rows (every feasible K), the screen, the
paper's floor at a repeated cell, the Pareto front, the stopping and promotion rules, the trials that
count, importances beside their control, a study killed at chosen instants (between ask and tag, and
mid-trial) resumed without repeating a finished trial (real data, slow), and the smoke study through the
workflow with its page (slow), dry runs of the whole study on the GPU and SLURM profiles."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
from pathlib import Path

import optuna
import pandas as pd
import pytest
import torch
import yaml

from bladefl.cli import main
from bladefl.experiments.calibration import checks, evaluation, importance, search, stopping, study, tables, words
from bladefl.experiments.calibration.space import Point, space
from bladefl.fl import lazy, mlp, trainer
from bladefl.fl.run_config import RunConfig, from_dict, load_config
from conftest import HANG_S, dry_run_once, snakemake, venv_env

REPO = Path(__file__).resolve().parents[1]
GRID = yaml.safe_load((REPO / "config/config.yaml").read_text())
TABLES = yaml.safe_load((REPO / "config/paper_values.yaml").read_text())["tables"]
FULL = yaml.safe_load((REPO / "config/calibration.yaml").read_text())
SMOKE = {**GRID, **yaml.safe_load((REPO / "config/calibration_smoke.yaml").read_text())}


def test_each_axis_value_is_the_run_config_it_names():
    sp = space(FULL["calibration"])
    point = sp.point({"partition": "dirichlet0.3", "samples": 256, "iteration": "steps4", "batch_size": 16,
                      "scaling": "raw", "width": 32, "activation": "none", "lazy_noise": "model", "eta_scale": 8})
    cfg = load_config(REPO / "config/engines/paper.yaml", point.sets())
    assert (cfg.partition.scheme, cfg.partition.value, cfg.partition.n) == ("dirichlet", 0.3, 256)
    assert (cfg.train.iteration, cfg.train.steps, cfg.train.batch_size, cfg.train.eta_scale) == ("steps", 4, 16, 8)
    assert (cfg.normalize, cfg.model.hidden, cfg.model.activation, cfg.lazy.noise) == (False, 32, "none", "model")
    assert cfg.train.step_size == pytest.approx(0.08)
    stated = load_config(REPO / "config/engines/paper.yaml", sp.stated.sets())
    assert stated == load_config(REPO / "config/engines/paper.yaml")  # the stated reading is the paper engine
    # the named points come first, the stated one first of all; a point's key depends on its values only
    assert [p.name for p in sp.points][:2] == ["stated", "partition-classes4"]
    assert Point(dict(point.values)).key == point.key != sp.stated.key
    # replicates sets no run field: it pairs run seeds with partition draws (the authors' one split)
    seeds = sp.point({"replicates": "seeds"})
    assert seeds.sets() == sp.stated.sets() and seeds.key != sp.stated.key
    assert [seeds.partition_seed(d) for d in (0, 1, 2)] == [0, 0, 0]
    assert [sp.stated.partition_seed(d) for d in (0, 1, 2)] == [0, 1, 2]


@pytest.mark.parametrize("change, message", [
    ({"space": {"colour": {"values": ["red"], "stated": "red"}}}, "calibration.space.colour: not an axis"),
    ({"space": {"partition": {"values": ["shards2", "halves"], "stated": "shards2"}}},
     "calibration.space.partition: each value"),
    ({"space": {"width": {"values": [32, 64], "stated": 256}}}, "calibration.space.width.stated must be one of"),
    ({"points": {"x": {"width": 7}}}, "calibration.points.x.width must be one of"),
    ({"first": ["nobody"]}, "calibration.first: 'nobody' is not a point"),
    ({"tables": ["Table IX"]}, "calibration.tables: 'Table IX' is not one of"),
    ({"draws": 1}, r"calibration.draws must be an integer in 2..100 \(got 1\)"),
    ({"draws": 10**9}, r"calibration.draws must be an integer in 2..100"),
    ({"window": 2}, "calibration.window: no longer a setting"),
    ({"stop": {"patience": -3}}, r"calibration.stop.patience must be an integer in 1..1000"),
    ({"stop": {"max_trials": 10**18}}, r"calibration.stop.max_trials must be an integer in 1..10000"),
    ({"stop": {"tolerance": float("nan")}}, r"calibration.stop.tolerance must be a number in \[0, 100\]"),
    ({"targets": {"K_star": float("nan")}}, r"calibration.targets.K_star must be a number in \(0, 1000\]"),
    ({"targets": {"accuracy": float("inf")}}, r"calibration.targets.accuracy must be a number"),
    ({"rerun": {"points": 10**7}}, r"calibration.rerun.points must be an integer in 1..20"),
    ({"coverage": ["colour"]}, r"calibration.coverage: 'colour' is not an axis"),
    ({"max_draws": 1}, r"calibration.max_draws must be an integer in draws..100 \(got 1\)"),
    ({"max_draws": 2.5}, r"calibration.max_draws must be an integer in draws..100"),
    ({"colour": 1}, r"calibration: unknown field\(s\) \['colour'\]"),
    ({"space": {"partition": {"values": ["shards2", "classes3"], "stated": "shards2"},
                "samples": {"values": [512], "stated": 512}}, "points": {}},
     r"partition classes3 with samples 512 \(N=10\): partition.n must be divisible"),
])
def test_a_bad_calibration_block_is_refused_naming_the_field(change, message):
    block = {**FULL["calibration"], **change}
    text = study.spec_json({**GRID, "calibration": block}, TABLES, "mnist", "config/engines/paper.yaml", "data/raw")
    with pytest.raises(ValueError, match=message):
        study.load_spec(text)


@pytest.mark.parametrize("t_sum", [1e308, float("inf"), -5, "100"])
def test_a_spec_whose_budget_is_out_of_bounds_is_refused_before_any_trial(t_sum):
    text = study.spec_json({**GRID, "t_sum": t_sum, "calibration": FULL["calibration"]}, TABLES, "mnist",
                           "config/engines/paper.yaml", "data/raw")
    with pytest.raises(ValueError, match=r"t_sum must be a number in \(0, 1e\+06\]"):
        study.load_spec(text)



def test_the_tau_rule_axis_reads_the_authors_time_model():
    sp = space({"space": {"tau_rule": {"values": ["paper", "authors"], "stated": "paper", "source": "test"}}})
    cfg = load_config(REPO / "config/engines/paper.yaml", [*sp.point({"tau_rule": "authors"}).sets(), "time.alpha=2"])
    assert cfg.time.tau_rule == "authors" and load_config(REPO / "config/engines/paper.yaml").time.tau_rule == "paper"
    from bladefl.experiments.calibration.space import space_errors

    assert "calibration.space.tau_rule: each value and `stated` must be paper or authors (got 'code')" in space_errors(
        {"space": {"tau_rule": {"values": ["code"], "stated": "code"}}})

def test_fields_added_later_are_recorded_only_where_they_leave_their_default():
    record = RunConfig().to_dict()
    assert "steps" not in record["train"] and "eta_scale" not in record["train"] and "noise" not in record["lazy"]
    assert from_dict(record) == RunConfig()  # a run recorded before them is a run of the same config
    changed = from_dict({"train": {"iteration": "steps", "steps": 3}, "lazy": {"noise": "model"}}).to_dict()
    assert changed["train"]["steps"] == 3 and changed["lazy"]["noise"] == "model"
    with pytest.raises(ValueError, match=r"train.eta x train.eta_scale must be < 1"):
        from_dict({"train": {"eta": 0.1, "eta_scale": 16}})
    with pytest.raises(ValueError, match=r"lazy.noise must be one of \['parameter', 'model', 'authors'\]"):
        from_dict({"lazy": {"noise": "vector"}})


def _trained(iteration: str, steps: int) -> torch.Tensor:
    shape = mlp.Shape(d=6, h=5, c=3)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(2, 16, 6, generator=g), torch.randint(0, 3, (2, 16), generator=g)
    flat = torch.randn(2, shape.size, generator=g) * 0.1
    trainer.train_local(flat, x, y, 3, eta=0.1, iteration=iteration, batch_size=4, shape=shape,
                        generator=torch.Generator().manual_seed(1), steps=steps)
    return flat


def test_s_steps_that_cover_the_data_once_are_an_epoch_and_more_cycle_through_it():
    epoch = _trained("epoch", 1)
    assert torch.equal(_trained("steps", 4), epoch)  # 4 steps of 4 over 16 samples: the epoch, step by step
    fewer, more = _trained("steps", 1), _trained("steps", 7)  # a quarter of it; it and most of it again
    assert not torch.equal(fewer, epoch) and not torch.equal(more, epoch) and torch.isfinite(more).all()


def test_the_lazy_noise_over_the_model_spreads_sigma2_over_its_parameters():
    per_parameter = RunConfig().lazy
    over_model = from_dict({"lazy": {"noise": "model", "sigma2": 0.04}}).lazy
    assert lazy.lazy_scale(from_dict({"lazy": {"sigma2": 0.04}}).lazy, 100) == pytest.approx(0.2)
    assert lazy.lazy_scale(over_model, 100) == pytest.approx(0.02)  # E||n||^2 = 100 x 0.02^2 = 0.04
    assert lazy.lazy_scale(per_parameter, 100) == 0.0


def test_rows_run_every_feasible_k_and_the_screen_holds_a_row_of_every_table():
    rows = evaluation.rows(GRID, TABLES, ["Table II", "Table III"], "mnist")
    assert [(r.table, r.value) for r in rows] == [("Table II", 1), ("Table II", 2), ("Table II", 5),
                                                  ("Table III", 6), ("Table III", 8), ("Table III", 12)]
    first = rows[0]  # Table II, alpha = 1 at beta = 6: tau alpha K* = 40 -> K* = (100 - 40) / 6 = 10
    assert first.paper_K_star == 10 and first.paper_accuracy == 87.44
    assert first.k_values(100) == list(range(1, 15))  # every feasible K: floor(100 / 7), no window
    every = evaluation.rows(GRID, TABLES, [], "fashion_mnist")
    screen = evaluation.screen_rows(every)
    assert {r.table for r in screen} == {r.table for r in every}  # a row of every table
    cells = {r.cell.key for r in screen}
    assert len(cells) == 3  # Tables II, III and IV share a cell, VI and VII another, V takes its own
    assert all(r in screen for r in every if r.cell.key in cells)  # every row at a screened cell


def _runs_table(k_of_seed: dict[int, int], accuracy_of_seed: dict[int, float]) -> pd.DataFrame:
    rows = [{"sweep": "alpha", "cell": "c", "seed": s, "K": K, "status": "ok",
             "train_loss": abs(K - k_of_seed[s]) + 0.1, "test_accuracy": accuracy_of_seed[s] - 0.01 * abs(K - 3)}
            for s in k_of_seed for K in range(1, 8)]
    return pd.DataFrame(rows)


def test_the_draws_disagreement_is_the_range_of_each_draws_optimum():
    ranges = evaluation.draw_ranges(_runs_table({0: 2, 1: 5, 2: 3}, {0: 0.80, 1: 0.90, 2: 0.85}))
    k_range, accuracy_range = ranges[("alpha", "c")]
    assert k_range == 3 and accuracy_range == pytest.approx(10.0)
    near = pd.DataFrame({"K_star_range": [1.0, 0.0], "max_accuracy_range": [3.0, 2.0]})
    assert not evaluation.draws_disagree(near, 1.0, 3.0)  # at the targets: enough
    assert evaluation.draws_disagree(near.assign(K_star_range=[1.0, 2.0]), 1.0, 3.0)
    assert evaluation.draws_disagree(near.assign(max_accuracy_range=[3.5, 0.0]), 1.0, 3.0)
    assert not evaluation.draws_disagree(near.assign(K_star_range=[math.nan, 0.0]), 1.0, 3.0)  # nothing trained


@pytest.mark.parametrize(("spread_until", "most", "ran"), [
    (99, 2, [2]),  # max_draws at draws: never more (the study of before the field)
    (0, 6, [2]),  # the two draws agree: no more
    (4, 6, [2, 4]),  # they disagree until four: four
    (99, 5, [2, 4, 5]),  # they always disagree: up to the most, draws more at a time
])
def test_a_point_whose_draws_disagree_is_scored_on_more_draws(monkeypatch, spread_until, most, ran):
    counts: list[int] = []
    monkeypatch.setattr(evaluation, "run", lambda plan, point, root, threads=0: counts.append(len(plan.draws)) or 1.0)
    monkeypatch.setattr(evaluation, "row_results", lambda plan, root: pd.DataFrame(
        {"K_star_range": [2.0 if len(plan.draws) < spread_until else 0.0], "max_accuracy_range": [0.0]}))
    rows = evaluation.rows(GRID, TABLES, ["Table II"], "mnist")
    plan = evaluation.Plan("mnist", "config/engines/paper.yaml", 100.0, tuple(rows), (0, 1), "data/raw")
    done, seconds, results = evaluation.run_enough(plan, None, "runs", (1.0, 3.0), most)  # type: ignore[arg-type]
    assert counts == ran and done.draws == tuple(range(ran[-1])) and seconds == len(ran)
    assert results.K_star_range.iloc[0] == (2.0 if ran[-1] < spread_until else 0.0)  # the last plan's rows


def test_max_draws_at_draws_keeps_the_study_its_journal_names():
    spec = study.spec_json({**GRID, "calibration": FULL["calibration"]}, TABLES, "mnist", "config/engines/paper.yaml",
                           "data/raw")
    doc = json.loads(spec)
    doc["calibration"].pop("max_draws", None)
    before = study.study_name(study.load_spec(json.dumps(doc)))
    doc["calibration"]["max_draws"] = doc["calibration"]["draws"]
    assert study.study_name(study.load_spec(json.dumps(doc))) == before
    doc["calibration"]["max_draws"] = 6
    again = study.load_spec(json.dumps(doc))
    assert study.study_name(again) != before and again.max_draws == 6


def test_the_papers_own_spread_at_a_repeated_cell_is_the_floor_no_reading_passes():
    every = evaluation.rows(GRID, TABLES, [], "fashion_mnist")
    repeated = evaluation.repeated_cells(every)
    shared = repeated[repeated.rows.str.contains("Table II alpha = 1")].iloc[0]
    # alpha 1, beta 6, eta 0.01, N 20 in Tables II, III and IV: Fashion-MNIST K* 9, 5, 5
    assert shared.paper_K_star == "9, 5, 5" and shared.K_star_spread == 4
    assert shared.accuracy_spread == pytest.approx(62.91 - 59.57)
    k_floor, acc_floor = evaluation.paper_floor(every)
    # any one K* at that cell is >= 4 rounds from the three values together; at the VI/VII cell (2, 5) >= 3
    assert k_floor == pytest.approx((4 + 3) / sum(math.isfinite(r.paper_K_star) for r in every))
    assert acc_floor > 0
    single = [r for r in every if r.table == "Table V"]
    assert evaluation.paper_floor(single) == (0.0, 0.0)  # no cell repeated: no floor


def _trial(number: int, values: tuple[float, float], **attrs) -> optuna.trial.FrozenTrial:
    t = optuna.trial.create_trial(values=list(values), params={"x": number},
                                  distributions={"x": optuna.distributions.IntDistribution(0, 99)},
                                  user_attrs=attrs)
    t.number = number
    return t


def test_the_front_keeps_what_no_trial_beats_on_both_distances():
    trials = [_trial(0, (2.0, 10.0)), _trial(1, (1.0, 20.0)), _trial(2, (3.0, 12.0)), _trial(3, (1.0, 20.0)),
              _trial(4, (0.5, 30.0))]
    assert [t.number for t in search.pareto(trials)] == [0, 1, 4]  # 2 is beaten by 0; 3 ties 1 (the first kept)
    assert evaluation.closeness(2.0, 3.0, 1.0, 3.0) == 2.0 and evaluation.closeness(0.5, 1.5, 1.0, 3.0) == 0.5


def test_a_trial_a_killed_worker_left_counts_once_through_its_retry():
    failed = optuna.trial.create_trial(state=optuna.trial.TrialState.FAIL)
    failed.number = 1
    duplicate = optuna.trial.create_trial(state=optuna.trial.TrialState.FAIL, user_attrs={"duplicate_of": 0})
    duplicate.number = 3
    trials = [_trial(0, (1.0, 1.0)), failed, _trial(2, (1.0, 2.0), retry_of=1), duplicate]
    assert [t.number for t in search.counted(trials)] == [0, 2]  # a re-proposed point is no new trial


def _running(number: int, **attrs) -> optuna.trial.FrozenTrial:
    t = optuna.trial.create_trial(state=optuna.trial.TrialState.COMPLETE, values=[0.0, 0.0], user_attrs=attrs)
    t.state = optuna.trial.TrialState.RUNNING
    t.number = number
    return t


def test_a_running_trial_no_living_worker_holds_is_stale_whenever_the_kill_came():
    trials = [_running(0), _running(1, worker="w0"), _running(2, worker="w1"), _running(3, worker="w2"),
              _trial(4, (1.0, 1.0), worker="w3")]
    alive = {"w1"}.__contains__
    # untagged (killed between ask and tag), this worker's own, a gone worker's; never a living one's or a finished one
    assert [t.number for t in search.stale(trials, "w0", alive)] == [0, 1, 3]


def test_the_search_stops_on_its_rule_and_promotes_the_best_fraction():
    rule = stopping.StopRule(patience=3, tolerance=0.1, max_trials=20, min_proposals=4)
    assert stopping.improvements([5, 4.95, 3, 3, 2.95, 3.5], 0.1) == [True, False, True, False, False, False]
    assert stopping.running_best([5, 4.95, 3, 3.5]) == [5, 4.95, 3, 3]
    every = [True] * 6
    assert stopping.stop_reason([5, 4.95, 3, 3, 2.95], every[:5], 5, 0, rule) is None  # 2 since the last improvement
    assert "last 3 of its 6 proposals" in stopping.stop_reason([5, 4.95, 3, 3, 2.95, 3.5], every, 6, 0, rule)
    assert stopping.stop_reason([5, 4.95, 3, 3, 2.95, 3.5], every, 6, 2, rule) is None  # named or coverage waiting
    # named and coverage points never count in the window, nor toward the proposals the rule needs first
    named_last = [True, True, True, False, False, False]
    assert stopping.stop_reason([5, 4.95, 3, 3, 2.95, 3.5], named_last, 6, 0, rule) is None
    few = [False, False, True, True, True, False, False]
    assert stopping.stop_reason([5, 3, 3.5, 3.2, 3.1, 2.0, 2.0], few, 7, 0, rule) is None  # 3 proposals < 4
    assert "of its 4 proposals" in stopping.stop_reason([5, 3, 3.5, 3.2, 3.1, 2.0, 2.0, 3.0], few + [True], 8, 0, rule)
    assert stopping.stop_reason([1.0] * 3, [True] * 3, 20, 4, rule) == "the cap of 20 trials"  # whatever is left
    assert stopping.proposal_floor(3) == 10 and stopping.proposal_floor(10) == 20
    assert stopping.promoted(2.0, [], 4)  # the first screened point
    assert stopping.promoted(1.0, [3.0, 2.0, 4.0], 4) and not stopping.promoted(2.5, [3.0, 2.0, 4.0], 4)
    assert stopping.promoted(2.5, [3.0, 2.0, 4.0, 5.0, 6.0, 7.0, 8.0], 4)  # 2nd of 8: within the best quarter
    assert not stopping.promoted(math.nan, [3.0], 4)


def test_importances_stand_beside_the_share_noise_gets():
    params = {"a": optuna.distributions.CategoricalDistribution([0, 1]),
              "b": optuna.distributions.CategoricalDistribution([0, 1, 2])}
    trials = []
    for i in range(24):  # distance 1 follows a alone; distance 2 is noise
        a, b = i % 2, i % 3
        t = optuna.trial.create_trial(params={"a": a, "b": b}, distributions=params,
                                      values=[3.0 * a + 0.01 * ((7 * i) % 5), float((i * 7919) % 13)])
        t.number = i
        trials.append(t)
    table = importance.importances(trials, ["a", "b"], permutations=49)
    k = table[table.objective == "K_star_distance"].set_index("setting")
    assert k.loc["a", "clears"] and k.loc["a", "importance"] > 0.9 and not k.loc["b", "clears"]
    assert (table.control > 0).all() and (table.control <= 1).all()
    # a's share beats every shuffle's largest: the smallest p-value 49 shuffles allow, doubled over the two distances
    assert k.loc["a", "p"] == 1 / 50 and k.loc["a", "p_adjusted"] == 2 / 50 < importance.ALPHA
    noise = table[table.objective == "accuracy_distance"]
    assert not noise.clears.any() and (noise.p_adjusted == (noise.p * 2).clip(upper=1)).all()


def _smoke_spec(tmp_path: Path, data_root: Path) -> Path:
    text = study.spec_json(SMOKE, TABLES, "mnist", str(REPO / "config/engines/paper.yaml"), str(data_root))
    (tmp_path / "spec.json").write_text(text)
    return tmp_path / "spec.json"


def _journal(spec_path: Path, storage: Path) -> list[optuna.trial.FrozenTrial]:
    spec = study.load_spec(spec_path.read_text())
    return search.read_study(storage, study.study_name(spec))


# A worker killed (SIGKILL) at a chosen instant, whatever the machine's speed: right after its n-th ask
# (before the trial is tagged with its worker), or as its n-th evaluation of a reading's runs starts.
KILLED_AT = """
import os, signal, sys
import optuna
from bladefl.experiments.calibration import evaluation
where, n = sys.argv[1], int(sys.argv[2])
calls = []
def killing(original):
    def wrapper(*args, **kwargs):
        if where == "ask":
            result = original(*args, **kwargs)
            calls.append(1)
            if len(calls) == n:
                os.kill(os.getpid(), signal.SIGKILL)
            return result
        calls.append(1)
        if len(calls) == n:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(*args, **kwargs)
    return wrapper
if where == "ask":
    optuna.study.Study.ask = killing(optuna.study.Study.ask)
else:
    evaluation.run = killing(evaluation.run)
from bladefl.cli import main
sys.exit(main(sys.argv[3:]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("where, n", [("ask", 2), ("run", 3)], ids=["between-ask-and-tag", "mid-trial"])
def test_a_killed_study_resumes_without_repeating_a_finished_trial(tmp_path, data_root, where, n):
    spec_path = _smoke_spec(tmp_path, data_root)
    storage, trials_dir = tmp_path / "study.journal", tmp_path / "trials"
    args = ["calibrate", "--spec", str(spec_path), "--storage", str(storage), "--trials-dir", str(trials_dir),
            "--threads", "1"]
    killed = subprocess.run([sys.executable, "-c", KILLED_AT, where, str(n), *args], capture_output=True, text=True,
                            timeout=HANG_S, env=venv_env())
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    before = {t.number: t for t in _journal(spec_path, storage)}
    finished = [k for k, t in before.items() if t.state == optuna.trial.TrialState.COMPLETE]
    running = [k for k, t in before.items() if t.state == optuna.trial.TrialState.RUNNING]
    assert finished == [0] and running == [1]  # trial 0 (stated, on every row) done, trial 1 left
    assert ("worker" in before[1].user_attrs) == (where == "run")  # killed before its tag, or after
    summaries = {p: p.stat().st_mtime_ns for p in trials_dir.rglob("summary.json")}
    done = subprocess.run([str(Path(sys.executable).parent / "bladefl"), *args], capture_output=True, text=True,
                          timeout=HANG_S, env=venv_env())
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"trials {running} were left running" in done.stdout and "the search stops:" in done.stdout
    after = _journal(spec_path, storage)
    spec = study.load_spec(spec_path.read_text())
    assert not [t for t in after if t.state == optuna.trial.TrialState.RUNNING]  # nothing left for good
    complete = [t for t in after if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(search.counted(after)) == len(complete) <= spec.rule.max_trials
    for k in finished:  # finished trials are kept as they were, and not run again
        assert after[k].state == optuna.trial.TrialState.COMPLETE and after[k].values == before[k].values
    named = [t.user_attrs["point"] for t in complete if t.user_attrs.get("point")]
    assert sorted(named) == sorted(p.name for p in spec.space.points)  # each named point completed once
    retried = [t for t in after if t.user_attrs.get("retry_of") in running]
    assert len(retried) == 1 and retried[0].state == optuna.trial.TrialState.COMPLETE
    assert all(p.stat().st_mtime_ns == m for p, m in summaries.items())  # finished runs are reused, not rewritten


@pytest.mark.slow
@pytest.mark.snakemake
def test_the_smoke_study_runs_through_the_workflow_with_its_page(smoke_study):
    work = smoke_study  # run through the workflow once for the test run (conftest), its run asserted there
    cal = work / "results/calibration-smoke/calibration/mnist"
    trials = __import__("pandas").read_csv(cal / "trials.csv")
    done = trials[trials.state == "complete"]
    assert 3 <= len(done) <= 4 and set(trials.point.dropna()) == {"stated", "partition-iid"}
    assert (done.run_seconds > 0).all()  # each trial's cost, from its runs' own records
    assert done.running_best.is_monotonic_decreasing and done.promoted.iloc[0]  # the stated reading on every row
    outcome = json.loads((cal / "outcome.json").read_text())
    assert outcome["second_pass"]["draws"] == 2 and outcome["calibrated"]["role"] == "best1"
    assert sum(outcome["search"]["origins"].values()) == outcome["search"]["evaluated"]  # named, coverage, searched
    assert outcome["search"]["stopped"] and outcome["conclusion"].startswith(("None of the 3", "None of the 4",
                                                                             "The reading"))
    second = __import__("pandas").read_csv(cal / "second_rows.csv")
    assert set(second.role) == {"stated", "best1"} and (second.draws == 2).all()
    # the second pass takes the search's runs (their folders made empty by Snakemake first), never trains again
    picked = json.loads((cal / "picked.json").read_text())
    taken = sorted((cal / "rerun/stated").rglob("summary.json"))
    assert taken and all(p.read_bytes() == (cal / "trials" / picked["stated"]["key"] / p.relative_to(
        cal / "rerun/stated")).read_bytes() for p in taken)
    engine = load_config(cal / "calibrated-mnist.yaml")  # the calibrated reading runs as an engine
    assert engine.dataset == "mnist"
    page = (work / "results/calibration-smoke/report/mnist/07_calibration.html").read_text()
    assert "What the study found" in page and "Pareto front" in page and "running best" in page
    index = (work / "results/calibration-smoke/report/index.html").read_text()
    assert "07_calibration.html" in index and "calibrated reading" in index
    own = work / "results/calibration-smoke"  # the study runs only its own readings, in its own folder
    assert not (work / "results/runs").exists() and not (own / "runs").exists()
    # every measurement convention read from the second pass's runs (their curves recorded as they ran)
    made = snakemake(work, "results/calibration-smoke/calibration/mnist/conventions.csv", "--cores", "1",
                     "--configfile", "config/calibration_smoke.yaml")
    assert made.returncode == 0, made.stderr[-3000:]
    conv = __import__("pandas").read_csv(cal / "conventions.csv")
    assert set(conv.role) == {"stated", "best1"} and conv.k_star_from.nunique() == 4
    authors = conv[(conv.k_star_from == "authors-client-test-loss") & (conv.accuracy == "at-k-star client-test")]
    assert len(authors) and authors.K_rows.sum() + authors.accuracy_rows.sum() > 0
    near = outcome["conventions"]  # per table, the same table's nearest convention, in the outcome the pages read
    assert {r["table"] for r in near} == set(conv.table)
    for r in near:
        mine = conv[conv.table == r["table"]]
        assert r["K_star_distance"] == pytest.approx(mine.K_star_distance.min())
        assert r["accuracy_distance"] == pytest.approx(mine.accuracy_distance.min())
    assert "read under every measurement convention" in page
    again = snakemake(work, "-n", "--configfile", "config/calibration_smoke.yaml")
    assert "Nothing to be done" in again.stdout + again.stderr


@pytest.mark.snakemake
@pytest.mark.parametrize("profile", ["profiles/gpu", "profiles/slurm"])
def test_the_whole_study_is_one_command_on_the_gpu_and_slurm_profiles(tmp_path_factory, profile):
    proc = dry_run_once(tmp_path_factory, "--profile", profile, "--configfile", "config/calibration.yaml")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    workers = int(FULL["calibration"]["workers"])
    assert f"calibration_search        {2 * workers}" in out or f"calibration_search {2 * workers}" in " ".join(
        out.split())
    rows = evaluation.rows(GRID, TABLES, [], "mnist")
    assert len(rows) == sum(len(t["rows"]) for t in TABLES)  # every table row is a row of the study
    assert math.isfinite(rows[0].paper_K_star)


# --- the study's files read as hostile (issue 61, item 3) -----------------------------------------------

def _forged_journal(tmp_path: Path, trials: list[dict]) -> tuple[Path, Path]:
    """A smoke spec and a journal of its study holding ``trials`` (params, values, user_attrs), as anyone
    could write one."""
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(study.spec_json(SMOKE, TABLES, "mnist", str(REPO / "config/engines/paper.yaml"), "data/raw"))
    spec = study.load_spec(spec_path.read_text())
    storage = tmp_path / "study.journal"
    st = search.open_study(storage, study.study_name(spec), spec.seed)
    for t in trials:
        params = {**dict(spec.space.stated.values), **t.get("params", {})}
        dists = {k: optuna.distributions.CategoricalDistribution(sorted({v, *spec.space.axis(k).values}, key=str))
                 for k, v in params.items()}
        st.add_trial(optuna.trial.create_trial(params=params, distributions=dists, values=t.get("values", [1.0, 2.0]),
                                               user_attrs=t.get("attrs", {})))
    return spec_path, storage


@pytest.mark.parametrize("trials, said", [
    ([{"params": {"partition": "../../../etc"}}], "partition = '../../../etc' is not a value of the space"),
    ([{"params": {"width": 100000000}}], "width = '100000000' is not a value of the space"),
    ([{"values": [0.123456789, 1.0]}], "values must be finite numbers >= 0"),  # written NaN in the journal below
    ([{"values": [float("-inf"), 1.0]}], "values must be finite numbers >= 0"),
    ([{"values": [-1.0, 1.0]}], "values must be finite numbers >= 0"),
    ([{"attrs": {"full_values": [1.0, float("nan")]}}], "full_values must be finite numbers >= 0"),
    ([{"attrs": {"point": "../../x"}}], "point '../../x' is none of the spec's named points"),
    ([{"attrs": {"point": "<script>alert(1)</script>"}}], "is none of the spec's named points"),
    ([{"attrs": {"coverage": "../x"}}], "coverage '../x' is no axis=value of the space"),
    ([{"attrs": {"key": "../../x"}}], "key '../../x' is not the key of the trial's own settings"),
    ([{"attrs": {"full_rows": "rows"}}], "full_rows must be the plan's"),
    ([{"attrs": {"full_rows": "K-1e9"}}], "K_star must be NaN or in 1..10000 (got '-1000000000.0')"),
    ([{"attrs": {"full_rows": "paper"}}], "paper_K_star is not the paper's"),
], ids=["path-partition", "huge-width", "nan", "minus-inf", "negative", "nan-full", "label-path", "label-script",
        "coverage-path", "key-path", "rows-text", "rows-negative-K", "rows-paper"])
def test_a_forged_trial_is_refused_before_a_pick(tmp_path, capsys, trials, said):
    rows = trials[0].get("attrs", {}).get("full_rows")
    if rows in ("K-1e9", "paper"):  # the plan's own rows, one number forged
        (tmp_path / "plan").mkdir()
        spec_path, _ = _forged_journal(tmp_path / "plan", [])
        plan = study.load_spec(spec_path.read_text()).full
        genuine = [{"table": r.table, "sweep": r.sweep, "cell": r.cell.key, "draws": 2, "K_star": 3.0,
                    "K_star_sd": 0.5, "paper_K_star": r.paper_K_star, "max_accuracy": 90.0, "max_accuracy_sd": 1.0,
                    "paper_max_accuracy": r.paper_accuracy, "K_star_distance": 1.0, "accuracy_distance": 1.0}
                   for r in plan.rows]
        assert checks.rows_problem(study.load_spec(spec_path.read_text()), {"full_rows": genuine}) is None
        genuine[0] = {**genuine[0], **({"K_star": -1e9} if rows == "K-1e9" else {"paper_K_star": 99.5})}
        trials = [{"attrs": {"full_rows": genuine}}]
    spec_path, storage = _forged_journal(tmp_path, trials)
    storage.write_text(storage.read_text().replace("0.123456789", "NaN"))  # what the API refuses, a file can hold
    before = storage.read_bytes()
    code = main(["calibration-pick", "--spec", str(spec_path), "--storage", str(storage), "--out",
                 str(tmp_path / "picked.json")])
    err = capsys.readouterr().err
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "picked.json").exists() and storage.read_bytes() == before  # nothing written


def test_a_promoted_reading_that_diverged_on_a_row_is_kept_and_never_picked(tmp_path, capsys):
    # every run of a row diverged: distances() scores NaN on both over every row, which the search writes
    nan = float("nan")
    spec_path, storage = _forged_journal(tmp_path, [
        {"params": {"width": 16}, "attrs": {"full_values": [nan, nan], "full_closeness": nan}},
        {"params": {"batch_size": 16}, "attrs": {"full_values": [1.0, 2.0], "full_closeness": 0.5}}])
    spec = study.load_spec(spec_path.read_text())
    trials = checks.checked_trials(spec, search.open_study(storage, study.study_name(spec), spec.seed).get_trials())
    assert [search.trained_every_row(t) for t in trials] == [False, True]
    assert [t.number for t in search.full_front(trials)] == [1]
    code = main(["calibration-pick", "--spec", str(spec_path), "--storage", str(storage), "--out",
                 str(tmp_path / "picked.json")])
    assert code == 0, capsys.readouterr().err
    picked = json.loads((tmp_path / "picked.json").read_text())
    assert picked["stated"]["trial"] is None and picked["best1"]["trial"] == 1  # the one that trained
    assert all(e["trial"] != 0 for e in picked.values())
    table, _, _ = tables.trials_table(spec, trials)
    assert table.promoted.tolist() == [True, True] and math.isnan(table.full_closeness[0])
    assert table.pareto.tolist() == [False, True]


def test_a_journal_that_is_missing_empty_another_studys_or_malformed_is_one_line_and_never_written(tmp_path,
                                                                                                   capsys):
    spec_path, storage = _forged_journal(tmp_path, [])
    other = tmp_path / "other.journal"
    search.open_study(other, "calibration-fashion_mnist-0123456789", 0)
    nulls = tmp_path / "nulls.journal"
    nulls.write_text("null\nnull\n")
    for journal, said in ((tmp_path / "missing.journal", "cannot read it"), (other, "holds no study"),
                          (nulls, "not an Optuna journal")):
        before = journal.read_bytes() if journal.exists() else None
        for argv in (["calibration-pick", "--out", str(tmp_path / "p.json")],
                     ["calibration-tables", "--picked", str(tmp_path / "p.json"), "--roots", "stated=x", "best1=y",
                      "--out-dir", str(tmp_path / "t")]):
            code = main([argv[0], "--spec", str(spec_path), "--storage", str(journal), *argv[1:]])
            err = capsys.readouterr().err
            assert code == 2 and said in err and len(err.strip().splitlines()) == 1, (argv[0], err)
            assert (journal.read_bytes() if journal.exists() else None) == before  # a reader writes nothing
    empty = main(["calibration-pick", "--spec", str(spec_path), "--storage", str(storage), "--out",
                  str(tmp_path / "p.json")])
    assert empty == 2 and "holds no trial scored on every row" in capsys.readouterr().err  # nothing scored yet
    assert not (tmp_path / "p.json").exists()


def test_a_picked_file_is_held_to_the_spec_before_a_rerun(tmp_path, capsys):
    spec_path, _ = _forged_journal(tmp_path, [])
    spec = study.load_spec(spec_path.read_text())
    stated = dict(spec.space.stated.values)
    for picked, said in (({"stated": {"values": {**stated, "width": 10**8}}}, "values.width must be one of"),
                         ({"stated": {"values": {**stated, "partition": "iid"}}}, "is not the stated reading"),
                         ({"stated": {"values": stated}, "best7": {"values": stated}}, "role 'best7' is not one of"),
                         ({"stated": {"values": {"width": 256}}}, "a value for each axis")):
        (tmp_path / "picked.json").write_text(json.dumps(picked))
        code = main(["calibration-rerun", "--spec", str(spec_path), "--picked", str(tmp_path / "picked.json"),
                     "--role", "stated", "--out-dir", str(tmp_path / "rerun")])
        err = capsys.readouterr().err
        assert code == 2 and said in err, err
        assert not (tmp_path / "rerun").exists()


def test_a_journal_of_more_trials_than_a_study_holds_is_refused_quickly(tmp_path, capsys, monkeypatch):
    """A 20,000-trial journal did not finish in 300 s: the trial count is bounded (the bound lowered here so
    that the test writes a small journal)."""
    import time as _time

    monkeypatch.setattr(search, "MAX_TRIALS", 25)
    spec_path, storage = _forged_journal(tmp_path, [{"values": [1.0, float(i)]} for i in range(30)])
    start = _time.monotonic()
    code = main(["calibration-pick", "--spec", str(spec_path), "--storage", str(storage), "--out",
                 str(tmp_path / "p.json")])
    assert code == 2 and "30 trials, over the 25 a study may hold" in capsys.readouterr().err
    assert _time.monotonic() - start < 60


def test_the_front_of_thousands_of_trials_is_a_sort_not_a_square():
    import time as _time

    rng = __import__("numpy").random.default_rng(0)
    values = [tuple(v) for v in rng.random((20_000, 2))]
    start = _time.monotonic()
    front = search.pareto(values, lambda v: v)
    assert _time.monotonic() - start < 10  # 4e8 comparisons the pairwise way
    assert all(not any(u[0] <= v[0] and u[1] <= v[1] and u != v for u in values[:200]) for v in front)


def _outcome() -> dict:
    """An outcome.json as the study writes it (the fields the pages read)."""
    pair = {"K_star": 1.5, "accuracy": 4.0}
    return {"dataset": "mnist", "targets": {"K_star": 1.0, "accuracy": 3.0}, "tables": ["Table II"], "rows": 3,
            "screen": {"rows": 2, "cells": 1, "draws": 2, "tables": ["Table II"]},
            "search": {"evaluated": 5, "promoted": 2, "promote": 4, "failed": 0, "duplicates": 0, "stopped": "the cap",
                       "rule": {"patience": 2, "tolerance": 0.05, "max_trials": 5}, "coverage": {"partition": ["iid"]},
                       "points": ["stated"]},
            "second_pass": {"draws": 2, "stated": pair, "calibrated": pair},
            "per_table": [{"table": "Table II", "rows": 3, "K_star": 1.5, "accuracy": 4.0}],
            "floor": {"K_star": 0.0, "accuracy": 0.0},
            "calibrated": {"role": "best1", "values": {}, "differs": {"width": 32}, "trial": 3, "label": "width 32"},
            "reached": False, "most_important": {}, "conclusion": "None of the 5 points ..."}


_NEAR = {"table": "Table II", "headline_K_star_distance": 2.0, "headline_accuracy_distance": 10.0,
         "K_star_reading": "best1", "K_star_from": "test-loss", "K_star_distance": 0.5, "K_star_sd": 0.2,
         "accuracy_reading": "stated", "accuracy_from": "at-k-star client-test at test-loss's K*",
         "accuracy_distance": 3.0, "accuracy_sd_pct": None, "paper_K_star_spread": 0.0, "paper_accuracy_spread": 4.58}


def test_the_nearest_conventions_are_one_sentence_on_the_calibration_index(tmp_path):
    found = {**_outcome(), "conventions": [_NEAR]}
    (tmp_path / "outcome.json").write_text(json.dumps(found))
    assert main(["calibration-index", "--outcomes", str(tmp_path / "outcome.json"), "--pages", "x.html", "--out",
                 str(tmp_path / "index.html")]) == 0
    index = (tmp_path / "index.html").read_text()
    assert ("K* nearest the paper from test-loss in 1 of 1 tables, on average over the tables 0.50 rounds per row at "
            "the nearest (a minimum over readings and conventions taken per table, then averaged: optimistic, the same "
            "runs choose and score it) against 2.00 under the headline; accuracy from at-k-star client-test at "
            "test-loss&#x27;s K* "
            "in 1, 3.0 points against 10.0") in index and "up to 0 rounds and 4.58 points" in index
    view = __import__("bladefl.report.calibration", fromlist=["x"]).conventions_view(found)
    assert view.iloc[0]["nearest K*: reading, curve"] == "calibrated, test-loss"  # best1 is the calibrated role
    assert view.iloc[0]["its accuracy distance (points; one run's sd)"] == "3.0 (n/a)"


@pytest.mark.parametrize("edit, said", [
    (lambda o: o.pop("second_pass"), "second_pass"),
    (lambda o: o.update(second_pass=[1, 2]), "second_pass"),
    (lambda o: o.update(most_important={"K_star_distance": {"setting": "x", "importance": "high", "control": 0.1}}),
     "most_important.K_star_distance.importance"),
    (lambda o: o["calibrated"].update(role="best1; rm -rf"), "calibrated.role"),
    (lambda o: o.update(rows=10**12), "rows"),
    (lambda o: o.update(conventions=[{**_NEAR, "accuracy_from": "<script>"}]), "conventions.0.accuracy_from"),
    (lambda o: o.update(conventions=[{**_NEAR, "K_star_reading": "../x"}]), "conventions.0.K_star_reading"),
    (lambda o: o.update(conventions=[{**_NEAR, "K_star_distance": -1}]), "conventions.0.K_star_distance"),
], ids=["missing", "list-for-dict", "importance-text", "role", "huge", "convention-name", "convention-reading",
        "convention-negative"])
def test_a_hostile_outcome_is_one_line_for_the_calibration_index(tmp_path, capsys, edit, said):
    """Issue 61, item 4: `calibration-index` read outcome.json with a plain reader (KeyError and TypeError
    tracebacks): held to the outcome's schema now, one line naming the field."""
    found = _outcome()
    edit(found)
    (tmp_path / "outcome.json").write_text(json.dumps(found))
    code = main(["calibration-index", "--outcomes", str(tmp_path / "outcome.json"), "--pages", "x.html", "--out",
                 str(tmp_path / "index.html")])
    err = capsys.readouterr().err
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "index.html").exists()


@pytest.mark.parametrize("content, said", [
    ('{"dataset": "mnist", "dataset": "mnist"}', "given twice"), ('{"rows": NaN}', "NaN is not a JSON number"),
    ("fifo", "a FIFO, device or socket"), ("sparse", "bytes, more than the"),
], ids=["key-twice", "nan", "fifo", "300MB"])
def test_an_outcome_file_is_read_bounded_and_strict(tmp_path, capsys, content, said):
    import os

    path = tmp_path / "outcome.json"
    if content == "fifo":
        os.mkfifo(path)
    elif content == "sparse":
        with open(path, "wb") as f:
            f.truncate(300 << 20)
    else:
        path.write_text(content)
    code = main(["calibration-index", "--outcomes", str(path), "--pages", "x.html", "--out", str(tmp_path / "i.html")])
    err = capsys.readouterr().err
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err


def test_the_calibration_index_prints_an_outcomes_text_as_text(tmp_path):
    found = _outcome()
    found["conclusion"] = "<script>alert(1)</script>"
    found["calibrated"]["label"] = "<img src=x onerror=alert(1)>"
    (tmp_path / "outcome.json").write_text(json.dumps(found))
    assert main(["calibration-index", "--outcomes", str(tmp_path / "outcome.json"), "--pages", "x.html", "--out",
                 str(tmp_path / "index.html")]) == 0
    page = (tmp_path / "index.html").read_text()
    # the conclusion is computed from the outcome's numbers, not printed from its text; the label is shown escaped
    assert "<script>alert" not in page and "<img src=x" not in page and "&lt;img src=x" in page


def test_roles_the_front_leaves_empty_go_to_the_nearest_other_points_scored_on_every_row(tmp_path):
    """A front of one point (it dominates every other) fills best1; best2 is the nearest of the other
    points scored on every row, not the stated reading run a second time."""
    import dataclasses

    spec_path, storage = _forged_journal(tmp_path, [
        {"params": {}, "values": [1.0, 1.0], "attrs": {"full_values": [3.0, 9.0]}},  # the stated reading
        {"params": {"partition": "iid"}, "values": [1.0, 1.0], "attrs": {"full_values": [1.0, 2.0]}},  # the front
        {"params": {"width": 16}, "values": [1.0, 1.0], "attrs": {"full_values": [2.0, 8.0]}},
        {"params": {"batch_size": 16}, "values": [1.0, 1.0], "attrs": {"full_values": [1.5, 4.0]}},
        {"params": {"width": 16, "batch_size": 16}, "values": [1.0, 1.0]},  # screened only: never picked
    ])
    spec = dataclasses.replace(study.load_spec(spec_path.read_text()), rerun_points=3)
    picked = study.pick(spec, search.read_study(storage, study.study_name(spec)))
    assert list(picked) == ["stated", "best1", "best2", "best3"]
    assert picked["best1"]["values"]["partition"] == "iid"
    assert picked["best2"]["values"]["batch_size"] == 16 and picked["best2"]["values"]["width"] == 256
    assert picked["best3"]["values"]["width"] == 16 and picked["best3"]["values"]["batch_size"] == 64


def test_the_conclusion_says_where_the_points_came_from_and_how_many_tables_each_reaches():

    found = _outcome()
    found["search"]["origins"] = {"named": 2, "coverage": 2, "searched": 1}
    found["per_table"] = [{"table": "Table II", "rows": 3, "K_star": 0.5, "accuracy": 2.0},
                          {"table": "Table III", "rows": 3, "K_star": 2.5, "accuracy": 6.0}]
    said = words.conclusion(found)
    assert said.startswith("None of the 5 points evaluated on the screen (2 named, 2 visiting the values of "
                           "partition, 1 proposed by the sampler), 2 of them on every row")
    assert said.endswith("; per table it is within both targets on Table II. The search stopped: the cap.")
    found["reached"] = True
    assert words.conclusion(found).startswith("The reading width 32 reaches Table II within 1 round")


def test_a_study_whose_worker_stopped_mid_trial_says_it_was_cut_short(tmp_path):
    """Tables made while a trial is still running (its worker stopped before the rule did) do not claim
    the rule stopped the search, nor the cap, which the running trial would otherwise fill."""

    spec_path, storage = _forged_journal(tmp_path, [{"attrs": {"screen_closeness": 1.0}},
                                                    {"params": {"width": 16}, "attrs": {"screen_closeness": 2.0}}])
    spec = study.load_spec(spec_path.read_text())
    trials = search.read_study(storage, study.study_name(spec))
    running = optuna.trial.create_trial(state=optuna.trial.TrialState.RUNNING, params={"partition": "iid"},
                                        distributions={"partition": optuna.distributions.CategoricalDistribution(
                                            ["shards2", "iid"])})
    running.number = 2
    table, _, reason = tables.trials_table(spec, [*trials, running])
    assert reason == "cut short, trial 2 left running by a worker that stopped before the rule did"
    assert list(table.state) == ["complete", "complete", "running"]
    _, _, finished = tables.trials_table(spec, trials)
    assert finished == "no sampler proposal lowered the running best by more than 0 in the last 1 of its 2 proposals"


def test_the_floor_sentence_counts_the_settings_the_paper_gives_twice():
    from bladefl.report.calibration import outcome_sentence

    found = _outcome()
    found["floor"] = {"K_star": 0.3, "accuracy": 0.5, "cells": 2}
    assert "the paper gives 2 settings different values in different tables" in outcome_sentence(found, "MNIST")
    found["floor"]["cells"] = 1
    assert "the paper gives 1 setting different values" in outcome_sentence(found, "MNIST")
    del found["floor"]["cells"]  # an outcome written before the count: no number made up
    assert "the paper gives a setting different values" in outcome_sentence(found, "MNIST")


def test_the_front_line_names_a_run_of_tables_as_a_range():
    from bladefl.report.calibration import front_line
    from bladefl.report.paper import table_span

    assert table_span(["Table II", "Table III", "Table IV", "Table V", "Table VI", "Table VII"]) == "Tables II-VII"
    assert table_span(["Table II", "Table III"]) == "Table II, Table III"
    assert table_span(["Table II", "Table IV", "Table V"]) == "Table II, Table IV, Table V"  # a gap: listed
    found = _outcome()
    found["tables"] = ["Table II", "Table III", "Table IV"]
    assert front_line(found, "MNIST").startswith("MNIST (Tables II-IV, 3 rows; 5 points evaluated")


def test_calibration_pick_says_each_role_in_settings_that_differ_from_the_stated(tmp_path, capsys):
    spec_path, storage = _forged_journal(tmp_path, [
        {"params": {}, "attrs": {"full_values": [3.0, 9.0], "point": "stated"}},
        {"params": {"partition": "iid"}, "attrs": {"full_values": [1.0, 2.0], "point": "partition-iid"}},
    ])
    assert main(["calibration-pick", "--spec", str(spec_path), "--storage", str(storage), "--out",
                 str(tmp_path / "picked.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "stated: the stated settings"
    assert out[1] == "best1: trial 1, partition-iid: partition iid" and out[-1] == f"-> {tmp_path / 'picked.json'}"


def test_a_journal_cut_or_padded_at_any_byte_of_its_last_record_is_set_aside_and_the_study_resumes(tmp_path):
    """A worker killed mid-write leaves a journal whose last record is cut: at every byte of a real last
    record (and with padding after a whole one) the torn end is set aside beside the journal, the study
    reopens with the trials recorded before it, and a new trial appended after it reads back."""
    storage = tmp_path / "whole.journal"
    st = search.open_study(storage, "s", 0)
    dist = {"x": optuna.distributions.CategoricalDistribution([1, 2, 3])}
    for x in (1, 2):
        st.add_trial(optuna.trial.create_trial(params={"x": x}, distributions=dist, values=[x, 1.0]))
    whole = storage.read_bytes()
    last = whole.rstrip(b"\n").rfind(b"\n") + 1  # where the last record starts
    cuts = [(whole[:i], "cut") for i in range(last + 1, len(whole))] + [(whole + b"\x00" * 7, "padded"),
                                                                        (whole + b"{not json\n", "padded")]
    for n, (data, how) in enumerate(cuts):
        path = tmp_path / f"{n}.journal"
        path.write_bytes(data)
        aside = search.set_aside_torn_tail(path)
        assert aside is not None and aside.read_bytes() == data[len(whole) if how == "padded" else last:], (n, how)
        resumed = search.open_study(path, "s", 0)
        kept = len(resumed.trials)
        resumed.add_trial(optuna.trial.create_trial(params={"x": 3}, distributions=dist, values=[3.0, 1.0]))
        read = search.read_study(path, "s")
        assert [t.params["x"] for t in read][-1] == 3 and len(read) == kept + 1, (n, how)
    assert search.set_aside_torn_tail(storage) is None  # a whole journal is left as it is
    assert storage.read_bytes() == whole


def test_the_screens_rank_agreement_with_every_row_is_kendalls_tau_over_the_points_scored_on_both():
    import pandas as pd
    from scipy import stats

    from bladefl.experiments.calibration.tables import screen_agreement
    from bladefl.report.calibration import agreement_words

    screen = [1.0, 2.0, 3.0, 4.0, 5.0, 9.0]
    full = [1.5, 2.5, 2.0, 4.5, 6.0, math.nan]  # the last was never promoted
    done = pd.DataFrame({"promoted": [True] * 5 + [False], "K_star_distance": screen, "full_K_star_distance": full,
                         "accuracy_distance": screen, "full_accuracy_distance": [3.0] * 5 + [math.nan],
                         "closeness": screen, "full_closeness": full})
    found = screen_agreement(done)
    expected = stats.kendalltau(screen[:5], full[:5])
    assert found["points"] == 5 and found["K_star"] == {"tau": expected.statistic, "p": expected.pvalue}
    assert found["accuracy"] == {"tau": None, "p": None}  # every row's distance the same: no ranking to agree with
    assert "K* 0.80 (p = 0.083)" in agreement_words({"screen_agreement": found})
    two = screen_agreement(done.iloc[:2])
    assert two["closeness"]["tau"] is None and "too few" in agreement_words({"screen_agreement": two})


def test_the_papers_own_spread_per_table_is_its_largest_at_a_setting_shared_with_another_table():
    rows = evaluation.rows(GRID, TABLES, [], "mnist")
    spreads = evaluation.table_spreads(rows)
    repeated = evaluation.repeated_cells(rows)
    for table, (k_spread, acc_spread) in spreads.items():
        mine = repeated[repeated.rows.str.contains(f"{table} ", regex=False)]
        assert len(mine) and acc_spread == pytest.approx(mine.accuracy_spread.max())
        assert k_spread == pytest.approx(mine.K_star_spread.max()) or math.isnan(mine.K_star_spread.max())
    assert set(spreads) == {t for cell in repeated.rows for t in
                            (part.split(" ")[0] + " " + part.split(" ")[1] for part in cell.split("; "))}


@pytest.mark.parametrize("dataset", ["mnist", "fashion_mnist"])
def test_the_calibrated_engines_are_the_kept_studys_picks(dataset):
    """config/engines/calibrated-<dataset>.yaml is the kept study's pick (reference/calibration-cpu's
    outcome.json), byte for byte the engine its analysis wrote, and that engine is the pick's values
    made a run config again from the kept spec (tables.engine_yaml): an engine file the study never chose
    (a stale reading) fails here."""
    kept = REPO / "reference/calibration-cpu/results/calibration" / dataset
    engine = REPO / "config/engines" / f"calibrated-{dataset}.yaml"
    assert engine.read_bytes() == (kept / f"calibrated-{dataset}.yaml").read_bytes()
    outcome = json.loads((kept / "outcome.json").read_text())
    spec = study.load_spec((kept / "spec.json").read_text())
    again = yaml.safe_load(tables.engine_yaml(spec, outcome["calibrated"]["values"], dataset, ""))
    assert yaml.safe_load(engine.read_text()) == again
    run = load_config(engine)
    values = outcome["calibrated"]["values"]
    assert run.model.hidden == values["width"] and run.partition.n == values["samples"]
    assert run.train.batch_size == values["batch_size"] and run.lazy.noise == values["lazy_noise"]


def test_the_calibrated_engine_is_read_per_dataset(tmp_path):
    """`engine: calibrated` (no calibrated.yaml) is each dataset's own file; without a dataset it is refused,
    never read as another dataset's reading."""
    from bladefl.experiments.plan import workflow_config as wc

    config = {"engine": "calibrated", "datasets": ["mnist", "fashion_mnist"]}
    assert wc.per_dataset("calibrated") and not wc.per_dataset("paper")
    assert "calibrated" in wc.available_engines()
    assert wc.engine_path(config, "mnist").name == "calibrated-mnist.yaml"
    assert wc.engine(config, "fashion_mnist").model.hidden == load_config(
        REPO / "config/engines/calibrated-fashion_mnist.yaml").model.hidden
    with pytest.raises(wc.ConfigError, match="given per dataset"):
        wc.engine(config)
    # each dataset's partition is its own engine's (MNIST 4 classes per client, Fashion-MNIST 4 shards)
    assert {wc.partition_spec(config, 20, None, d).scheme for d in config["datasets"]} == {"classes", "shards"}
    assert wc.engine_path({"engine": "paper"}, "mnist").name == "paper.yaml"


def test_a_file_that_is_not_a_journal_is_refused_naming_its_line_and_never_truncated(tmp_path):
    """``--storage`` given a config file, a journal with a foreign record, or one cut in its middle: each is
    refused before anything reads or writes it, by one line naming the file and the line; the file is left
    as it was (a config file was taken for a torn journal, truncated to 0 bytes and a study started in it)."""
    storage = tmp_path / "whole.journal"
    st = search.open_study(storage, "s", 0)
    dist = {"x": optuna.distributions.CategoricalDistribution([1, 2, 3])}
    for x in (1, 2):
        st.add_trial(optuna.trial.create_trial(params={"x": x}, distributions=dist, values=[x, 1.0]))
    lines = storage.read_bytes().splitlines(keepends=True)
    foreign = lines[1].replace(b'"study_id":0', b'"study_id":7')
    cases = {"config": (b"datasets: [mnist]\nt_sum: 100\n", 1),
             "one-line-config": (b"engine: paper", 1),
             "foreign": (b"".join([lines[0], foreign, *lines[2:]]), 2),
             "cut-middle": (b"".join([lines[0], lines[1][:20] + b"\n", *lines[2:]]), 2),
             "first-not-a-study": (b"".join(lines[1:]), 1)}
    for name, (data, line) in cases.items():
        path = tmp_path / f"{name}.journal"
        path.write_bytes(data)
        for call, args in ((search.open_study, (path, "s", 0)), (search.read_study, (path, "s"))):
            with pytest.raises(ValueError) as raised:
                call(*args)
            said = str(raised.value)
            assert f"{path}, line {line}:" in said and "\n" not in said, (name, said)
            assert path.read_bytes() == data, name  # nothing truncated, nothing set aside
        assert not list(tmp_path.glob(f"{name}.journal.torn-*")), name
    cut_first = tmp_path / "cut-first.journal"  # a first write cut short is a torn journal, set aside
    cut_first.write_bytes(lines[0][:15])
    assert search.set_aside_torn_tail(cut_first) is not None and cut_first.read_bytes() == b""
