"""``bladefl bench``: how fast the engine is, measured against this machine, by wall time.

In one process, on the same cell (real data when present, else synthetic data of the same
shape), the CPU bench measures:

- the fp32 GEMM rate of ``torch.bmm`` at the engine's own shapes (the peak to compare with);
- the engine (:func:`bladefl.fl.engine.run_group`, one run of tau iterations and its round end)
  in ``full_batch`` and ``epoch`` modes: its training rate, and its rate over the whole wall;
- a plain per-client loop (one ``nn.Module`` and optimizer per client; for ``epoch`` a
  ``DataLoader`` minibatch loop, as typical FL code does);
- the share of a run's time spent on the chain (signing, verification, mining, validation);
- the round end's cost with R runs ending together (R = 1, 10, 100; stacked as on a GPU, a tiny
  model and tiny data so that what is timed is the round end's own work, the chain in a worker
  process as on a GPU): 100 runs ending together must cost at most 10x one;
- the peak memory of a default run (a child process, so this process's buffers do not count).

With ``--device cuda`` it measures the multi-run engine at the grid's shapes (one cell's K values,
then more seeds, stacked): model-steps per second of wall time and of training time against the
raw rate of the step's stacked matmuls at the same number of rows, where the wall went (training,
each part of the round ends, waiting for blocks; see :class:`bladefl.fl.records.GroupTimes`),
the chain's share of wall time, and how much the chain slows the thread that drives the training
(``--chain-drag``). ``--grid CONFIG`` also runs every grid run of a workflow config (all its
datasets and seeds, no Snakemake) and prints its wall time, the writing of the run folders
included, with the same breakdown.

Every target is a named constant below; the bench prints each value beside its target.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from bladefl.chain.round import Flagging
from bladefl.fl import mlp
from bladefl.fl.chain_executor import chain_job, new_chain_state, worker_pool
from bladefl.fl.engine import ClientData, GroupTimes, RunSpec, load_client_data, run_group, run_k
from bladefl.fl.execution import default_chain_processes, resolve
from bladefl.fl.records import ROUND_END_PARTS
from bladefl.fl.run_config import RunConfig, from_dict, load_config


@dataclass(frozen=True)
class Target:
    """A value the bench is held to: at least ``value``, or below it."""

    value: float
    at_least: bool = True

    def met(self, x: float) -> bool:
        return x >= self.value if self.at_least else x < self.value

    def __str__(self) -> str:
        return f"{'>=' if self.at_least else '<'} {self.value:g}"


FULL_BATCH_OF_PEAK = Target(0.80)  # the engine's training rate over the GEMM peak (CPU)
FULL_BATCH_OVER_LOOP = Target(1.25)  # the per-client loop's seconds over the engine's (training)
EPOCH_OVER_LOOP = Target(2.5)  # the DataLoader loop's seconds over the engine's (training)
CHAIN_SHARE_CPU = Target(0.05, at_least=False)  # the chain's share of a run's time (CPU)
PEAK_MEMORY_MB = Target(2048, at_least=False)  # a default run's peak resident memory
ROUND_END_SCALING = Target(10.0, at_least=False)  # 100 runs ending together over one run ending
ENGINE_WALL_OF_RAW = Target(0.60)  # stacked engine, model-steps per wall second over the raw rate (GPU)
CHAIN_SHARE_STACKED = Target(0.10, at_least=False)  # the chain's share of a stacked group's wall
LOOP_SPEED_BESIDE_CHAIN = Target(0.90)  # a Python loop's speed beside the chain over alone
GRID_WALL_SECONDS = Target(300, at_least=False)  # config/paper.yaml, 20 seeds, both datasets, one GPU


def _timeit(fn: Callable[[], None], repeat: int) -> float:
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

    return calls * step_flops(N, B, shape) / _timeit(products, repeat) / 1e9


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
            if iteration == "full_batch":
                batches = [(data.x[i], data.y[i])]
            else:
                batches = DataLoader(TensorDataset(data.x[i], data.y[i]), batch_size=batch, shuffle=True)
            for _ in range(tau):
                for xb, yb in batches:
                    opt.zero_grad()
                    torch.nn.functional.cross_entropy(net(xb), yb).backward()
                    opt.step()

    return _timeit(go, repeat)


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

    def one_run(seed: int, workers: object) -> None:
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


def _data(cfg: RunConfig) -> tuple[ClientData, str]:
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


def stacked_engine(cfg: RunConfig, data: ClientData, seeds: int) -> GroupTimes:
    """One group: every K of ``cfg``'s cell for ``seeds`` seeds, stacked."""
    specs = [RunSpec(from_dict({**cfg.to_dict(), "seed": s}), K) for s in range(seeds) for K in cfg.time.K]
    return run_group(specs, data, resolve(data.x.device, stack=True, threads=8)).times


