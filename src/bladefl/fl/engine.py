"""One BLADE-FL run: K integrated rounds under the time budget (paper, "Proposed Framework").

Each round: (1) every honest client trains tau local iterations, all clients at once as one
batched computation; lazy clients plagiarize instead; optional local DP; (2) every client signs
its upload as a transaction and receivers verify signatures and digests; (3) the clients race
to mine a proof-of-work block of the accepted transactions; (4) every client validates the
block and it is appended if a majority accepts; (5) every client continues from the FedAvg of
exactly the models in the block.

Many runs that share data train as one stacked computation (:func:`run_group`; :func:`run_k`
is a group of one), with each round's chain work in a thread pool beside the training (and its
GIL-bound part, on the uploads' digests, in worker processes: :mod:`bladefl.chain.round`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import multiprocessing
import os
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from bladefl.chain import transactions
from bladefl.chain.ledger import Exclusion, Ledger, chain_id
from bladefl.chain.round import ChainOutcome, ChainState, Flagging, append_block, chain_round, keyring
from bladefl.core import atomic
from bladefl.core.rng import numpy_rng, torch_generator
from bladefl.data import datasets
from bladefl.data.partition import make_partition
from bladefl.fl import aggregation, detection, lazy, measured_constants, mlp, privacy, trainer
from bladefl.fl.run_config import RunConfig
from bladefl.fl.timemodel import Allocation, allocate

# tamper(round, transactions, payloads) -> (transactions, payloads); used by tests and demos
# to play an attacker between signing and reception.
Tamper = Callable[[int, list[transactions.Transaction], dict[int, bytes]],
                  tuple[list[transactions.Transaction], dict[int, bytes]]]


@dataclass(frozen=True)
class ClientData:
    x: torch.Tensor  # [N, n, d] float32
    y: torch.Tensor  # [N, n] int64
    x_test: torch.Tensor  # [T, d]
    y_test: torch.Tensor  # [T]

    @property
    def N(self) -> int:
        return self.x.shape[0]

    @property
    def n(self) -> int:
        return self.x.shape[1]


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device is 'cuda' but no CUDA device is available (use 'auto' or 'cpu')")
    return torch.device(name)


def client_data(train: datasets.ArrayDataset, test: datasets.ArrayDataset, indices: np.ndarray,
                device: torch.device) -> ClientData:
    return ClientData(
        x=torch.from_numpy(train.x[indices]).to(device),
        y=torch.from_numpy(train.y[indices]).to(device),
        x_test=torch.from_numpy(test.x).to(device),
        y_test=torch.from_numpy(test.y).to(device),
    )


def load_client_data(cfg: RunConfig, indices: np.ndarray | None = None) -> ClientData:
    """Load the dataset and cut it by the run's partition (computed here unless given)."""
    train = datasets.load(cfg.dataset, cfg.data_dir, train=True, normalize=cfg.normalize)
    test = datasets.load(cfg.dataset, cfg.data_dir, train=False, normalize=cfg.normalize)
    if indices is None:
        indices = make_partition(train.y, cfg.partition)
    return client_data(train, test, indices, resolve_device(cfg.device))


# Models evaluated together at round ends (bounds the activations: chunk x samples x hidden).
EVAL_CHUNK = 32


