"""``bladefl bench --fixed-work``: where a whole run's time goes, run by run, in the workflow's own cells
and engines, at the thread count a grid job runs with.

For each engine (the paper's, and each dataset's calibrated reading) and three cells of the workflow's
grid (config/config.yaml: the base cell; the first lazy cell of another sweep than the bound's, with the
workflow's detectors; the first cell of the bound's sweep, which measures the bound's constants), one
run over every K, computed as ``bladefl run`` computes it (:func:`bladefl.fl.engine.run_group`), is
measured by the engine's own clock (:class:`bladefl.fl.records.GroupTimes`: the thread that drives the
training, its parts by wall time) and by its process CPU (every thread, the chain's too):

- the per-round fixed work (evaluation, detection, the bound's constants) as a share of the run's wall,
  held to :data:`FIXED_OF_RUN` per engine (at one thread on a quiet machine the driving thread's wall is
  its CPU; on a busy one the parts and the wall stretch together, where a share of the process CPU
  would count waits in the parts and could pass 100%);
- evaluation's floor: its first layer (every global model on every client's samples and the test set)
  at this core's sgemm rate for that product, as a share of the run's wall: the least evaluation can
  take while it computes what the rounds record;
- the training's rate (its FLOPs over its seconds) over the sgemm rate of the step's own products
  (:func:`bladefl.experiments.runs.timing.gemm_rate`, the best of five timings of ten steps' products
  each, taken after the run: on a shared host a single timing may catch a slow moment), held to
  :data:`TRAINING_OF_GEMM`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from bladefl.experiments.plan import workflow_config
from bladefl.experiments.plan.grid import Cell
from bladefl.experiments.runs.timing import gemm_rate, step_flops, timeit
from bladefl.fl import mlp, trainer
from bladefl.fl.engine import RunSpec, load_client_data, run_group
from bladefl.fl.run_config import RunConfig, load_config
from bladefl.fl.stacked import model_shape

FIXED_PARTS = ("evaluation", "detection", "constants")
FIXED_OF_RUN = {"paper": 0.06, "calibrated": 0.10}  # the fixed work's share of a run (its wall), at most
TRAINING_OF_GEMM = 0.85  # the training's rate over the sgemm rate of its own shapes, at least


@dataclass(frozen=True)
class RunCost:
    """One run's wall (the engine's clock), its process CPU, and where the wall went (seconds);
    ``floor``: evaluation's first layer at the sgemm rate;
    ``training_rate`` and ``gemm_rate``: GFLOP/s of the training and of the step's products alone."""

    engine: str
    dataset: str
    cell: str
    wall: float
    cpu: float
    train: float
    parts: dict[str, float]
    floor: float
    training_rate: float
    gemm_rate: float

    @property
    def fixed_share(self) -> float:
        return sum(self.parts.values()) / self.wall

    @property
    def training_of_gemm(self) -> float:
        return self.training_rate / self.gemm_rate


def cells(config: Mapping[str, Any]) -> list[tuple[str, Cell]]:
    """The workflow's base cell, the first lazy cell of a sweep other than the bound's and the bound's
    first cell (each run as the grid runs it: a lazy cell that is also a bound cell measures the constants)."""
    bound = workflow_config.bound_cells(config)
    lazy = [m.cell for m in workflow_config.lazy_members(config) if m.sweep != config.get("bound_sweep", "fig3")]
    base = Cell(**{k: v for k, v in config["base"].items() if k in Cell.__dataclass_fields__})
    return [("base", base)] + ([("lazy", lazy[0])] if lazy else []) + ([("bound", bound[0])] if bound else [])


def run_config(config: Mapping[str, Any], engine: str, dataset: str, cell: Cell, data_dir: str) -> RunConfig:
    """The run of ``cell`` a grid job of ``engine`` computes (seed 0, its partition draw)."""
    engine_config = {**config, "engine": engine}
    return load_config(str(workflow_config.engine_path(engine_config, dataset)),
                       [*workflow_config.run_sets(engine_config, cell, dataset, 0), f"data_dir={data_dir}",
                        "device=cpu"])


