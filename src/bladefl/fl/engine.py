"""One BLADE-FL run: K integrated rounds under the time budget (paper, "Proposed Framework").

Each round: (1) every honest client trains tau local iterations, all clients at once as one
batched computation; lazy clients plagiarize instead; optional local DP; (2) every client signs
its upload as a transaction and receivers verify signatures and digests; (3) the clients race
to mine a proof-of-work block of the accepted transactions; (4) every client validates the
block and it is appended if a majority accepts; (5) every client continues from the FedAvg of
exactly the models in the block.

Many runs that share data train as one stacked computation (:func:`run_group`; :func:`run_k`
is a group of one), with each round's chain work in a thread pool beside the training.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from bladefl.chain import transactions
from bladefl.chain.ledger import Block, Exclusion, Ledger, chain_id, majority_accepts
from bladefl.chain.pow import BlockHeader, merkle_root, mine, race
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


def evaluate(model: torch.Tensor, x: torch.Tensor, y: torch.Tensor, shape: mlp.Shape) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) of one flat model on samples x [T, d]."""
    v = mlp.views(model.unsqueeze(0), shape)
    _, z2 = mlp.forward(v, x.unsqueeze(0), shape)
    logits = z2[0]
    loss = torch.nn.functional.cross_entropy(logits, y).item()
    return loss, (logits.argmax(dim=1) == y).float().mean().item()


def global_train_loss(model: torch.Tensor, data: ClientData, shape: mlp.Shape) -> float:
    """F(w): the mean over clients of each client's loss on its own data."""
    per_client = mlp.losses(mlp.views(model.expand(data.N, -1), shape), data.x, data.y, shape)
    return per_client.mean().item()


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


def _broadcast(k: int, uploads: torch.Tensor, keys: list, publics: list, n: int, chain: str,
               tamper: Tamper | None) -> tuple[list[transactions.Transaction], dict[int, bytes]]:
    """Step 2: every client signs its upload (rows of ``uploads``, on the CPU) for this chain;
    receivers keep the transactions whose signature and payload digest verify. Each payload is
    hashed once by its sender (the digest it signs); receivers re-hash what they received when an
    attacker (``tamper``) may have replaced it, and otherwise hold the very bytes the sender hashed."""
    payloads = {i: mlp.model_bytes(uploads[i]) for i in range(uploads.shape[0])}
    txs = [transactions.sign(keys[i], k, i, n, payloads[i], chain) for i in range(uploads.shape[0])]
    if tamper is None:
        return [tx for tx in txs if transactions.signature_ok(tx, publics[tx.client])], payloads
    txs, payloads = tamper(k, txs, payloads)
    accepted = [tx for tx in txs if transactions.check(tx, publics[tx.client], payloads.get(tx.client)) is None]
    return accepted, payloads


def _mine(ledger: Ledger, accepted: list[transactions.Transaction], miner: int, clock: float,
          difficulty_bits: int, excluded: tuple[Exclusion, ...] = ()) -> Block:
    """Step 3: the race's winner searches a nonce for the block of the accepted transactions
    (less the excluded ones, which the block records with their reason)."""
    left_out = {e.client for e in excluded}
    kept = tuple(tx for tx in accepted if tx.client not in left_out)
    draft = Block(BlockHeader(0, "", "", 0, 0.0, 0), kept, excluded)
    header = mine(BlockHeader(height=ledger.height, prev_hash=ledger.tip, merkle_root=merkle_root(draft.leaves()),
                              miner=miner, timestamp=round(clock, 9), difficulty_bits=difficulty_bits))
    return Block(header, kept, excluded)


# What the validators' detectors find among the uploads of the given clients: (per-client rows,
# the clients to exclude, the detector that decides exclusion).
Flagging = tuple[list[dict], list[int], str]


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


def _validate_and_append(block: Block, ledger: Ledger, accepted: list[transactions.Transaction],
                         faults: list[str], rng: np.random.Generator, excluded: frozenset[int] | None) -> int:
    """Step 4: every client validates (the faulty ones as their fault says); the block is appended
    if a strict majority accepts."""
    ok, votes, reason = majority_accepts(block, ledger, validators=len(faults),
                                         verified=frozenset(tx.tx_hash() for tx in accepted), faults=faults, rng=rng,
                                         excluded=excluded)
    if not ok:
        raise RuntimeError(f"block {block.header.height} rejected by the majority: {reason}")
    ledger.blocks.append(block)
    return votes


