"""``bladefl bench``: how fast the engine is, measured against this machine.

In one process, on the same cell (real data when present, else synthetic data of the same
shape), it measures:

- the fp32 GEMM rate of ``torch.bmm`` at the engine's own shapes (the peak to compare with);
- the engine's training rate (batched over clients) in ``full_batch`` and ``epoch`` modes;
- a plain per-client loop (one ``nn.Module`` and optimizer per client; for ``epoch`` a
  ``DataLoader`` minibatch loop, as typical FL code does);
- the share of a run's time spent on the chain (signing, verification, mining, validation);
- the peak memory of a default run (a child process, so this process's buffers do not count).

It prints ratios against the targets: full_batch >= 80% of GEMM and >= 1.25x the loop; epoch
(batch 64, both profiles) >= 2.5x the DataLoader loop; chain < 5%; peak memory < 2 GB.

With ``--device cuda`` it measures the multi-run engine instead (issue "Many runs as one
computation"): groups of runs stacked as one computation at the grid's shapes (one cell's K
values, then more seeds), the engine's model-steps per second against the raw rate of the
step's stacked matmuls at the same number of rows (target >= 70%), and the chain's share of
wall time (target < 10%), and how much the chain slows the thread that drives the training
(``--chain-drag``: a Python loop's speed beside the chain, its GIL-bound part in threads or in
worker processes; target >= 90%). ``--grid CONFIG`` also runs every grid run of a workflow config
(both datasets, all its seeds, no Snakemake) and prints its wall time (target on one GPU for
config/paper.yaml: <= 5 minutes).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from bladefl.fl import mlp, trainer
from bladefl.fl.engine import (
    ClientData,
    GroupTimes,
    RunSpec,
    default_chain_processes,
    load_client_data,
    run_group,
    run_k,
)
from bladefl.fl.run_config import RunConfig, from_dict, load_config


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


def engine_seconds(data: ClientData, shape: mlp.Shape, iteration: str, batch: int, tau: int, repeat: int) -> float:
    w0 = mlp.init(shape, torch.Generator().manual_seed(0))

    def go() -> None:
        local = w0.expand(data.N, -1).clone()
        trainer.train_local(local, data.x, data.y, tau, eta=0.01, iteration=iteration, batch_size=batch,
                            shape=shape, generator=torch.Generator().manual_seed(1))

    return _timeit(go, repeat)


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

    from bladefl.fl.engine import chain_job, new_chain_state, worker_pool

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
            _, state = chain_job(state, k, models + k, ([], [], ""), workers)

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
    return run_group(specs, data, chain_threads=8, chain_processes=default_chain_processes(True)).times


def grid_seconds(config_path: str, device: str, data_dir: str, out: str, seeds: int | None) -> tuple[float, int]:
    """Every grid run of a workflow config (its datasets, cells and seeds; no reference optima),
    each dataset x N as stacked groups on ``device``, written under ``out``: (wall seconds, runs)."""
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
    start, runs = time.perf_counter(), 0
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
            run_cells(jobs, data, progress=False, chain_threads=8)
            runs += sum(len(j.cfg.time.K) for j in jobs)
            print(f"  {dataset} N={group.N}: {len(jobs)} cells x seeds, {time.perf_counter() - t:.1f} s", flush=True)
    return time.perf_counter() - start, runs


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
    print("\nseeds  runs  max rows  mean rows  engine steps/s  raw steps/s  engine/raw  chain share  orders s  wall s")
    for seeds in args.seeds or ([1, 6, 23] if device.type == "cuda" else [1]):
        times = stacked_engine(cfg, data, seeds)
        max_rows = seeds * len(cfg.time.K) * data.N
        mean_rows = times.model_steps / (steps_per_iteration * _longest(cfg))  # rows stepping, on average
        raw = raw_step_rate(max(1, round(mean_rows)), cfg.train.batch_size, shape, device, 2 if args.quick else 3)
        rate = times.model_steps / times.train
        print(f"{seeds:>5} {seeds * len(cfg.time.K):>5} {max_rows:>9} {mean_rows:>10.0f} {rate:>15,.0f} "
              f"{raw:>12,.0f} {rate / raw:>11.2f} {times.chain_share:>12.1%} {times.orders:>9.2f} {times.wall:>7.1f}")
        lines.append((f"engine/raw at {seeds} seeds ({max_rows} rows)", rate / raw, 0.70))
        lines.append((f"chain share of wall at {seeds} seeds", times.chain_share, -0.10))
    lines += drag_lines()
    if args.grid:
        wall, runs = grid_seconds(args.grid, args.device, args.data_dir, args.out, args.grid_seeds)
        print(f"\nwhole grid {args.grid} ({runs} runs): {wall:.1f} s")
        lines.append((f"whole grid wall seconds ({runs} runs)", wall, -300))
    _print_lines(lines)
    return 0


def _longest(cfg: RunConfig) -> int:
    """The most local iterations of any K of the cell (the group's length in iterations)."""
    from bladefl.fl.timemodel import allocate

    return max(allocate(K, cfg.time.alpha, cfg.time.beta, cfg.time.t_sum).iterations for K in cfg.time.K)


def _print_lines(lines: list[tuple[str, float, float]]) -> None:
    print("\nratio                                        value    target   met")
    for label, value, target in lines:
        met = value >= target if target > 0 else value < -target
        shown = f">= {target:g}" if target > 0 else f"< {-target:g}"
        print(f"{label:<44} {value:8.3f}  {shown:>8}   {'yes' if met else 'NO'}")


def drag_lines(runs: int = 8, rounds: int = 5) -> list[tuple[str, float, float]]:
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
        lines.append((f"loop speed, {label}", speed, 0.90))
    return lines


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
            eng = engine_seconds(data, shape, "full_batch", n, tau, repeat)
            loop = loop_seconds(data, shape, "full_batch", n, tau, repeat)
            eng_rate = tau * step_flops(N, n, shape) / eng / 1e9
            print(f"  full_batch: GEMM peak {peak:.1f} GFLOP/s, engine {eng_rate:.1f} GFLOP/s, "
                  f"loop {tau * step_flops(N, n, shape) / loop / 1e9:.1f} GFLOP/s")
            lines.append(("full_batch engine/peak", eng_rate / peak, 0.80))
            lines.append(("full_batch engine/loop", loop / eng, 1.25))
        tau = 3
        eng = engine_seconds(data, shape, "epoch", B, tau, repeat)
        loop = loop_seconds(data, shape, "epoch", B, tau, repeat)
        flops = tau * ((n + B - 1) // B) * step_flops(N, B, shape)
        print(f"  epoch (batch {B}): GEMM peak at these shapes {gemm_rate(N, B, shape, repeat):.1f} GFLOP/s; "
              f"engine {eng / tau * 1e3:.1f} ms/iteration, DataLoader loop "
              f"{loop / tau * 1e3:.1f} ms/iteration, engine {flops / eng / 1e9:.1f} GFLOP/s")
        lines.append((f"epoch engine/DataLoader loop [{name}]", loop / eng, 2.5))
        share, total = chain_share(cfg, data)
        print(f"  run K={list(cfg.time.K)}: {total:.2f} s, chain {share * 100:.2f}%")
        lines.append((f"chain share of run time [{name}]", share, -0.05))
    mem = peak_memory_mb(args.config, args.data_dir)
    lines.append(("peak memory of a default run (MB)", mem, -2048))
    _print_lines(lines)
    return 0
