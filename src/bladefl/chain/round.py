"""Steps 2-4 of a round on the digests of the uploads: signing and reception, the mining race and
the proof of work, majority validation and the append.

Everything here works on a run's :class:`ChainState` and the SHA-256 digests of its uploads (the
payload bytes are hashed by the caller, where they lie), holds no torch tensor and imports no
training code, so a round's chain work can run in another process: the state goes there with
the digests and comes back with the new block (:func:`chain_round`). Proof of work and the
Ed25519 calls hold Python's GIL; in a worker process they no longer slow the training loop
(see :func:`bladefl.fl.engine.run_group`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from bladefl.chain import transactions
from bladefl.chain.ledger import Block, Exclusion, Ledger, majority_accepts
from bladefl.chain.pow import BlockHeader, merkle_root, mine, race
from bladefl.core.bounded_read import read_regular


@dataclass(frozen=True)
class Flagging:
    """The uploads the validators' detector flags for exclusion (client ids) and that detector's
    name; nothing flagged by default."""

    flagged: tuple[int, ...] = ()
    detector: str = ""


@dataclass
class ChainState:
    """What a run's chain jobs read and write, one job at a time: the ledger, the generators of
    the mining race and of the faulty validators' votes, the virtual clock, and the settings the
    steps need (plain values: the state pickles to a worker process and back)."""

    seed: int  # the run seed: the clients' keys derive from it
    n: int  # samples per client, signed into every transaction
    chain: str  # the chain id (see :func:`bladefl.chain.ledger.chain_id`)
    ledger: Ledger
    faults: list[str]  # per validator: "" (honest) or its fault
    vote_rng: np.random.Generator
    race_rng: np.random.Generator
    beta: float
    work_time: float  # tau * alpha: the virtual time of a round's training
    fixed_block_time: bool  # each block takes beta (else the race's winning time)
    difficulty_bits: int
    exclude: bool  # the validators expect the flagged uploads left out of the block
    clock: float = 0.0
    secret: bytes = b""  # the key secret (chain.key_secret_file), when the keys derive from one

    @property
    def N(self) -> int:
        return len(self.faults)


@dataclass(frozen=True)
class ChainOutcome:
    block: Block
    votes: int
    miner: int
    block_time: float
    clock: float
    n_accepted: int
    excluded: tuple[Exclusion, ...]
    seconds: float


@functools.lru_cache(maxsize=64)
def keyring(seed: int, N: int, secret: bytes = b"") -> tuple[tuple[Ed25519PrivateKey, ...],
                                                             tuple[Ed25519PublicKey, ...]]:
    """The N clients' key pairs of a run (derived from its seed; cached: deriving costs a scalar
    multiplication per client, and a worker process serves many rounds of the same runs)."""
    keys = tuple(transactions.derive_key(seed, i, secret) for i in range(N))
    return keys, tuple(k.public_key() for k in keys)


SECRET_LIMIT = 2**20  # bytes


def read_secret(path: str) -> bytes:
    """The key secret of ``chain.key_secret_file`` (none for ''); OSError when it cannot be read, is
    not a regular file (a FIFO would block, /dev/zero fill memory), is over a MiB, or is empty (an
    empty secret would silently give the seed-only keys the file is meant to replace)."""
    if not path:
        return b""
    secret = read_regular(path, SECRET_LIMIT, "chain.key_secret_file")
    if not secret:
        raise OSError(f"chain.key_secret_file {path} is empty: it would give the keys of the seed alone")
    return secret


def genesis_ledger(seed: int, N: int, n: int, difficulty_bits: int, chain: str, secret: bytes = b"") -> Ledger:
    """A run's ledger before its first block: the N clients' public keys (from the seed and the key
    secret), their registered sample counts, the difficulty and the chain id. The engine starts
    from it and the verifier derives it again from a run's config."""
    keys, _ = keyring(seed, N, secret)
    return Ledger([transactions.public_hex(k) for k in keys], difficulty_bits, chain_id=chain, n_samples=[n] * N)


