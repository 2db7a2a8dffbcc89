"""Steps 3-4 of a round and the ledger: blocks, validation by every client, majority
acceptance, saving a chain and verifying a saved chain from scratch.

A saved chain is a JSON file: a genesis record (the chain id, the clients' public keys and
registered sample counts, the difficulty) and the blocks, each with its header, its hash and its
transactions. With a model store (a folder of ``<sha256>.bin`` files, content-addressed) the
verifier also re-hashes every uploaded model; with the run's ``summary.json`` it also checks that
the ledger ends where the run recorded its tip (a ledger cut after any block is caught).

What validation guarantees: every transaction in a block is signed by a registered client for
this chain and this round, at most one per client, with the sample count the client registered
(so no client can inflate its FedAvg weight or replay an upload from another run or round);
the block extends the tip, its Merkle root covers exactly its transactions and its proof of
work meets the difficulty. A block is appended when a strict majority of validators accepts it;
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
from bladefl.chain.transactions import Transaction, check, load_public
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

    @property
    def hash(self) -> str:
        return self.header.hash()

    def leaves(self) -> list[str]:
        """Merkle leaves: the transactions, then the exclusion records (so the reasons are committed)."""
        return [tx.tx_hash() for tx in self.transactions] + [e.leaf() for e in self.excluded]

    def to_dict(self) -> dict:
        out = {
            "hash": self.hash,
            "header": self.header.__dict__,
            "transactions": [tx.to_dict() for tx in self.transactions],
        }
        if self.excluded:
            out["excluded"] = [e.__dict__ for e in self.excluded]
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
                 tuple(Exclusion(**e) for e in d.get("excluded", [])))


@dataclass(frozen=True)
class Problem:
    height: int  # the block at fault (0: the file or its genesis)
    reason: str

    @property
    def last_good_height(self) -> int:
        return max(self.height - 1, 0)


def _parse_block(raw: object, height: int) -> Block | Problem:
    if not isinstance(raw, dict):
        return Problem(height, "block is not a JSON object")
    for name in ("hash", "header", "transactions"):
        if name not in raw:
            return Problem(height, f"field '{name}' is missing")
    try:
        header = BlockHeader(**raw["header"])
    except TypeError as exc:
        return Problem(height, f"field 'header' is malformed ({exc})")
    txs = []
    for j, t in enumerate(raw["transactions"] if isinstance(raw["transactions"], list) else [None]):
        try:
            txs.append(Transaction(**t))
        except TypeError as exc:
            return Problem(height, f"field 'transactions[{j}]' is malformed ({exc})")
    try:
        excluded = tuple(Exclusion(**e) for e in raw.get("excluded", []))
    except TypeError as exc:
        return Problem(height, f"field 'excluded' is malformed ({exc})")
    return Block(header, tuple(txs), excluded)


def verify_chain(path: str | Path, store: str | Path | None = None,
                 summary: str | Path | None = None) -> Problem | None:
    """Re-check a saved chain from scratch; return the first problem (height and reason). With the
    run's ``summary``, also check that the ledger's height and tip are the ones the run recorded."""
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        return Problem(0, f"not valid JSON (line {exc.lineno}, column {exc.colno}): truncated or edited")
    except OSError as exc:
        return Problem(0, f"unreadable ({exc.strerror})")
    genesis = data.get("genesis") if isinstance(data, dict) else None
    if not isinstance(genesis, dict) or not isinstance(data.get("blocks"), list):
        return Problem(0, "field 'genesis' or 'blocks' is missing")
    for name in ("public_keys", "difficulty_bits"):
        if name not in genesis:
            return Problem(0, f"genesis field '{name}' is missing")
    keys, difficulty = genesis["public_keys"], genesis["difficulty_bits"]
    chain, n_samples = genesis.get("chain_id", ""), genesis.get("n_samples")
    prev = ZERO_HASH
    for i, raw in enumerate(data["blocks"], start=1):
        block = _parse_block(raw, i)
        if isinstance(block, Problem):
            return block
        if block.hash != raw.get("hash"):
            return Problem(i, "field 'hash' does not match the header")
        if block.header.difficulty_bits != difficulty:
            return Problem(i, f"field 'header.difficulty_bits' is {block.header.difficulty_bits}, genesis says "
                              f"{difficulty}")
        payloads = None
        if store is not None:
            payloads = {}
            for tx in block.transactions:
                f = Path(store) / f"{tx.model_sha256}.bin"
                if f.is_file():
                    payloads[tx.model_sha256] = f.read_bytes()
        problem = block_problem(block, prev, i, keys, payloads, chain=chain, n_samples=n_samples)
        if problem:
            return Problem(i, problem)
        prev = block.hash
    if summary is not None:
        return _tip_problem(data, summary, path)
    return None


def _tip_problem(data: dict, summary: str | Path, path: str | Path) -> Problem | None:
    """The ledger against the run's record: same K's block count and tip."""
    try:
        record = json.loads(Path(summary).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        return Problem(0, f"summary {summary} unreadable ({exc})")
    height = len(data["blocks"])
    tip = data["blocks"][-1]["hash"] if height else ZERO_HASH
    chain = data["genesis"].get("chain_id", "")
    if not chain:
        return Problem(0, "the ledger has no chain id (written before chain ids), so it cannot be matched to the run")
    matches = [k for k in record.get("per_K", []) if chain_id(record["config"], k["K"]) == chain]
    if not matches:
        return Problem(0, f"field 'genesis.chain_id' names no K of the run in {summary}")
    expected = matches[0]
    if height != expected.get("blocks") or tip != expected.get("tip"):
        return Problem(height + 1, f"ledger ends at height {height} (tip {tip[:12]}), the run recorded "
                                   f"{expected.get('blocks')} blocks (tip {str(expected.get('tip'))[:12]}): "
                                   "the ledger was cut or replaced")
    return None