def _store_models(store: Path, accepted: list[transactions.Transaction], payloads: dict[int, bytes]) -> None:
    for tx in accepted:
        target = store / f"{tx.model_sha256}.bin"
        if not target.exists():
            atomic.write_bytes(target, payloads[tx.client])


def model_shape(cfg: RunConfig, d: int = 784) -> mlp.Shape:
    return mlp.Shape(d=d, h=cfg.model.hidden, activation=cfg.model.activation)


def initial_model(cfg: RunConfig, shape: mlp.Shape) -> torch.Tensor:
    """w0: the same for every K of a run (derived from the run seed)."""
    return mlp.init(shape, torch_generator(cfg.seed, "init"))


@dataclass
class _Run:
    """A feasible run's state inside a group; its chain (ledger, race, votes, clock) is touched only
    by its own chain jobs, one at a time."""

    spec: RunSpec
    result: KResult
    N: int
    n: int
    roles: lazy.Roles
    trainers: np.ndarray  # client ids of the run's training rows (all N with the counterfactual)
    keys: list
    publics: list
    ledger: Ledger
    chain: str
    faults: list[str]
    vote_rng: np.random.Generator
    race_rng: np.random.Generator
    w: torch.Tensor  # the current global model
    rows: slice = field(default_factory=lambda: slice(0, 0))  # its rows in the group's stacked parameters
    k: int = 0  # rounds trained
    clock: float = 0.0
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


def _start(spec: RunSpec, result: KResult, data: ClientData, shape: mlp.Shape) -> _Run:
    cfg, K, N = spec.cfg, spec.K, data.N
    roles = lazy.choose_lazy(numpy_rng(cfg.seed, "lazy-set"), N, cfg.num_lazy)
    keys = [transactions.derive_key(cfg.seed, i) for i in range(N)]
    chain = chain_id(cfg.to_dict(), K)
    ledger = Ledger([transactions.public_hex(k) for k in keys], cfg.chain.difficulty_bits, chain_id=chain,
                    n_samples=[data.n] * N)
    faulty = set(numpy_rng(cfg.seed, "faulty", K).choice(N, size=math.floor(cfg.chain.faulty_fraction * N),
                                                          replace=False).tolist())
    result.ledger = ledger
    result.sigma_dp = privacy.noise_std(cfg.privacy.epsilon, cfg.privacy.delta, cfg.privacy.clip, data.n, K)
    return _Run(spec=spec, result=result, N=N, n=data.n, roles=roles,
                trainers=np.arange(N) if cfg.lazy.counterfactual else roles.honest, keys=keys,
                publics=[k.public_key() for k in keys], ledger=ledger, chain=chain,
                faults=[cfg.chain.fault if i in faulty else "" for i in range(N)],
                vote_rng=numpy_rng(cfg.seed, "votes", K), race_rng=numpy_rng(cfg.seed, "race", K),
                w=initial_model(cfg, shape).to(data.x.device))


@dataclass(frozen=True)
class ChainOutcome:
    block: Block
    votes: int
    miner: int
    block_time: float
    clock: float
    n_accepted: int
    excluded: tuple[Exclusion, ...]
    detections: list[dict]
    seconds: float


