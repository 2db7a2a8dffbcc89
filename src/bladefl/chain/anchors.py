"""Anchors: records of runs' chains kept where the run folder's writer cannot rewrite them.

A run's keys derive from its seed (or from the seed and a secret), so whoever knows the seed can
re-sign every transaction, re-mine every block and rewrite the run's files to match: a ledger that
verifies against its own summary is *consistent*, not *valid*. It is valid when something from
outside the run folder agrees: the verifier's copy of the key secret, or an anchor file holding the
chain's id with its tip and block count (``bladefl keep`` writes one into every kept bundle,
``bladefl chain anchor`` writes one from runs' summaries). An anchor file is JSON::

    {"format": "bladefl-anchors/1", "chains": {"<chain id>": {"tip": "<block hash>", "blocks": 5}, ...}}

and is read as hostile input (size limit, exact fields, hex digests)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bladefl.chain.ledger import chain_id
from bladefl.core.bounded_read import read_regular
from bladefl.core.errors import BladeflError
from bladefl.core.run_files import no_key_twice

FORMAT = "bladefl-anchors/1"
LIMIT = 64 << 20  # bytes: 1,080 runs x 9 K are about 2 MB
_HEX = re.compile(r"[0-9a-f]{64}")


class AnchorError(BladeflError):
    """An anchor file that cannot be read as one."""


def of_summaries(summaries: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Chain id -> tip and block count of every K that trained, from the runs' summaries."""
    chains = {}
    for summary in summaries:
        for k in summary["per_K"]:
            if k.get("status") != "infeasible" and k.get("tip"):
                chains[chain_id(summary["config"], k["K"])] = {"tip": k["tip"], "blocks": k["blocks"]}
    return dict(sorted(chains.items()))


def text(chains: dict[str, dict[str, Any]]) -> str:
    return json.dumps({"format": FORMAT, "chains": chains}, indent=1, sort_keys=True) + "\n"


def read(path: str | Path) -> dict[str, dict[str, Any]]:
    """The chains an anchor file records, or :class:`AnchorError` naming what is wrong."""
    try:
        data = json.loads(read_regular(path, LIMIT, f"anchor {path}").decode(), object_pairs_hook=no_key_twice)
    except (OSError, UnicodeDecodeError, ValueError) as exc:  # a key given twice too (no_key_twice)
        raise AnchorError(f"--anchor {path}: not an anchor file ({getattr(exc, 'strerror', None) or exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("chains"), dict):
        raise AnchorError(f"--anchor {path}: not an anchor file (needs \"format\": \"{FORMAT}\" and \"chains\")")
    for cid, entry in data["chains"].items():
        if not (_HEX.fullmatch(cid) and isinstance(entry, dict) and set(entry) == {"tip", "blocks"}
                and isinstance(entry["tip"], str) and _HEX.fullmatch(entry["tip"])
                and type(entry["blocks"]) is int and entry["blocks"] >= 1):
            raise AnchorError(f"--anchor {path}: chain {cid[:80]!r} is not a chain id with a tip (64 hex digits) "
                              f"and a block count >= 1")
    return data["chains"]


def disagreement(chains: Mapping[str, Mapping[str, Any]], cid: str, tip: str, blocks: int) -> str | None:
    """Why a ledger (its chain id, last block's hash, block count) is not the anchored chain; None if it is."""
    entry = chains.get(cid)
    if entry is None:
        return f"the anchor records no chain {cid[:16]}..."
    if entry["tip"] != tip or entry["blocks"] != blocks:
        return (f"the anchor records this chain ending at block {entry['blocks']} with tip {entry['tip'][:16]}..., "
                f"the ledger at block {blocks} with tip {tip[:16]}...")
    return None


__all__ = ["FORMAT", "AnchorError", "disagreement", "of_summaries", "read", "text"]
