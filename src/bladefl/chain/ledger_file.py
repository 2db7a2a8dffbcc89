"""Reading a saved ledger file: every field type- and range-checked before it is used, so that a
malformed file ends in one :class:`Problem` naming the block and the field, never an exception
(:mod:`bladefl.chain.verify` then validates what it reads)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bladefl.chain.ledger import Block, block_from_dict
from bladefl.chain.pow import DIFFICULTY_BITS, OUTCOME
from bladefl.core.bounded_read import read_regular

MAX_INT = 2**63 - 1  # every integer field (a 5000-digit number is a malformed field, not a number)
MAX_TEXT = 256


@dataclass(frozen=True)
class Problem:
    height: int  # the block at fault (0: the file or its genesis)
    reason: str

    @property
    def last_good_height(self) -> int:
        return max(self.height - 1, 0)


# --- field checks: each returns what is wrong with a value (None when it is fine) -----------------


def _integer(lo: int, hi: int = MAX_INT) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if type(v) is not int:
            return f"must be an integer (got {shown(v)})"
        return None if lo <= v <= hi else f"must be in [{lo}, {hi}] (got {shown(v)})"
    return check


def _hex(chars: int) -> Callable[[Any], str | None]:
    pattern = re.compile(f"[0-9a-f]{{{chars}}}")

    def check(v: Any) -> str | None:
        ok = isinstance(v, str) and pattern.fullmatch(v)
        return None if ok else f"must be {chars} lowercase hex digits (got {shown(v)})"
    return check


def _text(v: Any) -> str | None:
    return None if isinstance(v, str) and len(v) <= MAX_TEXT else f"must be a text of at most {MAX_TEXT} characters"


def _number(v: Any) -> str | None:
    ok = type(v) in (int, float) and math.isfinite(v) and abs(v) <= MAX_INT
    return None if ok else f"must be a finite number (got {shown(v)})"


def shown(v: Any) -> str:
    text = json.dumps(v) if not isinstance(v, float) or math.isfinite(v) else str(v)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _metric(v: Any) -> str | None:
    """A metric the run recorded: any float (a diverged run records nan), or an integer a float holds."""
    ok = type(v) is float or (type(v) is int and abs(v) <= MAX_INT)
    return None if ok else f"must be a number (got {shown(v)})"


HASH = _hex(64)
COUNT = _integer(1)
DIFFICULTY = _integer(*DIFFICULTY_BITS)
HEADER = {"height": _integer(1), "prev_hash": HASH, "merkle_root": HASH, "miner": _integer(0),
          "timestamp": _number, "difficulty_bits": DIFFICULTY, "nonce": _integer(0), "model_sha256": HASH,
          "train_loss": _metric, "test_loss": _metric, "test_accuracy": _metric}
TRANSACTION = {"round": _integer(1), "client": _integer(0), "n_samples": _integer(1), "model_sha256": HASH,
               "chain_id": _text, "signature": _hex(128)}
EXCLUSION = {"client": _integer(0), "tx_hash": HASH, "reason": _text}


def _record(raw: Any, spec: Mapping[str, Callable[[Any], str | None]], where: str,
            optional: frozenset[str] = frozenset()) -> str | None:
    """What is wrong with a JSON object against ``spec`` (every field, exactly those)."""
    if not isinstance(raw, dict):
        return f"field '{where}' must be an object (got {shown(raw)})"
    for name, check in spec.items():
        if name not in raw:
            if name in optional:
                continue
            return f"field '{where}.{name}' is missing"
        wrong = check(raw[name])
        if wrong:
            return f"field '{where}.{name}' {wrong}"
    extra = sorted(set(raw) - set(spec))
    return f"field '{where}.{extra[0]}' is not a field of {where.split('[')[0].split('.')[-1]}" if extra else None


def _is_list(raw: Any) -> str | None:
    return None if isinstance(raw, list) else f"must be a list (got {shown(raw)})"


def _list(raw: Any, where: str) -> str | None:
    wrong = _is_list(raw)
    return f"field '{where}' {wrong}" if wrong else None


@dataclass(frozen=True)
class Genesis:
    chain_id: str
    public_keys: list[str]
    n_samples: list[int]
    difficulty_bits: int


def parse_genesis(raw: Any) -> Genesis | Problem:
    if not isinstance(raw, dict):
        return Problem(0, "field 'genesis' must be an object")
    spec = {"chain_id": _text, "public_keys": _is_list, "n_samples": _is_list, "difficulty_bits": DIFFICULTY}
    wrong = _record(raw, spec, "genesis", optional=frozenset({"chain_id"}))
    if wrong:
        return Problem(0, wrong)
    keys, counts = raw["public_keys"], raw["n_samples"]
    if not keys:
        return Problem(0, "field 'genesis.public_keys' lists no client")
    for i, key in enumerate(keys):
        wrong = HASH(key)
        if wrong:
            return Problem(0, f"field 'genesis.public_keys[{i}]' {wrong}")
    if len(counts) != len(keys):
        return Problem(0, f"field 'genesis.n_samples' has {len(counts)} entries for {len(keys)} public keys")
    for i, n in enumerate(counts):
        wrong = COUNT(n)
        if wrong:
            return Problem(0, f"field 'genesis.n_samples[{i}]' {wrong}")
    return Genesis(raw.get("chain_id", ""), list(keys), list(counts), raw["difficulty_bits"])


def _signature(raw: Any) -> str | None:
    ok = isinstance(raw, str) and len(raw) == 128 and all(c in "0123456789abcdef" for c in raw)
    return None if ok else f"field 'signature' must be 128 hex characters (got {shown(raw)})"


def parse_block(raw: Any, height: int, clients: int) -> Block | Problem:
    """A block from its JSON, every field checked first; ``clients``: how many the genesis registers."""
    if not isinstance(raw, dict):
        return Problem(height, "block is not a JSON object")
    for name in ("hash", "header", "transactions"):
        if name not in raw:
            return Problem(height, f"field '{name}' is missing")
    extra = sorted(set(raw) - {"hash", "header", "transactions", "excluded", "signature"})
    if extra:
        return Problem(height, f"field '{extra[0]}' is not a field of a block")
    if "signature" not in raw:
        return Problem(height, "field 'signature' is missing: the block's outcome is not signed by its miner "
                               "(a ledger written before blocks were signed, or one stripped of it)")
    wrong = HASH(raw["hash"]) or _signature(raw["signature"])
    wrong = f"field 'hash' {wrong}" if wrong else _record(raw["header"], HEADER, "header", optional=frozenset(OUTCOME))
    if not wrong and raw["header"]["miner"] >= clients:
        wrong = f"field 'header.miner' is {raw['header']['miner']}, not a registered client (0..{clients - 1})"
    if not wrong and raw["header"].get("model_sha256"):  # a block that commits a model commits its metrics
        lost = [name for name in OUTCOME if name not in raw["header"]]
        if lost:
            wrong = f"field 'header.{lost[0]}' is missing: a block that commits a model commits its metrics"
    if not wrong:
        wrong = _list(raw["transactions"], "transactions") or _list(raw.get("excluded", []), "excluded")
    for j, t in enumerate(raw["transactions"] if not wrong else []):
        wrong = _record(t, TRANSACTION, f"transactions[{j}]")
        if wrong:
            break
    for j, e in enumerate(raw.get("excluded", []) if not wrong else []):
        wrong = _record(e, EXCLUSION, f"excluded[{j}]")
        if wrong:
            break
    if wrong:
        return Problem(height, wrong)
    return block_from_dict(raw)


LEDGER_LIMIT = 256 * 2**20  # bytes: a ledger of 100 blocks of 100 uploads is under 1 MB


def read_json(path: str | Path, what: str, limit: int = LEDGER_LIMIT) -> Any | Problem:
    try:
        return json.loads(read_regular(path, limit, what).decode())
    except json.JSONDecodeError as exc:
        return Problem(0, f"{what} is not valid JSON (line {exc.lineno}, column {exc.colno}): truncated or edited")
    except (OSError, UnicodeDecodeError) as exc:
        return Problem(0, f"{what} unreadable ({getattr(exc, 'strerror', None) or exc})")
    except RecursionError:
        return Problem(0, f"{what} is nested too deeply to be a ledger")
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        return Problem(0, f"{what} holds a value no ledger field can hold ({str(exc).split(';')[0]})")


__all__ = ["Problem", "Genesis", "parse_genesis", "parse_block", "read_json", "shown", "HEADER", "TRANSACTION",
           "EXCLUSION"]
