"""The multi-run engine: runs stacked as one computation give what each gives alone (CPU)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from tests.test_engine import small_cfg, synthetic

from bladefl.experiments.runs import device_check
from bladefl.experiments.runs.runner import CellJob, batches, finished, run_cells
from bladefl.fl import mlp
from bladefl.fl.engine import RunSpec, group_errors, run_group, run_k
from bladefl.fl.execution import resolve

# K, seeds, eta, lazy (with and without the counterfactual), DP, detection with exclusion, another time
# model, an infeasible K: the group the GPU check runs too (bladefl.experiments.runs.device_check.MIXED)
MIXED = [(small_cfg(**over), K) for over, K in device_check.MIXED]


def _same(a, b):
    assert a.status == b.status
    if a.status != "ok":
        return
    assert torch.allclose(a.model, b.model, atol=1e-5, rtol=0), (a.model - b.model).abs().max()
    assert len(a.rounds) == len(b.rounds) == a.K
    for ra, rb in zip(a.rounds, b.rounds, strict=True):
        assert ra.tau == rb.tau and ra.miner == rb.miner and ra.votes == rb.votes
        assert ra.n_in_block == rb.n_in_block and ra.n_excluded == rb.n_excluded
        assert ra.test_accuracy == pytest.approx(rb.test_accuracy, abs=1e-6)
        assert ra.train_loss == pytest.approx(rb.train_loss, abs=1e-5)
        assert (ra.theta == pytest.approx(rb.theta, abs=1e-4)) or (ra.theta != ra.theta and rb.theta != rb.theta)
    assert [d["flag"] for d in a.detections] == [d["flag"] for d in b.detections]


@pytest.mark.parametrize("iteration", ["epoch", "full_batch"])
@pytest.mark.parametrize("block_rows", [0, 3])
def test_a_mixed_group_equals_each_run_alone(iteration, block_rows):
    data = synthetic()
    specs = [RunSpec(small_cfg(**{**_over(cfg), "train": {**_over(cfg)["train"], "iteration": iteration}}), K)
             for cfg, K in MIXED]
    group = run_group(specs, data, resolve("cpu", block_rows=block_rows, threads=3))
    alone = [run_k(s.cfg, data, s.K) for s in specs]
    assert [r.status for r in group.results][-1] == "infeasible"
    for a, b in zip(group.results, alone, strict=True):
        _same(a, b)
    assert group.times.model_steps > 0 and group.times.wall >= group.times.train > 0


def _over(cfg):
    d = cfg.to_dict()
    return {k: d[k] for k in ("train", "time", "lazy", "privacy", "seed")}


def test_group_results_do_not_depend_on_the_order_or_company():
    data = synthetic()
    specs = [RunSpec(cfg, K) for cfg, K in MIXED[:6]]
    forward = run_group(specs, data).results
    backward = run_group(specs[::-1], data).results[::-1]
    pair = run_group(specs[2:4], data).results
    for a, b in zip(forward, backward, strict=True):
        _same(a, b)
        assert [r.block_hash for r in a.rounds] == [r.block_hash for r in b.rounds]
    for a, b in zip(forward[2:4], pair, strict=True):
        _same(a, b)


def test_runs_that_do_not_share_data_are_refused_with_the_field_named():
    errors = group_errors([RunSpec(small_cfg(), 3), RunSpec(small_cfg(partition={"N": 8}), 3),
                           RunSpec(small_cfg(train={"batch_size": 8}), 3)])
    assert len(errors) == 2 and "partition" in errors[0] and "train.batch_size" in errors[1]
    with pytest.raises(ValueError, match="cannot train as one group"):
        run_group([RunSpec(small_cfg(), 3), RunSpec(small_cfg(dataset="fashion_mnist"), 3)], synthetic())


def test_every_partition_field_but_the_seed_is_shared_by_a_group():
    """The group's shared settings come from the partition spec as a whole (was: a hand-kept list, a
    field left out of which let runs on different partitions stack silently): each field of it, the
    seed aside, set otherwise in one run, is named as the reason. The scheme's parameter is the spec's
    `value`, whichever scheme owns it; a parameter of another scheme is not read, so it is no difference."""
    import dataclasses

    from bladefl.data.partition import PartitionSpec
    from bladefl.fl import engine

    other = {"scheme": {"scheme": "iid"}, "N": {"N": 8}, "n": {"n": 32}, "value": {"shards_per_client": 4}}
    fields = [f.name for f in dataclasses.fields(PartitionSpec) if f.name != "seed"]
    assert sorted(other) == sorted(fields)  # a new field needs its own case here
    for name in fields:
        assert f"partition.{name}" in engine.SHARED
        errors = group_errors([RunSpec(small_cfg(), 3), RunSpec(small_cfg(partition=other[name]), 3)])
        assert any(f"partition.{name} is" in e for e in errors), (name, errors)
    assert "partition.seed" not in engine.SHARED
    assert group_errors([RunSpec(small_cfg(), 3), RunSpec(small_cfg(partition={"dirichlet_alpha": 0.1}), 3)]) == []


def test_per_model_step_sizes_equal_one_step_size_per_model():
    shape = mlp.Shape(d=30, h=16)
    data = synthetic()
    w0 = mlp.init(shape, torch.Generator().manual_seed(3)).expand(data.N, -1).clone()
    one = mlp.contiguous_views(w0, shape)
    mlp.sgd_step(one, data.x, data.y, 0.05, shape)
    many = mlp.contiguous_views(w0, shape)
    mlp.sgd_step(many, data.x, data.y, torch.full((data.N,), 0.05), shape)
    for a, b in zip((one.W1, one.b1, one.W2, one.b2), (many.W1, many.b1, many.W2, many.b2), strict=True):
        assert torch.allclose(a, b, atol=1e-6, rtol=0)


def _jobs(tmp_path):
    cfgs = [small_cfg(time={"K": [1, 2, 3]}), small_cfg(seed=1, time={"K": [2, 3]}),
            small_cfg(seed=2, lazy={"ratio": 0.25, "sigma2": 0.01}, time={"K": [1, 3]})]
    return [CellJob(cfg, tmp_path / f"job{i}") for i, cfg in enumerate(cfgs)]


def test_stacked_and_one_at_a_time_write_the_same_folders(tmp_path):
    data = synthetic()
    run_cells(_jobs(tmp_path / "a"), data, resolve("cpu", stack=True, max_rows=8), progress=False)
    run_cells(_jobs(tmp_path / "b"), data, resolve("cpu", stack=False), progress=False)
    for i in range(3):
        a, b = (json.loads((tmp_path / s / f"job{i}" / "summary.json").read_text()) for s in "ab")
        assert a["config"] == b["config"]
        for ka, kb in zip(a["per_K"], b["per_K"], strict=True):
            assert ka["test_accuracy"] == pytest.approx(kb["test_accuracy"], abs=1e-6)
            assert ka["train_loss"] == pytest.approx(kb["train_loss"], abs=1e-5)
        assert "group" in a and "group" not in b


def test_batches_keep_jobs_whole_and_respect_the_row_budget(tmp_path):
    jobs = _jobs(tmp_path)
    plan = batches(jobs, stack=True, max_rows=12)  # N=4: 3 runs per batch at most, whole jobs
    assert [[j for j, _ in b] for b in plan] == [[0, 0, 0], [1, 1], [2, 2]]
    assert [[j for j, _ in b] for b in batches(jobs, stack=True, max_rows=16)] == [[0, 0, 0], [1, 1, 2, 2]]
    for b in plan:
        for j in {j for j, _ in b}:  # every job's K are in one batch
            assert sum(1 for jj, _ in b if jj == j) == len(jobs[j].cfg.time.K)
    assert [len(b) for b in batches(jobs, stack=False, max_rows=12)] == [1] * 7


def test_a_killed_group_resumes_without_redoing_finished_jobs(tmp_path):
    data = synthetic()
    jobs = _jobs(tmp_path)
    stacked = resolve("cpu", stack=True, chain_processes=0)
    run_cells(jobs[:2], data, stacked, progress=False)  # the first two finished before a kill
    (jobs[1].out / "rounds.csv").unlink()  # the kill struck while job 1 was being written
    before = os.stat(jobs[0].out / "summary.json").st_mtime_ns
    out = run_cells(jobs, data, resolve("cpu", stack=True, chain_processes=0), progress=False, resume=True)
    assert out[0] is None and out[1] is not None and out[2] is not None  # job 0 skipped, 1 and 2 run
    assert os.stat(jobs[0].out / "summary.json").st_mtime_ns == before
    assert all(finished(j) for j in jobs)
    changed = CellJob(small_cfg(time={"K": [1, 2]}), jobs[0].out)  # same folder, another config: not finished
    assert not finished(changed)
    rounds = jobs[2].out / "rounds.csv"  # a damaged folder (a metric edited away) is computed again
    rounds.write_text(rounds.read_text().replace("\n1,", "\n1,x", 1).replace(",ok,", ",,", 1))
    assert not finished(jobs[2])


def test_grid_groups_cover_every_run_once_and_the_bound_cells_measure():
    import yaml

    from bladefl.experiments.plan import workflow_config as wc

    config = yaml.safe_load((Path(__file__).resolve().parents[1] / "config/config.yaml").read_text())
    config = {**config, "seeds": [0, 1, 2], "seeds_per_job": 2}
    groups = wc.partition_jobs(config)
    cells = wc.all_cells(config)  # the sweeps' cells and the detection (exclusion) cells
    runs = [(g.dataset, c, s) for g in groups for c in g.cells for s in g.seeds]
    assert len(runs) == len(set(runs)) == len(config["datasets"]) * len(cells) * 3
    assert {len(g.seeds) for g in groups if g.N == 20} == {2, 1}  # seeds 0-1, then 2
    assert {len(g.seeds) for g in groups if g.N != 20} == {3}  # one cell each: every seed in one group
    assert all({cc.N for cc in cells if cc.key in g.cells} == {g.N} for g in groups)
    plan = json.loads(wc.group_plan(config, next(g for g in groups if g.N == 20), "runs"))
    bound = {c.key for c in wc.bound_cells(config)}
    assert {item["out"].split("/")[2] for item in plan if item["reference"]} == bound
    assert all(("measure.constants=true" in item["set"]) == item["reference"] for item in plan)


def test_run_group_refuses_a_plan_that_does_not_share_a_partition_before_any_work(tmp_path, capsys):
    from bladefl.cli import main

    plan = [{"out": str(tmp_path / "a"), "set": ["partition.N=20"]},
            {"out": str(tmp_path / "b"), "set": ["partition.N=10"]}]
    code = main(["run-group", "--plan", json.dumps(plan), "--partition", str(tmp_path / "missing.npy")])
    assert code == 2 and "share the dataset and the partition" in capsys.readouterr().err
    bad = [{"out": str(tmp_path / "a"), "set": ["train.eta=-1"]}]
    code = main(["run-group", "--plan", json.dumps(bad), "--partition", str(tmp_path / "missing.npy")])
    assert code == 2 and "train.eta must be a finite number in (0, 1]" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


def test_chain_in_worker_processes_and_orders_drawn_beside_give_the_same_runs(tmp_path):
    """The chain's GIL-bound part (signatures, race, proof of work, validation) runs in spawned
    worker processes on the uploads' digests, and the epoch orders are drawn by threads while the
    training runs (as on a GPU): every weight, block, vote and ledger is what the chain thread and
    the orders drawn up front give, and the uploads stored by digest are the same files."""
    data = synthetic()
    specs = [RunSpec(cfg, K, tmp_path / f"store{i}") for i, (cfg, K) in enumerate(MIXED)]
    for spec in specs:
        spec.store.mkdir()
    inline = run_group(specs, data, resolve("cpu", threads=2)).results
    stored = {p.name: p.read_bytes() for p in tmp_path.rglob("*.bin")}
    for p in tmp_path.rglob("*.bin"):
        p.unlink()
    workers = run_group(specs, data, resolve("cpu", threads=2, chain_processes=2, draw_threads=2)).results
    for a, b in zip(inline, workers, strict=True):
        _same(a, b)
        if a.status == "ok":
            assert a.ledger.to_dict() == b.ledger.to_dict() and len(b.ledger.blocks) == b.K
            assert [r.block_hash for r in a.rounds] == [r.block_hash for r in b.rounds]
    assert stored and {p.name: p.read_bytes() for p in tmp_path.rglob("*.bin")} == stored


def test_chain_drag_measures_a_loop_beside_real_chain_rounds():
    """The benchmark's drag measurement runs real chain rounds (inline and in a worker process)
    beside a Python loop and returns the loop's relative speed and the chain's wall time."""
    from bladefl.experiments.runs.timing import chain_drag

    for processes in (0, 1):
        speed, wall = chain_drag(N=4, P=1000, runs=2, rounds=2, processes=processes, threads=2)
        assert 0 < speed < float("inf") and wall > 0  # a ratio of two timings: its value depends on the machine's load


TOGETHER = [  # one K and time model: every run ends each round at the same iteration
    (small_cfg(), 3),
    (small_cfg(seed=1, lazy={"ratio": 0.5, "sigma2": 0.01}), 3),
    (small_cfg(seed=2, lazy={"ratio": 0.25, "sigma2": 1e-4, "counterfactual": True}), 3),
    (small_cfg(seed=3, privacy={"epsilon": 50.0, "clip": 5.0}), 3),
    (small_cfg(seed=4, lazy={"ratio": 0.25, "sigma2": 0.01, "detectors": ["gaussian_difference"], "exclude": True}), 3),
    (small_cfg(seed=5, lazy={"ratio": 0.5, "sigma2": 0.01, "detectors": ["gaussian_difference", "near_duplicate"],
                             "exclude": True}), 3),
    (small_cfg(seed=6, lazy={"ratio": 0.25, "sigma2": 0.01, "detectors": ["gaussian_update"]},
               privacy={"epsilon": 80.0, "clip": 5.0}), 3),
    (small_cfg(seed=7, train={"eta": 0.1}), 3),
]


def test_runs_ending_rounds_together_equal_each_run_alone():
    """Lazy clients (with and without the counterfactual), DP, detection with and without exclusion
    and two detecting runs with exclusion end every round in one round end (one computation):
    each run equals the run alone within 1e-5 on every weight, with the same blocks' members."""
    data = synthetic()
    specs = [RunSpec(cfg, K) for cfg, K in TOGETHER]
    group = run_group(specs, data, resolve("cpu", threads=2))
    assert group.times.round_ends == 3 and group.times.run_rounds == 3 * len(specs)  # all together
    for spec, a in zip(specs, group.results, strict=True):
        b = run_k(spec.cfg, data, spec.K)
        _same(a, b)
        for r, s in zip(a.rounds, b.rounds, strict=True):
            assert r.noise_norm == pytest.approx(s.noise_norm, abs=1e-4) or (r.noise_norm != r.noise_norm
                                                                               and s.noise_norm != s.noise_norm)
            assert r.block_hash == s.block_hash
    excluded = [r.n_excluded for res in group.results[4:6] for r in res.rounds]
    assert sum(excluded) > 0  # the detectors did exclude uploads, inside the shared round end
    decided = [d for d in group.results[4].detections if d["detector"] == "gaussian_difference"]
    assert decided and all(d["excluded"] == d["flag"] for d in decided)


