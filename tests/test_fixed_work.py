"""``bladefl bench --fixed-work``'s parts: the cells it picks from a workflow config, the run it computes for a
cell (the grid's own run), and what it reads of the engine's clock (one tiny real run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bladefl.experiments.plan import config_checks, workflow_config
from bladefl.experiments.plan.grid import Cell
from bladefl.experiments.runs import fixed_work

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def smoke_config() -> dict:
    return config_checks.read_checked([ROOT / "config/smoke.yaml"])


def test_the_cells_are_the_base_a_lazy_cell_of_another_sweep_and_the_bound(smoke_config):
    picked = dict(fixed_work.cells(smoke_config))
    assert list(picked) == ["base", "lazy", "bound"]
    assert picked["base"] == Cell(alpha=1, beta=10, N=4, eta=0.05)
    assert picked["lazy"] == Cell(alpha=1, beta=10, N=4, eta=0.05, lazy_ratio=0.25, sigma2=0.01)  # lazy_ratio's
    assert picked["bound"] == workflow_config.bound_cells(smoke_config)[0] == Cell(beta=10, N=4, eta=0.1)


def test_each_cell_runs_as_the_grid_runs_it(smoke_config, data_root):
    cells = dict(fixed_work.cells(smoke_config))
    lazy = fixed_work.run_config(smoke_config, "paper", "mnist", cells["lazy"], str(data_root))
    assert lazy.model.hidden == 256 and lazy.partition.n == 64 and lazy.partition.N == 4  # the paper engine
    assert lazy.lazy.detectors == tuple(smoke_config["detection"]["detectors"])
    assert lazy.measure.constants  # the smoke grid's fig3 holds this cell too: the grid measures it there
    bound = fixed_work.run_config(smoke_config, "calibrated", "fashion_mnist", cells["bound"], str(data_root))
    assert bound.measure.constants and bound.model.hidden == 64 and bound.train.iteration == "steps"
    assert fixed_work.step_batch(bound) == 128  # whole minibatches, cycling through the 64 samples
    assert fixed_work.step_batch(lazy) == 64


def test_a_measured_run_splits_its_cpu_into_training_and_the_fixed_work(smoke_config, data_root):
    cells = dict(fixed_work.cells(smoke_config))
    cost = fixed_work.measure(smoke_config, "calibrated", "mnist", "lazy", cells["lazy"], str(data_root))
    assert cost.cpu > 0 and 0 < cost.train < cost.wall  # shares of the engine's own clock: below 1 however busy
    assert all(cost.parts[p] > 0 for p in fixed_work.FIXED_PARTS)  # this cell detects and measures the constants
    assert 0 < cost.fixed_share < 1 and 0 < cost.floor and cost.training_rate > 0 and cost.gemm_rate > 0
    (fixed, fixed_target, _), (rate, rate_target, at_least) = [row[1:] for row in fixed_work.lines([cost])]
    assert fixed == cost.fixed_share and rate == cost.training_of_gemm and at_least
    assert rate_target == fixed_work.TRAINING_OF_GEMM and fixed_target == fixed_work.FIXED_OF_RUN["calibrated"]
    assert "calibrated" in fixed_work.table([cost])