def grid_seconds(config_path: str, device: str, data_dir: str, out: str, seeds: int | None
                 ) -> tuple[float, int, GroupTimes, float]:
    """Every grid run of a workflow config (its datasets, cells and seeds; no reference optima),
    each dataset x N as stacked groups on ``device``, written under ``out``: (wall seconds, runs,
    the groups' times summed, seconds writing the run folders)."""
    import json

    import yaml

    from bladefl.data import datasets
    from bladefl.data.partition import make_partition
    from bladefl.experiments import workflow_config as wc
    from bladefl.experiments.runner import CellJob, run_cells
    from bladefl.fl.engine import client_data, resolve_device

    config = yaml.safe_load(Path(config_path).read_text())
    if seeds:
        config["seeds"] = list(config["seeds"])[:seeds]
    wc.check(config)
    start, runs, summed, write = time.perf_counter(), 0, GroupTimes(), 0.0
    for dataset in config["datasets"]:
        train, test = (datasets.load(dataset, data_dir, split, True) for split in (True, False))
        for group in wc.run_groups({**config, "seeds_per_job": len(config["seeds"])}):
            if group.dataset != dataset:
                continue
            plan = json.loads(wc.group_plan(config, group, out))  # what a grouping: partition job runs
            jobs = [CellJob(load_config(wc.profile_path(config), [*item["set"], f"device={device}"]), Path(item["out"]))
                    for item in plan]
            data = client_data(train, test, make_partition(train.y, jobs[0].cfg.partition), resolve_device(device))
            t = time.perf_counter()
            execution = resolve(device).with_(chain_threads=8)
            summaries = [s for s in run_cells(jobs, data, execution, progress=False) if s is not None]
            runs += sum(len(j.cfg.time.K) for j in jobs)
            write += sum(s["seconds"]["write"] for s in summaries)
            batches = {s["group"]["batch"]: s["group"]["breakdown"] for s in summaries if "group" in s}
            for b in [*batches.values(), *(s["seconds"]["engine"] for s in summaries if "group" not in s)]:
                summed = _add(summed, b)  # a stacked batch once; an unstacked job's own groups
            print(f"  {dataset} N={group.N}: {len(jobs)} cells x seeds, {time.perf_counter() - t:.1f} s", flush=True)
    return time.perf_counter() - start, runs, summed, write


def _add(times: GroupTimes, breakdown: dict) -> GroupTimes:
    """``times`` plus a group's recorded breakdown."""
    return GroupTimes(**{name: getattr(times, name) + breakdown.get(name, 0)
                         for name in ("wall", "train", "orders", *ROUND_END_PARTS, "chain_wait", "chain_busy",
                                      "model_steps", "round_ends", "run_rounds")})


def breakdown_line(times: GroupTimes) -> str:
    """Where a wall went, in seconds and shares."""
    parts = times.breakdown()
    wall = parts["wall"] or math.nan
    shown = [f"{k} {parts[k]:.2f} s ({parts[k] / wall:.0%})" for k in ("train", "orders", *ROUND_END_PARTS,
                                                                          "chain_wait", "other")]
    return ", ".join(shown) + f"; {times.round_ends} round ends, {times.run_rounds} run-rounds"


