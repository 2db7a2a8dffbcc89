"""How fast a group's random draws come, with the training taking no time (``bladefl bench --draws``).

On a GPU the epoch orders and the round ends' noise are drawn on the CPU by the engine's draw threads
while the device trains (:mod:`bladefl.fl.prefetch`); when the device is faster than the draws, the
group waits for them. This measures the draws of a workflow config's largest group (its first stacked
computations of at most ``max_rows`` rows, one after the other as a GPU computes them) through the engine's own
pipeline (:func:`bladefl.fl.engine.group_draws`), consumed in the training's order as fast as they
come: the seconds before the first iteration can start, the waits for each round end's noise, and the
draws' whole wall, which is the least wall a group of these runs can take on this machine's cores
however fast its device is. Nothing is trained and no data is read."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from bladefl.experiments.plan.config_checks import with_defaults
from bladefl.fl.engine import group_draws, round_ends
from bladefl.fl.execution import DRAW_THREADS, MAX_ROWS
from bladefl.fl.records import KResult
from bladefl.fl.stacked import lay_out, model_shape
from bladefl.fl.timemodel import allocation


@dataclass(frozen=True)
class DrawPace:
    """The draws of one stacked computation: its runs and round ends (those with noise), the
    seconds until iteration 0's orders were in, the summed and longest waits for a round end's
    noise, and the wall until every draw was taken."""

    runs: int
    iterations: int
    round_ends: int
    noisy_ends: int
    first_iteration: float
    noise_wait: float
    longest_noise_wait: float
    wall: float


def largest_group(config_path: str, max_rows: int = MAX_ROWS) -> tuple[list[list], int, int]:
    """The runs (spec, result) of each stacked computation of the config's largest group (its most
    cells and seeds under ``grouping: partition``: a block of ``seeds_per_job`` seeds; the first such),
    with N and n."""
    from bladefl.experiments.plan import config_files
    from bladefl.experiments.plan import workflow_config as wc
    from bladefl.experiments.runs.runner import batches
    from bladefl.experiments.runs.timing import group_jobs

    config = with_defaults(config_files.read_configs([config_path]))  # its seeds_per_job, as Snakemake reads it
    group = max(wc.partition_jobs(config), key=lambda g: len(g.cells) * len(g.seeds))
    jobs, draws = group_jobs(config, group, "draws")
    out = []
    for batch in batches(jobs, True, max_rows):
        allocs = [(s, allocation(s.K, s.cfg.time)) for _, s in batch]
        out.append([(s, KResult(K=s.K, allocation=a, status="ok")) for s, a in allocs if a.feasible])
    return out, group.N, draws[0].n


def draw_pace(config_path: str, threads: int = DRAW_THREADS, max_rows: int = MAX_ROWS) -> list[DrawPace]:
    """The draws of each computation of the config's largest group, by ``threads`` draw threads, each
    taken as soon as it is there (see the module's docstring)."""
    batches, N, n = largest_group(config_path, max_rows)
    return [batch_pace(specs, N, n, threads) for specs in batches]


def batch_pace(specs: list, N: int, n: int, threads: int) -> DrawPace:
    """The draws of one stacked computation of the runs ``specs`` (spec, result)."""
    shape = model_shape(specs[0][0].cfg)
    cpu = torch.device("cpu")
    runs, layout = lay_out(specs, N, n, shape, cpu)
    ends = round_ends(runs, cpu)
    iterations = max(r.iterations for r in runs)
    waits: list[float] = []
    first = 0.0
    start = time.perf_counter()
    with group_draws(runs, ends, layout.rows, n, shape.size, cpu, threads) as (orders, noise):
        event = 0
        for i in range(iterations):
            if orders is not None:
                orders.ready(i)
            if i == 0:
                first = time.perf_counter() - start
            while event < len(ends) and ends[event][0] == i:
                t = time.perf_counter()
                noise.get(event)
                if not noise.jobs[event].empty:
                    waits.append(time.perf_counter() - t)
                event += 1
        wall = time.perf_counter() - start
    return DrawPace(runs=len(runs), iterations=iterations, round_ends=len(ends), noisy_ends=len(waits),
                    first_iteration=first, noise_wait=sum(waits), longest_noise_wait=max(waits, default=0.0),
                    wall=wall)


def bench_main(config: str) -> int:
    """``bladefl bench --draws CONFIG``: the random draws of the config's largest group, as a GPU's draw
    threads make them on this machine's cores, taken as fast as they come, printed."""
    import os

    paces = draw_pace(config, DRAW_THREADS)
    print(f"draws of the largest group of {config} ({len(paces)} computations), {DRAW_THREADS} threads for the "
          f"epoch orders and {DRAW_THREADS} for the noise, {os.cpu_count()} cores, the training taking no time")
    print(f"{'runs':>5} {'iterations':>10} {'round ends':>10} {'with noise':>10} {'first it. s':>11} "
          f"{'noise waits s':>13} {'longest s':>9} {'wall s':>7}")
    for p in paces:
        print(f"{p.runs:>5} {p.iterations:>10} {p.round_ends:>10} {p.noisy_ends:>10} {p.first_iteration:>11.2f} "
              f"{p.noise_wait:>13.2f} {p.longest_noise_wait:>9.2f} {p.wall:>7.2f}")
    first, waits, wall = (sum(getattr(p, f) for p in paces) for f in ("first_iteration", "noise_wait", "wall"))
    longest = max(p.longest_noise_wait for p in paces)
    print(f"group: {wall:.1f} s of draws' wall (the least wall its computations take here, one after the other), "
          f"{first:.1f} s before first iterations, {waits:.1f} s waiting for noise (longest {longest:.2f} s)")
    return 0
