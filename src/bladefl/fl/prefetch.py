"""Random draws made on the CPU ahead of the computation that needs them: every run's epoch
orders, and the noise of its round ends (lazy clients' noise, local DP).

Each draw comes from the run's own stream (seed, purpose, K, round), so a run's draws do not
depend on what computes beside it. Drawing is CPU work of the size of a GPU's training (an
argsort of n keys per client and iteration: about 45 us each; a normal draw per parameter of
every DP upload), so with thread pools the draws run while the GPU trains: orders a few
iterations of a round at a time, the ones needed first drawn first, and noise two round ends
ahead, every run's stream a task. Without a pool (the CPU, whose cores train) they are drawn
when needed, with the same values.
"""

from __future__ import annotations

import heapq
import threading
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


CHUNK = 4  # iterations of a run's round drawn as one task (its stream drawn chunk after chunk)


def _draw_chunk(table: torch.Tensor, job: OrderJob, generator: torch.Generator, first: int, count: int, n: int
                ) -> None:
    """Iterations ``first`` .. ``first + count - 1`` of the job's round (of its stream, drawn in order)."""
    drawn = trainer.round_orders(generator, count, job.N, n)
    picked = drawn[:, job.trainers].to(torch.int32)
    if table.device.type == "cuda":  # through pinned memory, without blocking the thread
        picked = picked.pin_memory()
    table[job.start + first : job.start + first + count, job.rows].copy_(picked, non_blocking=True)


class Orders:
    """Every run's epoch orders, stacked [iterations, rows, n] (int32, on the training's device):
    :meth:`ready` waits only until every round covering an iteration has drawn it.

    With a ``pool`` each round's orders are drawn :data:`CHUNK` iterations at a time, the chunk
    needed first drawn first (a heap keyed by the iteration a chunk starts at; a round's next chunk
    joins the heap once its previous one is drawn, so its stream is drawn in order): the first
    iteration waits for the first chunk of every run's first round, not for whole rounds."""

    def __init__(self, jobs: Sequence[OrderJob], iterations: int, rows: int, n: int, device: torch.device,
                 pool: ThreadPoolExecutor | None) -> None:
        self.table = torch.zeros(iterations, rows, n, dtype=torch.int32, device=device)
        self.n, self.pool = n, pool
        self.missing = [0] * iterations  # per iteration: the rounds covering it not yet drawn that far
        self.lock = threading.Condition()
        self.heap: list[tuple[int, int, int]] = []  # (iteration a chunk starts at, job, first of its round)
        self.generators: list[torch.Generator] = []
        self.failed: BaseException | None = None
        self.jobs = list(jobs)
        for job in self.jobs:
            generator = torch_generator(job.seed, "batches", job.K, job.k)
            if pool is None:
                _draw_chunk(self.table, job, generator, 0, job.tau, n)
                continue
            self.generators.append(generator)
            for i in range(job.start, job.start + job.tau):
                self.missing[i] += 1
        if pool is not None:  # every round's first chunk is in the heap before a task takes one
            self.heap = [(job.start, j, 0) for j, job in enumerate(self.jobs)]
            heapq.heapify(self.heap)
            for _ in self.jobs:
                pool.submit(self._draw_next)

    def _push(self, j: int, first: int) -> None:
        """Round j's chunk from iteration ``first`` of the round joins the heap, and a task takes the
        most urgent chunk."""
        assert self.pool is not None
        with self.lock:
            heapq.heappush(self.heap, (self.jobs[j].start + first, j, first))
        self.pool.submit(self._draw_next)

    def _draw_next(self) -> None:
        with self.lock:
            _, j, first = heapq.heappop(self.heap)
        job = self.jobs[j]
        count = min(CHUNK, job.tau - first)
        try:
            _draw_chunk(self.table, job, self.generators[j], first, count, self.n)
        except BaseException as exc:  # raised again where the orders are awaited
            with self.lock:
                self.failed = exc
                self.lock.notify_all()
            raise
        with self.lock:
            for i in range(job.start + first, job.start + first + count):
                self.missing[i] -= 1
            self.lock.notify_all()
        if first + count < job.tau:
            self._push(j, first + count)

    def ready(self, i: int) -> torch.Tensor:
        """The orders of iteration i [rows, n], once every round covering it has drawn it."""
        if self.pool is not None:
            with self.lock:
                self.lock.wait_for(lambda: self.missing[i] == 0 or self.failed is not None)
                if self.failed is not None:
                    raise RuntimeError("drawing the epoch orders failed") from self.failed
        return self.table[i]