def _chain_round(run: _Run, k: int, models: torch.Tensor, flag: Callable[[list[int]], Flagging],
                 tamper: Tamper | None) -> ChainOutcome:
    """Steps 2-4 of round k for one run, on the CPU copy ``models`` [N, P] of its uploads: sign and
    receive, the mining race and the proof of work, majority validation, append, store."""
    start = time.perf_counter()
    cfg = run.cfg
    accepted, payloads = _broadcast(k, models, run.keys, run.publics, run.n, run.chain, tamper)
    rows, flagged, detector = flag([tx.client for tx in accepted])
    won = race(run.race_rng, run.N, cfg.time.beta)
    block_time = cfg.time.beta if cfg.chain.block_time == "fixed" else won.elapsed
    run.clock += run.tau * cfg.time.alpha + block_time
    left_out = set(flagged)
    excluded = tuple(Exclusion(tx.client, tx.tx_hash(), f"flagged by {detector}") for tx in accepted
                     if tx.client in left_out)
    block = _mine(run.ledger, accepted, won.winner, run.clock, cfg.chain.difficulty_bits, excluded)
    expected = frozenset(left_out) if cfg.lazy.exclude else None
    votes = _validate_and_append(block, run.ledger, accepted, run.faults, run.vote_rng, expected)
    if run.spec.store is not None:
        _store_models(run.spec.store, accepted, payloads)
    detections = [{"K": run.spec.K, **row, "excluded": row["client"] in left_out} for row in rows]
    return ChainOutcome(block, votes, won.winner, block_time, run.clock, len(accepted), excluded, detections,
                        time.perf_counter() - start)


def _flagged_before(clients: list[int], flagging: Flagging) -> Callable[[list[int]], Flagging]:
    """The detectors' verdict computed before the chain job (on every client's upload): valid only
    if every transaction is received, which the job checks."""
    def flag(received: list[int]) -> Flagging:
        if received != clients:
            raise RuntimeError(f"transactions of clients {sorted(set(clients) - set(received))} were not received")
        return flagging
    return flag


@dataclass
class GroupTimes:
    """Where a group's wall time went (seconds). The chain runs in a thread pool beside the
    training: ``chain_wait`` is the part of it the training had to wait for."""

    wall: float = 0.0
    train: float = 0.0
    rounds: float = 0.0  # uploads, aggregation and evaluation at round ends (main thread)
    chain_busy: float = 0.0  # the chain jobs' own durations, summed
    chain_wait: float = 0.0
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
    outcome: ChainOutcome = future.result()
    times.chain_wait += time.perf_counter() - t
    times.chain_busy += outcome.seconds
    members = partial.pop("members")
    if [tx.client for tx in outcome.block.transactions] != members:
        raise RuntimeError(f"block {outcome.block.header.height} holds other models than were aggregated")
    run.result.chain_seconds += outcome.seconds
    run.result.detections.extend(outcome.detections)
    record = RoundRecord(**partial, time_used=outcome.clock, block_hash=outcome.block.hash, miner=outcome.miner,
                         block_time=outcome.block_time, votes=outcome.votes,
                         n_in_block=len(outcome.block.transactions), n_rejected=run.N - outcome.n_accepted,
                         n_excluded=len(outcome.excluded))
    run.result.rounds.append(record)
    if on_round is not None:
        on_round(record)


