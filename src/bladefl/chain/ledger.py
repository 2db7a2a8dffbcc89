"""Steps 3-4 of a round and the ledger: blocks, validation by every client, majority
acceptance, saving a chain and verifying a saved chain from scratch.

A saved chain is a JSON file: a genesis record (the clients' public keys, the difficulty)
and the blocks, each with its header, its hash and its transactions. With a model store
(a folder of ``<sha256>.bin`` files, content-addressed) the verifier also re-hashes every
uploaded model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from bladefl.chain.pow import ZERO_HASH, BlockHeader, meets_target, merkle_root
from bladefl.chain.transactions import Transaction, check, load_public
from bladefl.core import atomic


@dataclass(frozen=True)
class Block:
    header: BlockHeader
    transactions: tuple[Transaction, ...]

    @property
    def hash(self) -> str:
        return self.header.hash()

    def to_dict(self) -> dict:
        return {
            "hash": self.hash,
            "header": self.header.__dict__,
            "transactions": [tx.to_dict() for tx in self.transactions],
        }


def block_problem(block: Block, prev_hash: str, height: int, public_keys: list[str],
                  payloads: dict[str, bytes] | None = None, verified: frozenset[str] = frozenset()) -> str | None:
    """What a validator finds wrong with ``block`` (None when it accepts it).

    ``verified`` holds the hashes of transactions whose signatures this validator already
    checked when it received them (step 2), as Bitcoin's signature cache does; any other
    transaction in the block is verified in full.
    """
    h = block.header
    if h.height != height:
        return f"height is {h.height}, expected {height}"
    if h.prev_hash != prev_hash:
        return "previous hash does not match the chain"
    if not meets_target(h):
        return "proof of work does not meet the difficulty target"
    if h.merkle_root != merkle_root([tx.tx_hash() for tx in block.transactions]):
        return "Merkle root does not match the transactions"
    for tx in block.transactions:
        if tx.round != height:
            return f"transaction of client {tx.client} is for round {tx.round}"
        if not 0 <= tx.client < len(public_keys):
            return f"transaction from unknown client {tx.client}"
        payload = None if payloads is None else payloads.get(tx.model_sha256)
        if payloads is not None and payload is None:
            return f"model {tx.model_sha256[:12]} of client {tx.client} is missing from the store"
        if payload is None and tx.tx_hash() in verified:
            continue
        reason = check(tx, load_public(public_keys[tx.client]), payload)
        if reason:
            return f"transaction of client {tx.client}: {reason}"
    return None


@dataclass
class Ledger:
    """A client's copy of the chain (all honest copies are identical, so one is kept)."""

    public_keys: list[str]
    difficulty_bits: int
    blocks: list[Block] = field(default_factory=list)

    @property
    def tip(self) -> str:
        return self.blocks[-1].hash if self.blocks else ZERO_HASH

    @property
    def height(self) -> int:
        return len(self.blocks) + 1  # heights start at 1 (round k holds block k)

    def to_dict(self) -> dict:
        return {
            "genesis": {"public_keys": self.public_keys, "difficulty_bits": self.difficulty_bits},
            "blocks": [b.to_dict() for b in self.blocks],
        }

    def save(self, path: str | Path) -> None:
        atomic.write_json(path, self.to_dict())


def majority_accepts(block: Block, ledger: Ledger, validators: int,
                     verified: frozenset[str] = frozenset()) -> tuple[bool, int, str | None]:
    """Every validator checks the block against its own copy of the ledger; a strict majority
    must accept it. Returns (accepted, votes, reason of a rejection). ``verified``: the
    transactions every validator verified on reception (see :func:`block_problem`)."""
    votes, reason = 0, None
    for _ in range(validators):
        problem = block_problem(block, ledger.tip, ledger.height, ledger.public_keys, verified=verified)
        if problem is None:
            votes += 1
        else:
            reason = problem
    return votes * 2 > validators, votes, reason


def block_from_dict(d: dict) -> Block:
    return Block(BlockHeader(**d["header"]), tuple(Transaction(**t) for t in d["transactions"]))


@dataclass(frozen=True)
class Problem:
    height: int
    reason: str


def verify_chain(path: str | Path, store: str | Path | None = None) -> Problem | None:
    """Re-check a saved chain from scratch; return the first problem (height and reason)."""
    data = json.loads(Path(path).read_text())
    keys = data["genesis"]["public_keys"]
    difficulty = data["genesis"]["difficulty_bits"]
    prev = ZERO_HASH
    for i, raw in enumerate(data["blocks"], start=1):
        try:
            block = block_from_dict(raw)
        except (TypeError, KeyError) as exc:
            return Problem(i, f"malformed block: {exc}")
        if block.hash != raw.get("hash"):
            return Problem(i, "stored block hash does not match the header")
        if block.header.difficulty_bits != difficulty:
            return Problem(i, f"difficulty {block.header.difficulty_bits} differs from genesis {difficulty}")
        payloads = None
        if store is not None:
            payloads = {}
            for tx in block.transactions:
                f = Path(store) / f"{tx.model_sha256}.bin"
                if f.is_file():
                    payloads[tx.model_sha256] = f.read_bytes()
        problem = block_problem(block, prev, i, keys, payloads)
        if problem:
            return Problem(i, problem)
        prev = block.hash
    return None
