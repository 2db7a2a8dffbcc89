"""The calibration study: the space's readings as run configs, the engine's new readings (s minibatch
steps, the step's scale, the lazy noise over the model), the rows and their K windows, the Pareto front
and the trials that count, a killed study resumed without repeating a finished trial (real data, slow),
and the smoke study through the workflow with its page (slow), dry runs of the whole study on the GPU
and SLURM profiles."""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import torch
import yaml

from bladefl.experiments.calibration import evaluation, search, study
from bladefl.experiments.calibration.space import Point, space
from bladefl.fl import lazy, mlp, trainer
from bladefl.fl.run_config import RunConfig, from_dict, load_config
from conftest import copy_workflow, dry_run_once, snakemake, venv_env

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
    assert (cfg.partition.scheme, cfg.partition.dirichlet_alpha, cfg.partition.n) == ("dirichlet", 0.3, 256)
    assert (cfg.train.iteration, cfg.train.steps, cfg.train.batch_size, cfg.train.eta_scale) == ("steps", 4, 16, 8)
    assert (cfg.normalize, cfg.model.hidden, cfg.model.activation, cfg.lazy.noise) == (False, 32, "none", "model")
    assert cfg.train.step_size == pytest.approx(0.08)
    stated = load_config(REPO / "config/engines/paper.yaml", sp.stated.sets())
    assert stated == load_config(REPO / "config/engines/paper.yaml")  # the stated reading is the paper engine
    # the named points come first, the stated one first of all; a point's key depends on its values only
    assert [p.name for p in sp.points][:2] == ["stated", "partition-classes4"]
    assert Point(dict(point.values)).key == point.key != sp.stated.key


@pytest.mark.parametrize("change, message", [
    ({"space": {"colour": {"values": ["red"], "stated": "red"}}}, "calibration.space.colour: not an axis"),
    ({"space": {"partition": {"values": ["shards2", "halves"], "stated": "shards2"}}},
     "calibration.space.partition: each value"),
    ({"space": {"width": {"values": [32, 64], "stated": 256}}}, "calibration.space.width.stated must be one of"),
    ({"points": {"x": {"width": 7}}}, "calibration.points.x.width must be one of"),
    ({"first": ["nobody"]}, "calibration.first: 'nobody' is not a point"),
    ({"tables": ["Table IX"]}, "calibration.tables: 'Table IX' is not one of"),
    ({"space": {"partition": {"values": ["shards2", "classes3"], "stated": "shards2"},
                "samples": {"values": [512], "stated": 512}}, "points": {}},
     r"partition classes3 with samples 512 \(N=10\): partition.n must be divisible"),
])
def test_a_bad_calibration_block_is_refused_naming_the_field(change, message):
    block = {**FULL["calibration"], **change}
    text = study.spec_json({**GRID, "calibration": block}, TABLES, "mnist", "config/engines/paper.yaml", "data/raw")
    with pytest.raises(ValueError, match=message):
        study.load_spec(text)


def test_fields_added_later_are_recorded_only_where_they_leave_their_default():
    record = RunConfig().to_dict()
    assert "steps" not in record["train"] and "eta_scale" not in record["train"] and "noise" not in record["lazy"]
    assert from_dict(record) == RunConfig()  # a run recorded before them is a run of the same config
    changed = from_dict({"train": {"iteration": "steps", "steps": 3}, "lazy": {"noise": "model"}}).to_dict()
    assert changed["train"]["steps"] == 3 and changed["lazy"]["noise"] == "model"
    with pytest.raises(ValueError, match=r"train.eta x train.eta_scale must be < 1"):
        from_dict({"train": {"eta": 0.1, "eta_scale": 16}})
    with pytest.raises(ValueError, match=r"lazy.noise must be one of \['parameter', 'model'\]"):
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


def test_rows_are_the_tables_cells_with_windows_around_the_papers_k_star():
    rows = evaluation.rows(GRID, TABLES, ["Table II", "Table III"], "mnist")
    assert [(r.table, r.value) for r in rows] == [("Table II", 1), ("Table II", 2), ("Table II", 5),
                                                  ("Table III", 6), ("Table III", 8), ("Table III", 12)]
    first = rows[0]  # Table II, alpha = 1 at beta = 6: tau alpha K* = 40 -> K* = (100 - 40) / 6 = 10
    assert first.paper_K_star == 10 and first.paper_accuracy == 87.44
    assert first.k_values(100, 2) == [8, 9, 10, 11, 12]
    assert first.k_values(100, None) == list(range(1, 15))  # every feasible K: floor(100 / 7)
    assert first.k_values(30, 2) == [1, 2, 3, 4]  # no K of the window is feasible: every K
    ks = evaluation.cell_ks([rows[0], rows[3]], 100, 1)  # the same cell in both tables: one run, the union
    assert list(ks.values()) == [[9, 10, 11]]


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
    trials = [_trial(0, (1.0, 1.0)), failed, _trial(2, (1.0, 2.0), retry_of=1)]
    assert [t.number for t in search.counted(trials)] == [0, 2]