def evaluate(models: torch.Tensor, x: torch.Tensor, y: torch.Tensor, shape: mlp.Shape
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """(mean cross-entropy [R], accuracy [R]) of R flat models [R, P] on the samples x [T, d],
    y [T], computed together (:func:`bladefl.fl.mlp.shared_logits`, in chunks of
    :data:`EVAL_CHUNK` models); tensors on the models' device (no synchronisation)."""
    loss, accuracy = [], []
    for part in models.split(EVAL_CHUNK):
        logits = mlp.shared_logits(part, x, shape)
        target = y.unsqueeze(0).expand(part.shape[0], -1)
        loss.append(torch.nn.functional.cross_entropy(logits.transpose(1, 2), target, reduction="none").mean(dim=1))
        accuracy.append((logits.argmax(dim=2) == target).float().mean(dim=1))
    return torch.cat(loss), torch.cat(accuracy)


def global_train_losses(models: torch.Tensor, data: ClientData, shape: mlp.Shape) -> torch.Tensor:
    """F(w) of R flat models [R, P]: the mean over clients of each client's loss on its own data
    (every client holds n samples, so the mean over all N * n samples)."""
    return evaluate(models, data.x.reshape(data.N * data.n, -1), data.y.reshape(-1), shape)[0]


@dataclass
class RoundRecord:
    K: int
    round: int
    tau: int
    time_used: float
    train_loss: float
    test_loss: float
    test_accuracy: float
    block_hash: str
    miner: int
    block_time: float
    votes: int
    n_in_block: int
    n_lazy: int
    n_rejected: int
    theta: float  # plagiarism distance (counterfactual), see _uploads
    n_excluded: int = 0  # uploads left out of the block by the lazy-client detector
    noise_norm: float = math.nan  # norm of the lazy clients' added noise
    status: str = "ok"
    L_mean: float = math.nan
    L_max: float = math.nan
    xi_mean: float = math.nan
    xi_max: float = math.nan
    delta_mean: float = math.nan
    delta_max: float = math.nan
    dist_ref: float = math.nan  # ||w^k - w*|| when a reference optimum is given


@dataclass
class KResult:
    K: int
    allocation: Allocation
    status: str  # ok | infeasible
    rounds: list[RoundRecord] = field(default_factory=list)
    sigma_dp: float = 0.0
    train_seconds: float = 0.0
    chain_seconds: float = 0.0
    eval_seconds: float = 0.0
    ledger: Ledger | None = None
    model: torch.Tensor | None = None  # the final aggregate
    detections: list[dict] = field(default_factory=list)  # per round, client and detector (lazy.detectors)

    @property
    def final(self) -> RoundRecord | None:
        return self.rounds[-1] if self.rounds else None


@dataclass(frozen=True)
class RunSpec:
    """One run of a group: a config, its K, and where its uploads are stored / its reference optimum."""

    cfg: RunConfig
    K: int
    store: Path | None = None
    reference: torch.Tensor | None = None


# Settings every run of a group shares: they fix the data and the shapes of the stacked step.
SHARED = ("dataset", "data_dir", "normalize", "partition", "model", "train.iteration", "train.batch_size", "device")


def _setting(cfg: RunConfig, dotted: str) -> object:
    node: object = cfg
    for part in dotted.split("."):
        node = getattr(node, part)
    return node


def group_errors(specs: list[RunSpec]) -> list[str]:
    """Why ``specs`` cannot train as one stacked computation (empty when they can)."""
    if not specs:
        return ["a group needs at least one run"]
    first = specs[0].cfg
    return [f"run {i} (seed {s.cfg.seed}, K={s.K}): {name} is {_setting(s.cfg, name)!r}, the group's first run "
            f"has {_setting(first, name)!r}"
            for i, s in enumerate(specs) for name in SHARED if _setting(s.cfg, name) != _setting(first, name)]


@dataclass(frozen=True)
class Uploads:
    models: torch.Tensor  # [N, P] what every client uploads
    honest_local: torch.Tensor  # [N - M, P] the honest clients' local iterates
    theta: float  # mean ||trained - copied|| over the lazy clients (needs the counterfactual), else nan
    noise_norm: float  # mean ||upload - copied|| over the lazy clients (the added noise), else nan


def _uploads(cfg: RunConfig, K: int, k: int, trained: torch.Tensor, trainers: np.ndarray, roles: lazy.Roles,
             N: int) -> Uploads:
    """Step 1's end: the honest clients upload what they trained (rows ``trained`` of clients
    ``trainers``), the lazy clients plagiarize.

    theta is Theorem 4's plagiarism distance: between the model a lazy client would have trained
    (the counterfactual, when the lazy clients train too) and the honest model it copied, before
    the noise; the noise's norm is recorded on its own."""
    dev = trained.device
    pos = {c: i for i, c in enumerate(trainers.tolist())}
    honest_rows = trained[torch.as_tensor([pos[c] for c in roles.honest], device=dev)]
    models = torch.empty(N, trained.shape[1], device=dev)
    models[torch.as_tensor(roles.honest, device=dev)] = honest_rows
    theta = noise_norm = math.nan
    if len(roles.lazy):
        copied = lazy.plagiarize(honest_rows, len(roles.lazy), cfg.lazy.sigma2,
                                 numpy_rng(cfg.seed, "lazy-copy", K, k),
                                 torch_generator(cfg.seed, "lazy-noise", K, k))
        models[torch.as_tensor(roles.lazy, device=dev)] = copied.uploads
        noise_norm = (copied.uploads - copied.copies).norm(dim=1).mean().item()
        if cfg.lazy.counterfactual:
            own = trained[torch.as_tensor([pos[c] for c in roles.lazy], device=dev)]
            theta = (own - copied.copies).norm(dim=1).mean().item()
    return Uploads(models, honest_rows, theta, noise_norm)


def _broadcast(k: int, uploads: torch.Tensor, state: ChainState, tamper: Tamper
               ) -> tuple[list[transactions.Transaction], dict[int, bytes]]:
    """Step 2 with an attacker (``tamper``) between signing and reception: every client signs its
    upload (rows of ``uploads``, on the CPU) for this chain; receivers re-hash what they received
    and keep the transactions whose signature and payload digest verify."""
    keys, publics = keyring(state.seed, state.N)
    payloads = {i: mlp.model_bytes(uploads[i]) for i in range(uploads.shape[0])}
    txs = [transactions.sign(keys[i], k, i, state.n, payloads[i], state.chain) for i in range(uploads.shape[0])]
    txs, payloads = tamper(k, txs, payloads)
    accepted = [tx for tx in txs if transactions.check(tx, publics[tx.client], payloads.get(tx.client)) is None]
    return accepted, payloads


def _detect(cfg: RunConfig, k: int, uploads: torch.Tensor, previous: torch.Tensor, clients: list[int],
            roles: lazy.Roles) -> Flagging:
    """The validators' lazy-client detectors on the uploads of ``clients``; with ``lazy.exclude``
    the uploads the first detector flags are excluded (every honest validator computes the same)."""
    if not cfg.lazy.detectors:
        return [], [], ""
    found = detection.detect(uploads[torch.as_tensor(clients, device=uploads.device)], previous,
                             cfg.lazy.detectors)
    lazy_set = set(roles.lazy.tolist())
    rows = [{"round": k, "client": c, "lazy": c in lazy_set, "detector": d.detector, "score": float(d.scores[i]),
             "flag": bool(d.flags[i])} for d in found for i, c in enumerate(clients)]
    flagged: list[int] = []
    if cfg.lazy.exclude and len(clients) > 1:
        flagged = [c for i, c in enumerate(clients) if found[0].flags[i]][: len(clients) - 1]  # never all
    return rows, flagged, found[0].detector


def _store_models(store: Path, digests: dict[int, str], payloads: dict[int, bytes | memoryview]) -> None:
    """Write each client's payload once, named by its digest (``digests``: the accepted ones)."""
    for client, sha in digests.items():
        target = store / f"{sha}.bin"
        if not target.exists():
            atomic.write_bytes(target, payloads[client])


def model_shape(cfg: RunConfig, d: int = 784) -> mlp.Shape:
    return mlp.Shape(d=d, h=cfg.model.hidden, activation=cfg.model.activation)


def initial_model(cfg: RunConfig, shape: mlp.Shape) -> torch.Tensor:
    """w0: the same for every K of a run (derived from the run seed)."""
    return mlp.init(shape, torch_generator(cfg.seed, "init"))


@dataclass
class _Run:
    """A feasible run's state inside a group; its chain state is touched only by its own chain
    jobs, one at a time (the next job starts after the last one was collected)."""

    spec: RunSpec
    result: KResult
    N: int
    n: int
    roles: lazy.Roles
    trainers: np.ndarray  # client ids of the run's training rows (all N with the counterfactual)
    chain: ChainState
    w: torch.Tensor  # the current global model
    rows: slice = field(default_factory=lambda: slice(0, 0))  # its rows in the group's stacked parameters
    k: int = 0  # rounds trained
    pending: tuple[Future, dict] | None = None  # the last round's chain job and its partial record

    @property
    def cfg(self) -> RunConfig:
        return self.spec.cfg

    @property
    def tau(self) -> int:
        return self.result.allocation.tau

    @property
    def iterations(self) -> int:
        return self.result.allocation.iterations


def new_chain_state(cfg: RunConfig, K: int, N: int, n: int, tau: int) -> ChainState:
    """A run's chain before its first round: the clients' keys and the genesis (chain id, sample
    counts, difficulty), its faulty validators, and the generators of its race and votes."""
    keys, _ = keyring(cfg.seed, N)
    chain = chain_id(cfg.to_dict(), K)
    ledger = Ledger([transactions.public_hex(k) for k in keys], cfg.chain.difficulty_bits, chain_id=chain,
                    n_samples=[n] * N)
    faulty = set(numpy_rng(cfg.seed, "faulty", K).choice(N, size=math.floor(cfg.chain.faulty_fraction * N),
                                                          replace=False).tolist())
    return ChainState(seed=cfg.seed, n=n, chain=chain, ledger=ledger,
                      faults=[cfg.chain.fault if i in faulty else "" for i in range(N)],
                      vote_rng=numpy_rng(cfg.seed, "votes", K), race_rng=numpy_rng(cfg.seed, "race", K),
                      beta=cfg.time.beta, work_time=tau * cfg.time.alpha,
                      fixed_block_time=cfg.chain.block_time == "fixed", difficulty_bits=cfg.chain.difficulty_bits,
                      exclude=cfg.lazy.exclude)


def _start(spec: RunSpec, result: KResult, data: ClientData, shape: mlp.Shape) -> _Run:
    cfg, N = spec.cfg, data.N
    roles = lazy.choose_lazy(numpy_rng(cfg.seed, "lazy-set"), N, cfg.num_lazy)
    state = new_chain_state(cfg, spec.K, N, data.n, result.allocation.tau)
    result.ledger = state.ledger
    result.sigma_dp = privacy.noise_std(cfg.privacy.epsilon, cfg.privacy.delta, cfg.privacy.clip, data.n, spec.K)
    return _Run(spec=spec, result=result, N=N, n=data.n, roles=roles,
                trainers=np.arange(N) if cfg.lazy.counterfactual else roles.honest, chain=state,
                w=initial_model(cfg, shape).to(data.x.device))


@dataclass(frozen=True)
class _ChainDone:
    """A finished chain job: the block's outcome, the run's advanced chain state, the detection
    rows of the round, and the job's seconds (hashing and waiting for a worker included)."""

    outcome: ChainOutcome
    state: ChainState
    detections: list[dict]
    seconds: float


def _detection_rows(K: int, rows: list[dict], excluded: tuple[Exclusion, ...]) -> list[dict]:
    left_out = {e.client for e in excluded}
    return [{"K": K, **row, "excluded": row["client"] in left_out} for row in rows]


def chain_job(state: ChainState, k: int, models: torch.Tensor, flagging: Flagging,
              workers: ProcessPoolExecutor | None = None, store: Path | None = None
              ) -> tuple[ChainOutcome, ChainState]:
    """Steps 2-4 of round k without an attacker, as a chain thread runs them: the N uploads
    ``models`` [N, P] (a CPU copy) are hashed here, where they lie (hashlib releases the GIL), and
    the rest (signatures, race, proof of work, validation: work that holds the GIL) runs on the
    digests, in a worker process when ``workers`` is given, else in this thread. Returns the
    outcome and the advanced state; with ``store``, each upload is written there by its digest."""
    buffers = {i: mlp.model_buffer(models[i]) for i in range(models.shape[0])}
    digests = [transactions.digest(buffers[i]) for i in range(models.shape[0])]
    if workers is None:
        outcome, state = chain_round(state, k, digests, flagging)
    else:
        outcome, state = workers.submit(chain_round, state, k, digests, flagging).result()
    if store is not None:
        _store_models(store, dict(enumerate(digests)), buffers)
    return outcome, state


def _chain_job(run: _Run, k: int, models: torch.Tensor, flagging: Flagging,
               workers: ProcessPoolExecutor | None) -> _ChainDone:
    start = time.perf_counter()
    outcome, state = chain_job(run.chain, k, models, flagging, workers, run.spec.store)
    return _ChainDone(outcome, state, _detection_rows(run.spec.K, flagging[0], outcome.excluded),
                      time.perf_counter() - start)


def _attacked_round(run: _Run, k: int, models: torch.Tensor, uploads: torch.Tensor, tamper: Tamper) -> _ChainDone:
    """Steps 2-4 of round k with an attacker, in the main thread: sign, tamper, receive; the
    detectors see the uploads of the received transactions only; then mine, validate, append."""
    start = time.perf_counter()
    accepted, payloads = _broadcast(k, models, run.chain, tamper)
    rows, flagged, detector = _detect(run.cfg, k, uploads, run.w, [tx.client for tx in accepted], run.roles)
    outcome = append_block(run.chain, accepted, flagged, detector)
    if run.spec.store is not None:
        _store_models(run.spec.store, {tx.client: tx.model_sha256 for tx in accepted}, payloads)
    return _ChainDone(outcome, run.chain, _detection_rows(run.spec.K, rows, outcome.excluded),
                      time.perf_counter() - start)


@dataclass
class GroupTimes:
    """Where a group's wall time went (seconds). The chain runs in a thread pool beside the
    training: ``chain_wait`` is the part of it the training had to wait for."""

    wall: float = 0.0
    train: float = 0.0
    rounds: float = 0.0  # uploads, aggregation and evaluation at round ends (main thread)
    chain_busy: float = 0.0  # the chain jobs' own durations, summed
    chain_wait: float = 0.0
    orders: float = 0.0  # drawing epoch orders, or waiting for the threads that draw them
    model_steps: int = 0  # SGD steps of single models: rows x minibatches, summed over iterations

    @property
    def chain_share(self) -> float:
        return self.chain_wait / self.wall if self.wall else math.nan


@dataclass
class GroupResult:
    results: list[KResult]  # in the order of the specs
    times: GroupTimes


def _collect(run: _Run, times: GroupTimes, on_round: Callable[[RoundRecord], None] | None) -> None:
    """Wait for the run's pending chain job and complete its round record."""
    if run.pending is None:
        return
    future, partial = run.pending
    run.pending = None
    t = time.perf_counter()
    done: _ChainDone = future.result()
    times.chain_wait += time.perf_counter() - t
    times.chain_busy += done.seconds
    run.chain = done.state  # from a worker process: the copy it advanced
    run.result.ledger = done.state.ledger
    outcome = done.outcome
    members = partial.pop("members")
    if [tx.client for tx in outcome.block.transactions] != members:
        raise RuntimeError(f"block {outcome.block.header.height} holds other models than were aggregated")
    run.result.chain_seconds += done.seconds
    run.result.detections.extend(done.detections)
    record = RoundRecord(**partial, time_used=outcome.clock, block_hash=outcome.block.hash, miner=outcome.miner,
                         block_time=outcome.block_time, votes=outcome.votes,
                         n_in_block=len(outcome.block.transactions), n_rejected=run.N - outcome.n_accepted,
                         n_excluded=len(outcome.excluded))
    run.result.rounds.append(record)
    if on_round is not None:
        on_round(record)


def _end_rounds(ending: list[_Run], v: mlp.Views, data: ClientData, shape: mlp.Shape, pool: ThreadPoolExecutor,
                workers: ProcessPoolExecutor | None, tamper: Tamper | None, times: GroupTimes,
                on_round: Callable[[RoundRecord], None] | None) -> None:
    """The end of a round for every run in ``ending``: uploads (lazy copies, DP), one device-to-host
    copy of all of them, the chain jobs handed to the thread pool (and from there, on digests, to
    the worker processes when there are some), FedAvg, evaluation, and the runs' rows reset to
    their new global model.

    Without an attacker every signed upload is received, so the block holds every upload the
    detectors do not exclude, known before mining: FedAvg runs on those at once and the chain job
    overlaps the next round's training; when the job is collected the block is checked to hold
    exactly the aggregated models. With an attacker (``tamper``) the chain runs first and FedAvg
    takes the block's models."""
    steps = []
    for run in ending:
        run.k += 1
        cfg, K, k = run.cfg, run.spec.K, run.k
        step = _uploads(cfg, K, k, mlp.flatten(v, run.rows), run.trainers, run.roles, run.N)
        uploads = privacy.privatize(step.models, run.result.sigma_dp, cfg.privacy.clip,
                                    torch_generator(cfg.seed, "dp", K, k))
        steps.append((run, step, uploads))
    host = torch.cat([u for _, _, u in steps]).cpu().split(ending[0].N)  # one copy for all runs
    pending = []
    for (run, step, uploads), models in zip(steps, host, strict=True):
        t0 = time.perf_counter()
        cfg, K, k, N = run.cfg, run.spec.K, run.k, run.N
        if tamper is None:
            everyone = list(range(N))
            flagging = _detect(cfg, k, uploads, run.w, everyone, run.roles)
            members = [c for c in everyone if c not in set(flagging[1])]
            _collect(run, times, on_round)  # the previous block of this run must be on its ledger
            future = pool.submit(_chain_job, run, k, models, flagging, workers)
        else:
            done = _attacked_round(run, k, models, uploads, tamper)
            members = [tx.client for tx in done.outcome.block.transactions]
            future = Future()
            future.set_result(done)
        ids = torch.as_tensor(members, device=uploads.device)
        w = aggregation.fedavg(uploads[ids], torch.full((len(members),), float(run.n)))
        measured = {}
        if cfg.measure.constants:
            sel = torch.as_tensor(run.roles.honest, device=w.device)
            measured = dataclasses.asdict(measured_constants.measure(w, step.honest_local, data.x[sel], data.y[sel],
                                                                     data.x, data.y, shape))
        reference = run.spec.reference
        mlp.assign(v, run.rows, w, shape)
        run.w = w
        run.result.eval_seconds += time.perf_counter() - t0
        partial = dict(K=K, round=k, tau=run.tau, n_lazy=len(run.roles.lazy), theta=step.theta,
                       noise_norm=step.noise_norm, **measured, members=members,
                       dist_ref=math.nan if reference is None else float((w - reference.to(w.device)).norm()))
        pending.append((run, future, partial))
    # every new global model evaluated together: one computation and one synchronisation per round end
    t0 = time.perf_counter()
    global_models = torch.stack([run.w for run, _, _ in pending])
    test_loss, test_acc = evaluate(global_models, data.x_test, data.y_test, shape)
    scores = torch.stack([global_train_losses(global_models, data, shape), test_loss, test_acc]).T.tolist()
    share = (time.perf_counter() - t0) / len(pending)
    for (run, future, partial), (train_loss, test_loss, test_acc) in zip(pending, scores, strict=True):
        run.result.eval_seconds += share
        run.pending = (future, dict(partial, train_loss=train_loss, test_loss=test_loss, test_accuracy=test_acc))


@dataclass
class _Orders:
    """Every run's epoch orders for all its iterations, stacked [T, rows, n] (int32, on the CPU):
    round k of a run draws from its own stream (seed, "batches", K, k) for all N clients, so a
    run's minibatches do not depend on what trains beside it.

    Drawing them (an argsort of n random keys per client and iteration, about 45 us each here)
    is CPU work of the size of a GPU's training, so with ``threads`` they are drawn by a thread
    pool round by round, in the order the training needs them, while the training runs:
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


def _draw_round(table: torch.Tensor, run: _Run, k: int, n: int) -> None:
    drawn = trainer.round_orders(torch_generator(run.cfg.seed, "batches", run.spec.K, k), run.tau, run.N, n)
    table[(k - 1) * run.tau : k * run.tau, run.rows] = drawn[:, torch.as_tensor(run.trainers)].to(torch.int32)


def _orders(runs: list[_Run], rows: int, n: int, pool: ThreadPoolExecutor | None) -> _Orders:
    """Draw every run's epoch orders (see :class:`_Orders`): at once without a ``pool``, else
    handed to it in the order of the rounds' first iterations."""
    table = torch.zeros(max(r.iterations for r in runs), rows, n, dtype=torch.int32)
    rounds = sorted(((k - 1) * run.tau, index, k) for index, run in enumerate(runs) for k in range(1, run.spec.K + 1))
    if pool is None:
        for _, index, k in rounds:
            _draw_round(table, runs[index], k, n)
        return _Orders(table, [], [])  # nothing left to wait for
    return _Orders(table, [start for start, _, _ in rounds],
                   [pool.submit(_draw_round, table, runs[index], k, n) for _, index, k in rounds])


# On the CPU, rows step in blocks of this many: measured on the 2-core machine (paper model,
# epoch at batch 64, one thread), ms per row-iteration at 144 stacked rows: blocks of 8: 3.9,
# 16: 4.0, 32: 4.6, 144 (all): 5.2; 16 rows of one run alone: 4.2.
CPU_BLOCK_ROWS = 16


# Threads drawing epoch orders beside a GPU's training (on the CPU the training uses the cores).
ORDER_THREADS = 4


@contextlib.contextmanager
def _threads(count: int, name: str) -> Iterator[ThreadPoolExecutor | None]:
    if count <= 0:
        yield None
        return
    with ThreadPoolExecutor(max_workers=count, thread_name_prefix=name) as pool:
        yield pool


def default_chain_processes(stacked: bool) -> int:
    """Worker processes for the chain: half the cores when many runs are stacked (a GPU, where the
    thread driving the training must not wait for the GIL), none for one run at a time."""
    return max(1, (os.cpu_count() or 2) // 2) if stacked else 0


@contextlib.contextmanager
def worker_pool(processes: int) -> Iterator[ProcessPoolExecutor | None]:
    """Worker processes for the chain's GIL-bound work (none for 0). Started with "spawn": a
    worker imports only the chain's modules (no torch, no CUDA state inherited from a fork)."""
    if processes <= 0:
        yield None
        return
    try:
        workers = ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("spawn"))
    except (OSError, ImportError, NotImplementedError) as exc:  # e.g. no /dev/shm for its semaphores
        warnings.warn(f"no worker processes for the chain ({exc}); it runs in threads", RuntimeWarning, stacklevel=3)
        yield None
        return
    with workers:
        yield workers


def run_group(specs: list[RunSpec], data: ClientData, *, tamper: Tamper | None = None,
              on_round: Callable[[RoundRecord], None] | None = None, chain_threads: int = 2,
              chain_processes: int = 0, order_threads: int | None = None,
              block_rows: int | None = None) -> GroupResult:
    """Run many BLADE-FL runs that share data (dataset, partition, model shape, iteration kind) as
    one computation: the training rows of every run stacked in one set of tensors [rows, ...],
    each run with its own K, tau schedule, seed, eta, lazy set, noise and DP.

    Runs are sorted by their number of local iterations, so the rows still training are always a
    prefix and only that prefix steps; a run aggregates after each tau of its own iterations.
    Every random stream is keyed by the run (seed, K, round, client), so a run in a group gives
    the result it gives alone. The chain work of each round runs in a pool of ``chain_threads``
    threads beside the training (see :func:`_end_rounds`); with ``chain_processes`` > 0 the part
    of it that holds Python's GIL (signatures, proof of work, validation) runs in that many worker
    processes, so it does not slow the thread that drives the training. ``order_threads`` (default:
    :data:`ORDER_THREADS` on a GPU, none on the CPU) draw the epoch orders beside the training
    (see :class:`_Orders`). ``block_rows``: how many rows step
    together (default: all on a GPU; :data:`CPU_BLOCK_ROWS` on the CPU, where a block's weights
    must stay in cache across an epoch's minibatches)."""
    errors = group_errors(specs)
    if errors:
        raise ValueError("these runs cannot train as one group: " + "; ".join(errors))
    start = time.perf_counter()
    cfg0 = specs[0].cfg
    shape = model_shape(cfg0, data.x.shape[2])
    results = []
    for spec in specs:
        alloc = allocate(spec.K, spec.cfg.time.alpha, spec.cfg.time.beta, spec.cfg.time.t_sum)
        results.append(KResult(K=spec.K, allocation=alloc, status="ok" if alloc.feasible else "infeasible"))
    runs = sorted((_start(s, r, data, shape) for s, r in zip(specs, results, strict=True) if r.status == "ok"),
                  key=lambda r: -r.iterations)
    times = GroupTimes()
    if not runs:
        return GroupResult(results, times)
    row = 0
    for run in runs:
        run.rows = slice(row, row + len(run.trainers))
        row += len(run.trainers)
    dev = data.x.device
    v = mlp.contiguous_views(torch.cat([r.w.expand(len(r.trainers), -1) for r in runs]), shape)
    clients = torch.as_tensor(np.concatenate([r.trainers for r in runs]), device=dev)
    eta = torch.cat([torch.full((len(r.trainers),), float(r.cfg.train.eta)) for r in runs]).to(dev)
    n, batch = data.n, cfg0.train.batch_size
    epoch = cfg0.train.iteration == "epoch"
    offsets = (clients * n).to(torch.int32).unsqueeze(1)
    x_rows, y_rows = data.x.reshape(data.N * n, -1), data.y.reshape(-1)
    x_full = None if epoch else data.x.index_select(0, clients)
    y_full = None if epoch else data.y.index_select(0, clients)
    ends: dict[int, list[_Run]] = {}
    for run in runs:
        for k in range(1, run.spec.K + 1):
            ends.setdefault(k * run.tau - 1, []).append(run)
    steps_per_iteration = math.ceil(n / batch) if epoch else 1
    block = block_rows or (row if dev.type == "cuda" else CPU_BLOCK_ROWS)
    if order_threads is None:
        order_threads = ORDER_THREADS if dev.type == "cuda" else 0
    with (ThreadPoolExecutor(max_workers=max(1, chain_threads), thread_name_prefix="chain") as pool,
          worker_pool(chain_processes if tamper is None else 0) as workers,
          _threads(order_threads if epoch else 0, "orders") as order_pool):
        t0 = time.perf_counter()
        orders = _orders(runs, row, n, order_pool) if epoch else None
        times.orders += time.perf_counter() - t0
        for i in range(max(r.iterations for r in runs)):
            t0 = time.perf_counter()
            step_orders = None if orders is None else orders.ready(i)
            times.orders += time.perf_counter() - t0
            t0 = time.perf_counter()
            active = max(r.rows.stop for r in runs if r.iterations > i)
            for lo in range(0, active, block):
                rows = slice(lo, min(lo + block, active))
                sub = mlp.Views(v.W1[rows], v.b1[rows], v.W2[rows], v.b2[rows])
                picked = None if step_orders is None else step_orders[rows].to(dev) + offsets[rows]
                trainer.stacked_iteration(sub, x_rows, y_rows, picked, None if x_full is None else x_full[rows],
                                          None if y_full is None else y_full[rows], n=n, eta=eta[rows],
                                          batch_size=batch, shape=shape)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t1 = time.perf_counter()
            times.train += t1 - t0
            times.model_steps += active * steps_per_iteration
            if i in ends:
                _end_rounds(ends[i], v, data, shape, pool, workers, tamper, times, on_round)
                times.rounds += time.perf_counter() - t1
        for run in runs:
            _collect(run, times, on_round)
    total = sum(r.iterations * len(r.trainers) for r in runs)
    for run in runs:
        run.result.train_seconds = times.train * run.iterations * len(run.trainers) / total
        run.result.model = run.w
    times.wall = time.perf_counter() - start
    return GroupResult(results, times)


def run_k(cfg: RunConfig, data: ClientData, K: int, *, store: Path | None = None,
          tamper: Tamper | None = None, on_round: Callable[[RoundRecord], None] | None = None,
          reference: torch.Tensor | None = None) -> KResult:
    """Run BLADE-FL with K integrated rounds (a group of one run); an infeasible K (tau < 1) is
    reported, not raised. With a ``reference`` optimum w*, each round records ||w^k - w*|| (a
    diagnostic of the bound's cells; eps2 itself comes from the loss gap, see
    :mod:`bladefl.experiments.bound_analysis`)."""
    return run_group([RunSpec(cfg, K, store, reference)], data, tamper=tamper, on_round=on_round).results[0]
