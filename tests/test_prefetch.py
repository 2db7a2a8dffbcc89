"""The random draws made ahead of the training (bladefl.fl.prefetch): each run's noise comes from its own
stream whichever thread draws it, and a round end's noise is never held back behind the epoch orders."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import torch
from tests.test_engine import small_cfg

from bladefl.core.rng import torch_generator
from bladefl.fl import engine, prefetch
from bladefl.fl.records import KResult, RunSpec
from bladefl.fl.stacked import lay_out, model_shape
from bladefl.fl.timemodel import allocate
from conftest import HANG_S

CPU = torch.device("cpu")


def _jobs() -> list[prefetch.NoiseJob]:
    return [prefetch.NoiseJob(lazy=((3, 2, 1, 2), (5, 4, 1, 1)), dp=((3, 2, 1), (7, 1, 1)), N=3, P=11),
            prefetch.NoiseJob(lazy=(), dp=(), N=3, P=11),
            prefetch.NoiseJob(lazy=(), dp=((7, 3, 2),), N=3, P=11)]


def test_noise_drawn_by_threads_stream_by_stream_is_each_runs_own_stream():
    """With a pool every run's stream is a task of its own; the values are those drawn at once, and
    each run's rows are the standard normals of its (seed, purpose, K, round) stream."""
    jobs = _jobs()
    with ThreadPoolExecutor(3) as pool:
        draws = prefetch.NoiseDraws(jobs, CPU, pool)
        threaded = [draws.get(e) for e in range(len(jobs))]
    at_once = [prefetch.NoiseDraws(jobs, CPU, None).get(e) for e in range(len(jobs))]
    for a, b in zip(threaded, at_once, strict=True):
        for x, y in ((a.lazy, b.lazy), (a.dp, b.dp)):
            assert (x is None) == (y is None) and (x is None or torch.equal(x, y))
    first = threaded[0]
    assert first.lazy is not None and first.dp is not None and first.lazy.shape == (3, 11)
    assert torch.equal(first.lazy[2:], torch.empty(1, 11).normal_(generator=torch_generator(5, "lazy-noise", 4, 1)))
    assert torch.equal(first.dp[1], torch.empty(3, 11).normal_(generator=torch_generator(7, "dp", 1, 1)))
    assert threaded[1].lazy is None and threaded[1].dp is None
    assert not torch.equal(threaded[2].dp[0], first.dp[1])  # another round of the same seed: another stream


def _runs_with_noise():
    specs = []
    for K in (1, 2):
        cfg = small_cfg(seed=K, privacy={"epsilon": 50.0, "clip": 5.0})
        alloc = allocate(K, cfg.time.alpha, cfg.time.beta, cfg.time.t_sum)
        specs.append((RunSpec(cfg, K), KResult(K=K, allocation=alloc, status="ok")))
    shape = model_shape(specs[0][0].cfg, 30)
    runs, layout = lay_out(specs, 4, 48, shape, CPU)
    return runs, engine.round_ends(runs, CPU), layout.rows, shape.size


def test_a_round_ends_noise_is_not_held_back_behind_the_epoch_orders(monkeypatch):
    """The engine hands every run's epoch orders to its threads at the start; were the noise drawn by
    the same threads, the first round end's noise would wait until every order is drawn. Here the
    orders' thread is held by a job that never ends until released: the noise still comes."""
    release = threading.Event()

    def held_orders(jobs, iterations, rows, n, device, pool):  # noqa: ANN001, ANN202 - the patched signature
        assert pool is not None
        pool.submit(release.wait)
        return None

    monkeypatch.setattr(engine, "draw_orders", held_orders)
    runs, ends, rows, size = _runs_with_noise()
    first = next(e for e, (_, end, ks) in enumerate(ends) if not engine.noise_job(end, ks, size).empty)
    got: list = []
    try:
        with engine.group_draws(runs, ends, rows, 48, size, CPU, threads=1) as (_, noise):
            drawer = threading.Thread(target=lambda: got.append(noise.get(first)), daemon=True)
            drawer.start()
            drawer.join(timeout=HANG_S)  # generous on a busy machine: the draw itself takes milliseconds
            came = bool(got)
            release.set()
            drawer.join()
    finally:
        release.set()
    assert came, "the round end's noise waited behind the epoch orders"
    assert got[0].dp is not None and got[0].dp.shape[1:] == (4, size)


def test_the_draws_bench_times_every_computation_of_a_configs_largest_group():
    """`bladefl bench --draws`: the draws of the smoke config's largest group, consumed as they come."""
    from bladefl.experiments.runs.draw_pace import draw_pace, largest_group

    batches, N, n = largest_group("config/smoke.yaml")
    paces = draw_pace("config/smoke.yaml", threads=2)
    assert (N, n) == (4, 64) and len(paces) == len(batches) >= 1
    assert [p.runs for p in paces] == [len(b) for b in batches]
    for p in paces:
        assert 0 < p.noisy_ends <= p.round_ends and p.iterations > 0
        assert 0 <= p.first_iteration <= p.wall and 0 <= p.longest_noise_wait <= p.noise_wait <= p.wall


def test_epoch_orders_are_drawn_chunk_by_chunk_the_iterations_needed_first_first(monkeypatch):
    """With a pool the orders come a chunk of a round at a time, the most urgent chunk first: the first
    chunk of every round starting at iteration 0 before any later chunk, each round's chunks in order
    (its stream drawn in order), and the table the one drawn at once."""
    jobs = [prefetch.OrderJob(seed=s, K=K, k=k, tau=tau, N=3, rows=slice(3 * r, 3 * r + 3),
                              trainers=torch.arange(3))
            for r, (s, K, k, tau) in enumerate([(0, 1, 1, 10), (1, 2, 1, 5), (1, 2, 2, 5), (2, 3, 1, 3)])]
    at_once = prefetch.draw_orders(jobs, 10, 12, 8, CPU, None)
    drawn: list[tuple[int, int]] = []
    chunk = prefetch._draw_chunk

    def logged(table, job, generator, first, count, n):  # noqa: ANN001, ANN202 - the patched signature
        drawn.append((job.start + first, job.start + first + count))
        chunk(table, job, generator, first, count, n)

    monkeypatch.setattr(prefetch, "_draw_chunk", logged)
    with ThreadPoolExecutor(1) as pool:
        orders = prefetch.draw_orders(jobs, 10, 12, 8, CPU, pool)
        tables = [orders.ready(i).clone() for i in range(10)]
    assert torch.equal(torch.stack(tables), at_once.table)
    starts = [a for a, _ in drawn]
    assert starts[:3] == [0, 0, 0] and starts == sorted(starts)  # one thread: strictly the most urgent first
    assert all(b - a <= prefetch.CHUNK for a, b in drawn) and len(drawn) == 3 + 2 + 2 + 1