def cuda_main(args: argparse.Namespace) -> int:
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda but no CUDA device is available")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"torch {torch.__version__}, {name}, fp32")
    cfg = load_config(args.config, [f"data_dir={args.data_dir}", f"device={args.device}"]) if args.config else \
        from_dict({"data_dir": args.data_dir, "device": args.device})
    data, what = _data(cfg)
    data = ClientData(*(t.to(device) for t in (data.x, data.y, data.x_test, data.y_test)))
    shape = mlp.Shape(h=cfg.model.hidden, activation=cfg.model.activation)
    steps_per_iteration = -(-data.n // cfg.train.batch_size)
    print(f"data {what}; one cell: K={list(cfg.time.K)}, N={data.N}")
    lines = []
    print("\nmodel-steps per second of wall time and of training time, against the raw stacked matmuls")
    print("seeds  runs  max rows  mean rows   wall steps/s  train steps/s   raw steps/s  wall/raw  train/raw  "
          "chain share  wall s")
    for seeds in args.seeds or ([1, 6, 23] if device.type == "cuda" else [1]):
        times = stacked_engine(cfg, data, seeds)
        max_rows = seeds * len(cfg.time.K) * data.N
        mean_rows = times.model_steps / (steps_per_iteration * _longest(cfg))  # rows stepping, on average
        raw = raw_step_rate(max(1, round(mean_rows)), cfg.train.batch_size, shape, device, 2 if args.quick else 3)
        wall_rate, train_rate = times.model_steps / times.wall, times.model_steps / times.train
        print(f"{seeds:>5} {seeds * len(cfg.time.K):>5} {max_rows:>9} {mean_rows:>10.0f} {wall_rate:>14,.0f} "
              f"{train_rate:>14,.0f} {raw:>13,.0f} {wall_rate / raw:>9.2f} {train_rate / raw:>10.2f} "
              f"{times.chain_share:>12.1%} {times.wall:>7.1f}")
        print(f"      wall: {breakdown_line(times)}")
        lines.append((f"engine wall/raw at {seeds} seeds ({max_rows} rows)", wall_rate / raw, ENGINE_WALL_OF_RAW))
        lines.append((f"chain share of wall at {seeds} seeds", times.chain_share, CHAIN_SHARE_STACKED))
    lines += drag_lines()
    if args.grid:
        wall, runs, summed, write = grid_seconds(args.grid, args.device, args.data_dir, args.out, args.grid_seeds)
        print(f"\nwhole grid {args.grid} ({runs} runs, {summed.model_steps:,} model-steps): {wall:.1f} s, "
              f"{summed.model_steps / wall:,.0f} model-steps per wall second; writing the run folders {write:.1f} s")
        print(f"  the groups' wall: {breakdown_line(summed)}")
        lines.append((f"whole grid wall seconds ({runs} runs)", wall, GRID_WALL_SECONDS))
    _print_lines(lines)
    return 0


def _longest(cfg: RunConfig) -> int:
    """The most local iterations of any K of the cell (the group's length in iterations)."""
    from bladefl.fl.timemodel import allocate

    return max(allocate(K, cfg.time.alpha, cfg.time.beta, cfg.time.t_sum).iterations for K in cfg.time.K)


def _print_lines(lines: list[tuple[str, float, Target]]) -> None:
    print("\nratio                                              value    target   met")
    for label, value, target in lines:
        print(f"{label:<50} {value:8.3f}  {target!s:>8}   {'yes' if target.met(value) else 'NO'}")


def drag_lines(runs: int = 8, rounds: int = 5) -> list[tuple[str, float, Target]]:
    """The chain's drag on the training's driving thread (:func:`chain_drag`) at the paper's model
    size, with the GIL-bound part in the chain threads and in worker processes."""
    import os

    P = mlp.Shape().size
    processes = default_chain_processes(True)
    print(f"\nchain beside a Python loop ({runs} runs x {rounds} rounds, N=20, P={P:,}, {os.cpu_count()} cores)")
    lines = []
    for label, count in (("chain in threads", 0), (f"chain in {processes} processes", processes)):
        speed, wall = chain_drag(20, P, runs, rounds, count)
        print(f"  {label:<24} loop speed {speed:6.1%} of alone, chain wall {wall:.2f} s")
        lines.append((f"loop speed, {label}", speed, LOOP_SPEED_BESIDE_CHAIN))
    return lines


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
    return best


def round_end_lines(counts: tuple[int, ...] = (1, 10, 100)) -> list[tuple[str, float, Target]]:
    print("\nround end with R runs ending together (tiny model, stacked, chain in a worker process)")
    per_end = {}
    for R in counts:
        times = round_end_seconds(R)
        per_end[R] = times.rounds / times.round_ends
        parts = ", ".join(f"{p} {getattr(times, p) / times.round_ends * 1e3:.2f}" for p in ROUND_END_PARTS)
        print(f"  R={R:>3}: {per_end[R] * 1e3:7.2f} ms per round end, {per_end[R] / R * 1e6:7.0f} us per run-round "
              f"({parts} ms)")
    lo, hi = min(counts), max(counts)
    return [(f"round end, {hi} runs ending together / {lo}", per_end[hi] / per_end[lo], ROUND_END_SCALING)]


def main(args: argparse.Namespace) -> int:
    if args.chain_drag:
        _print_lines(drag_lines())
        return 0
    if args.device != "cpu" or args.grid or args.seeds:
        return cuda_main(args)
    repeat = 2 if args.quick else 5
    torch.manual_seed(0)
    base = load_config(args.config, [f"data_dir={args.data_dir}", "device=cpu"]) if args.config else \
        from_dict({"data_dir": args.data_dir, "device": "cpu"})
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, fp32, CPU")
    lines = []
    profiles = {"paper": base,
                "authors-code": from_dict({**base.to_dict(), "model": {"hidden": 32, "activation": "none"},
                                           "partition": {**base.to_dict()["partition"], "scheme": "classes"}})}
    for name, cfg in profiles.items():
        data, what = _data(cfg)
        shape = mlp.Shape(h=cfg.model.hidden, activation=cfg.model.activation)
        N, n, B = data.N, data.n, cfg.train.batch_size
        print(f"\n[{name}] data {what}: N={N}, n={n}, MLP 784-{shape.h}-10 ({shape.activation})")
        if name == "paper":
            tau = 5
            peak = gemm_rate(N, n, shape, repeat)
            eng = engine_times(one_run(cfg, "full_batch", n, tau), data, repeat)
            loop = loop_seconds(data, shape, "full_batch", n, tau, repeat)
            flops = tau * step_flops(N, n, shape)
            print(f"  full_batch: GEMM peak {peak:.1f} GFLOP/s; engine {flops / eng.train / 1e9:.1f} GFLOP/s of "
                  f"training, {flops / eng.wall / 1e9:.1f} GFLOP/s of wall (one run, tau={tau}, K=1); loop "
                  f"{flops / loop / 1e9:.1f} GFLOP/s")
            print(f"    wall: {breakdown_line(eng)}")
            lines.append(("full_batch engine training/peak", flops / eng.train / 1e9 / peak, FULL_BATCH_OF_PEAK))
            lines.append(("full_batch loop/engine training", loop / eng.train, FULL_BATCH_OVER_LOOP))
        tau = 3
        eng = engine_times(one_run(cfg, "epoch", B, tau), data, repeat)
        loop = loop_seconds(data, shape, "epoch", B, tau, repeat)
        flops = tau * ((n + B - 1) // B) * step_flops(N, B, shape)
        print(f"  epoch (batch {B}): GEMM peak at these shapes {gemm_rate(N, B, shape, repeat):.1f} GFLOP/s; "
              f"engine {eng.train / tau * 1e3:.1f} ms/iteration of training, {eng.wall / tau * 1e3:.1f} of wall "
              f"(one run, tau={tau}, K=1: one round end), DataLoader loop {loop / tau * 1e3:.1f} ms/iteration; "
              f"engine {flops / eng.train / 1e9:.1f} GFLOP/s")
        print(f"    wall: {breakdown_line(eng)}")
        lines.append((f"epoch DataLoader loop/engine training [{name}]", loop / eng.train, EPOCH_OVER_LOOP))
        share, total = chain_share(cfg, data)
        print(f"  run K={list(cfg.time.K)}: {total:.2f} s, chain {share * 100:.2f}%")
        lines.append((f"chain share of run time [{name}]", share, CHAIN_SHARE_CPU))
    lines += round_end_lines()
    mem = peak_memory_mb(args.config, args.data_dir)
    lines.append(("peak memory of a default run (MB)", mem, PEAK_MEMORY_MB))
    _print_lines(lines)
    return 0
