"""Random draws made on the CPU ahead of the computation that needs them: every run's epoch
orders, and the noise of its round ends (lazy clients' noise, local DP).

Each draw comes from the run's own stream (seed, purpose, K, round), so a run's draws do not
depend on what computes beside it. Drawing is CPU work of the size of a GPU's training (an
argsort of n keys per client and iteration: about 45 us each; a normal draw per parameter of
every DP upload), so with a thread pool the draws run while the GPU trains: orders round by
round in the order the training needs them, noise one round end ahead. Without a pool (the
CPU, whose cores train) they are drawn when needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import torch

from bladefl.core.rng import torch_generator
from bladefl.fl import privacy, trainer


@dataclass(frozen=True)
class OrderJob:
    """A run's epoch orders for round k: its rows of the table, its tau and seed."""

    seed: int
    K: int
    k: int
    tau: int
    N: int
    rows: slice
    trainers: torch.Tensor  # client ids of the run's rows

    @property
    def start(self) -> int:
        return (self.k - 1) * self.tau


def _draw_orders(table: torch.Tensor, job: OrderJob, n: int) -> None:
    drawn = trainer.round_orders(torch_generator(job.seed, "batches", job.K, job.k), job.tau, job.N, n)
    picked = drawn[:, job.trainers].to(torch.int32)
    if table.device.type == "cuda":  # through pinned memory, without blocking the thread
        picked = picked.pin_memory()
    table[job.start : job.start + job.tau, job.rows].copy_(picked, non_blocking=True)


@dataclass
class Orders:
    """Every run's epoch orders, stacked [iterations, rows, n] (int32, on the training's device):
    :meth:`ready` waits only for the rounds that cover an iteration."""

    table: torch.Tensor
    starts: list[int]  # first iteration of each drawing job, ascending
    jobs: list[Future]
    done: int = 0  # jobs known finished (a prefix)

    def ready(self, i: int) -> torch.Tensor:
        """The orders of iteration i [rows, n], once every round covering it is drawn."""
        while self.done < len(self.jobs) and self.starts[self.done] <= i:
            self.jobs[self.done].result()
            self.done += 1
        return self.table[i]


def draw_orders(jobs: Sequence[OrderJob], iterations: int, rows: int, n: int, device: torch.device,
                pool: ThreadPoolExecutor | None) -> Orders:
    """Draw every job's orders into one table: at once without a ``pool``, else handed to it in
    the order of the rounds' first iterations."""
    table = torch.zeros(iterations, rows, n, dtype=torch.int32, device=device)
    jobs = sorted(jobs, key=lambda j: j.start)
    if pool is None:
        for job in jobs:
            _draw_orders(table, job, n)
        return Orders(table, [], [])  # nothing left to wait for
    return Orders(table, [j.start for j in jobs], [pool.submit(_draw_orders, table, j, n) for j in jobs])


@dataclass(frozen=True)
class NoiseJob:
    """The noise one round end needs: per lazy run with noise, [M, P] from (seed, "lazy-noise",
    K, k); per DP run, [N, P] from (seed, "dp", K, k)."""

    lazy: tuple[tuple[int, int, int, int], ...]  # (seed, K, k, M)
    dp: tuple[tuple[int, int, int], ...]  # (seed, K, k)
    N: int
    P: int

    @property
    def empty(self) -> bool:
        return not self.lazy and not self.dp


@dataclass(frozen=True)
class Noise:
    lazy: torch.Tensor | None  # [sum of M, P], the lazy runs' rows in order
    dp: torch.Tensor | None  # [DP runs, N, P]


def draw_noise(job: NoiseJob, device: torch.device) -> Noise:
    """Draw a round end's noise on the CPU (into pinned memory on a GPU) and move it to ``device``."""
    pin = device.type == "cuda"

    def fill(count: int, streams: list[tuple[torch.Generator, int]]) -> torch.Tensor | None:
        if not streams:
            return None
        out = torch.empty(count, job.P, pin_memory=pin)
        row = 0
        for generator, rows in streams:
            privacy.draw((rows, job.P), generator, out[row : row + rows])
            row += rows
        return out.to(device, non_blocking=True)

    lazy = fill(sum(m for *_, m in job.lazy),
                [(torch_generator(seed, "lazy-noise", K, k), m) for seed, K, k, m in job.lazy])
    dp = fill(len(job.dp) * job.N, [(torch_generator(seed, "dp", K, k), job.N) for seed, K, k in job.dp])
    return Noise(lazy, None if dp is None else dp.view(len(job.dp), job.N, job.P))


class NoiseDraws:
    """The round ends' noise, in the order of the round ends: with a pool, each round end's noise
    is drawn while the rounds before it compute (``ahead`` round ends in advance)."""

    def __init__(self, jobs: list[NoiseJob], device: torch.device, pool: ThreadPoolExecutor | None,
                 ahead: int = 2) -> None:
        self.jobs, self.device, self.pool, self.ahead = jobs, device, pool, ahead
        self.futures: dict[int, Future] = {}
        for e in range(min(ahead, len(jobs))):
            self._submit(e)

    def _submit(self, e: int) -> None:
        if self.pool is not None and e < len(self.jobs) and not self.jobs[e].empty:
            self.futures[e] = self.pool.submit(draw_noise, self.jobs[e], self.device)

    def get(self, e: int) -> Noise:
        """Round end e's noise (drawn now without a pool)."""
        self._submit(e + self.ahead)
        if self.jobs[e].empty:
            return Noise(None, None)
        future = self.futures.pop(e, None)
        return draw_noise(self.jobs[e], self.device) if future is None else future.result()

