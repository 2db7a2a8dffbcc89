"""``bladefl chain verify``: a saved ledger re-checked from scratch, whole.

Every field of the file is type- and range-checked before it is used (a malformed file ends in
one problem naming the block and the field, never an exception), then every block is validated
as an honest client would (:func:`bladefl.chain.ledger.block_problem`). With a model store the
uploaded models are re-hashed. With the run's ``summary.json`` the ledger is also held against
the run that wrote it:

- the genesis is derived again from the run's config (the clients' keys from its seed, their
  sample counts, the difficulty, the chain id of the file's K) and must match field by field, so
  an added client, an inflated sample count or an easier difficulty is caught;
- the file's K (``K<k>.json``) must be the K the chain id names, so another K's ledger copied in
  its place is caught;
- every block's hash must be the one the run recorded in ``rounds.csv`` beside the summary (the
  first forged block is named, even when the forger re-mined every block after it), and the
  ledger must end at the tip and height recorded in the summary.

What this cannot catch (the threat model, docs/engine.md): the keys derive from the run's seed so
that runs are reproducible; whoever knows the seed can sign, re-mine and rewrite the summary and
``rounds.csv`` together. The summary is the anchor.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bladefl.chain import anchors, transactions
from bladefl.chain.ledger import Block, block_problem, chain_id
from bladefl.chain.ledger_file import Genesis, Problem, parse_block, parse_genesis, read_json, shown
from bladefl.chain.pow import ZERO_HASH
from bladefl.chain.round import genesis_ledger
from bladefl.core import run_files
from bladefl.core.bounded_read import read_regular
from bladefl.core.errors import BladeflError

# The most bytes a stored model may have (16M float32 parameters; the paper's MLP has 203,530): a
# larger file, or a sparse one claiming gigabytes, is refused from its size before any byte is read.
STORE_LIMIT = 64 << 20


class StoreError(BladeflError):
    """A file of the model store that is no model (not a regular file, or too large)."""


def _store_file(path: Path) -> bytes | None:
    """A stored model's bytes (None when there is none), read within :data:`STORE_LIMIT`."""
    if not path.exists() and not path.is_symlink():
        return None
    try:
        return read_regular(path, STORE_LIMIT, "model store file")
    except OSError as exc:
        raise StoreError(str(exc) if exc.strerror is None else f"model store file {path}: {exc.strerror}") from None


def _payloads(block: Block, store: str | Path) -> dict[str, bytes]:
    found = {}
    for tx in block.transactions:
        payload = _store_file(Path(store) / f"{tx.model_sha256}.bin")
        if payload is not None:
            found[tx.model_sha256] = payload
    return found


def verify_chain(path: str | Path, store: str | Path | None = None, summary: str | Path | None = None,
                 secret: bytes | None = None, anchor: Mapping[str, Mapping[str, Any]] | None = None) -> Problem | None:
    """Re-check a saved chain from scratch; return the first problem (height and reason). With the
    run's ``summary``, also hold the genesis, the file's K, every block hash and the tip against
    the run (see the module's docstring); with ``anchor`` (:func:`bladefl.chain.anchors.read`), the
    chain id, tip and block count against the record kept outside the run folder."""
    data = read_json(path, "the file")
    if isinstance(data, Problem):
        return data
    if not isinstance(data, dict) or "genesis" not in data or "blocks" not in data:
        return Problem(0, "field 'genesis' or 'blocks' is missing")
    genesis = parse_genesis(data["genesis"])
    if isinstance(genesis, Problem):
        return genesis
    if not isinstance(data["blocks"], list):
        return Problem(0, "field 'blocks' must be a list")
    run: RunRecord | None = None
    if summary is not None:
        record = _run_record(summary, path, genesis, secret)
        if isinstance(record, Problem):
            return record
        run = record
    prev, last = ZERO_HASH, None
    for i, raw in enumerate(data["blocks"], start=1):
        block = parse_block(raw, i, len(genesis.public_keys))
        if isinstance(block, Problem):
            return block
        if block.hash != raw["hash"]:
            return Problem(i, "field 'hash' does not match the header")
        if block.header.difficulty_bits != genesis.difficulty_bits:
            return Problem(i, f"field 'header.difficulty_bits' is {block.header.difficulty_bits}, genesis says "
                              f"{genesis.difficulty_bits}")
        try:
            uploads = None if store is None else _payloads(block, store)
            problem = block_problem(block, prev, i, genesis.public_keys, uploads, chain=genesis.chain_id,
                                    n_samples=genesis.n_samples)
            if not problem and store is not None and block.header.model_sha256:
                problem = global_model_problem(block, store, uploads)
        except StoreError as exc:
            problem = str(exc)
        if problem:
            return Problem(i, problem)
        if run is not None:
            problem = run.round_problem(i, block)
            if problem:
                return Problem(i, problem)
        prev, last = block.hash, block
    if run is not None:
        height = len(data["blocks"])
        if height != run.blocks or prev != run.tip:
            return Problem(height + 1, f"ledger ends at height {height} (tip {prev[:12]}), the run recorded "
                                       f"{run.blocks} blocks (tip {run.tip[:12]}): the ledger was cut or replaced")
        wrong = run.final_problem(last)
        if wrong:
            return Problem(height, wrong)
    if anchor is not None:
        why = anchors.disagreement(anchor, genesis.chain_id, prev if data["blocks"] else "", len(data["blocks"]))
        if why:
            return Problem(0, why)
    return None


