"""Steps 2-4 of every round beside the training: each run's chain jobs in a thread pool, one after
the other per run, their GIL-bound part (signatures, race, proof of work, validation) on the
uploads' digests in worker processes when there are some, and the blocks collected into the
runs' round records only when they are done (the training never waits for a block: a run's next
job takes its chain state from the previous job's result, in the pool's thread).

With an attacker between signing and reception (``tamper``, tests and demos) a round's chain
work runs at once in the calling thread instead: the block decides which models are aggregated.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import torch

from bladefl.chain import transactions
from bladefl.chain.ledger import Exclusion, chain_id
from bladefl.chain.round import (
    ChainOutcome,
    ChainState,
    Flagging,
    append_block,
    chain_round,
    genesis_ledger,
    keyring,
    read_secret,
)
from bladefl.core import atomic
from bladefl.core.rng import numpy_rng
from bladefl.fl import mlp
from bladefl.fl.records import GroupTimes, KResult, RoundMetrics, RoundRecord, round_record
from bladefl.fl.run_config import RunConfig

# tamper(round, transactions, payloads) -> (transactions, payloads); used by tests and demos
# to play an attacker between signing and reception.
Tamper = Callable[[int, list[transactions.Transaction], dict[int, bytes]],
                  tuple[list[transactions.Transaction], dict[int, bytes]]]


def new_chain_state(cfg: RunConfig, K: int, N: int, n: int, tau: int) -> ChainState:
    """A run's chain before its first round: the clients' keys and the genesis (chain id, sample
    counts, difficulty), its faulty validators, and the generators of its race and votes."""
    secret = read_secret(cfg.chain.key_secret_file)
    chain = chain_id(cfg.to_dict(), K)
    ledger = genesis_ledger(cfg.seed, N, n, cfg.chain.difficulty_bits, chain, secret)
    faulty = set(numpy_rng(cfg.seed, "faulty", K).choice(N, size=math.floor(cfg.chain.faulty_fraction * N),
                                                          replace=False).tolist())
    return ChainState(seed=cfg.seed, n=n, chain=chain, ledger=ledger,
                      faults=[cfg.chain.fault if i in faulty else "" for i in range(N)],
                      vote_rng=numpy_rng(cfg.seed, "votes", K), race_rng=numpy_rng(cfg.seed, "race", K),
                      beta=cfg.time.beta, work_time=tau * cfg.time.alpha,
                      fixed_block_time=cfg.chain.block_time == "fixed", difficulty_bits=cfg.chain.difficulty_bits,
                      exclude=cfg.lazy.exclude, secret=secret)


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


def store_models(store: Path, digests: Mapping[int, str], payloads: Mapping[int, bytes | memoryview]) -> None:
    """Write each client's payload once, named by its digest (``digests``: the accepted ones)."""
    for client, sha in digests.items():
        target = store / f"{sha}.bin"
        if not target.exists():
            atomic.write_bytes(target, payloads[client])


def round_outcome(global_model: torch.Tensor, metrics: RoundMetrics) -> tuple[dict, memoryview]:
    """What a block commits of its round (:data:`bladefl.chain.pow.OUTCOME`): the digest of the
    global model FedAvg gave from the block's uploads, and that model's metrics; and the model's
    canonical bytes (for the store)."""
    buffer = mlp.model_buffer(global_model)
    return {"model_sha256": transactions.digest(buffer), "train_loss": metrics.train_loss,
            "test_loss": metrics.test_loss, "test_accuracy": metrics.test_accuracy}, buffer


def chain_job(state: ChainState, k: int, models: torch.Tensor, flagging: Flagging,
              workers: ProcessPoolExecutor | None = None, store: Path | None = None,
              global_model: torch.Tensor | None = None, metrics: RoundMetrics | None = None
              ) -> tuple[ChainOutcome, ChainState]:
    """Steps 2-4 of round k without an attacker, as a chain thread runs them: the N uploads
    ``models`` [N, P] (on the CPU) are hashed here, where they lie (hashlib releases the GIL), and
    the rest (signatures, race, proof of work, validation: work that holds the GIL) runs on the
    digests, in a worker process when ``workers`` is given, else in this thread. Returns the
    outcome and the advanced state; with ``store``, each upload is written there by its digest.
    With ``global_model`` and ``metrics`` the block commits the round's outcome (:func:`round_outcome`;
    the global model is stored too)."""
    buffers = {i: mlp.model_buffer(models[i]) for i in range(models.shape[0])}
    digests = [transactions.digest(buffers[i]) for i in range(models.shape[0])]
    committed, stored = None, dict(enumerate(digests))
    if global_model is not None and metrics is not None:
        committed, buffers[-1] = round_outcome(global_model, metrics)
        stored[-1] = str(committed["model_sha256"])  # the global model, stored beside the uploads
    if workers is None:
        outcome, state = chain_round(state, k, digests, flagging, committed)
    else:
        outcome, state = workers.submit(chain_round, state, k, digests, flagging, committed).result()
    if store is not None:
        store_models(store, stored, buffers)
    return outcome, state


@dataclass(frozen=True)
class ChainDone:
    """A finished chain job: the block's outcome, the run's advanced chain state, the detection
    rows of the round, and the job's own seconds (hashing and waiting for a worker included)."""

    outcome: ChainOutcome
    state: ChainState
    detections: list[dict]
    seconds: float