def sign_and_receive(state: ChainState, k: int, digests: list[str]) -> list[transactions.Transaction]:
    """Step 2 without an attacker: every client signs the digest of its upload for this chain and
    receivers keep the transactions whose signature verifies (the payloads they hold are the very
    bytes the sender hashed, so the digest check is the sender's)."""
    keys, publics = keyring(state.seed, state.N, state.secret)
    txs = [transactions.sign_digest(keys[i], k, i, state.n, d, state.chain) for i, d in enumerate(digests)]
    return [tx for tx in txs if transactions.signature_ok(tx, publics[tx.client])]


def _mine(ledger: Ledger, accepted: list[transactions.Transaction], miner: int, clock: float,
          difficulty_bits: int, excluded: tuple[Exclusion, ...], outcome: Mapping[str, Any] | None = None,
          key: Ed25519PrivateKey | None = None) -> Block:
    """Step 3: the race's winner searches a nonce for the block of the accepted transactions
    (less the excluded ones, which the block records with their reason) and the round's
    ``outcome`` (:data:`bladefl.chain.pow.OUTCOME`: the global model's digest and metrics), and
    signs the block's hash with its ``key`` (so an outcome cannot be changed without it)."""
    left_out = {e.client for e in excluded}
    kept = tuple(tx for tx in accepted if tx.client not in left_out)
    draft = Block(BlockHeader(0, "", "", 0, 0.0, 0), kept, excluded)
    header = mine(BlockHeader(height=ledger.height, prev_hash=ledger.tip, merkle_root=merkle_root(draft.leaves()),
                              miner=miner, timestamp=round(clock, 9), difficulty_bits=difficulty_bits,
                              **(outcome or {})))
    signature = transactions.sign_block(key, ledger.chain_id, header.hash()) if key is not None else ""
    return Block(header, kept, excluded, signature)


def append_block(state: ChainState, accepted: list[transactions.Transaction], flagged: tuple[int, ...],
                 detector: str, outcome: Mapping[str, object] | None = None) -> ChainOutcome:
    """Steps 3-4 for the accepted transactions: the mining race, the proof of work, every client
    validates (the faulty ones as their fault says), and the block is appended to ``state``'s
    ledger if a strict majority accepts; ``flagged`` uploads are excluded, with ``detector`` as
    the reason; ``outcome``: the round's global model digest and metrics, committed in the header."""
    start = time.perf_counter()
    won = race(state.race_rng, state.N, state.beta)
    block_time = state.beta if state.fixed_block_time else won.elapsed
    state.clock += state.work_time + block_time
    left_out = set(flagged)
    excluded = tuple(Exclusion(tx.client, tx.tx_hash(), f"flagged by {detector}") for tx in accepted
                     if tx.client in left_out)
    keys, _ = keyring(state.seed, state.N, state.secret)
    block = _mine(state.ledger, accepted, won.winner, state.clock, state.difficulty_bits, excluded, outcome,
                  keys[won.winner])
    ok, votes, reason = majority_accepts(block, state.ledger, validators=state.N,
                                         verified=frozenset(tx.tx_hash() for tx in accepted), faults=state.faults,
                                         rng=state.vote_rng, excluded=frozenset(left_out) if state.exclude else None)
    if not ok:
        raise RuntimeError(f"block {block.header.height} rejected by the majority: {reason}")
    state.ledger.blocks.append(block)
    return ChainOutcome(block, votes, won.winner, block_time, state.clock, len(accepted), excluded,
                        time.perf_counter() - start)


def chain_round(state: ChainState, k: int, digests: list[str], flagging: Flagging,
                outcome: Mapping[str, object] | None = None) -> tuple[ChainOutcome, ChainState]:
    """Steps 2-4 of round k without an attacker, on the digests of the N uploads and the detectors'
    verdict on all of them (computed before, which holds only if every transaction is received:
    checked). Returns the outcome and the state it advanced (in a worker process, a copy: the
    caller keeps the returned one)."""
    start = time.perf_counter()
    accepted = sign_and_receive(state, k, digests)
    received = [tx.client for tx in accepted]
    if received != list(range(state.N)):
        raise RuntimeError(f"transactions of clients {sorted(set(range(state.N)) - set(received))} were not received")
    done = append_block(state, accepted, flagging.flagged, flagging.detector, outcome)
    return replace(done, seconds=time.perf_counter() - start), state
