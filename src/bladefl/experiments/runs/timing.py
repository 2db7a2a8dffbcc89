"""Timings of the engine, by wall time, for ``bladefl bench``: the GEMM peak at the engine's
shapes, the engine's own groups, a plain per-client loop, the chain's share and its drag on the
training thread, the round end with many runs ending together, a default run's peak memory, and
every grid run of a workflow config. Each function measures; ``bladefl.bench`` holds the targets
and prints the comparisons.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from bladefl.chain.round import Flagging
from bladefl.fl import mlp
from bladefl.fl.chain_executor import chain_job, new_chain_state, worker_pool
from bladefl.fl.engine import ClientData, GroupTimes, RunSpec, load_client_data, run_group, run_k
from bladefl.fl.execution import resolve
from bladefl.fl.records import ROUND_END_PARTS
from bladefl.fl.run_config import RunConfig, from_dict, load_config

if TYPE_CHECKING:
    from bladefl.data.partition import PartitionSpec
    from bladefl.experiments.plan.workflow_config import PartitionJob
    from bladefl.experiments.runs.runner import CellJob


def timeit(fn: Callable[[], None], repeat: int) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def step_flops(N: int, B: int, shape: mlp.Shape) -> float:
    """Multiply-adds x2 of one SGD step: forward, and the three backward products."""
    d, h, c = shape.d, shape.h, shape.c
    return 2.0 * N * B * (2 * d * h + 3 * h * c)


def gemm_rate(N: int, B: int, shape: mlp.Shape, repeat: int, device: torch.device | None = None,
              calls: int = 1) -> float:
    """GFLOP/s of the step's matmuls alone (bmm at the engine's shapes, no elementwise work), on
    ``device``, timing ``calls`` rounds of the five products at a time."""
    device = device or torch.device("cpu")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(N, B, shape.d, generator=g).to(device)
    w1 = torch.randn(N, shape.d, shape.h, generator=g).to(device)
    w2 = torch.randn(N, shape.h, shape.c, generator=g).to(device)
    a = torch.randn(N, B, shape.h, generator=g).to(device)
    g2 = torch.randn(N, B, shape.c, generator=g).to(device)

    def products() -> None:
        for _ in range(calls):
            torch.bmm(x, w1)
            torch.bmm(a, w2)
            torch.bmm(g2, w2.transpose(1, 2))
            torch.bmm(a.transpose(1, 2), g2)
            torch.bmm(x.transpose(1, 2), a)
        if device.type == "cuda":
            torch.cuda.synchronize()

    return calls * step_flops(N, B, shape) / timeit(products, repeat) / 1e9


def one_run(cfg: RunConfig, iteration: str, batch: int, tau: int) -> RunConfig:
    """``cfg`` as one run of exactly ``tau`` local iterations (K = 1) of ``iteration`` at ``batch``."""
    d = cfg.to_dict()
    return from_dict({**d, "train": {**d["train"], "iteration": iteration, "batch_size": batch},
                      "time": {**d["time"], "alpha": 1, "beta": 1, "t_sum": tau + 1, "K": [1]},
                      "measure": {"constants": False}})


def engine_times(cfg: RunConfig, data: ClientData, repeat: int) -> GroupTimes:
    """The engine running ``cfg`` (one run, K = 1) as users run it; the best of ``repeat`` walls."""
    run_group([RunSpec(cfg, 1)], data)  # warm-up
    return min((run_group([RunSpec(cfg, 1)], data).times for _ in range(repeat)), key=lambda t: t.wall)


def loop_seconds(data: ClientData, shape: mlp.Shape, iteration: str, batch: int, tau: int, repeat: int) -> float:
    from torch.utils.data import DataLoader, TensorDataset

    def go() -> None:
        torch.manual_seed(0)
        for i in range(data.N):
            net = torch.nn.Sequential(torch.nn.Linear(shape.d, shape.h),
                                      torch.nn.ReLU() if shape.activation == "relu" else torch.nn.Identity(),
                                      torch.nn.Linear(shape.h, shape.c))
            opt = torch.optim.SGD(net.parameters(), lr=0.01)
            batches: Iterable[tuple[torch.Tensor, ...]]
            if iteration == "full_batch":
                batches = [(data.x[i], data.y[i])]
            else:
                batches = DataLoader(TensorDataset(data.x[i], data.y[i]), batch_size=batch, shuffle=True)
            for _ in range(tau):
                for xb, yb in batches:
                    opt.zero_grad()
                    torch.nn.functional.cross_entropy(net(xb), yb).backward()
                    opt.step()

    return timeit(go, repeat)


def chain_share(cfg: RunConfig, data: ClientData) -> tuple[float, float]:
    """Chain seconds over all seconds of a whole run (every K of the config)."""
    chain = total = 0.0
    for K in cfg.time.K:
        r = run_k(cfg, data, K)
        chain += r.chain_seconds
        total += r.train_seconds + r.chain_seconds + r.eval_seconds
    return chain / total, total


def chain_drag(N: int, P: int, runs: int, rounds: int, processes: int, threads: int = 4) -> tuple[float, float]:
    """How much the chain slows the thread that drives the training. ``runs`` runs' chains
    (``rounds`` rounds each, N uploads of P floats, the default chain settings) go through the
    chain threads as the engine hands them over, their GIL-bound part inline or in ``processes``
    worker processes, while this thread spins a pure-Python loop (standing in for the kernel
    launches of a GPU's training loop). Returns (the loop's speed beside the chain over its speed
    alone, the chain's wall seconds)."""
    from concurrent.futures import ThreadPoolExecutor

    models = torch.randn(N, P, generator=torch.Generator().manual_seed(0))

    def spin(done: Callable[[], bool]) -> tuple[int, float]:
        count, start = 0, time.perf_counter()
        while not done():
            for _ in range(2000):
                pass
            count += 1
        return count, time.perf_counter() - start

    def one_run(seed: int, workers: ProcessPoolExecutor | None) -> None:
        state = new_chain_state(from_dict({"seed": seed, "partition": {"N": N}}), rounds, N, 64, 1)
        for k in range(1, rounds + 1):
            _, state = chain_job(state, k, models + k, Flagging(), workers)

    deadline = time.perf_counter() + 1.0
    alone, alone_s = spin(lambda: time.perf_counter() > deadline)
    with worker_pool(processes) as workers, ThreadPoolExecutor(threads) as pool:
        if workers is not None:  # start the workers before timing
            list(workers.map(abs, range(processes)))
        futures = [pool.submit(one_run, seed, workers) for seed in range(runs)]
        beside, beside_s = spin(lambda: all(f.done() for f in futures))
        for f in futures:
            f.result()
    return (beside / beside_s) / (alone / alone_s), beside_s


PEAK_SCRIPT = """
import resource, sys
from bladefl.fl.run_config import load_config
from bladefl.fl.engine import load_client_data, run_k
cfg = load_config(sys.argv[1] if sys.argv[1] != '-' else None, ['data_dir=' + sys.argv[2], 'device=cpu'])
data = load_client_data(cfg)
for K in (1, 9):
    run_k(cfg, data, K)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_memory_mb(config: str | None, data_dir: str) -> float:
    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, config or "-", data_dir], capture_output=True,
                         text=True, timeout=900, check=True)
    return int(out.stdout.strip().splitlines()[-1]) / 1024.0


def bench_data(cfg: RunConfig) -> tuple[ClientData, str]:
    try:
        return load_client_data(cfg), f"{cfg.dataset} (real)"
    except FileNotFoundError:
        g = torch.Generator().manual_seed(0)
        N, n = cfg.partition.N, cfg.partition.n
        x = torch.randn(N, n, 784, generator=g)
        y = torch.randint(0, 10, (N, n), generator=g)
        return ClientData(x, y, x[0], y[0]), "synthetic (no data fetched)"


def raw_step_rate(rows: int, batch: int, shape: mlp.Shape, device: torch.device, repeat: int) -> float:
    """Model-steps per second of the SGD step's stacked matmuls alone (``gemm_rate`` at ``rows``
    models and minibatch ``batch``, ten rounds per timing): the rate the engine is held to."""
    return gemm_rate(rows, batch, shape, repeat, device, calls=10) * 1e9 / step_flops(1, batch, shape)


def stacked_engine(cfg: RunConfig, data: ClientData, seeds: int, host_buffers: bool | None = None) -> GroupTimes:
    """One group: every K of ``cfg``'s cell for ``seeds`` seeds, stacked; ``host_buffers`` True:
    each round end's host copy into buffers kept across round ends, else (the default) into pinned
    memory taken for it."""
    specs = [RunSpec(from_dict({**cfg.to_dict(), "seed": s}), K) for s in range(seeds) for K in cfg.time.K]
    execution = resolve(data.x.device, stack=True, threads=8, host_buffers=host_buffers)
    return run_group(specs, data, execution).times


def grid_part(config: dict, seeds: str | int) -> dict:
    """A workflow config with its part ``run_seeds`` set from ``seeds``: k (an int or digits: the
    config's first k seeds) or the text forms of config ``run_seeds`` ('i-j', 'a,b,c'); every seed and
    draw of the design is kept, so each run of the part is the run of the whole config."""
    text = str(seeds).strip()
    if text.isascii() and text.isdigit():
        return {**config, "run_seeds": list(config["seeds"])[: int(text)]}
    return {**config, "run_seeds": text}


def group_jobs(config: dict, group: PartitionJob, out: str, sets: tuple[str, ...] = ()
               ) -> tuple[list[CellJob], list[PartitionSpec]]:
    """What a ``grouping: partition`` job of ``group`` (a :class:`PartitionJob`) runs: each run
    folder's :class:`CellJob` under ``out`` (its config with ``sets`` on top, its draw), and the
    group's partition draws in plan order."""
    import json

    from bladefl.experiments.plan import workflow_config as wc
    from bladefl.experiments.runs.runner import CellJob

    plan = json.loads(wc.group_plan(config, group, out))
    cfgs = [load_config(wc.engine_path(config, group.dataset), [*item["set"], *sets]) for item in plan]
    draws = list(dict.fromkeys(c.partition for c in cfgs))
    return [CellJob(c, Path(item["out"]), draw=draws.index(c.partition))
            for c, item in zip(cfgs, plan, strict=True)], draws


def grid_seconds(config_path: str, device: str, data_dir: str, out: str, seeds: str | int | None
                 ) -> tuple[float, int, GroupTimes, float]:
    """Every grid run of a workflow config (its datasets, cells and seeds; no reference optima),
    each dataset x N as stacked groups on ``device`` (the runs of every partition draw together),
    written under ``out`` (run
    folders already finished there with the same config are skipped): (wall seconds, runs computed,
    the groups' times summed, seconds writing the run folders)."""
    from bladefl.data import datasets
    from bladefl.data.partition import make_partition
    from bladefl.experiments.plan import config_checks, config_files
    from bladefl.experiments.plan import workflow_config as wc
    from bladefl.experiments.plan.config_checks import with_defaults
    from bladefl.experiments.runs.runner import run_cells
    from bladefl.fl.client_data import stack_draws
    from bladefl.fl.engine import client_data, resolve_device

    # on top of config/config.yaml, the schema's defaults filled in (seeds_per_job), as Snakemake reads it
    config = with_defaults(config_files.read_configs([config_path]))
    if seeds:
        config = grid_part(config, seeds)
    config_checks.check(config)
    start, runs, summed, write = time.perf_counter(), 0, GroupTimes(), 0.0
    loaded = {d: tuple(datasets.load(d, data_dir, split, True) for split in (True, False)) for d in config["datasets"]}
    # Blocks of seeds (a group holds the runs of every draw its seeds train on), block by block over
    # both datasets and every N: a grid stopped early holds every run of the seeds of the blocks it
    # finished, which import as a partial grid (`bladefl import-runs --seeds`).
    groups = wc.partition_jobs(config)  # the part's seeds only
    order = {d: i for i, d in enumerate(config["datasets"])}
    for group in sorted(groups, key=lambda g: (g.block, order[g.dataset], g.N)):
        dataset = group.dataset
        train, test = loaded[dataset]
        jobs, specs = group_jobs(config, group, out, (f"device={device}",))
        data = stack_draws([client_data(train, test, make_partition(train.y, spec), resolve_device(device))
                            for spec in specs])
        t = time.perf_counter()
        execution = resolve(device).with_(chain_threads=8)
        # resume: a grid run again into the same folder skips the run folders already finished
        summaries = [s for s in run_cells(jobs, data, execution, progress=False, resume=True) if s is not None]
        runs += sum(len(s["per_K"]) for s in summaries)  # the runs computed now
        write += sum(s["seconds"]["write"] for s in summaries)
        batches = {s["group"]["batch"]: s["group"]["breakdown"] for s in summaries if "group" in s}
        for b in [*batches.values(), *(s["seconds"]["engine"] for s in summaries if "group" not in s)]:
            summed = add_breakdown(summed, b)  # a stacked batch once; an unstacked job's own groups
        print(f"  {dataset} N={group.N} draws {list(group.draws)} (seeds {list(group.seeds)}): {len(jobs)} "
              f"cells x seeds, "
              f"{len(summaries)} run, {time.perf_counter() - t:.1f} s", flush=True)
    return time.perf_counter() - start, runs, summed, write


def add_breakdown(times: GroupTimes, breakdown: dict) -> GroupTimes:
    """``times`` plus a group's recorded breakdown."""
    return GroupTimes(**{name: getattr(times, name) + breakdown.get(name, 0)
                         for name in ("wall", "train", "orders", *ROUND_END_PARTS, "chain_wait", "chain_busy",
                                      "model_steps", "round_ends", "run_rounds")})


def round_end_seconds(R: int, rounds: int = 10, repeat: int = 3, N: int = 20) -> GroupTimes:
    """A group of R runs that all end each of their ``rounds`` rounds together (stacked, as on a
    GPU), with a tiny model on tiny synthetic data so that the training and the evaluation's
    arithmetic are negligible: what is left is the round end's own work. The chain runs in one
    worker process, as on a GPU (there in half the cores), so it does not hold this thread's GIL
    (started once, before the groups timed).
    Returns the best of ``repeat`` groups' times (by round-end seconds)."""
    g = torch.Generator().manual_seed(0)
    n, d = 8, 16
    x = torch.randn(N, n, d, generator=g)
    y = torch.randint(0, 10, (N, n), generator=g)
    data = ClientData(x, y, x[0], y[0])
    base = {"partition": {"N": N, "n": n}, "model": {"hidden": 4}, "device": "cpu",
            "train": {"iteration": "full_batch", "batch_size": n}, "chain": {"difficulty_bits": 1},
            "time": {"alpha": 1, "beta": 1, "t_sum": 2 * rounds, "K": [rounds]}}
    specs = [RunSpec(from_dict({**base, "seed": seed}), rounds) for seed in range(R)]
    best = None
    with worker_pool(1) as workers:
        for _ in range(repeat + 1):  # the first is a warm-up (and starts the worker)
            times = run_group(specs, data, resolve("cpu", stack=True, block_rows=0), workers=workers).times
            best = times if best is None or times.rounds < best.rounds else best
    assert best is not None  # repeat + 1 >= 1 groups ran
    return best