def test_the_round_end_keeps_each_runs_random_streams():
    """A lazy run's copies and noise and a DP run's noise come from the run's own streams: the
    round end records the lazy clients' noise norm (about sqrt(P sigma2)) and theta, and a DP run's
    first upload is its clipped trained model plus noise of its sigma_dp."""
    data = synthetic()
    lazy_cfg = small_cfg(seed=2, lazy={"ratio": 0.5, "sigma2": 0.01, "counterfactual": True})
    result = run_group([RunSpec(lazy_cfg, 3), RunSpec(small_cfg(), 3)], data).results[0]
    P = mlp.Shape(d=30, h=16).size
    for record in result.rounds:
        assert record.noise_norm == pytest.approx((P * 0.01) ** 0.5, rel=0.1)
        assert record.theta > 0 and record.n_lazy == 2


def test_blocks_are_collected_when_done_in_round_order():
    """The training never waits for a block: the records still come in each run's round order, each
    block holding exactly the aggregated clients (checked when it is recorded)."""
    data = synthetic()
    seen = []
    specs = [RunSpec(small_cfg(seed=s), K) for s, K in ((0, 3), (1, 2), (2, 4))]
    results = run_group(specs, data, resolve("cpu", threads=3),
                        on_round=lambda r: seen.append((r.K, r.round))).results
    for K in (2, 3, 4):
        assert [k for KK, k in seen if KK == K] == list(range(1, K + 1))
    for r in results:
        assert len(r.ledger.blocks) == r.K and r.ledger.tip == r.rounds[-1].block_hash
        assert [b.hash for b in r.ledger.blocks] == [rec.block_hash for rec in r.rounds]