def global_model_problem(block: Block, store: str | Path, uploads: Mapping[str, bytes] | None = None,
                         rtol: float = 1e-5, atol: float = 1e-6) -> str | None:
    """The block's committed global model against its uploads: the stored model must hash to the
    header's digest and equal FedAvg of the block's stored uploads (weights: their sample counts;
    recomputed in float64, so equal up to the engine's float32 rounding). ``uploads``: the uploads'
    payloads by digest when the caller has read them already (else read from ``store``)."""
    uploads = _payloads(block, store) if uploads is None else uploads
    payload = _store_file(Path(store) / f"{block.header.model_sha256}.bin")
    if payload is None:
        return f"global model {block.header.model_sha256[:12]} is missing from the store"
    if transactions.digest(payload) != block.header.model_sha256:
        return "the stored global model does not match the header's digest"
    if not block.transactions:
        return "the block commits a global model but holds no upload"
    committed = np.frombuffer(payload[: len(payload) // 4 * 4], dtype="<f4").astype(np.float64)
    total, weight = np.zeros_like(committed), 0
    for tx in block.transactions:
        raw = uploads.get(tx.model_sha256)
        if raw is None:
            return f"model {tx.model_sha256[:12]} of client {tx.client} is missing from the store"
        if len(raw) != len(payload):
            return f"the upload of client {tx.client} has {len(raw)} bytes, the global model {len(payload)}"
        total += np.frombuffer(raw, dtype="<f4").astype(np.float64) * tx.n_samples
        weight += tx.n_samples
    fedavg = total / weight
    if not np.allclose(committed, fedavg, rtol=rtol, atol=atol, equal_nan=True):
        worst = float(np.nanmax(np.abs(committed - fedavg)))
        return f"the committed global model is not FedAvg of the block's uploads (largest difference {worst:.3g})"
    return None


# --- the ledger against the run that wrote it ----------------------------------------------------------


def _number_of(text: str | None) -> float:
    """A rounds.csv cell as a number (pandas writes an integer column with a gap as floats: 1.0)."""
    try:
        return float(text or "nan")
    except ValueError:
        return math.nan


@dataclass(frozen=True)
class RunRecord:
    """What the run recorded about one K's ledger: its block count and tip, per round the block
    hash and metrics of rounds.csv, and the K's final metrics in the summary."""

    K: int
    blocks: int
    tip: str
    rounds: dict[int, dict[str, str]]  # round -> its rounds.csv row
    final: dict[str, Any]  # the summary's per_K entry

    def round_problem(self, height: int, block: Block) -> str | None:
        """Block ``height`` against round ``height``'s row of rounds.csv: its hash, and the metrics
        the block commits."""
        row = self.rounds.get(height)
        if row is None:
            return None
        if row.get("block_hash") != block.hash:
            return (f"block hash {block.hash[:12]} is not the one the run recorded in rounds.csv "
                    f"({str(row.get('block_hash'))[:12]}): the block was replaced")
        held = {"miner": block.header.miner, "n_in_block": len(block.transactions), "n_excluded": len(block.excluded)}
        for name, value in held.items():
            if name in row and _number_of(row[name]) != value:
                return f"rounds.csv records {name} = {row[name]!r} in round {height}, the block holds {value}"
        for name in run_files.METRICS if block.header.model_sha256 else ():
            recorded = float(row.get(name) or "nan")  # a number: rounds.csv is read strictly (run_files)
            if not run_files.same_number(recorded, float(getattr(block.header, name))):
                return (f"rounds.csv records {name} = {recorded!r} in round {height}, the block commits "
                        f"{getattr(block.header, name)!r}")
        return None

    def final_problem(self, last: Block | None) -> str | None:
        """The summary's final metrics of this K against the last block's commitment."""
        if last is None or not last.header.model_sha256:
            return None
        for name in run_files.METRICS:  # numbers for a K that trained: the summary is read strictly (run_files)
            value = self.final[name]
            if not run_files.same_number(float(value), float(getattr(last.header, name))):
                return (f"summary.json records {name} = {value!r} for K={self.K}, the last block commits "
                        f"{getattr(last.header, name)!r}")
        return None


def expected_genesis(config: Mapping[str, Any], K: int, secret: bytes = b"") -> Genesis:
    """The genesis a run with ``config`` writes for its K (as :func:`bladefl.fl.chain_executor.new_chain_state`),
    its keys derived from the seed and ``secret`` (the verifier's own copy of the key secret)."""
    ledger = genesis_ledger(int(config["seed"]), int(config["partition"]["N"]), int(config["partition"]["n"]),
                            int(config["chain"]["difficulty_bits"]), chain_id(dict(config), K), secret)
    return Genesis(ledger.chain_id, ledger.public_keys, list(ledger.n_samples or []), ledger.difficulty_bits)


def _file_k(path: str | Path) -> int | None:
    m = re.fullmatch(r"K(\d+)\.json", Path(path).name)
    return int(m.group(1)) if m else None


def _run_record(summary: str | Path, path: str | Path, genesis: Genesis, secret: bytes | None) -> RunRecord | Problem:
    try:  # the run files read as everyone reads them (bladefl.core.run_files)
        record = run_files.read_summary(summary)
    except run_files.RunFileError as exc:
        return Problem(0, str(exc))
    config = record["config"]
    if not genesis.chain_id:
        return Problem(0, "the ledger has no chain id (written before chain ids), so it cannot be matched to the run")
    ks = [k["K"] for k in record["per_K"]]
    named = [k for k in ks if chain_id(config, k) == genesis.chain_id]
    file_k = _file_k(path)
    if not named:
        return Problem(0, f"field 'genesis.chain_id' names no K of the run in {summary}")
    if file_k is not None and named[0] != file_k:
        return Problem(0, f"field 'genesis.chain_id' is the chain of K={named[0]} of this run, but the file is "
                          f"K{file_k}.json: another K's ledger in its place")
    K = named[0]
    N = config.get("partition", {}).get("N") if isinstance(config.get("partition"), dict) else None
    if type(N) is not int or N != len(genesis.public_keys):  # before deriving N keys (10**6 would run on)
        return Problem(0, f"field 'genesis.public_keys' holds {len(genesis.public_keys)} clients' keys, but "
                          f"summary {summary} has partition.N = {N!r}")
    named_secret = config.get("chain", {}).get("key_secret_file") if isinstance(config.get("chain"), dict) else None
    if named_secret and secret is None:
        return Problem(0, "the run's keys derive from a key secret (chain.key_secret_file): give the verifier its own "
                          "copy (--key-secret FILE; the path the summary names is never read) to check the genesis")
    try:  # the verifier's secret, never the file the summary under test names (a forger sets it to '')
        expected = expected_genesis(config, K, secret or b"")
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return Problem(0, f"summary {summary}: field 'config' lacks what the genesis derives from ({exc})")
    for name in ("public_keys", "n_samples", "difficulty_bits"):
        if getattr(genesis, name) != getattr(expected, name):
            wanted = shown(getattr(expected, name))
            return Problem(0, f"field 'genesis.{name}' is not what the run's config gives ({wanted})")
    entry = next(k for k in record["per_K"] if k["K"] == K)
    if entry["status"] == "infeasible":
        return Problem(0, f"summary {summary} records K={K} as infeasible (no blocks), yet here is its ledger")
    blocks, tip = entry["blocks"], entry["tip"]
    where = f"rounds.csv beside {summary}"
    try:
        rows = run_files.read_rounds(Path(summary).parent / "rounds.csv")
        found = _recorded_rounds(rows, K, blocks)
        run_files.check_together(record, rows, f"run {Path(summary).parent}", metrics=False)
    except run_files.RunFileError as exc:
        reason = str(exc)
        return Problem(0, reason if reason.startswith(("rounds.csv", "run ")) else f"{where}: {reason}")
    return RunRecord(K, blocks, tip, found, entry)


def _recorded_rounds(rows: dict[int, dict[int, dict[str, str]]], K: int, blocks: int) -> dict[int, dict[str, str]]:
    """Round -> its row of one K in the run's ``rounds.csv`` (read strictly by
    :func:`bladefl.core.run_files.read_rounds`): exactly one row for each of the K's ``blocks``
    rounds: none for a round without a block, none missing."""
    found = rows.get(K, {})
    extra = sorted(r for r in found if not 1 <= r <= blocks)
    if extra:
        raise run_files.RunFileError(f"a row for K={K}, round {extra[0]}, which has no block (blocks 1..{blocks})")
    missing = sorted(set(range(1, blocks + 1)) - set(found))
    if missing:
        raise run_files.RunFileError(f"no row for K={K}, round(s) {missing[:5]}: rows deleted")
    return found


__all__ = ["Problem", "Genesis", "RunRecord", "parse_genesis", "parse_block", "verify_chain", "expected_genesis"]