def _smoke_spec(tmp_path: Path, data_root: Path) -> Path:
    text = study.spec_json(SMOKE, TABLES, "mnist", str(REPO / "config/engines/paper.yaml"), str(data_root))
    (tmp_path / "spec.json").write_text(text)
    return tmp_path / "spec.json"


def _journal_states(spec_path: Path, storage: Path) -> list[optuna.trial.FrozenTrial]:
    spec = study.load_spec(spec_path.read_text())
    return search.open_study(storage, study.study_name(spec), spec.seed).get_trials(deepcopy=False)


@pytest.mark.slow
def test_a_killed_study_resumes_without_repeating_a_finished_trial(tmp_path, data_root):
    spec_path = _smoke_spec(tmp_path, data_root)
    storage, trials_dir = tmp_path / "study.journal", tmp_path / "trials"
    cmd = [str(Path(sys.executable).parent / "bladefl"), "calibrate", "--spec", str(spec_path), "--storage",
           str(storage), "--trials-dir", str(trials_dir), "--threads", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=venv_env())
    deadline = time.monotonic() + 300
    try:  # kill it once a trial is finished and the next one running
        while time.monotonic() < deadline:
            states = [t.state for t in _journal_states(spec_path, storage)] if storage.exists() else []
            if optuna.trial.TrialState.COMPLETE in states and optuna.trial.TrialState.RUNNING in states:
                break
            assert proc.poll() is None, "the study finished before it could be killed"
            time.sleep(0.2)
        else:
            pytest.fail("no trial finished in 300 s")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    before = {t.number: t for t in _journal_states(spec_path, storage)}
    finished = [n for n, t in before.items() if t.state == optuna.trial.TrialState.COMPLETE]
    running = [n for n, t in before.items() if t.state == optuna.trial.TrialState.RUNNING]
    summaries = {p: p.stat().st_mtime_ns for p in trials_dir.rglob("summary.json")}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=venv_env())
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"trials {running} were left running" in done.stdout
    after = _journal_states(spec_path, storage)
    spec = study.load_spec(spec_path.read_text())
    complete = [t for t in after if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(search.counted(after)) == spec.target == len(complete)
    for n in finished:  # finished trials are kept as they were, and not run again
        assert after[n].state == optuna.trial.TrialState.COMPLETE and after[n].values == before[n].values
    named = [t.user_attrs["point"] for t in complete if t.user_attrs.get("point")]
    assert sorted(named) == sorted(p.name for p in spec.space.points)  # each named point completed once
    retried = [t for t in after if t.user_attrs.get("retry_of") in running]
    assert len(retried) == 1 and retried[0].state == optuna.trial.TrialState.COMPLETE
    assert all(p.stat().st_mtime_ns == m for p, m in summaries.items())  # finished runs are reused, not rewritten


@pytest.mark.slow
@pytest.mark.snakemake
def test_the_smoke_study_runs_through_the_workflow_with_its_page(tmp_path, data_root):
    work = copy_workflow(tmp_path)
    (work / "data").mkdir()
    (work / "data" / "raw").symlink_to(data_root.resolve(), target_is_directory=True)
    proc = snakemake(work, "--cores", "2", "--configfile", "config/calibration_smoke.yaml")
    assert proc.returncode == 0, proc.stderr[-3000:]
    cal = work / "results/calibration-smoke/calibration/mnist"
    trials = __import__("pandas").read_csv(cal / "trials.csv")
    assert (trials.state == "complete").sum() == 4 and set(trials.point.dropna()) == {"stated", "partition-iid"}
    assert (trials.run_seconds > 0).all()  # each trial's cost, from its runs' own records
    outcome = json.loads((cal / "outcome.json").read_text())
    assert outcome["second_pass"]["draws"] == 2 and outcome["calibrated"]["role"] == "best1"
    second = __import__("pandas").read_csv(cal / "second_rows.csv")
    assert set(second.role) == {"stated", "best1"} and (second.draws == 2).all()
    engine = load_config(cal / "calibrated-mnist.yaml")  # the calibrated reading runs as an engine
    assert engine.dataset == "mnist"
    page = (work / "results/calibration-smoke/report/mnist/07_calibration.html").read_text()
    assert "What the study found" in page and "Pareto front" in page
    index = (work / "results/calibration-smoke/report/index.html").read_text()
    assert "07_calibration.html" in index and "calibrated reading" in index
    own = work / "results/calibration-smoke"  # the study runs only its own readings, in its own folder
    assert not (work / "results/runs").exists() and not (own / "runs").exists()
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