def test_fedavg_of_many_runs_equals_each_runs_fedavg_over_its_members():
    from bladefl.fl.aggregation import fedavg, fedavg_many

    g = torch.Generator().manual_seed(0)
    models = torch.randn(3, 5, 40, generator=g)
    weights = torch.tensor([[2.0, 2, 2, 2, 2], [1, 0, 3, 0, 1], [0, 0, 0, 4, 0]])
    many = fedavg_many(models, weights)
    for r in range(3):
        keep = weights[r] > 0
        assert torch.allclose(many[r], fedavg(models[r][keep], weights[r][keep]), atol=1e-6)
    assert torch.equal(fedavg_many(models[1:2], weights[1:2])[0], many[1])  # its company changes nothing
    with pytest.raises(ValueError, match="empty block"):
        fedavg(models[0][:0], weights[0][:0])


def test_detectors_on_many_runs_equal_each_run_alone():
    from bladefl.fl.detection import DETECTORS, detect, detect_many

    g = torch.Generator().manual_seed(3)
    runs = []
    for _ in range(3):
        base = torch.randn(6, 3000, generator=g) ** 3 * 0.01
        runs.append(torch.cat([base, base[:2] + 0.05 * torch.randn(2, 3000, generator=g)]))
    uploads, previous = torch.stack(runs), torch.zeros(3, 3000)
    many = detect_many(uploads, previous, DETECTORS)
    for r in range(3):
        for a, b in zip(many[r], detect(uploads[r], previous[r], DETECTORS), strict=True):
            assert a.detector == b.detector and a.flags.tolist() == b.flags.tolist()
            assert np.allclose(a.scores, b.scores, rtol=1e-9)
    assert [d.flags[-2:].all() for d in (m[2] for m in many)] == [True] * 3  # gaussian_difference finds the copies