def detection_rows(K: int, rows: list[dict], excluded: tuple[Exclusion, ...]) -> list[dict]:
    left_out = {e.client for e in excluded}
    return [{"K": K, **row, "excluded": row["client"] in left_out} for row in rows]


@dataclass
class ChainLine:
    """One run's chain as the executor sees it: the state before its first round, the run's last
    submitted job (the next one starts from its state), and where its blocks are recorded."""

    initial: ChainState
    result: KResult
    store: Path | None
    tail: Future | None = None

    @property
    def K(self) -> int:
        return self.result.K

    def state(self) -> ChainState:
        """The chain state after the last submitted job (waits for it)."""
        return self.initial if self.tail is None else self.tail.result().state


def _job(previous: Future | None, initial: ChainState, k: int, models: torch.Tensor, ready: Callable[[], None],
         flagging: Flagging, rows: list[dict], K: int, workers: ProcessPoolExecutor | None,
         store: Path | None, global_model: torch.Tensor | None, metrics: RoundMetrics,
         release: Callable[[], None] | None = None) -> ChainDone:
    try:
        state = initial if previous is None else previous.result().state
        start = time.perf_counter()
        ready()  # the host copies of the uploads and the global model have landed
        outcome, state = chain_job(state, k, models, flagging, workers, store, global_model, metrics)
    finally:
        if release is not None:  # the uploads' host buffer is read: the next round ends may reuse it
            release()
    return ChainDone(outcome, state, detection_rows(K, rows, outcome.excluded), time.perf_counter() - start)


class ChainExecutor:
    """Hands each run's rounds to the chain threads in order and turns finished blocks into round
    records (in each run's round order; ``on_round`` is called with each record)."""

    def __init__(self, pool: ThreadPoolExecutor, workers: ProcessPoolExecutor | None, times: GroupTimes,
                 on_round: Callable[[RoundRecord], None] | None) -> None:
        self.pool, self.workers, self.times, self.on_round = pool, workers, times, on_round
        self.pending: deque[tuple[ChainLine, Future, RoundMetrics]] = deque()

    def submit(self, line: ChainLine, k: int, models: torch.Tensor, ready: Callable[[], None],
               flagging: Flagging, rows: list[dict], metrics: RoundMetrics,
               global_model: torch.Tensor | None = None, release: Callable[[], None] | None = None) -> None:
        """Round k of ``line`` without an attacker: the uploads ``models`` [N, P] and the global
        model [P] on the host (once ``ready`` returns), the detectors' verdict, the round end's
        measurements (the block commits the global model's digest and metrics); ``release`` is
        called once the job has read them."""
        line.tail = self.pool.submit(_job, line.tail, line.initial, k, models, ready, flagging, rows, line.K,
                                     self.workers, line.store, global_model, metrics, release)
        self.pending.append((line, line.tail, metrics))

    def attacked(self, line: ChainLine, k: int, models: torch.Tensor, tamper: Tamper,
                 detect: Callable[[list[int]], tuple[list[dict], Flagging]]) -> list[int]:
        """Round k of ``line`` with an attacker, at once: sign, tamper, receive; the detectors
        (``detect`` on the received clients) see the received uploads only; then mine, validate,
        append. Returns the clients whose models the block holds (the ones to aggregate)."""
        state = line.state()
        start = time.perf_counter()
        keys, publics = keyring(state.seed, state.N, state.secret)
        payloads = {i: mlp.model_bytes(models[i]) for i in range(models.shape[0])}
        txs = [transactions.sign(keys[i], k, i, state.n, payloads[i], state.chain) for i in range(models.shape[0])]
        txs, payloads = tamper(k, txs, payloads)
        accepted = [tx for tx in txs if transactions.check(tx, publics[tx.client], payloads.get(tx.client)) is None]
        rows, flagging = detect([tx.client for tx in accepted])
        outcome = append_block(state, accepted, flagging.flagged, flagging.detector)
        if line.store is not None:
            store_models(line.store, {tx.client: tx.model_sha256 for tx in accepted}, payloads)
        line.tail = Future()
        line.tail.set_result(ChainDone(outcome, state, detection_rows(line.K, rows, outcome.excluded),
                                       time.perf_counter() - start))
        return [tx.client for tx in outcome.block.transactions]

    def record(self, line: ChainLine, future: Future, metrics: RoundMetrics) -> None:
        self.pending.append((line, future, metrics))

    def collect(self, wait: bool = False) -> None:
        """Record the blocks that are done (with ``wait``, all of them, waiting as needed), oldest
        first; a job's error is raised here."""
        while self.pending and (wait or self.pending[0][1].done()):
            line, future, metrics = self.pending.popleft()
            t = time.perf_counter()
            done: ChainDone = future.result()
            self.times.chain_wait += time.perf_counter() - t
            self.times.chain_busy += done.seconds
            line.result.ledger = done.state.ledger  # from a worker process: the copy it advanced
            line.result.chain_seconds += done.seconds
            line.result.detections.extend(done.detections)
            record = round_record(metrics, done.outcome, done.state.N)
            line.result.rounds.append(record)
            if self.on_round is not None:
                self.on_round(record)
