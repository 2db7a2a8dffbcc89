"""The end of a round for every run that ends one at the same iteration, as one computation.

For R runs of N clients ending together (paper, "Proposed Framework", steps 1 and 5; steps 2-4
are the chain's, :mod:`bladefl.fl.chain_executor`):

1. the uploads [R, N, P]: the honest clients' trained rows, gathered at once; each lazy client
   copies a random honest model of its run's round and adds N(0, sigma2) noise; local DP clips
   and noises the uploads of the runs that use it (noise drawn ahead, :mod:`bladefl.fl.prefetch`);
2. their copy to the host for the chain (into pinned buffers kept across round ends, on a side
   stream on a GPU: :mod:`bladefl.fl.host_buffers`), and the
   validators' lazy-client detectors, the statistics of all detecting runs together;
3. FedAvg of every run's block members (weights 0 for excluded uploads), the runs' rows reset to
   their new global models, the bound's constants where measured (against the honest clients'
   aggregate: :mod:`bladefl.fl.measured_constants`), and the new global models evaluated together;
   one synchronisation brings every scalar of the round end to the host.

Every random draw keeps its run's stream (seed, purpose, K, round), so a run gives the same
result whatever ends beside it. What is fixed about a set of runs ending together (rows,
positions, per-run settings as tensors) is planned once per set (:class:`bladefl.fl.end_plan.EndPlan`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from bladefl.chain.round import Flagging
from bladefl.core.rng import numpy_rng
from bladefl.fl import aggregation, detection, lazy, measured_constants, mlp, privacy
from bladefl.fl.chain_executor import ChainExecutor, Tamper
from bladefl.fl.client_data import ClientData
from bladefl.fl.end_plan import EndPlan, as_index
from bladefl.fl.evaluation import METRICS, EvalSets, evaluate_draws
from bladefl.fl.host_buffers import HostBuffers, Lease
from bladefl.fl.prefetch import Noise
from bladefl.fl.records import GroupTimes, RoundMetrics
from bladefl.fl.stacked import Layout, RunState

# A round end's values per run, in the order end_round computes them (RoundMetrics' fields of these names).
ROUND_VALUES = (*METRICS, "local_train_loss")


def flagging(cfg_exclude: bool, k: int, clients: list[int], found: list[detection.Detection],
             lazy_set: set[int]) -> tuple[list[dict], Flagging]:
    """The validators' detection rows (per detector and client) and, with exclusion, the uploads
    the first detector flags (never all of them)."""
    rows = [{"round": k, "client": c, "lazy": c in lazy_set, "detector": d.detector, "score": float(d.scores[i]),
             "flag": bool(d.flags[i])} for d in found for i, c in enumerate(clients)]
    flagged: list[int] = []
    if cfg_exclude and len(clients) > 1:
        flagged = [c for i, c in enumerate(clients) if found[0].flags[i]][: len(clients) - 1]
    return rows, Flagging(tuple(flagged), found[0].detector)


class Clock:
    """Adds the seconds since the last mark to a part of :class:`GroupTimes`; on a GPU it first
    waits for the compute stream's queued kernels (not the device: the host copies on their side
    stream go on), so they count in the part that launched them; the waits are summed in ``sync``."""

    def __init__(self, times: GroupTimes, device: torch.device) -> None:
        self.times, self.cuda, self.device = times, device.type == "cuda", device
        self.last = time.perf_counter()

    def mark(self, part: str, sync: bool = True) -> None:
        if sync and self.cuda:
            start = time.perf_counter()
            torch.cuda.current_stream(self.device).synchronize()
            self.times.sync += time.perf_counter() - start
        now = time.perf_counter()
        setattr(self.times, part, getattr(self.times, part) + now - self.last)
        self.last = now


def host_copy(src: torch.Tensor, stream: torch.cuda.Stream | None, out: torch.Tensor | None = None
              ) -> tuple[torch.Tensor, Callable[[], None]]:
    """``src`` on the host for the chain, and a function that returns once it has landed: into
    ``out`` (a kept host buffer, :mod:`bladefl.fl.host_buffers`) when given, else into pinned
    memory allocated here; on a GPU on the side ``stream`` (it overlaps the next iterations'
    training); on the CPU ``src`` itself, or a plain copy into ``out``."""
    if stream is None:
        if out is None:
            return src, lambda: None
        out.copy_(src)
        return out, lambda: None
    stream.wait_stream(torch.cuda.current_stream(src.device))
    host = torch.empty(src.shape, dtype=src.dtype, pin_memory=True) if out is None else out
    with torch.cuda.stream(stream):
        host.copy_(src, non_blocking=True)
        src.record_stream(stream)  # its memory is not reused before the copy is done
        landed = torch.cuda.Event()
        landed.record(stream)
    return host, landed.synchronize


@dataclass
class RoundEnds:
    """What every round end of a group shares."""

    layout: Layout
    data: ClientData
    shape: mlp.Shape
    executor: ChainExecutor
    times: GroupTimes
    samples: EvalSets  # each draw's clients' samples and the test set, for evaluation
    tamper: Tamper | None = None
    stream: torch.cuda.Stream | None = None  # the host copies' side stream (GPU)
    buffers: HostBuffers | None = None  # host buffers kept across round ends (GPU; CPU when asked)
    local_loss: torch.Tensor | None = None  # [rows] each training row's minibatch losses of its round, summed
    steps_per_iteration: int = 1  # minibatch steps of one local iteration (1: full batch)


def local_losses(ctx: RoundEnds, end: EndPlan) -> torch.Tensor:
    """[R] each ending run's local training loss of the round: the mean over its honest trained clients
    of their minibatch losses in the round's tau iterations (each before its step), the authors'
    ``loss_locals`` (``Update.py`` lines 56-91; their lazy clients copy a loss, ours train nothing);
    NaN without the accumulator. Those rows' sums are set back to zero for their next round."""
    R, device = len(end.runs), end.trained_rows.device
    if ctx.local_loss is None:
        return torch.full((R,), float("nan"), device=device)
    honest = end.trained_rows if end.taken is None else end.trained_rows.index_select(0, end.taken)
    which = end.row_run if end.taken is None else end.row_run.index_select(0, end.taken)
    sums = torch.zeros(R, device=device).index_add_(0, which, ctx.local_loss.index_select(0, honest))
    counts = torch.zeros(R, device=device).index_add_(0, which, torch.ones(which.shape[0], device=device))
    steps = torch.tensor([r.tau * ctx.steps_per_iteration for r in end.runs], dtype=torch.float32, device=device)
    ctx.local_loss.index_fill_(0, end.trained_rows, 0.0)
    return sums / (counts * steps)


