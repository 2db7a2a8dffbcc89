"""One BLADE-FL run: K integrated rounds under the time budget (paper, "Proposed Framework").

Each round: (1) every honest client trains tau local iterations, all clients at once as one
batched computation; lazy clients plagiarize instead; optional local DP; (2) every client signs
its upload as a transaction and receivers verify signatures and digests; (3) the clients race
to mine a proof-of-work block of the accepted transactions; (4) every client validates the
block and it is appended if a majority accepts; (5) every client continues from the FedAvg of
exactly the models in the block.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
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
class Uploads:
    models: torch.Tensor  # [N, P] what every client uploads
    honest_local: torch.Tensor  # [N - M, P] the honest clients' local iterates
    theta: float  # mean ||trained - copied|| over the lazy clients (needs the counterfactual), else nan
    noise_norm: float  # mean ||upload - copied|| over the lazy clients (the added noise), else nan


def _uploads(cfg: RunConfig, K: int, k: int, w: torch.Tensor, data: ClientData, roles: lazy.Roles,
             tau: int, shape: mlp.Shape) -> Uploads:
    """Step 1: local training (batched) and the lazy clients' plagiarism.

    theta is Theorem 4's plagiarism distance: between the model a lazy client would have trained
    (the counterfactual) and the honest model it copied, before the noise; the noise's norm is
    recorded on its own. The counterfactual changes no honest client's random stream: epoch
    orders are drawn for all N clients whoever trains."""
    train_ids = np.arange(data.N) if cfg.lazy.counterfactual else roles.honest
    sel = torch.as_tensor(train_ids, device=w.device)
    local = w.expand(len(train_ids), -1).clone()
    trainer.train_local(
        local, data.x[sel], data.y[sel], tau,
        eta=cfg.train.eta, iteration=cfg.train.iteration, batch_size=cfg.train.batch_size, shape=shape,
        generator=torch_generator(cfg.seed, "batches", K, k), clients=torch.as_tensor(train_ids),
        population=data.N,
    )
    models = torch.empty(data.N, w.shape[0], device=w.device)
    pos = {c: i for i, c in enumerate(train_ids)}
    honest_rows = local[torch.as_tensor([pos[c] for c in roles.honest], device=w.device)]
    models[torch.as_tensor(roles.honest, device=w.device)] = honest_rows
    theta = noise_norm = math.nan
    if len(roles.lazy):
        copied = lazy.plagiarize(honest_rows, len(roles.lazy), cfg.lazy.sigma2,
                                 numpy_rng(cfg.seed, "lazy-copy", K, k),
                                 torch_generator(cfg.seed, "lazy-noise", K, k))
        models[torch.as_tensor(roles.lazy, device=w.device)] = copied.uploads
        noise_norm = (copied.uploads - copied.copies).norm(dim=1).mean().item()
        if cfg.lazy.counterfactual:
            trained = local[torch.as_tensor([pos[c] for c in roles.lazy], device=w.device)]
            theta = (trained - copied.copies).norm(dim=1).mean().item()
    return Uploads(models, honest_rows, theta, noise_norm)


def _broadcast(k: int, uploads: torch.Tensor, keys: list, publics: list, n: int, chain: str,
               tamper: Tamper | None) -> tuple[list[transactions.Transaction], dict[int, bytes]]:
    """Step 2: every client signs its upload for this chain; receivers keep the transactions
    whose signature and payload digest verify."""
    payloads = {i: mlp.model_bytes(uploads[i]) for i in range(uploads.shape[0])}
    txs = [transactions.sign(keys[i], k, i, n, payloads[i], chain) for i in range(uploads.shape[0])]
    if tamper is not None:
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


def _detect(cfg: RunConfig, k: int, uploads: torch.Tensor, previous: torch.Tensor,
            accepted: list[transactions.Transaction], roles: lazy.Roles) -> tuple[list[dict], tuple[Exclusion, ...]]:
    """The validators' lazy-client detectors on the accepted uploads; with ``lazy.exclude`` the
    uploads the first detector flags are excluded (every honest validator computes the same)."""
    clients = [tx.client for tx in accepted]
    found = detection.detect(uploads[torch.as_tensor(clients, device=uploads.device)], previous,
                             cfg.lazy.detectors)
    lazy_set = set(roles.lazy.tolist())
    rows = [{"round": k, "client": c, "lazy": c in lazy_set, "detector": d.detector, "score": float(d.scores[i]),
             "flag": bool(d.flags[i])} for d in found for i, c in enumerate(clients)]
    excluded: tuple[Exclusion, ...] = ()
    if cfg.lazy.exclude and len(clients) > 1:
        first = found[0]
        flagged = [i for i in range(len(clients)) if first.flags[i]][: len(clients) - 1]  # never all
        excluded = tuple(Exclusion(clients[i], accepted[i].tx_hash(), f"flagged by {first.detector}") for i in flagged)
    return rows, excluded


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


def run_k(cfg: RunConfig, data: ClientData, K: int, *, store: Path | None = None,
          tamper: Tamper | None = None, on_round: Callable[[RoundRecord], None] | None = None,
          reference: torch.Tensor | None = None) -> KResult:
    """Run BLADE-FL with K integrated rounds; an infeasible K (tau < 1) is reported, not raised.
    With a ``reference`` optimum w*, each round records ||w^k - w*|| (a diagnostic of the bound's
    cells; eps2 itself comes from the loss gap, see :mod:`bladefl.experiments.bound_analysis`)."""
    alloc = allocate(K, cfg.time.alpha, cfg.time.beta, cfg.time.t_sum)
    result = KResult(K=K, allocation=alloc, status="ok" if alloc.feasible else "infeasible")
    if not alloc.feasible:
        return result
    shape = model_shape(cfg, data.x.shape[2])
    N, tau = data.N, alloc.tau
    roles = lazy.choose_lazy(numpy_rng(cfg.seed, "lazy-set"), N, cfg.num_lazy)
    keys = [transactions.derive_key(cfg.seed, i) for i in range(N)]
    chain = chain_id(cfg.to_dict(), K)
    ledger = Ledger([transactions.public_hex(k) for k in keys], cfg.chain.difficulty_bits, chain_id=chain,
                    n_samples=[data.n] * N)
    faulty = set(numpy_rng(cfg.seed, "faulty", K).choice(N, size=math.floor(cfg.chain.faulty_fraction * N),
                                                          replace=False).tolist())
    faults = [cfg.chain.fault if i in faulty else "" for i in range(N)]
    vote_rng = numpy_rng(cfg.seed, "votes", K)
    publics = [k.public_key() for k in keys]
    result.ledger = ledger
    result.sigma_dp = privacy.noise_std(cfg.privacy.epsilon, cfg.privacy.delta, cfg.privacy.clip, data.n, K)
    race_rng = numpy_rng(cfg.seed, "race", K)
    w = initial_model(cfg, shape).to(data.x.device)
    clock = 0.0
    for k in range(1, K + 1):
        t0 = time.perf_counter()
        step = _uploads(cfg, K, k, w, data, roles, tau, shape)
        honest_local = step.honest_local
        uploads = privacy.privatize(step.models, result.sigma_dp, cfg.privacy.clip,
                                    torch_generator(cfg.seed, "dp", K, k))
        if uploads.is_cuda:
            torch.cuda.synchronize()
        t1 = time.perf_counter()
        accepted, payloads = _broadcast(k, uploads, keys, publics, data.n, chain, tamper)  # step 2
        won = race(race_rng, N, cfg.time.beta)  # step 3: the race, then real proof of work
        block_time = cfg.time.beta if cfg.chain.block_time == "fixed" else won.elapsed
        clock += tau * cfg.time.alpha + block_time
        excluded: tuple[Exclusion, ...] = ()
        if cfg.lazy.detectors:
            rows, excluded = _detect(cfg, k, uploads, w, accepted, roles)
            result.detections.extend({"K": K, **row, "excluded": any(e.client == row["client"] for e in excluded)}
                                     for row in rows)
        block = _mine(ledger, accepted, won.winner, clock, cfg.chain.difficulty_bits, excluded)
        expected = frozenset(e.client for e in excluded) if cfg.lazy.exclude else None
        votes = _validate_and_append(block, ledger, accepted, faults, vote_rng, expected)  # step 4
        if store is not None:
            _store_models(store, accepted, payloads)
        t2 = time.perf_counter()
        # Step 5: FedAvg over exactly the models in the block.
        ids = torch.as_tensor([tx.client for tx in block.transactions], device=w.device)
        weights = torch.as_tensor([float(tx.n_samples) for tx in block.transactions])
        w = aggregation.fedavg(uploads[ids], weights)
        train_loss = global_train_loss(w, data, shape)
        test_loss, test_acc = evaluate(w, data.x_test, data.y_test, shape)
        measured = {}
        if cfg.measure.constants:
            sel = torch.as_tensor(roles.honest, device=w.device)
            measured = dataclasses.asdict(measured_constants.measure(w, honest_local, data.x[sel], data.y[sel], data.x,
                                                            data.y, shape))
        t3 = time.perf_counter()
        result.train_seconds += t1 - t0
        result.chain_seconds += t2 - t1
        result.eval_seconds += t3 - t2
        record = RoundRecord(
            K=K, round=k, tau=tau, time_used=clock, train_loss=train_loss, test_loss=test_loss,
            test_accuracy=test_acc, block_hash=block.hash, miner=won.winner, block_time=block_time,
            votes=votes, n_in_block=len(block.transactions), n_lazy=len(roles.lazy), n_rejected=N - len(accepted),
            n_excluded=len(excluded),
            theta=step.theta, noise_norm=step.noise_norm, **measured,
            dist_ref=math.nan if reference is None else float((w - reference.to(w.device)).norm()),
        )
        result.rounds.append(record)
        if on_round is not None:
            on_round(record)
    result.model = w
    return result
