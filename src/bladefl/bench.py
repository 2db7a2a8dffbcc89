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
included, with the same breakdown. ``--draws CONFIG`` times the random draws of the config's largest
group alone, as a GPU's draw threads make them on this machine's cores
(:mod:`bladefl.experiments.runs.draw_pace`). ``--fixed-work`` measures whole runs of the workflow's engines and
cells: the per-round fixed work's share of a run (the engine's clock), and the training's rate over the sgemm
rate (:mod:`bladefl.experiments.runs.fixed_work`). ``--workflow CONFIG`` runs a grid's part through Snakemake as a
user runs it here (one process per run on the CPU) and prints the CPU of every process it started
(:mod:`bladefl.experiments.runs.workflow_cpu`).

Every target is a named constant below; the bench prints each value beside its target.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch

from bladefl.data.datasets import get_spec
from bladefl.experiments.runs import draw_pace, fixed_work, peer
from bladefl.experiments.runs.targets import Target, print_lines
from bladefl.experiments.runs.timing import (
    bench_data,
    chain_drag,
    chain_share,
    engine_times,
    gemm_rate,
    grid_seconds,
    loop_seconds,
    one_run,
    peak_memory_mb,
    raw_step_rate,
    round_end_seconds,
    stacked_engine,
    step_flops,
)
from bladefl.fl import mlp
from bladefl.fl.engine import ClientData, GroupTimes
from bladefl.fl.execution import default_chain_processes
from bladefl.fl.records import ROUND_END_PARTS
from bladefl.fl.run_config import RunConfig, from_dict, load_config

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
BOOKKEEPING_OF_COMPUTATION = Target(0.05, at_least=False)  # a group's runs put in place over its computation


def breakdown_line(times: GroupTimes) -> str:
    """Where a wall went, in seconds and shares; the host copy's share, and the waits for the
    compute stream at the clock's marks (inside the parts) apart."""
    parts = times.breakdown()
    wall = parts["wall"] or math.nan
    shown = [f"{k} {parts[k]:.2f} s ({parts[k] / wall:.0%})" for k in ("train", "orders", *ROUND_END_PARTS,
                                                                          "chain_wait", "other")]
    return (", ".join(shown) + f"; {times.round_ends} round ends, {times.run_rounds} run-rounds; host copy "
            f"{times.host_copy / wall:.1%} of the wall, sync waits {times.sync / wall:.1%}, "
            f"{times.host_allocations} host buffers allocated")