def _lazy_copies(end: EndPlan, ks: list[int]) -> tuple[list[np.ndarray], dict, list[np.ndarray], list[np.ndarray]]:
    """On the host, per lazy run: the upload each lazy client copies (positions among the R x N uploads);
    the authors'-noise runs (:data:`EndPlan.authors_noise`, by run); and per noise draw the lazy row it
    goes to and its own row (the plain runs' fixed, the authors' runs' drawn with their copies)."""
    N, sources = end.N, []
    authors = {i: (row, draw) for i, row, draw in end.authors_noise}
    dst, src = [end.plain_noise[0]], [end.plain_noise[1]]
    for i in end.lazy:  # which honest model each lazy client copies: a draw per run
        run = end.runs[i]
        rng = numpy_rng(run.cfg.seed, "lazy-copy", run.K, ks[i])
        if i in authors:  # the authors' copying: which draws each lazy upload holds, too
            chosen, held = lazy.authors_copies(rng, len(run.roles.honest), len(run.roles.lazy))
            row, draw = authors[i]
            dst.append(np.asarray([row + j for j, draws in enumerate(held) for _ in draws], dtype=np.int64))
            src.append(np.asarray([draw + d for draws in held for d in draws], dtype=np.int64))
        else:
            chosen = lazy.victims(rng, len(run.roles.honest), len(run.roles.lazy))
        sources.append(i * N + run.roles.honest[chosen])
    return sources, authors, dst, src