def test_summaries_record_where_the_wall_went(tmp_path):
    data = synthetic()
    jobs = _jobs(tmp_path)
    stacked = run_cells(jobs, data, resolve("cpu", stack=True, max_rows=8, chain_processes=0), progress=False)
    for summary in stacked:
        parts = summary["group"]["breakdown"]
        assert parts["model_steps"] > 0 and parts["run_rounds"] >= 1 and parts["wall"] > 0
        assert {"train", "uploads", "detection", "aggregate", "evaluation", "chain_wait", "other"} <= set(parts)
        assert summary["seconds"]["write"] >= 0
    single = run_cells(_jobs(tmp_path / "single"), data, resolve("cpu"), progress=False)
    assert single[0]["seconds"]["engine"]["run_rounds"] == 1 + 2 + 3  # its K = 1, 2, 3, summed


def test_the_round_end_proxy_times_real_shared_round_ends():
    """The bench's CPU proxy: R runs end each round together; it times real round ends (a smoke
    test of the measurement: its ratio is the bench's to print, not a test's to assert)."""
    from bladefl.experiments.runs.timing import round_end_seconds

    times = round_end_seconds(4, rounds=3, repeat=1)
    assert times.round_ends == 3 and times.run_rounds == 12 and times.rounds > 0


def test_execution_is_resolved_once_from_the_device_and_the_options():
    cpu, gpu = resolve("cpu"), resolve("cuda") if torch.cuda.is_available() else None
    assert not cpu.stack and cpu.block_rows == 16 and cpu.chain_processes == 0 and cpu.draw_threads == 0
    assert cpu.chain_threads == 2 and cpu.torch_threads is None
    stacked = resolve("cpu", stack=True, threads=3)
    assert stacked.stack and stacked.chain_processes >= 1 and stacked.chain_threads == 3
    assert resolve("cpu", stack=True, chain_processes=0).chain_processes == 0
    assert resolve("cpu", block_rows=0).rows_per_step(40) == 40 and cpu.rows_per_step(40) == 16
    if gpu is not None:
        assert gpu.stack and gpu.block_rows == 0 and gpu.draw_threads > 0