def _end_rounds(ending: list[_Run], v: mlp.Views, data: ClientData, shape: mlp.Shape, pool: ThreadPoolExecutor,
                tamper: Tamper | None, times: GroupTimes, on_round: Callable[[RoundRecord], None] | None) -> None:
    """The end of a round for every run in ``ending``: uploads (lazy copies, DP), one device-to-host
    copy of all of them, the chain jobs handed to the pool, FedAvg, evaluation, and the runs' rows
    reset to their new global model.

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
    for (run, step, uploads), models in zip(steps, host, strict=True):
        t0 = time.perf_counter()
        cfg, K, k, N = run.cfg, run.spec.K, run.k, run.N
        if tamper is None:
            everyone = list(range(N))
            flagging = _detect(cfg, k, uploads, run.w, everyone, run.roles)
            members = [c for c in everyone if c not in set(flagging[1])]
            _collect(run, times, on_round)  # the previous block of this run must be on its ledger
            future = pool.submit(_chain_round, run, k, models, _flagged_before(everyone, flagging), None)
        else:
            previous = run.w
            outcome = _chain_round(run, k, models, lambda c, u=uploads, p=previous, r=run:
                                   _detect(r.cfg, r.k, u, p, c, r.roles), tamper)
            members = [tx.client for tx in outcome.block.transactions]
            future = Future()
            future.set_result(outcome)
        ids = torch.as_tensor(members, device=uploads.device)
        w = aggregation.fedavg(uploads[ids], torch.full((len(members),), float(run.n)))
        train_loss = global_train_loss(w, data, shape)
        test_loss, test_acc = evaluate(w, data.x_test, data.y_test, shape)
        measured = {}
        if cfg.measure.constants:
            sel = torch.as_tensor(run.roles.honest, device=w.device)
            measured = dataclasses.asdict(measured_constants.measure(w, step.honest_local, data.x[sel], data.y[sel],
                                                                     data.x, data.y, shape))
        reference = run.spec.reference
        mlp.assign(v, run.rows, w, shape)
        run.w = w
        run.result.eval_seconds += time.perf_counter() - t0
        partial = dict(K=K, round=k, tau=run.tau, train_loss=train_loss, test_loss=test_loss,
                       test_accuracy=test_acc, n_lazy=len(run.roles.lazy), theta=step.theta,
                       noise_norm=step.noise_norm, **measured, members=members,
                       dist_ref=math.nan if reference is None else float((w - reference.to(w.device)).norm()))
        run.pending = (future, partial)


def _orders(runs: list[_Run], rows: int, n: int) -> torch.Tensor:
    """Every run's epoch orders for all its iterations, stacked [T, rows, n] (int32, on the CPU):
    round k of a run draws from its own stream (seed, "batches", K, k) for all N clients, so a
    run's minibatches do not depend on what trains beside it."""
    out = torch.zeros(max(r.iterations for r in runs), rows, n, dtype=torch.int32)
    for run in runs:
        trainers = torch.as_tensor(run.trainers)
        for k in range(1, run.spec.K + 1):
            drawn = trainer.round_orders(torch_generator(run.cfg.seed, "batches", run.spec.K, k), run.tau, run.N, n)
            out[(k - 1) * run.tau : k * run.tau, run.rows] = drawn[:, trainers].to(torch.int32)
    return out


# On the CPU, rows step in blocks of this many: measured on the 2-core machine (paper model,
# epoch at batch 64, one thread), ms per row-iteration at 144 stacked rows: blocks of 8: 3.9,
# 16: 4.0, 32: 4.6, 144 (all): 5.2; 16 rows of one run alone: 4.2.
CPU_BLOCK_ROWS = 16


def run_group(specs: list[RunSpec], data: ClientData, *, tamper: Tamper | None = None,
              on_round: Callable[[RoundRecord], None] | None = None, chain_threads: int = 2,
              block_rows: int | None = None) -> GroupResult:
    """Run many BLADE-FL runs that share data (dataset, partition, model shape, iteration kind) as
    one computation: the training rows of every run stacked in one set of tensors [rows, ...],
    each run with its own K, tau schedule, seed, eta, lazy set, noise and DP.

    Runs are sorted by their number of local iterations, so the rows still training are always a
    prefix and only that prefix steps; a run aggregates after each tau of its own iterations.
    Every random stream is keyed by the run (seed, K, round, client), so a run in a group gives
    the result it gives alone. The chain work of each round runs in a pool of ``chain_threads``
    threads beside the training (see :func:`_end_rounds`). ``block_rows``: how many rows step
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
    orders = _orders(runs, row, n) if epoch else None
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
    with ThreadPoolExecutor(max_workers=max(1, chain_threads), thread_name_prefix="chain") as pool:
        for i in range(max(r.iterations for r in runs)):
            t0 = time.perf_counter()
            active = max(r.rows.stop for r in runs if r.iterations > i)
            for lo in range(0, active, block):
                rows = slice(lo, min(lo + block, active))
                sub = mlp.Views(v.W1[rows], v.b1[rows], v.W2[rows], v.b2[rows])
                picked = None if orders is None else orders[i, rows].to(dev) + offsets[rows]
                trainer.stacked_iteration(sub, x_rows, y_rows, picked, None if x_full is None else x_full[rows],
                                          None if y_full is None else y_full[rows], n=n, eta=eta[rows],
                                          batch_size=batch, shape=shape)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            t1 = time.perf_counter()
            times.train += t1 - t0
            times.model_steps += active * steps_per_iteration
            if i in ends:
                _end_rounds(ends[i], v, data, shape, pool, tamper, times, on_round)
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
