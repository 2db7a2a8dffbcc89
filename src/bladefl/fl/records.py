"""What the engine takes and gives: a run to compute (:class:`RunSpec`), a round's record (built in
one place, :func:`round_record`, from what the round end measured and what the chain decided), a
run's result per K, and where a group's wall time went."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from bladefl.chain.ledger import Ledger
from bladefl.chain.round import ChainOutcome
from bladefl.fl.run_config import RunConfig
from bladefl.fl.timemodel import Allocation


@dataclass(frozen=True)
class RunSpec:
    """One run of a group: a config, its K, where its uploads are stored / its reference optimum,
    and which of the group data's partition draws it trains on."""

    cfg: RunConfig
    K: int
    store: Path | None = None
    reference: torch.Tensor | None = None
    draw: int = 0


@dataclass(frozen=True)
class RoundMetrics:
    """What the round end of one run's round k measured (the training side of its record) and the
    clients whose uploads it aggregated (the block must hold exactly those)."""

    K: int
    round: int
    tau: int
    members: tuple[int, ...]
    train_loss: float
    test_loss: float
    test_accuracy: float
    n_lazy: int
    theta: float  # plagiarism distance (needs the counterfactual), see bladefl.fl.round_end
    noise_norm: float  # mean norm of the lazy clients' added noise
    L_mean: float = math.nan
    L_max: float = math.nan
    xi_mean: float = math.nan
    xi_max: float = math.nan
    delta_mean: float = math.nan
    delta_max: float = math.nan
    dist_ref: float = math.nan  # ||w^k - w*|| when a reference optimum is given
    client_test_loss: float = math.nan  # on the authors' client test subsets (bladefl.fl.client_test)
    client_test_accuracy: float = math.nan
    local_train_loss: float = math.nan  # the clients' minibatch losses of the round (round_end.local_losses)


@dataclass
class RoundRecord:
    """One row of ``rounds.csv`` (its columns are these fields, in this order)."""

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
    theta: float  # plagiarism distance (counterfactual)
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
    client_test_loss: float = math.nan  # the global model on the authors' client test subsets
    client_test_accuracy: float = math.nan
    local_train_loss: float = math.nan  # the clients' minibatch losses during the round


def round_record(metrics: RoundMetrics, outcome: ChainOutcome, N: int) -> RoundRecord:
    """A round's record: the round end's measurements and the chain's outcome; refuses a block
    that holds other models than were aggregated."""
    held = tuple(tx.client for tx in outcome.block.transactions)
    if held != metrics.members:
        raise RuntimeError(f"block {outcome.block.header.height} holds other models than were aggregated "
                           f"(clients {list(held)}, aggregated {list(metrics.members)})")
    values = {f.name: getattr(metrics, f.name) for f in dataclasses.fields(metrics) if f.name != "members"}
    return RoundRecord(**values, time_used=outcome.clock, block_hash=outcome.block.hash, miner=outcome.miner,
                       block_time=outcome.block_time, votes=outcome.votes, n_in_block=len(held),
                       n_rejected=N - outcome.n_accepted, n_excluded=len(outcome.excluded))


@dataclass
class KResult:
    K: int
    allocation: Allocation
    status: str  # ok | infeasible | diverged (see mark_diverged)
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

    def mark_diverged(self) -> None:
        """A trained K whose loss or accuracy went non-finite in some round (an overflow: a huge
        lazy noise, a tiny DP epsilon, a step too large) is ``diverged``, not ``ok``: so are those
        rounds' rows, and the analyses leave it out of K* as they leave out an infeasible K."""
        for record in self.rounds:
            if not all(math.isfinite(v) for v in (record.train_loss, record.test_loss, record.test_accuracy)):
                record.status = "diverged"
        if self.status == "ok" and any(r.status == "diverged" for r in self.rounds):
            self.status = "diverged"


# The parts of a round end, in the order they run (seconds in GroupTimes; see bladefl.fl.round_end).
ROUND_END_PARTS = ("uploads", "noise", "detection", "host_copy", "aggregate", "constants", "evaluation")


@dataclass
class GroupTimes:
    """Where a group's wall time went (seconds), measured in the thread that drives the
    computation. On a GPU each part ends with a synchronisation, so its kernels count in it.

    ``train``: the local iterations; ``orders``: drawing the epoch orders or waiting for the
    threads that draw them; the round end's parts (:data:`ROUND_END_PARTS`): forming the uploads
    (lazy copies, DP), waiting for their noise, the detectors, starting the uploads' host copy,
    FedAvg and the new global models' assignment, the bound's measured constants, evaluation;
    ``chain_wait``: waiting for blocks (the chain runs in threads beside the training);
    ``chain_busy``: the chain jobs' own durations, summed."""

    wall: float = 0.0
    train: float = 0.0
    orders: float = 0.0
    uploads: float = 0.0
    noise: float = 0.0
    detection: float = 0.0
    host_copy: float = 0.0
    aggregate: float = 0.0
    constants: float = 0.0
    evaluation: float = 0.0
    chain_wait: float = 0.0
    chain_busy: float = 0.0
    sync: float = 0.0  # waiting for the compute stream at the clock's marks (inside the parts above)
    model_steps: int = 0  # SGD steps of single models: rows x minibatches, summed over iterations
    round_ends: int = 0  # iterations at which at least one run ended a round
    run_rounds: int = 0  # rounds ended, summed over runs
    host_allocations: int = 0  # host buffers allocated for the round ends' copies (none after the first)

    @property
    def rounds(self) -> float:
        """The round ends' seconds (their parts summed)."""
        return sum(getattr(self, part) for part in ROUND_END_PARTS)

    @property
    def chain_share(self) -> float:
        return self.chain_wait / self.wall if self.wall else math.nan

    def breakdown(self) -> dict[str, float]:
        """The wall's parts (and what is left: setup, the loop's own Python), rounded for a summary."""
        parts = {"train": self.train, "orders": self.orders,
                 **{part: getattr(self, part) for part in ROUND_END_PARTS}, "chain_wait": self.chain_wait}
        parts["other"] = self.wall - sum(parts.values())
        return {"wall": round(self.wall, 4), **{k: round(v, 4) for k, v in parts.items()},
                "chain_busy": round(self.chain_busy, 4), "sync": round(self.sync, 4), "model_steps": self.model_steps,
                "round_ends": self.round_ends, "run_rounds": self.run_rounds,
                "host_allocations": self.host_allocations}


@dataclass
class GroupResult:
    results: list[KResult]  # in the order of the specs
    times: GroupTimes