def test_runs_of_several_partition_draws_stack_and_equal_each_run_on_its_draw_alone():
    """Three partition draws (different clients' samples) stacked as one group's data: runs of
    every draw, mixed (lazy clients, DP, detection with exclusion, the bound's constants against a
    reference), train as one computation and each equals the run alone on its own draw's data; the
    runs' data digests are their draws'."""
    from dataclasses import replace

    from bladefl.fl.client_data import ClientData, stack_draws

    pool = synthetic(N=12, seed=11)  # one dataset and test set; three draws of 4 clients from it
    draws = [ClientData(pool.x[4 * i:4 * i + 4], pool.y[4 * i:4 * i + 4], pool.x_test, pool.y_test, f"draw{i}")
             for i in range(3)]
    data = stack_draws(draws)
    assert data.N == 4 and data.draws == 3 and data.sha256(2) == "draw2"
    reference = torch.zeros(mlp.Shape(d=30, h=16).size)
    picks = [(0, {}, 3), (1, {"seed": 1, "lazy": {"ratio": 0.5, "sigma2": 0.01}}, 3), (2, {"seed": 2}, 2),
             (1, {"seed": 3, "privacy": {"epsilon": 50.0, "clip": 5.0}}, 3),
             (2, {"seed": 4, "lazy": {"ratio": 0.25, "sigma2": 0.01, "detectors": ["gaussian_difference"],
                                      "exclude": True}}, 3),
             (0, {"seed": 5, "measure": {"constants": True}, "lazy": {"ratio": 0.25, "sigma2": 0.01,
                                                                      "counterfactual": True}}, 3)]
    specs = [RunSpec(small_cfg(**{**over, "partition": {"seed": d}}), K, None,
                     reference if over.get("measure") else None, d) for d, over, K in picks]
    group = run_group(specs, data, resolve("cpu", threads=2))
    assert group.times.round_ends == 3 + 2  # the K = 3 runs of all three draws end each round together
    for spec, a in zip(specs, group.results, strict=True):
        b = run_k(spec.cfg, draws[spec.draw], spec.K, reference=spec.reference)
        _same(a, b)
        for r, s in zip(a.rounds, b.rounds, strict=True):
            assert r.block_hash == s.block_hash
            assert r.delta_mean == pytest.approx(s.delta_mean, rel=1e-4) or r.delta_mean != r.delta_mean
            assert r.dist_ref == pytest.approx(s.dist_ref, rel=1e-5) or r.dist_ref != r.dist_ref
    other = [replace(s, draw=0) for s in specs]  # the same runs on draw 0's data give other results
    assert not torch.allclose(run_group(other[2:3], data).results[0].model, group.results[2].model)


