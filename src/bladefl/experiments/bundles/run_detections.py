"""An archived run's ``detections.csv`` read strictly: the file the lazy-client detection tables are
made of, which no key covers, so an import holds it to the run it came with.

It must be there exactly when the run's validators ran detectors on lazy clients (with it missing the
detection tables would shrink without a word), have the engine's header, and each row a K that
trained, a round of that K, a client of the run, one of the run's detectors, a number for the score
and true/false for the truth, the flag and the exclusion."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from typing import Any

from bladefl.core.run_files import DETECTION_COLUMNS, RunFileError, expects_detections

_BOOLS = {"True", "False"}


def _row_problem(row: dict[str, str], blocks: Mapping[int, int], N: int, detectors: list[str]) -> str | None:
    """Why one row is not a row of the run (``blocks``: each trained K's blocks; N clients; its detectors)."""
    try:
        K, rnd, client, score = int(row["K"]), int(row["round"]), int(row["client"]), float(row["score"])
    except (TypeError, ValueError):
        return "K, round and client must be integers and score a number"
    if K not in blocks or not 1 <= rnd <= blocks[K]:
        return f"K={K}, round {rnd} is no round of a K that trained"
    if not 0 <= client < N:
        return f"client {client} is not one of the run's {N}"
    if row["detector"] not in detectors:
        return f"detector {row['detector'][:40]!r} is not one the run ran ({list(detectors)})"
    if {row["lazy"], row["flag"], row["excluded"]} - _BOOLS or math.isinf(score):
        return "lazy, flag and excluded must be True or False, and score finite or nan"
    return None


def check(data: bytes | None, summary: Mapping[str, Any]) -> None:
    """RunFileError naming the first problem of a run's ``detections.csv`` (None: absent)."""
    expected = expects_detections(dict(summary))
    if data is None:
        if expected:
            raise RunFileError("detections.csv missing, though the run's validators ran detectors on lazy clients")
        return
    if not expected:
        raise RunFileError("detections.csv present, though the run ran no detectors on lazy clients")
    try:
        reader = csv.DictReader(io.StringIO(data.decode("utf-8"), newline=""), strict=True)
        if reader.fieldnames != DETECTION_COLUMNS:
            raise RunFileError(f"detections.csv: the header must be {','.join(DETECTION_COLUMNS)}")
        blocks = {k["K"]: k.get("blocks", 0) for k in summary["per_K"] if k.get("status") != "infeasible"}
        N, detectors = summary["config"]["partition"]["N"], summary["config"]["lazy"]["detectors"]
        for line, row in enumerate(reader, start=2):
            why = ("a row of another length than the header" if None in row or None in row.values()
                   else _row_problem(row, blocks, N, detectors))
            if why:
                raise RunFileError(f"detections.csv line {line}: {why}")
    except (UnicodeDecodeError, csv.Error) as exc:
        raise RunFileError(f"detections.csv: not UTF-8 CSV ({exc})") from None


__all__ = ["check"]