def cuda_main(args: argparse.Namespace) -> int:
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda but no CUDA device is available")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"torch {torch.__version__}, {name}, fp32")
    cfg = load_config(args.config, [f"data_dir={args.data_dir}", f"device={args.device}"]) if args.config else \
        from_dict({"data_dir": args.data_dir, "device": args.device})
    data, what = bench_data(cfg)
    data = ClientData(data.x.to(device), data.y.to(device), data.x_test.to(device), data.y_test.to(device),
                      data.partition_sha256)
    shape = mlp.Shape(d=get_spec(cfg.dataset).pixels, h=cfg.model.hidden, activation=cfg.model.activation)
    steps_per_iteration = -(-data.n // cfg.train.batch_size)
    print(f"data {what}; one cell: K={list(cfg.time.K)}, N={data.N}")
    lines = []
    print("\nmodel-steps per second of wall time and of training time, against the raw stacked matmuls")
    print("seeds  runs  max rows  mean rows   wall steps/s  train steps/s   raw steps/s  wall/raw  train/raw  "
          "chain share  wall s")
    for seeds in [] if args.grid_only else args.seeds or ([1, 6, 23] if device.type == "cuda" else [1]):
        times = stacked_engine(cfg, data, seeds)
        max_rows = seeds * len(cfg.time.K) * data.N
        mean_rows = times.model_steps / (steps_per_iteration * _longest(cfg))  # rows stepping, on average
        raw = raw_step_rate(max(1, round(mean_rows)), cfg.train.batch_size, shape, device, 2 if args.quick else 3)
        wall_rate, train_rate = times.model_steps / times.wall, times.model_steps / times.train
        print(f"{seeds:>5} {seeds * len(cfg.time.K):>5} {max_rows:>9} {mean_rows:>10.0f} {wall_rate:>14,.0f} "
              f"{train_rate:>14,.0f} {raw:>13,.0f} {wall_rate / raw:>9.2f} {train_rate / raw:>10.2f} "
              f"{times.chain_share:>12.1%} {times.wall:>7.1f}")
        print(f"      wall: {breakdown_line(times)}")
        if args.host_copy_compare and device.type == "cuda" and seeds == max(args.seeds or [1, 6, 23]):
            # the option: the round ends' host copies into buffers kept across round ends; measured beside
            kept = stacked_engine(cfg, data, seeds, host_buffers=True)
            print(f"      kept host buffers (the option): wall/raw {times.model_steps / kept.wall / raw:.2f} "
                  f"(default {wall_rate / raw:.2f}); {breakdown_line(kept)}")
        lines.append((f"engine wall/raw at {seeds} seeds ({max_rows} rows)", wall_rate / raw, ENGINE_WALL_OF_RAW))
        lines.append((f"chain share of wall at {seeds} seeds", times.chain_share, CHAIN_SHARE_STACKED))
    lines += [] if args.grid_only else drag_lines()
    if args.grid:
        wall, runs, summed, write = grid_seconds(args.grid, args.device, args.data_dir, str(out_of(args)),
                                                 args.grid_seeds)
        print(f"\nwhole grid {args.grid} ({runs} runs, {summed.model_steps:,} model-steps): {wall:.1f} s, "
              f"{summed.model_steps / wall:,.0f} model-steps per wall second; writing the run folders {write:.1f} s")
        print(f"  the groups' wall: {breakdown_line(summed)}")
        lines.append((f"whole grid wall seconds ({runs} runs)", wall, GRID_WALL_SECONDS))
    print_lines(lines)
    return 0


def _longest(cfg: RunConfig) -> int:
    """The most local iterations of any K of the cell (the group's length in iterations)."""
    from bladefl.fl.timemodel import allocation

    return max(allocation(K, cfg.time).iterations for K in cfg.time.K)


def drag_lines(runs: int = 8, rounds: int = 5) -> list[tuple[str, float, Target]]:
    """The chain's drag on the training's driving thread (:func:`chain_drag`) at the paper's model
    size, with the GIL-bound part in the chain threads and in worker processes."""
    import os

    P = mlp.Shape(d=get_spec("mnist").pixels).size  # the paper's MNIST model
    processes = default_chain_processes(True)
    print(f"\nchain beside a Python loop ({runs} runs x {rounds} rounds, N=20, P={P:,}, {os.cpu_count()} cores)")
    lines = []
    for label, count in (("chain in threads", 0), (f"chain in {processes} processes", processes)):
        speed, wall = chain_drag(20, P, runs, rounds, count)
        print(f"  {label:<24} loop speed {speed:6.1%} of alone, chain wall {wall:.2f} s")
        lines.append((f"loop speed, {label}", speed, LOOP_SPEED_BESIDE_CHAIN))
    return lines


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


def workflow_main(args: argparse.Namespace) -> int:
    """``--workflow CONFIG``: the grid's part through Snakemake in the workflow's own shape, and its CPU."""
    from bladefl.experiments.plan import config_checks
    from bladefl.experiments.runs import workflow_cpu
    from bladefl.experiments.runs.timing import grid_part

    config = config_checks.read_checked(
        args.workflow, None if args.grid_seeds is None else lambda c: grid_part(c, args.grid_seeds))
    return workflow_cpu.bench_main(args.workflow, config, out_of(args), args.cores, args.grouping, args.baseline_cpu)


def bookkeeping_main(args: argparse.Namespace) -> int:
    """``--bookkeeping CONFIG``: the grid through Snakemake with the GPU profile's grouping on this machine,
    then per group the seconds its runs took to be in place after its computation, over that computation."""
    from bladefl.core import owned
    from bladefl.experiments.plan.config_files import read_configs
    from bladefl.experiments.runs.bookkeeping import bookkeeping, run_grid

    out = out_of(args).resolve()
    owned.fresh(out, "bench-bookkeeping")
    config = read_configs(args.bookkeeping)
    wall = run_grid(args.bookkeeping, out, args.cores, Path.cwd())
    table = bookkeeping({**config, "results_dir": str(out)}, out)
    print(f"grid {' '.join(args.bookkeeping)} through Snakemake (profiles/gpu's grouping, {args.cores} cores): "
          f"{wall:.1f} s wall, {int(table.runs.sum())} runs in {len(table)} groups")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    total = float(table.bookkeeping_s.sum() / table.computation_s.sum())
    per_run = float(table.bookkeeping_s.sum() / table.runs.sum())
    print(f"bookkeeping {per_run:.3f} s per run after its group's computation ({args.cores} cores)")
    return print_lines([("bookkeeping / computation, whole grid", total, BOOKKEEPING_OF_COMPUTATION),
                         ("bookkeeping / computation, worst group", float(table.ratio.max()),
                          BOOKKEEPING_OF_COMPUTATION)])


# What each measurement reads: an option given that the chosen one does not read is refused, never ignored.
READS = {"draws": {"draws"}, "chain_drag": {"chain_drag"}, "bookkeeping": {"bookkeeping", "out", "cores"},
         "peer": {"peer", "peer_rounds", "config", "data_dir", "threads", "out"},
         "fixed_work": {"fixed_work", "data_dir", "threads"},
         "workflow": {"workflow", "grid_seeds", "grouping", "baseline_cpu", "cores", "out"},
         "cpu": {"config", "data_dir", "quick", "threads"},
         "cuda": {"config", "data_dir", "device", "seeds", "grid", "grid_seeds", "grid_only", "out",
                  "host_copy_compare", "quick", "threads"}}
# Where each measurement that writes run folders writes them unless --out says.
OUT = {"bookkeeping": "results/bench-bookkeeping", "peer": "results/bench-peer", "cuda": "results/bench-grid",
       "workflow": "results/bench-workflow"}
LABELS = {"draws": "--draws", "chain_drag": "--chain-drag", "bookkeeping": "--bookkeeping", "peer": "--peer",
          "fixed_work": "--fixed-work", "workflow": "--workflow",
          "cpu": "the CPU bench", "cuda": "the multi-run bench (--device cuda, --seeds or --grid)"}


def measurement(args: argparse.Namespace) -> str:
    """The measurement a call asks for (a key of :data:`READS`)."""
    if args.draws:
        return "draws"
    if args.chain_drag:
        return "chain_drag"
    if args.bookkeeping:
        return "bookkeeping"
    if args.peer:
        return "peer"
    if args.fixed_work:
        return "fixed_work"
    if args.workflow:
        return "workflow"
    return "cuda" if args.device != "cpu" or args.grid or args.seeds else "cpu"


def out_of(args: argparse.Namespace) -> Path:
    """``--out``, else the folder of the measurement's own (:data:`OUT`)."""
    return Path(args.out or OUT[measurement(args)])


def checked(args: argparse.Namespace, given: set[str]) -> str:
    """Every input a call names read and checked before anything is measured (the run config, the
    workflow configs, the grid's part), then its measurement, refused where ``given`` (the options
    set away from their defaults) holds one it does not read."""
    from bladefl.experiments.plan import config_checks
    from bladefl.experiments.plan.config_files import read_configs
    from bladefl.experiments.plan.workflow_config import run_seeds
    from bladefl.experiments.runs.timing import grid_part

    if args.config:
        load_config(args.config, [f"data_dir={args.data_dir}", "device=cpu"])
    for paths in ([args.grid] if args.grid else [], [args.draws] if args.draws else [], args.bookkeeping or [],
                  args.workflow or []):
        if paths:
            config_checks.read_checked(paths)
    if args.grid_seeds is not None:
        if not (args.grid or args.workflow):
            raise ValueError("--grid-seeds is a part of --grid's or --workflow's grid: give one")
        run_seeds(grid_part(read_configs([args.grid] if args.grid else args.workflow), args.grid_seeds))
    if args.baseline_cpu is not None and not (math.isfinite(args.baseline_cpu) and args.baseline_cpu > 0):
        raise ValueError(f"--baseline-cpu: {args.baseline_cpu!r} is not a positive number of CPU seconds")
    kind = measurement(args)
    extra = sorted(given - READS[kind])
    if extra:
        reads = ", ".join(sorted("--" + r.replace("_", "-") for r in READS[kind]))
        raise ValueError(f"--{extra[0].replace('_', '-')}: {LABELS[kind]} does not read it (it reads {reads}): "
                         f"refused, not ignored")
    return kind


def threads_of(args: argparse.Namespace) -> int:
    """``--threads``, else the workflow's ``threads_per_run`` (config/config.yaml, as Snakemake reads it): the
    threads a grid job runs with, so the bench measures the program the grid runs."""
    from bladefl.core import strict_yaml
    from bladefl.experiments.runs import provenance

    given = getattr(args, "threads", None) or strict_yaml.read_file(provenance.project_root() / "config/config.yaml")[
        "threads_per_run"]
    return int(given)


def main(args: argparse.Namespace) -> int:
    runner = {"draws": lambda a: draw_pace.bench_main(a.draws), "bookkeeping": bookkeeping_main,
              "peer": lambda a: peer.bench_main(a, threads_of(a), out_of(a)),
              "fixed_work": lambda a: fixed_work.bench_main(a.data_dir, threads_of(a)),
              "workflow": workflow_main,
              "chain_drag": lambda _: print_lines(drag_lines())}.get(measurement(args))
    if runner is not None:
        return runner(args)
    torch.set_num_threads(threads_of(args))  # the grid's own threads, not torch's default of every core
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
        data, what = bench_data(cfg)
        shape = mlp.Shape(d=get_spec(cfg.dataset).pixels, h=cfg.model.hidden, activation=cfg.model.activation)
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
    return print_lines(lines)