def test_a_run_on_a_draw_the_data_does_not_hold_or_two_seeds_on_one_draw_is_refused():
    from bladefl.fl.client_data import stack_draws

    data = stack_draws([synthetic(seed=1), synthetic(seed=2)])
    errors = group_errors([RunSpec(small_cfg(partition={"seed": 0}), 3, draw=0),
                           RunSpec(small_cfg(partition={"seed": 5}), 3, draw=2),
                           RunSpec(small_cfg(partition={"seed": 1}), 3, draw=0)], data.draws)
    assert any("draw 2 is not one of the data's 2 partition draws" in e for e in errors)
    assert any("draw 0 holds partition seed 0, this run's is 1" in e for e in errors)
    with pytest.raises(ValueError, match="not one of the data's"):
        run_group([RunSpec(small_cfg(), 3, draw=4)], data)


@pytest.mark.slow
def test_a_reduced_grid_stacked_across_draws_writes_the_run_folders_one_run_at_a_time_writes(tmp_path, data_root):
    """On real data: 2 datasets x 2 cells x 4 partition draws x 1 seed (seed i on draw i), computed
    by `bladefl run-group` as one stacked group per dataset (the runs of all 4 draws together) and
    by `bladefl run` one run at a time: the same run folders, the same numbers, each run's summary
    naming its own draw's indices."""
    from bladefl.cli import main

    keys = [f"classes4_N4_n64_seed{d}" for d in range(4)]
    common = ["--set", f"data_dir={data_root}", "--set", "partition.scheme=classes", "--set", "partition.N=4",
              "--set", "partition.n=64", "--set", "partition.classes_per_client=4", "--set", "time.t_sum=30",
              "--set", "time.K=[1,2]", "--set", "model.hidden=16", "--set", "chain.difficulty_bits=6",
              "--set", "device=cpu"]
    cells = {"a": ["time.beta=10"], "b": ["time.beta=12", "lazy.ratio=0.25", "lazy.sigma2=0.01"]}
    for dataset in ("mnist", "fashion_mnist"):
        parts = tmp_path / "partitions"
        for key in keys:
            assert main(["partition", "--dataset", dataset, "--key", key, "--root", str(data_root),
                         "--out", str(parts)]) == 0
        files = [str(parts / dataset / f"{key}.npy") for key in keys]
        runs = [(cell, d, [*sets, f"seed={d}", f"partition.seed={d}", f"dataset={dataset}"])
                for cell, sets in cells.items() for d in range(4)]
        plan = [{"out": str(tmp_path / "stacked" / dataset / f"{cell}_{d}"), "set": sets} for cell, d, sets in runs]
        assert main(["run-group", "--plan", json.dumps(plan), "--partition", *files, "--quiet", *common,
                     "--chain-processes", "0"]) == 0
        for cell, d, sets in runs:
            out = tmp_path / "single" / dataset / f"{cell}_{d}"
            assert main(["run", "--out", str(out), "--partition", files[d], "--quiet", *common,
                         *[x for s in sets for x in ("--set", s)]]) == 0
            a = json.loads((tmp_path / "stacked" / dataset / f"{cell}_{d}" / "summary.json").read_text())
            b = json.loads((out / "summary.json").read_text())
            assert a["config"] == b["config"] and a["config"]["partition"]["seed"] == d
            assert a["provenance"]["partition_sha256"] == b["provenance"]["partition_sha256"]
            for ka, kb in zip(a["per_K"], b["per_K"], strict=True):
                assert ka["status"] == kb["status"] and ka.get("tip") == kb.get("tip")
                if ka["status"] == "ok":
                    assert ka["train_loss"] == pytest.approx(kb["train_loss"], abs=1e-5)
                    assert ka["test_accuracy"] == pytest.approx(kb["test_accuracy"], abs=1e-6)
        digests = {json.loads((tmp_path / "stacked" / dataset / f"a_{d}" / "summary.json").read_text())
                   ["provenance"]["partition_sha256"] for d in range(4)}
        assert len(digests) == 4  # four draws, four index sets