def _uploads(end: EndPlan, trained: torch.Tensor, ks: list[int], noise: Noise
             ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """The R x N uploads [R, N, P]; the lazy clients' noise norms and (with the counterfactual)
    the distances of their own trained models to the copied ones, per lazy row (or None)."""
    R, N, P = len(end.runs), end.N, trained.shape[1]
    own = None if end.own is None else trained.index_select(0, end.own)
    if end.placed is None:
        uploads = trained.clone() if end.lazy or end.dp else trained
    else:
        assert end.taken is not None  # planned with placed
        uploads = torch.empty(R * N, P, device=trained.device)
        uploads.index_copy_(0, end.placed, trained.index_select(0, end.taken))
    noise_norms = distances = None
    if end.lazy:
        assert end.lazy_dst is not None  # planned with lazy
        sources, authors, dst, src = _lazy_copies(end, ks)
        copies = uploads.index_select(0, as_index(np.concatenate(sources), trained.device))
        copied = copies.clone()
        if end.noise_rows is not None:
            assert end.noise_scale is not None and noise.lazy is not None  # planned with noisy runs
            copied.index_add_(0, end.noise_rows, noise.lazy * end.noise_scale)
        elif authors:  # a draw may go to several lazy rows (a copy of a copy)
            assert end.noise_scale is not None and noise.lazy is not None  # planned with noisy runs
            pick = as_index(np.concatenate(src), trained.device)
            copied.index_add_(0, as_index(np.concatenate(dst), trained.device),
                              noise.lazy.index_select(0, pick) * end.noise_scale.index_select(0, pick))
        uploads.index_copy_(0, end.lazy_dst, copied)
        noise_norms = (copied - copies).norm(dim=1)
        distances = (None if own is None or end.own_rows is None
                     else (own - copies.index_select(0, end.own_rows)).norm(dim=1))
    uploads = uploads.view(R, N, P)
    if end.dp_index is not None:
        assert noise.dp is not None and end.dp_std is not None and end.dp_clip is not None  # planned with dp
        dp = end.dp_index
        uploads.index_copy_(0, dp, privacy.add_noise(uploads.index_select(0, dp), noise.dp, end.dp_std, end.dp_clip))
    return uploads, noise_norms, distances


def _detect(ctx: RoundEnds, end: EndPlan, ks: list[int], uploads: torch.Tensor, previous: torch.Tensor,
            weights: np.ndarray) -> list[tuple[list[dict], Flagging]]:
    """Step 4's detectors (without an attacker every upload is received): the statistics of all
    detecting runs together; flagged uploads get weight 0 where the run excludes them."""
    out: list[tuple[list[dict], Flagging]] = [([], Flagging())] * len(end.runs)
    N = end.N
    for detectors, (which, idx) in end.detecting.items():
        found = detection.detect_many(uploads.index_select(0, idx), previous.index_select(0, idx), detectors)
        for i, runs_found in zip(which, found, strict=True):
            run = end.runs[i]
            out[i] = flagging(run.cfg.lazy.exclude, ks[i], list(range(N)), runs_found, set(run.roles.lazy.tolist()))
            weights[i, list(out[i][1].flagged)] = 0.0
    return out


def _attacked(ctx: RoundEnds, end: EndPlan, ks: list[int], uploads: torch.Tensor, host: torch.Tensor,
              previous: torch.Tensor, weights: np.ndarray) -> list[tuple[int, ...]]:
    """Steps 2-4 with an attacker, run by run at once: the block decides who is aggregated (its
    clients, in the block's order, are returned per run)."""
    assert ctx.tamper is not None
    held = []
    for i, run in enumerate(end.runs):
        def detect(clients: list[int], i: int = i, run: RunState = run) -> tuple[list[dict], Flagging]:
            if not run.cfg.lazy.detectors:
                return [], Flagging()
            found = detection.detect(uploads[i][as_index(clients, uploads.device)], previous[i], run.cfg.lazy.detectors)
            return flagging(run.cfg.lazy.exclude, ks[i], clients, found, set(run.roles.lazy.tolist()))

        members = ctx.executor.attacked(run.line, ks[i], host[i], ctx.tamper, detect)
        weights[i] = 0.0
        weights[i, members] = float(run.n)
        held.append(tuple(members))
    return held


def end_round(ctx: RoundEnds, end: EndPlan, ks: list[int], noise: Noise, clock: Clock) -> None:
    """The round end of the runs of ``end``, ending rounds ``ks`` (see the module's docstring);
    their blocks go to the chain executor with the round's measurements."""
    layout, data, shape = ctx.layout, ctx.data, ctx.shape
    trained = mlp.gather(layout.views, end.trained_rows)
    uploads, noise_norms, distances = _uploads(end, trained, ks, noise)
    clock.mark("uploads")
    R, N, P = uploads.shape
    lease = None
    up_view = new_view = None
    if ctx.buffers is not None and ctx.tamper is None:
        buffer = ctx.buffers.take(R * (N + 1) * P)
        lease = Lease(ctx.buffers, buffer, users=R)  # given back once each run's chain job has read it
        up_view, new_view = buffer[: R * N * P].view(R, N, P), buffer[R * N * P : R * (N + 1) * P].view(R, P)
    host, ready = host_copy(uploads, ctx.stream, up_view)
    clock.mark("host_copy")
    previous = layout.models.index_select(0, end.index)
    weights = end.weights.copy()
    if ctx.tamper is None:
        flags = _detect(ctx, end, ks, uploads, previous, weights)
        members = [tuple(np.flatnonzero(w).tolist()) for w in weights]
    else:
        ready()
        flags, members = [], _attacked(ctx, end, ks, uploads, host, previous, weights)
    clock.mark("detection")
    new = aggregation.fedavg_many(uploads, torch.from_numpy(weights))
    host_new, new_ready = host_copy(new, ctx.stream, new_view)  # for the block's commitment of the round
    layout.models.index_copy_(0, end.index, new)
    mlp.scatter(layout.views, end.trained_rows, new, end.row_run, shape)
    clock.mark("aggregate")
    measured = {}
    for i, rows, sel, draw in zip(end.measuring, end.honest_rows, end.honest_clients, end.measure_draws,
                                  strict=True):
        local = trained.index_select(0, rows)
        # against the honest clients' aggregate, not the block's (lazy noise, DP noise, exclusions):
        # the same additions as the block's FedAvg, so identical to it where every client is honest
        honest = aggregation.fedavg_many(local[None], torch.full((1, local.shape[0]), float(end.runs[i].n)))[0]
        measured[i] = dataclasses.asdict(measured_constants.measure(
            honest, local, sel - draw * data.N, data.draw_x(draw), data.draw_y(draw), shape))
    clock.mark("constants")
    parts = [*evaluate_draws(new, list(end.eval_groups), ctx.samples, shape), local_losses(ctx, end)]
    optional = [noise_norms, distances,
                None if end.references is None or end.referenced_index is None
                else (new.index_select(0, end.referenced_index) - end.references).norm(dim=1)]
    values = torch.cat([t.float() for t in parts + [t for t in optional if t is not None]]).tolist()
    clock.mark("evaluation")

    def both_ready() -> None:
        ready()
        new_ready()

    _hand_over(ctx, end, ks, values, optional, measured, members, host, both_ready, flags, host_new, lease)


def _per_run(values: list[float], runs: tuple[int, ...], end: EndPlan, only: Callable[[int], bool]
             ) -> dict[int, float]:
    """Per-run means of per-lazy-row values (rows of the lazy runs, those where ``only`` holds)."""
    out, offset = {}, 0
    for i in runs:
        if only(i):
            M = len(end.runs[i].roles.lazy)
            out[i] = float(np.mean(values[offset : offset + M]))
            offset += M
    return out


def _hand_over(ctx: RoundEnds, end: EndPlan, ks: list[int], values: list[float], optional: list,
               measured: dict[int, dict], members: list[tuple[int, ...]], host: torch.Tensor,
               ready: Callable[[], None],
               flags: list[tuple[list[dict], Flagging]], global_models: torch.Tensor, lease: Lease | None = None
               ) -> None:
    """Each run's round measurements, and its block to the chain executor (each job gives its part
    of the host buffer back, ``lease``, once it has read it)."""
    R = len(end.runs)
    per_run = {name: values[j * R : (j + 1) * R] for j, name in enumerate(ROUND_VALUES)}
    rest = values[len(ROUND_VALUES) * R :]
    noise_norm = theta = {}
    if optional[0] is not None:
        rows = optional[0].shape[0]
        noise_norm = _per_run(rest[:rows], end.lazy, end, lambda i: True)
        rest = rest[rows:]
    if optional[1] is not None:
        rows = optional[1].shape[0]
        theta = _per_run(rest[:rows], end.lazy, end, lambda i: end.runs[i].cfg.lazy.counterfactual)
        rest = rest[rows:]
    dist_ref = dict(zip(end.referenced, rest, strict=True))
    for i, run in enumerate(end.runs):
        metrics = RoundMetrics(K=run.K, round=ks[i], tau=run.tau, members=members[i],
                               **{name: column[i] for name, column in per_run.items()},
                               n_lazy=len(run.roles.lazy), theta=theta.get(i, math.nan),
                               noise_norm=noise_norm.get(i, math.nan), **measured.get(i, {}),
                               dist_ref=dist_ref.get(i, math.nan))
        run.k = ks[i]
        if ctx.tamper is None:
            rows, flag = flags[i]
            ctx.executor.submit(run.line, ks[i], host[i], ready, flag, rows, metrics, global_models[i],
                                release=None if lease is None else lease.done)
        else:
            assert run.line.tail is not None  # the tampered block, mined before this round end
            ctx.executor.record(run.line, run.line.tail, metrics)
    ctx.times.round_ends += 1
    ctx.times.run_rounds += R
