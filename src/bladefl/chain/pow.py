"""Step 3 of a round: proof-of-work mining.

A block header (height, previous hash, Merkle root of the transactions, miner id, virtual
timestamp, difficulty, nonce, and the round's outcome: the digest of the global model FedAvg
gives from the block's uploads, with its training loss, test loss and test accuracy) is valid
when SHA-256 of its canonical bytes, read as a 256-bit integer, is below
2**(256 - difficulty_bits). The race between miners is simulated with equal hash power per
client (an exponential race drawn from the seeded generator); the winner then really searches
for a nonce.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace

import numpy as np

ZERO_HASH = "0" * 64
DIFFICULTY_BITS = (0, 32)  # the difficulties a run may use (its config and a ledger's genesis)


OUTCOME = ("model_sha256", "train_loss", "test_loss", "test_accuracy")  # the round's outcome in a header


@dataclass(frozen=True)
class BlockHeader:
    height: int
    prev_hash: str
    merkle_root: str
    miner: int
    timestamp: float
    difficulty_bits: int
    nonce: int = 0
    model_sha256: str = ""  # the global model after the round (canonical bytes' SHA-256)
    train_loss: float | None = None  # F(w) of that model on the clients' data
    test_loss: float | None = None
    test_accuracy: float | None = None

    def fields(self) -> dict:
        """The header's fields as saved: the round's outcome only where it is committed (a header
        without one, as written before outcomes were committed, hashes as it did then)."""
        return {k: v for k, v in asdict(self).items() if k not in OUTCOME or v not in ("", None)}

    def header_bytes(self) -> bytes:
        return json.dumps(self.fields(), sort_keys=True, separators=(",", ":")).encode()

    def hash(self) -> str:
        return hashlib.sha256(self.header_bytes()).hexdigest()


def target(difficulty_bits: int) -> int:
    return 1 << (256 - difficulty_bits)


def meets_target(header: BlockHeader) -> bool:
    return int(header.hash(), 16) < target(header.difficulty_bits)


def mine(header: BlockHeader, max_nonce: int = 1 << 40) -> BlockHeader:
    """Search nonces from 0 until the header's hash is below the target."""
    # Hash the bytes before the nonce once; per try, only the nonce and what follows it.
    head, sep, tail = replace(header, nonce=0).header_bytes().partition(b'"nonce":0,')
    assert sep, "canonical header must contain the nonce field"
    tail = b"," + tail
    limit = target(header.difficulty_bits)
    base = hashlib.sha256(head + b'"nonce":')
    for nonce in range(max_nonce):
        h = base.copy()
        h.update(str(nonce).encode() + tail)
        if int.from_bytes(h.digest(), "big") < limit:
            return replace(header, nonce=nonce)
    raise RuntimeError("no nonce found")


def merkle_root(leaves: list[str]) -> str:
    """Bitcoin-style Merkle root of hex leaf hashes (odd levels duplicate the last node)."""
    if not leaves:
        return ZERO_HASH
    level = [bytes.fromhex(h) for h in leaves]
    while len(level) > 1:
        if len(level) % 2:
            level.append(level[-1])
        level = [hashlib.sha256(level[i] + level[i + 1]).digest() for i in range(0, len(level), 2)]
    return level[0].hex()


@dataclass(frozen=True)
class Race:
    winner: int
    elapsed: float  # the winning time (virtual), mean beta


def race(rng: np.random.Generator, n_miners: int, beta: float) -> Race:
    """Each of n miners finds a block after Exp(mean n*beta); the first wins (mean beta)."""
    times = rng.exponential(n_miners * beta, size=n_miners)
    winner = int(np.argmin(times))
    return Race(winner=winner, elapsed=float(times[winner]))
