"""Steps 3-4 of a round and the ledger: blocks, validation by every client, majority
acceptance, saving a chain and verifying a saved chain from scratch.

A saved chain is a JSON file: a genesis record (the chain id, the clients' public keys and
registered sample counts, the difficulty) and the blocks, each with its header, its hash and its
transactions; :mod:`bladefl.chain.verify` re-checks one from scratch.

What validation guarantees: every transaction in a block is signed by a registered client for
this chain and this round, at most one per client, with the sample count the client registered
(so no client can inflate its FedAvg weight or replay an upload from another run or round);
the block extends the tip, its Merkle root covers exactly its transactions, its proof of
work meets the difficulty, and its miner (a registered client) signed its hash, so the round's
outcome the header commits cannot be changed without the miner's key. A block is appended
when a strict majority of validators accepts it;
``faulty`` validators (a configurable fraction) vote at random or always reject.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bladefl.chain.pow import ZERO_HASH, BlockHeader, meets_target, merkle_root
from bladefl.chain.transactions import Transaction, block_signature_ok, check, load_public
from bladefl.core import atomic

FAULTS = ("random", "reject")


def chain_id(config: dict, K: int) -> str:
    """The id of one run's chain: SHA-256 of the run's canonical config and its K. Every signed
    message names it, so a transaction cannot be replayed into another run's (or K's) ledger."""
    text = json.dumps({"config": config, "K": K}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Exclusion:
    """An accepted upload the validators left out of the block, and why (a lazy-client detector)."""

    client: int
    tx_hash: str
    reason: str

    def leaf(self) -> str:
        return hashlib.sha256(f"excluded/{self.client}/{self.tx_hash}/{self.reason}".encode()).hexdigest()


@dataclass(frozen=True)
class Block:
    header: BlockHeader
    transactions: tuple[Transaction, ...]
    excluded: tuple[Exclusion, ...] = ()
    signature: str = ""  # the miner's Ed25519 signature of the block's hash for the chain (signed outcome)

    @property
    def hash(self) -> str:
        return self.header.hash()

    def leaves(self) -> list[str]:
        """Merkle leaves: the transactions, then the exclusion records (so the reasons are committed)."""
        return [tx.tx_hash() for tx in self.transactions] + [e.leaf() for e in self.excluded]

    def to_dict(self) -> dict:
        out = {
            "hash": self.hash,
            "header": self.header.fields(),
            "transactions": [tx.to_dict() for tx in self.transactions],
        }
        if self.excluded:
            out["excluded"] = [e.__dict__ for e in self.excluded]
        if self.signature:
            out["signature"] = self.signature
        return out


def block_problem(block: Block, prev_hash: str, height: int, public_keys: list[str],
                  payloads: dict[str, bytes] | None = None, verified: frozenset[str] = frozenset(),
                  chain: str = "", n_samples: Sequence[int] | None = None,
                  excluded: frozenset[int] | None = None) -> str | None:
    """What a validator finds wrong with ``block`` (None when it accepts it).

    ``verified`` holds the hashes of transactions whose signatures this validator already
    checked when it received them (step 2), as Bitcoin's signature cache does; any other
    transaction in the block is verified in full. ``chain``: the chain id every transaction must
    name; ``n_samples``: each client's registered sample count (its FedAvg weight); ``excluded``:
    the clients this validator's own lazy-client detector flags (the block must exclude exactly
    those), when it runs one.
    """
    h = block.header
    if h.height != height:
        return f"height is {h.height}, expected {height}"
    if h.prev_hash != prev_hash:
        return "previous hash does not match the chain"
    if not meets_target(h):
        return "proof of work does not meet the difficulty target"
    if h.merkle_root != merkle_root(block.leaves()):
        return "Merkle root does not match the transactions"
    if excluded is not None and {e.client for e in block.excluded} != set(excluded):
        return (f"block excludes clients {sorted(e.client for e in block.excluded)}, the detector flags "
                f"{sorted(excluded)}")
    seen: set[int] = set(e.client for e in block.excluded)
    for tx in block.transactions:
        if tx.round != height:
            return f"transaction of client {tx.client} is for round {tx.round}"
        if not 0 <= tx.client < len(public_keys):
            return f"transaction from unknown client {tx.client}"
        if tx.client in seen:
            return f"client {tx.client} has more than one transaction in the block"
        seen.add(tx.client)
        if tx.chain_id != chain:
            return f"transaction of client {tx.client} names chain {tx.chain_id[:12] or '(none)'}, not this chain"
        if n_samples is not None and tx.n_samples != n_samples[tx.client]:
            return (f"transaction of client {tx.client} claims n_samples={tx.n_samples}, "
                    f"registered {n_samples[tx.client]}")
        payload = None if payloads is None else payloads.get(tx.model_sha256)
        if payloads is not None and payload is None:
            return f"model {tx.model_sha256[:12]} of client {tx.client} is missing from the store"
        if payload is None and tx.tx_hash() in verified:
            continue
        reason = check(tx, load_public(public_keys[tx.client]), payload)
        if reason:
            return f"transaction of client {tx.client}: {reason}"
    if not 0 <= h.miner < len(public_keys):
        return f"miner {h.miner} is not a registered client"
    if not block_signature_ok(block.signature, load_public(public_keys[h.miner]), chain, block.hash):
        return (f"block is not signed by its miner (client {h.miner}): its outcome (global model digest and "
                "metrics) or another header field was changed, or it was mined without the miner's key")
    return None


@dataclass
class Ledger:
    """A client's copy of the chain (all honest copies are identical, so one is kept)."""

    public_keys: list[str]
    difficulty_bits: int
    blocks: list[Block] = field(default_factory=list)
    chain_id: str = ""
    n_samples: list[int] | None = None  # each client's registered sample count

    @property
    def tip(self) -> str:
        return self.blocks[-1].hash if self.blocks else ZERO_HASH

    @property
    def height(self) -> int:
        return len(self.blocks) + 1  # heights start at 1 (round k holds block k)

    def to_dict(self) -> dict:
        return {
            "genesis": {"chain_id": self.chain_id, "public_keys": self.public_keys, "n_samples": self.n_samples,
                        "difficulty_bits": self.difficulty_bits},
            "blocks": [b.to_dict() for b in self.blocks],
        }

    def problem(self, block: Block, verified: frozenset[str] = frozenset(),
                excluded: frozenset[int] | None = None) -> str | None:
        """What an honest validator with this copy of the ledger finds wrong with ``block``."""
        return block_problem(block, self.tip, self.height, self.public_keys, verified=verified, chain=self.chain_id,
                             n_samples=self.n_samples, excluded=excluded)

    def save(self, path: str | Path) -> None:
        atomic.write_json(path, self.to_dict())


