"""BLADE-FL runs: K integrated rounds under the time budget (paper, "Proposed Framework").

Each round: (1) every honest client trains tau local iterations, all clients at once as one
batched computation; lazy clients plagiarize instead; optional local DP; (2) every client signs
its upload as a transaction and receivers verify signatures and digests; (3) the clients race
to mine a proof-of-work block of the accepted transactions; (4) every client validates the
block and it is appended if a majority accepts; (5) every client continues from the FedAvg of
exactly the models in the block.

Many runs that share data train as one stacked computation (:func:`run_group`; :func:`run_k` is
a group of one). Where the parts live:

- :mod:`bladefl.fl.stacked`: each run's state and its rows in the stacked parameters;
- :mod:`bladefl.fl.trainer`: a local iteration of every active row;
- :mod:`bladefl.fl.prefetch`: the epoch orders and the round ends' noise, drawn ahead;
- :mod:`bladefl.fl.round_end`: steps 1 and 5 for every run ending a round at once;
- :mod:`bladefl.fl.chain_executor`: steps 2-4 beside the training;
- :mod:`bladefl.fl.records`: what goes in and comes out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

from bladefl.core.rng import numpy_rng
from bladefl.data.partition import PartitionSpec
from bladefl.fl import mlp, trainer
from bladefl.fl.chain_executor import ChainExecutor, Tamper, chain_job, new_chain_state, worker_pool
from bladefl.fl.client_data import ClientData, client_data, load_client_data, resolve_device
from bladefl.fl.client_test import client_test_subsets
from bladefl.fl.end_plan import EndPlan, noise_job, plan
from bladefl.fl.evaluation import EvalSets, eval_set, evaluate
from bladefl.fl.execution import Execution, default_chain_processes, resolve
from bladefl.fl.host_buffers import HostBuffers
from bladefl.fl.prefetch import NoiseDraws, OrderJob, Orders, draw_orders
from bladefl.fl.records import GroupResult, GroupTimes, KResult, RoundRecord, RunSpec
from bladefl.fl.round_end import Clock, RoundEnds, end_round
from bladefl.fl.run_config import RunConfig
from bladefl.fl.stacked import RunState, initial_model, lay_out, model_shape
from bladefl.fl.timemodel import allocation

__all__ = ["ClientData", "Execution", "GroupResult", "GroupTimes", "KResult", "RoundRecord", "RunSpec", "Tamper",
           "chain_job", "client_data", "default_chain_processes", "eval_set", "evaluate", "group_errors",
           "initial_model", "load_client_data", "model_shape", "new_chain_state", "resolve", "resolve_device",
           "run_group", "run_k", "worker_pool"]

# Settings every run of a group shares: they fix the data and the shapes of the stacked step. Runs
# may train on different draws of the partition (its seed): the group's data holds each draw. The
# partition's part is the partition spec as a whole, seed aside: a field added to it is shared at once.
PARTITION_SHARED = tuple(f"partition.{f.name}" for f in dataclasses.fields(PartitionSpec) if f.name != "seed")
# (the scheme's parameter is the spec's `value`, whichever scheme owns it: a new scheme adds no shared setting)
SHARED = ("dataset", "data_dir", "normalize", *PARTITION_SHARED, "model", "train.iteration", "train.batch_size",
          "train.steps", "device", "measure.client_test_classes", "measure.client_test_per_class")

def _setting(cfg: RunConfig, dotted: str) -> object:
    node: object = cfg
    for part in dotted.split("."):
        node = getattr(node, part)
    return node


def group_errors(specs: list[RunSpec], draws: int | None = None) -> list[str]:
    """Why ``specs`` cannot train as one stacked computation (empty when they can); with ``draws``
    (the partition draws the group's data holds), a run's draw must be one of them, and the runs
    on one draw must share its partition seed."""
    if not specs:
        return ["a group needs at least one run"]
    first = specs[0].cfg
    errors = [f"run {i} (seed {s.cfg.seed}, K={s.K}): {name} is {_setting(s.cfg, name)!r}, the group's first run "
              f"has {_setting(first, name)!r}"
              for i, s in enumerate(specs) for name in SHARED if _setting(s.cfg, name) != _setting(first, name)]
    if draws is not None:
        errors += [f"run {i} (seed {s.cfg.seed}, K={s.K}): draw {s.draw} is not one of the data's {draws} partition "
                   f"draws" for i, s in enumerate(specs) if not 0 <= s.draw < draws]
    seeds: dict[int, object] = {}
    for i, s in enumerate(specs):
        if seeds.setdefault(s.draw, s.cfg.partition.seed) != s.cfg.partition.seed:
            errors.append(f"run {i} (seed {s.cfg.seed}, K={s.K}): draw {s.draw} holds partition seed "
                          f"{seeds[s.draw]!r}, this run's is {s.cfg.partition.seed!r}")
    return errors


@contextlib.contextmanager
def _threads(count: int, name: str) -> Iterator[ThreadPoolExecutor | None]:
    if count <= 0:
        yield None
        return
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix=name) as pool:
        yield pool


def round_ends(runs: list[RunState], device: torch.device) -> list[tuple[int, EndPlan, list[int]]]:
    """Every iteration at which runs end a round, in order: (iteration, the plan of the runs
    ending there, the round each ends). A set of runs that ends together again shares its plan."""
    ends: dict[int, list[RunState]] = {}
    for run in runs:  # in the group's order, so every set is listed in that order
        for k in range(1, run.K + 1):
            ends.setdefault(k * run.tau - 1, []).append(run)
    plans: dict[tuple[int, ...], EndPlan] = {}
    out = []
    for i in sorted(ends):
        key = tuple(r.index for r in ends[i])
        if key not in plans:
            plans[key] = plan(ends[i], device)
        out.append((i, plans[key], [(i + 1) // r.tau for r in ends[i]]))
    return out


def run_group(specs: list[RunSpec], data: ClientData, execution: Execution | None = None, *,
              tamper: Tamper | None = None, on_round: Callable[[RoundRecord], None] | None = None,
              workers: ProcessPoolExecutor | None = None) -> GroupResult:
    """Run many BLADE-FL runs that share data (dataset, partition, model shape, iteration kind) as
    one computation: the training rows of every run stacked in one set of tensors [rows, ...],
    each run with its own K, tau schedule, seed, eta, lazy set, noise and DP.

    Only the prefix of rows still training steps (runs are sorted longest first); a run's round
    ends after each tau of its own iterations, and all runs ending a round at the same iteration
    end it together (:func:`bladefl.fl.round_end.end_round`). Every random stream is keyed by the
    run (seed, K, round, client), so a run in a group gives the result it gives alone.

    ``execution`` (default: :func:`bladefl.fl.execution.resolve` for the data's device) says how:
    the chain work runs in its ``chain_threads`` threads beside the training, its GIL-bound part in
    ``chain_processes`` worker processes when > 0 (or in ``workers``, a pool the caller keeps
    across groups: starting worker processes takes seconds); ``draw_threads`` draw the epoch
    orders and the round ends' noise ahead; ``block_rows`` rows step together (0: all; on the CPU
    a block's weights must stay in cache across an epoch's minibatches)."""
    errors = group_errors(specs, data.draws)
    if errors:
        raise ValueError("these runs cannot train as one group: " + "; ".join(errors))
    start = time.perf_counter()
    results = []
    for spec in specs:
        alloc = allocation(spec.K, spec.cfg.time)
        results.append(KResult(K=spec.K, allocation=alloc, status="ok" if alloc.feasible else "infeasible"))
    times = GroupTimes()
    execution = execution or resolve(data.x.device)
    feasible = [(s, r) for s, r in zip(specs, results, strict=True) if r.status == "ok"]
    if feasible:
        with contextlib.ExitStack() as stack:
            if workers is None and tamper is None:
                workers = stack.enter_context(worker_pool(execution.chain_processes))
            _train(feasible, data, times, execution, tamper=tamper, on_round=on_round,
                   workers=None if tamper is not None else workers)
        for _, result in feasible:
            result.mark_diverged()
    times.wall = time.perf_counter() - start
    return GroupResult(results, times)


@contextlib.contextmanager
def group_draws(runs: list[RunState], ends: list[tuple[int, EndPlan, list[int]]], rows: int, n: int, size: int,
                dev: torch.device, threads: int, epoch: bool = True) -> Iterator[tuple[Orders | None, NoiseDraws]]:
    """A group's random draws, started: every run's epoch orders (for ``epoch`` iterations) into a
    table of ``rows`` rows, and each round end's noise (models of ``size`` parameters), drawn ahead
    by ``threads`` threads each (none: each when needed). The noise has threads of its own: the
    orders, all handed to their threads at the start, would hold the first round end's noise back
    until every order is drawn."""
    iterations = max(r.iterations for r in runs)
    with _threads(threads, "orders") as order_pool, _threads(threads, "noise") as noise_pool:
        orders = None if not epoch else draw_orders(
            [OrderJob(r.cfg.seed, r.K, k, r.tau, r.N, r.rows, torch.as_tensor(r.trainers))
             for r in runs for k in range(1, r.K + 1)], iterations, rows, n, dev, order_pool)
        yield orders, NoiseDraws([noise_job(end, ks, size) for _, end, ks in ends], dev, noise_pool)


def _host_buffers(execution: Execution, tamper: Tamper | None, ends: list, models_per_run: int, size: int,
                  dev: torch.device) -> HostBuffers | None:
    """Host buffers sized for the largest round end, made once (None: copies allocate as they go)."""
    if not (execution.host_buffers and tamper is None and ends):
        return None
    need = max(len(end.runs) * models_per_run * size for _, end, _ in ends)
    return HostBuffers(need, pin=dev.type == "cuda")


def client_subsets(runs: list[RunState], data: ClientData) -> Callable[[int], np.ndarray | None]:
    """A draw's client test subsets (:mod:`bladefl.fl.client_test`), drawn from its partition seed
    (every run of a draw shares it, :func:`group_errors`), or None where the runs record none."""
    by_draw = {r.draw: r.cfg for r in runs}

    def subsets(draw: int) -> np.ndarray | None:
        m = by_draw[draw].measure
        if m.client_test_classes == 0:
            return None
        return client_test_subsets(data.y_test.cpu().numpy(), data.N, m.client_test_classes, m.client_test_per_class,
                                   numpy_rng(by_draw[draw].partition.seed, "client-test"))
    return subsets


def _train(feasible: list[tuple[RunSpec, KResult]], data: ClientData, times: GroupTimes, execution: Execution, *,
           tamper: Tamper | None, on_round: Callable[[RoundRecord], None] | None,
           workers: ProcessPoolExecutor | None) -> None:
    cfg0, dev = feasible[0][0].cfg, data.x.device
    shape = model_shape(cfg0, data.x.shape[2])
    runs, layout = lay_out(feasible, data.N, data.n, shape, dev)
    n, batch, epoch = data.n, cfg0.train.batch_size, cfg0.train.iteration != "full_batch"  # epoch or steps
    steps = cfg0.train.steps if cfg0.train.iteration == "steps" else None
    offsets = (layout.clients * n).to(torch.int32).unsqueeze(1)
    x_rows, y_rows = data.x.reshape(data.x.shape[0] * n, -1), data.y.reshape(-1)
    x_full = None if epoch else data.x.index_select(0, layout.clients)
    y_full = None if epoch else data.y.index_select(0, layout.clients)
    ends = round_ends(runs, dev)
    steps_per_iteration = math.ceil(trainer.span(n, batch, steps) / batch) if epoch else 1
    block = execution.rows_per_step(layout.rows)
    iterations = max(r.iterations for r in runs)
    v = layout.views
    with (ThreadPoolExecutor(max_workers=max(1, execution.chain_threads), thread_name_prefix="chain") as pool,
          contextlib.ExitStack() as draws):
        executor = ChainExecutor(pool, workers, times, on_round)
        buffers = _host_buffers(execution, tamper, ends, data.N + 1, shape.size, dev)
        local_loss = torch.zeros(layout.rows, device=dev)  # each row's minibatch losses of its round
        ctx = RoundEnds(layout, data, shape, executor, times, EvalSets(data, client_subsets(runs, data)), tamper,
                        torch.cuda.Stream(device=dev) if dev.type == "cuda" else None, buffers,
                        local_loss, steps_per_iteration)
        clock = Clock(times, dev)  # from here: starting the draws counts as the orders' time
        orders, noise = draws.enter_context(
            group_draws(runs, ends, layout.rows, n, shape.size, dev, execution.draw_threads, epoch))
        clock.mark("orders", sync=False)
        event = 0
        for i in range(iterations):
            step_orders = None if orders is None else orders.ready(i)
            clock.mark("orders", sync=False)
            active = max(r.rows.stop for r in runs if r.iterations > i)
            for lo in range(0, active, block):
                rows = slice(lo, min(lo + block, active))
                sub = mlp.Views(v.W1[rows], v.b1[rows], v.W2[rows], v.b2[rows])
                picked = None if step_orders is None else step_orders[rows] + offsets[rows]
                trainer.stacked_iteration(sub, x_rows, y_rows, picked, None if x_full is None else x_full[rows],
                                          None if y_full is None else y_full[rows], n=n, eta=layout.eta[rows],
                                          batch_size=batch, shape=shape, steps=steps, loss_sum=local_loss[rows])
            times.model_steps += active * steps_per_iteration
            if event < len(ends) and ends[event][0] == i:
                clock.mark("train")
                _, end, ks = ends[event]
                drawn = noise.get(event)
                clock.mark("noise", sync=False)
                end_round(ctx, end, ks, drawn, clock)
                executor.collect()
                event += 1
            else:
                clock.mark("train", sync=False)
        clock.mark("train")
        executor.collect(wait=True)
        times.host_allocations += 0 if buffers is None else buffers.allocations
    total = sum(r.iterations * len(r.trainers) for r in runs)
    for run in runs:
        run.result.train_seconds = times.train * run.iterations * len(run.trainers) / total
        run.result.eval_seconds = (times.rounds / max(1, times.run_rounds)) * run.K
        run.result.model = layout.models[run.index].clone()


def run_k(cfg: RunConfig, data: ClientData, K: int, *, store: Path | None = None,
          tamper: Tamper | None = None, on_round: Callable[[RoundRecord], None] | None = None,
          reference: torch.Tensor | None = None) -> KResult:
    """Run BLADE-FL with K integrated rounds (a group of one run); an infeasible K (tau < 1) is
    reported, not raised. With a ``reference`` optimum w*, each round records ||w^k - w*|| (a
    diagnostic of the bound's cells; eps2 itself comes from the loss gap, see
    :mod:`bladefl.experiments.tables.bound_analysis`)."""
    return run_group([RunSpec(cfg, K, store, reference)], data, tamper=tamper, on_round=on_round).results[0]