def draw_orders(jobs: Sequence[OrderJob], iterations: int, rows: int, n: int, device: torch.device,
                pool: ThreadPoolExecutor | None) -> Orders:
    """Draw every job's orders into one table: at once without a ``pool``, else by its threads, the
    iterations needed first drawn first (:class:`Orders`)."""
    return Orders(jobs, iterations, rows, n, device, pool)


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


Stream = tuple[torch.Tensor, int, tuple]  # (the rows of a buffer it fills, seed, keys of its stream)


@dataclass(frozen=True)
class NoiseBuffers:
    """A round end's noise on the host (pinned on a GPU), and its streams: each fills its own rows."""

    lazy: torch.Tensor | None
    dp: torch.Tensor | None
    streams: tuple[Stream, ...]


def noise_buffers(job: NoiseJob, pin: bool) -> NoiseBuffers:
    """The host buffers of ``job``'s noise and the stream that fills each run's rows: a lazy run's
    M rows from (seed, "lazy-noise", K, k), a DP run's N rows from (seed, "dp", K, k)."""
    streams: list[Stream] = []
    lazy = dp = None
    if job.lazy:
        lazy = torch.empty(sum(m for *_, m in job.lazy), job.P, pin_memory=pin)
        starts = [0]
        for *_, m in job.lazy:
            starts.append(starts[-1] + m)
        streams += [(lazy[a:b], seed, ("lazy-noise", K, k))
                    for (seed, K, k, _), a, b in zip(job.lazy, starts, starts[1:], strict=False)]
    if job.dp:
        dp = torch.empty(len(job.dp), job.N, job.P, pin_memory=pin)
        streams += [(dp[i], seed, ("dp", K, k)) for i, (seed, K, k) in enumerate(job.dp)]
    return NoiseBuffers(lazy, dp, tuple(streams))


def fill(stream: Stream) -> None:
    """Draw one stream's standard normals into its rows (the same values, whichever thread draws)."""
    rows, seed, keys = stream
    privacy.draw(tuple(rows.shape), torch_generator(seed, *keys), rows)


def moved(buffers: NoiseBuffers, job: NoiseJob, device: torch.device) -> Noise:
    """The drawn noise on ``device`` (from pinned memory without blocking on a GPU)."""
    lazy = None if buffers.lazy is None else buffers.lazy.to(device, non_blocking=True)
    dp = None if buffers.dp is None else buffers.dp.to(device, non_blocking=True)
    return Noise(lazy, None if dp is None else dp.view(len(job.dp), job.N, job.P))


def draw_noise(job: NoiseJob, device: torch.device) -> Noise:
    """Draw a round end's noise on the CPU, stream after stream, and move it to ``device``."""
    buffers = noise_buffers(job, device.type == "cuda")
    for stream in buffers.streams:
        fill(stream)
    return moved(buffers, job, device)


class NoiseDraws:
    """The round ends' noise, in the order of the round ends. With a ``pool`` (threads of its own:
    the epoch orders, all handed to their pool at the start, never hold a round end's noise back),
    each round end's noise is drawn while the rounds before it compute, ``ahead`` round ends in
    advance, every run's stream a task of its own, so the threads draw one round end's runs
    together; without a pool, each round end's noise is drawn when needed."""

    def __init__(self, jobs: list[NoiseJob], device: torch.device, pool: ThreadPoolExecutor | None,
                 ahead: int = 2) -> None:
        self.jobs, self.device, self.pool, self.ahead = jobs, device, pool, ahead
        self.pending: dict[int, Future] = {}
        for e in range(min(ahead, len(jobs))):
            self._submit(e)

    def _start(self, e: int) -> tuple[NoiseBuffers, list[Future]]:
        """In a pool thread: round end e's buffers (taking pinned memory can take a while), and its
        streams handed to the pool."""
        assert self.pool is not None
        buffers = noise_buffers(self.jobs[e], self.device.type == "cuda")
        return buffers, [self.pool.submit(fill, stream) for stream in buffers.streams]

    def _submit(self, e: int) -> None:
        if self.pool is not None and e < len(self.jobs) and not self.jobs[e].empty:
            self.pending[e] = self.pool.submit(self._start, e)

    def get(self, e: int) -> Noise:
        """Round end e's noise (drawn now without a pool)."""
        self._submit(e + self.ahead)
        job = self.jobs[e]
        if job.empty:
            return Noise(None, None)
        started = self.pending.pop(e, None)
        if started is None:
            return draw_noise(job, self.device)
        buffers, parts = started.result()
        for part in parts:
            part.result()
        return moved(buffers, job, self.device)