def majority_accepts(block: Block, ledger: Ledger, validators: int, verified: frozenset[str] = frozenset(),
                     faults: Sequence[str] = (), rng: np.random.Generator | None = None,
                     excluded: frozenset[int] | None = None) -> tuple[bool, int, str | None]:
    """Every validator checks the block against its own copy of the ledger; a strict majority
    must accept it. Returns (accepted, votes, reason of a rejection). ``verified``: the
    transactions every validator verified on reception (see :func:`block_problem`). ``faults``:
    per validator, "" (honest), "random" (votes yes or no at random, from ``rng``) or "reject"."""
    faults = list(faults) + [""] * (validators - len(faults))
    honest_verdict = ledger.problem(block, verified, excluded)  # every honest copy is identical: one check
    votes, reason = 0, honest_verdict
    for fault in faults[:validators]:
        if fault == "reject":
            ok = False
        elif fault == "random":
            ok = bool((rng if rng is not None else np.random.default_rng()).random() < 0.5)
        else:
            ok = honest_verdict is None
        votes += ok
        if not ok and reason is None:
            reason = f"a faulty validator ({fault}) rejected it"
    return votes * 2 > validators, votes, reason


def block_from_dict(d: dict) -> Block:
    return Block(BlockHeader(**d["header"]), tuple(Transaction(**t) for t in d["transactions"]),
                 tuple(Exclusion(**e) for e in d.get("excluded", [])), d.get("signature", ""))