def step_batch(cfg: RunConfig) -> float:
    """Samples per SGD step, on average over an iteration: the samples an iteration reads
    (:func:`bladefl.fl.trainer.span`) over its minibatches (``steps`` take whole minibatches, cycling through
    the client's samples)."""
    n, B = cfg.partition.n, cfg.train.batch_size
    if cfg.train.iteration == "full_batch":
        return float(n)
    width = trainer.span(n, B, cfg.train.steps if cfg.train.iteration == "steps" else None)
    return width / -(-width // B)


def first_layer_seconds(samples: int, shape: mlp.Shape, repeat: int = 3) -> float:
    """Seconds of one model's first layer on ``samples`` samples at this core's sgemm rate (the best of
    ``repeat``)."""
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(samples, shape.d, generator=g), torch.randn(shape.d, shape.h, generator=g)

    def product() -> None:
        x @ w

    return timeit(product, repeat)


def measure(config: Mapping[str, Any], engine: str, dataset: str, label: str, cell: Cell, data_dir: str
            ) -> RunCost:
    """One run (every K of the cell) of ``engine`` on ``dataset``, measured (see the module's docstring)."""
    cfg = run_config(config, engine, dataset, cell, data_dir)
    data = load_client_data(cfg)
    shape = model_shape(cfg)
    start = time.process_time()
    times = run_group([RunSpec(cfg, K) for K in cfg.time.K], data).times
    cpu = time.process_time() - start
    batch = step_batch(cfg)
    samples = data.N * data.n + data.x_test.shape[0]
    floor = times.run_rounds * first_layer_seconds(samples, shape)
    parts = {p: getattr(times, p) for p in FIXED_PARTS}
    return RunCost(engine, dataset, label, times.wall, cpu, times.train, parts, floor,
                   times.model_steps * step_flops(1, round(batch), shape) / times.train / 1e9,
                   gemm_rate(data.N, round(batch), shape, 5, calls=10))


def plan(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(engine, dataset) pairs measured: the paper engine on the workflow's first dataset, and the
    calibrated reading on each of its datasets."""
    datasets = list(config["datasets"])
    return [("paper", datasets[0])] + [("calibrated", d) for d in datasets]


def lines(costs: list[RunCost]) -> list[tuple[str, float, float, bool]]:
    """(label, value, target, at least) of every row: the fixed work's share and the training's rate."""
    out = []
    for c in costs:
        name = f"{c.engine} {c.dataset} {c.cell}"
        out.append((f"fixed work / run, {name}", c.fixed_share, FIXED_OF_RUN[c.engine], False))
        out.append((f"training / sgemm rate, {name}", c.training_of_gemm, TRAINING_OF_GEMM, True))
    return out


def table(costs: list[RunCost]) -> str:
    """The measured runs, a row each."""
    head = (f"{'engine':<10} {'dataset':<13} {'cell':<6} {'wall s':>7} {'CPU s':>6} {'train':>6} "
            + " ".join(f"{p:>10}" for p in FIXED_PARTS)
            + f" {'fixed':>6} {'eval floor':>10} {'train GFLOP/s':>13} {'sgemm':>6}")
    rows = [head]
    for c in costs:
        shares = " ".join(f"{c.parts[p] / c.wall:>10.1%}" for p in FIXED_PARTS)
        rows.append(f"{c.engine:<10} {c.dataset:<13} {c.cell:<6} {c.wall:>7.1f} {c.cpu:>6.1f} {c.train / c.wall:>6.1%} "
                    f"{shares} {c.fixed_share:>6.1%} {c.floor / c.wall:>10.1%} {c.training_rate:>13.1f} "
                    f"{c.gemm_rate:>6.1f}")
    return "\n".join(rows)


def bench_main(data_dir: str, threads: int) -> int:
    """``bladefl bench --fixed-work``: every (engine, dataset) of :func:`plan` in every cell of :func:`cells`
    of the workflow's config, measured at ``threads`` torch threads, printed with the targets."""
    from bladefl.experiments.plan import config_checks
    from bladefl.experiments.runs.targets import Target, print_lines

    torch.set_num_threads(threads)
    config = config_checks.read_checked([])
    costs = []
    for engine, dataset in plan(config):
        for label, cell in cells(config):
            costs.append(measure(config, engine, dataset, label, cell, data_dir))
            print(f"  {engine} {dataset} {label} ({cell.key}): {costs[-1].wall:.1f} s, {costs[-1].cpu:.1f} CPU-s",
                  flush=True)
    print(f"\nwhole runs (every K), {torch.get_num_threads()} thread(s); shares of each run's wall (the engine's "
          f"clock)\n{table(costs)}")
    return print_lines([(label, value, Target(target, at_least)) for label, value, target, at_least in lines(costs)])
