"""What each heavy job of a workflow config does, in units its cost follows, so that benchmarks
measured on one grid (the smoke's) size the jobs of another (the paper's): `bladefl resources
--measured config/smoke.yaml --for config/paper.yaml`.

- **Time** follows the samples a job trains on: a run's clients x its local iterations over every K
  (sum of K x tau_K) x the samples one local iteration reads (n for an epoch or a full-batch step,
  steps x batch for ``train.iteration: steps``); a stacked group's, the sum over its runs; a
  reference optimum's, the pooled N x n samples of its draw.
- **Memory** follows the numbers a job holds: per client its n images (784 values each) and a
  model (P values); a stacked group holds each of its draws' clients once and every run's models.
  A job's peak is taken as a fixed part (the process, the libraries, the test set) plus ``COPIES``
  x 4 bytes per number held (float32 data, uploads, the global model and a step's gradients); the
  fixed part is what a measured job's peak leaves after its own share.

Each job is named as its benchmark file is (``<rule>/<name>.tsv`` under the benchmarks folder)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bladefl.data.datasets import get_spec

COPIES = 4  # float32 copies of what a job holds at its peak (data, uploads, global model, gradients)
SCALED_RULES = ("run_cell", "run_group", "reference")


@dataclass(frozen=True)
class JobWork:
    """One job: its rule, its benchmark file's name under the rule's folder, the samples it trains
    on and the numbers it holds."""

    rule: str
    name: str
    samples: float
    numbers: float

    @property
    def held_mb(self) -> float:
        return COPIES * 4 * self.numbers / 1e6


def run_work(cfg: Any) -> tuple[float, float, float]:  # noqa: ANN401 - RunConfig (fl wing)
    """(samples trained on, data numbers held, model numbers held) of one run of ``cfg`` over every K
    its time budget allows."""
    from bladefl.fl.stacked import model_shape
    from bladefl.fl.timemodel import allocation

    t, p = cfg.time, cfg.partition
    per_iteration = cfg.train.steps * cfg.train.batch_size if cfg.train.iteration == "steps" else p.n
    iterations = sum(allocation(int(K), t).iterations for K in t.K)
    pixels = get_spec(cfg.dataset).pixels
    return float(p.N * iterations * per_iteration), float(p.N * p.n * pixels), float(p.N * model_shape(cfg).size)


def grid_jobs(config: Mapping[str, Any]) -> list[JobWork]:
    """Every run, group and reference job of a workflow ``config`` (as Snakemake reads it, layered
    on config/config.yaml, the schema's defaults filled in), with the work each does."""
    from bladefl.experiments.plan import run_id
    from bladefl.experiments.plan import workflow_config as wc
    from bladefl.experiments.plan.config_checks import with_defaults
    from bladefl.fl.run_config import load_config

    config = with_defaults(config)
    engine = str(config.get("engine", "paper"))
    seeds = [int(s) for s in config.get("seeds", [0])]
    runs: dict[tuple[str, str], tuple[float, float, float]] = {}  # per dataset and cell: a seed's work is any seed's
    jobs = []
    for dataset in config.get("datasets", []):
        for cell in wc.all_cells(config):
            cfg = load_config(wc.engine_path(config, dataset), wc.run_sets(config, cell, dataset, seeds[0]))
            samples, data, models = run_work(cfg)
            runs[(dataset, cell.key)] = (samples, data, models)
            jobs += [JobWork("run_cell", run_id.folder(engine, dataset, cell.key, s), samples, data + models)
                     for s in seeds]
        for cell in wc.bound_cells(config):
            for seed in seeds:
                spec = wc.partition_spec(config, cell.N, seed, dataset)
                jobs.append(JobWork("reference", f"{engine}/{dataset}/{spec.key}", float(spec.N * spec.n),
                                    float(spec.N * spec.n * get_spec(dataset).pixels)))
    for group in wc.partition_jobs(config):  # its draws' clients held once, every run's models stacked
        stacked = [runs[(group.dataset, c)] for c in group.cells for _ in group.seeds]
        data = len(group.draws) * max(d for _, d, _ in stacked)
        jobs.append(JobWork("run_group", f"{engine}/{group.name}", sum(w for w, _, _ in stacked),
                            data + sum(m for _, _, m in stacked)))
    return list({(j.rule, j.name): j for j in jobs}.values())  # a draw's reference once


__all__ = ["COPIES", "JobWork", "SCALED_RULES", "grid_jobs", "run_work"]