def test_round_ends_reuse_host_buffers_and_give_the_same_runs(monkeypatch):
    """With the round ends' host copies into buffers kept across round ends (the GPU's default, here
    on the CPU): the same results as without, and the buffers allocated once, at the first round
    end of a group with many (every allocation that could be pinned counted: no other)."""
    import inspect

    import bladefl.fl.host_buffers as hb

    made = []
    real_empty = torch.empty

    def counting_empty(*args, **kwargs):
        caller = Path(inspect.stack()[1].filename).name
        if "pin_memory" in kwargs and caller in ("host_buffers.py", "round_end.py"):  # the round ends' host copies
            made.append(caller)
        return real_empty(*args, **kwargs)

    data = synthetic()
    specs = [RunSpec(cfg, K) for cfg, K in TOGETHER] + [RunSpec(small_cfg(seed=9), 2)]
    plain = run_group(specs, data, resolve("cpu", threads=2)).results
    monkeypatch.setattr(hb.torch, "empty", counting_empty)
    kept = run_group(specs, data, resolve("cpu", threads=2, host_buffers=True))
    monkeypatch.undo()
    assert kept.times.round_ends == 5 and kept.times.host_allocations == hb.DEPTH == len(made)
    for a, b in zip(plain, kept.results, strict=True):
        _same(a, b)
        assert [r.block_hash for r in a.rounds] == [r.block_hash for r in b.rounds]


def test_host_buffers_are_made_once_reused_and_waited_for():
    import threading

    from bladefl.fl.host_buffers import HostBuffers, Lease

    pool = HostBuffers(100, pin=False, depth=2)
    first = pool.take(80)
    second = pool.take(100)
    assert pool.allocations == 2 and first.numel() == second.numel() == 100
    lease = Lease(pool, first, users=2)
    taken = []
    waiter = threading.Thread(target=lambda: taken.append(pool.take(50)))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and not taken  # every buffer in use: the round end waits
    lease.done()
    assert waiter.is_alive()  # one of its two readers is done
    lease.done()
    waiter.join(5)
    assert taken and taken[0] is first and pool.allocations == 2  # the first buffer again, nothing made
    with pytest.raises(ValueError, match="needs 101 host entries"):
        pool.take(101)
