"""The stacked layout of a group of runs: each run's state and its training rows in the group's
one set of parameter tensors (HFTA's "fused array of models": many small trainings as one).

Runs are sorted by their number of local iterations, longest first, so the rows still training
are always a prefix; a run's rows are contiguous, one per training client."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from bladefl.core.rng import numpy_rng, torch_generator
from bladefl.data.datasets import get_spec
from bladefl.fl import lazy, mlp, privacy
from bladefl.fl.chain_executor import ChainLine, new_chain_state
from bladefl.fl.records import KResult, RunSpec
from bladefl.fl.run_config import RunConfig


def model_shape(cfg: RunConfig, d: int | None = None) -> mlp.Shape:
    """The model of ``cfg``'s runs: ``d`` inputs (the dataset's pixels unless given), its hidden width."""
    return mlp.Shape(d=get_spec(cfg.dataset).pixels if d is None else d, h=cfg.model.hidden,
                     activation=cfg.model.activation)


def initial_model(cfg: RunConfig, shape: mlp.Shape) -> torch.Tensor:
    """w0: the same for every K of a run (derived from the run seed)."""
    return mlp.init(shape, torch_generator(cfg.seed, "init"))


@dataclass
class RunState:
    """A feasible run inside a group: its lazy set, the clients it trains (all N with the
    counterfactual, else the honest ones), its rows, its place in the group's table of global
    models, the rounds it has ended and its chain."""

    spec: RunSpec
    result: KResult
    index: int  # row of its global model in the group's table
    N: int
    n: int
    roles: lazy.Roles
    trainers: np.ndarray
    line: ChainLine
    rows: slice = field(default_factory=lambda: slice(0, 0))
    k: int = 0  # rounds ended

    @property
    def draw(self) -> int:
        """The partition draw it trains on (its clients are rows draw N .. draw N + N - 1 of the data)."""
        return self.spec.draw

    @property
    def base(self) -> int:
        return self.spec.draw * self.N

    @property
    def cfg(self) -> RunConfig:
        return self.spec.cfg

    @property
    def K(self) -> int:
        return self.spec.K

    @property
    def tau(self) -> int:
        return self.result.allocation.tau

    @property
    def iterations(self) -> int:
        return self.result.allocation.iterations

    @property
    def sigma_dp(self) -> float:
        return self.result.sigma_dp


def start_run(spec: RunSpec, result: KResult, N: int, n: int) -> RunState:
    cfg = spec.cfg
    roles = lazy.choose_lazy(numpy_rng(cfg.seed, "lazy-set"), N, cfg.num_lazy)
    state = new_chain_state(cfg, spec.K, N, n, result.allocation.tau)
    result.ledger = state.ledger
    result.sigma_dp = privacy.noise_std(cfg.privacy.epsilon, cfg.privacy.delta, cfg.privacy.clip, n, spec.K)
    return RunState(spec=spec, result=result, index=0, N=N, n=n, roles=roles,
                    trainers=np.arange(N) if cfg.lazy.counterfactual else roles.honest,
                    line=ChainLine(state, result, spec.store))


@dataclass(frozen=True)
class Layout:
    """The group's stacked training state: parameters [rows, ...], each row's client and step
    size, and the runs' global models [runs, P] (in the runs' order: longest first)."""

    views: mlp.Views
    clients: torch.Tensor  # [rows] long: each row's client in the group's data (its draw's offset added)
    eta: torch.Tensor  # [rows]
    models: torch.Tensor  # [runs, P]

    @property
    def rows(self) -> int:
        return self.clients.shape[0]


def lay_out(specs: list[tuple[RunSpec, KResult]], N: int, n: int, shape: mlp.Shape,
            device: torch.device) -> tuple[list[RunState], Layout]:
    """Start the feasible runs, sort them longest first, give each its rows; every row starts
    from its run's w0."""
    runs = sorted((start_run(s, r, N, n) for s, r in specs), key=lambda r: -r.iterations)
    row = 0
    for i, run in enumerate(runs):
        run.index = i
        run.rows = slice(row, row + len(run.trainers))
        row += len(run.trainers)
    models = torch.stack([initial_model(r.cfg, shape) for r in runs]).to(device)
    counts = torch.as_tensor([len(r.trainers) for r in runs], device=device)
    stacked = models.repeat_interleave(counts, dim=0)
    clients = torch.as_tensor(np.concatenate([r.base + r.trainers for r in runs]), device=device)
    eta = torch.cat([torch.full((len(r.trainers),), float(r.cfg.train.step_size)) for r in runs]).to(device)
    return runs, Layout(mlp.contiguous_views(stacked, shape), clients, eta, models)
