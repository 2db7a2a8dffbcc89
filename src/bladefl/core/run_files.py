"""A run folder's records (``rounds.csv``, ``summary.json``) read strictly, one way for everyone
who reads them: the chain verifier, the analyses (tidy tables, the bound, detection) and the
import of runs computed elsewhere. What a forger could slip past a lenient reader is refused here
with the file, line and field named (:class:`RunFileError`, a ValueError):

- ``rounds.csv``: no byte-order mark, a header starting ``K,round`` with a ``status`` and ``tau``
  column, every K, round and tau a plain integer (not ``3.0`` or `` 3``), every status one of
  :data:`STATUSES`, every number a number, exactly one row per (K, round).
- ``summary.json``: bounded in size, no key given twice, no integer of more digits than a run
  records, a ``config`` object and a ``per_K`` list holding each of ``config.time.K`` once, in
  order, each with an integer ``tau``, a status of :data:`STATUSES`, and, for a K that trained,
  its ``blocks`` (= K: one block a round) and ``tip``.
- the two together (:func:`read_run`): the same K values, per K the same tau and status, an
  infeasible K as one round-0 row, a trained K as rows 1..K, its last row's metrics the summary's.

What the config implies (tau from the time model, the chain id) is checked where those live:
:mod:`bladefl.experiments.runs.run_checks` and :mod:`bladefl.chain.verify`.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bladefl.core.bounded_read import read_regular
from bladefl.core.errors import BladeflError

if TYPE_CHECKING:
    import pandas as pd

STATUSES = ("ok", "infeasible", "diverged")  # diverged: a non-finite loss or accuracy
ROUNDS_LIMIT = 512 * 2**20  # bytes: 100 K values of 100 rounds are about 2 MB
SUMMARY_LIMIT = 64 * 2**20  # bytes: a summary is a few kB
METRICS = ("train_loss", "test_loss", "test_accuracy")
# Recorded since the measurement conventions (bladefl.experiments.tables.conventions): a run made before has none.
CURVES = ("client_test_loss", "client_test_accuracy", "local_train_loss")
INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
MAX_DIGITS = 19  # no recorded integer (K, tau, blocks, seeds, counts) comes near 10**19


class RunFileError(BladeflError):
    """A run file that is not what the run writes; the message names the file and the field."""


@dataclass(frozen=True)
class Run:
    """One run's records, read strictly: the summary and, per K, its rows of rounds.csv (by round)."""

    summary: dict[str, Any]
    rows: dict[int, dict[int, dict[str, str]]]  # K -> round -> row (an infeasible K: round 0)
    rounds_csv: bytes = b""  # the bytes the rows were read from

    @property
    def per_k(self) -> dict[int, dict[str, Any]]:
        return {int(k["K"]): k for k in self.summary["per_K"]}

    def rounds_frame(self) -> pd.DataFrame:
        """``rounds.csv`` as a pandas DataFrame (the analyses' view), from the bytes read strictly."""
        import pandas as pd

        return pd.read_csv(io.BytesIO(self.rounds_csv))


def parse_rounds(raw: bytes, where: str = "rounds.csv") -> dict[int, dict[int, dict[str, str]]]:
    """K -> round -> row of a ``rounds.csv`` (see the module's text)."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raise RunFileError(f"{where} starts with a byte-order mark (its first column would not read as K)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunFileError(f"{where} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames or []
        if header[:2] != ["K", "round"] or not {"tau", "status"} <= set(header):
            raise RunFileError(f"{where}: its header must start with K,round and hold tau and status "
                               f"(got {header[:4]})")
        rows: dict[int, dict[int, dict[str, str]]] = {}
        for line, row in enumerate(reader, start=2):
            if None in row or any(v is None for v in row.values()):
                raise RunFileError(f"{where} line {line}: {len(header)} fields expected")
            k, r, tau = (row[c] for c in ("K", "round", "tau"))
            if not (INTEGER.fullmatch(k) and INTEGER.fullmatch(r) and INTEGER.fullmatch(tau)) or len(k + r) > 12:
                raise RunFileError(f"{where} line {line}: K = {k!r}, round = {r!r}, tau = {tau!r}: each must be "
                                   "a plain integer")
            if row["status"] not in STATUSES:
                raise RunFileError(f"{where} line {line}: status must be one of {list(STATUSES)} "
                                   f"(got {row['status']!r})")
            for name in (*METRICS, *CURVES):
                if name in row and row[name] != "" and not _is_number(row[name]):
                    raise RunFileError(f"{where} line {line}: {name} = {row[name][:40]!r} is not a number")
            by_round = rows.setdefault(int(k), {})
            if int(r) in by_round:
                raise RunFileError(f"{where} line {line}: a second row for K={int(k)}, round {int(r)}")
            by_round[int(r)] = row
    except csv.Error as exc:  # a field over the csv module's limit, a stray quote
        raise RunFileError(f"{where} is not a readable CSV ({exc})") from None
    return rows


def same_number(a: float, b: float) -> bool:
    """Two recorded numbers are the same: equal, or both NaN (a diverged round's metric)."""
    return a == b or (math.isnan(a) and math.isnan(b))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def no_key_twice(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object whose every key is given once (``json.loads(..., object_pairs_hook=no_key_twice)``:
    plain JSON keeps the last of two silently); RunFileError otherwise."""
    keys = [k for k, _ in pairs]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise RunFileError(f"key {twice[0]!r} given twice in one object")
    return dict(pairs)


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise RunFileError(f"an integer of {len(text)} digits, more than any run records")
    return int(text)


def parse_summary(raw: bytes, where: str = "summary.json") -> dict[str, Any]:
    """A ``summary.json`` (see the module's text)."""
    try:
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=no_key_twice, parse_int=_bounded_int)
    except RunFileError as exc:
        raise RunFileError(f"{where}: {exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise RunFileError(f"{where} is not valid JSON ({str(exc)[:80]}): truncated or edited") from None
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict) or not isinstance(
            data.get("per_K"), list):
        raise RunFileError(f"{where}: fields 'config' (an object) and 'per_K' (a list) are required")
    time = data["config"].get("time")
    ks = time.get("K") if isinstance(time, dict) else None
    if not isinstance(ks, list) or not all(type(k) is int for k in ks):
        raise RunFileError(f"{where}: field 'config.time.K' must be a list of integers")
    given = [e.get("K") if isinstance(e, dict) else None for e in data["per_K"]]
    if given != ks:
        twice = sorted({k for k in given if given.count(k) > 1 and k is not None})
        why = f"K={twice[0]} given twice" if twice else f"K values {given[:12]}"
        raise RunFileError(f"{where}: field 'per_K' must hold each K of config.time.K once, in order ({why}, "
                           f"config.time.K = {ks[:12]})")
    for entry in data["per_K"]:
        _check_entry(entry, where)
    return data


def _check_entry(entry: Mapping[str, Any], where: str) -> None:
    at = f"{where}: per_K entry K={entry['K']}"
    if entry.get("status") not in STATUSES:
        raise RunFileError(f"{at}: status must be one of {list(STATUSES)} (got {entry.get('status')!r})")
    if type(entry.get("tau")) is not int:
        raise RunFileError(f"{at}: tau must be an integer (got {entry.get('tau')!r})")
    if entry["status"] == "infeasible":
        return
    if type(entry.get("blocks")) is not int or not isinstance(entry.get("tip"), str):
        raise RunFileError(f"{at}: a K that trained records 'blocks' (an integer) and 'tip' (a block hash)")
    if entry["blocks"] != entry["K"]:
        raise RunFileError(f"{at}: {entry['blocks']} blocks, but a run of K rounds mines K = {entry['K']}")
    values: list[Any] = [entry.get(name) for name in METRICS]
    if not all(type(v) in (int, float) for v in values):
        raise RunFileError(f"{at}: {', '.join(METRICS)} must be numbers (got {values})")
    curves = {name: entry[name] for name in CURVES if name in entry}
    if not all(type(v) in (int, float) and math.isfinite(v) for v in curves.values()):
        raise RunFileError(f"{at}: {', '.join(curves)} must be finite numbers where given (got {curves})")
    finite = all(math.isfinite(v) for v in values)
    if finite != (entry["status"] == "ok"):
        raise RunFileError(f"{at}: status {entry['status']!r} with {'finite' if finite else 'non-finite'} "
                           f"metrics {values} (a non-finite loss or accuracy is 'diverged')")


def _read(path: str | Path, limit: int, name: str) -> bytes:
    try:
        return read_regular(path, limit, name)
    except OSError as exc:
        raise RunFileError(f"{name} {path} unreadable ({exc.strerror or exc})") from None


def read_rounds(path: str | Path) -> dict[int, dict[int, dict[str, str]]]:
    return parse_rounds(_read(path, ROUNDS_LIMIT, "rounds.csv"), f"rounds.csv {path}")


def read_summary(path: str | Path) -> dict[str, Any]:
    return parse_summary(_read(path, SUMMARY_LIMIT, "summary.json"), f"summary.json {path}")


def check_together(summary: Mapping[str, Any], rows: Mapping[int, Mapping[int, Mapping[str, str]]],
                   where: str, metrics: bool = True) -> None:
    """The summary and rounds.csv of one run agree (see the module's text); ``metrics=False`` leaves
    the final metrics to a caller that holds both to the blocks (the chain verifier)."""
    ks = [int(e["K"]) for e in summary["per_K"]]
    if sorted(rows) != sorted(ks):
        raise RunFileError(f"{where}: rounds.csv holds K {sorted(rows)[:12]}, the summary {ks[:12]}")
    for entry in summary["per_K"]:
        K, by_round = int(entry["K"]), rows[int(entry["K"])]
        wanted = [0] if entry["status"] == "infeasible" else list(range(1, K + 1))
        if sorted(by_round) != wanted:
            raise RunFileError(f"{where}: rounds.csv holds rounds {sorted(by_round)[:12]} of K={K}, the summary "
                               f"calls it {entry['status']} (rounds {wanted[:12]})")
        for r, row in by_round.items():
            if int(row["tau"]) != entry["tau"]:
                raise RunFileError(f"{where}: rounds.csv gives tau = {row['tau']} in K={K}, round {r}, the "
                                   f"summary {entry['tau']}")
            if (row["status"] == "infeasible") != (entry["status"] == "infeasible") or (
                    entry["status"] == "ok" and row["status"] != "ok"):
                raise RunFileError(f"{where}: rounds.csv gives status {row['status']!r} in K={K}, round {r}, "
                                   f"the summary {entry['status']!r}")
        if metrics and entry["status"] != "infeasible":
            last = by_round[K]
            for name in (*METRICS, *(c for c in CURVES if c in entry)):
                recorded, final = float(last.get(name) or "nan"), float(entry[name])
                if not same_number(recorded, final):
                    raise RunFileError(f"{where}: the summary records {name} = {final!r} for K={K}, its last "
                                       f"round in rounds.csv {recorded!r}")


def read_run(summary_path: str | Path) -> Run:
    """A run folder's summary and rounds.csv (beside it), each read strictly and held to the other."""
    summary = read_summary(summary_path)
    path = Path(summary_path).parent / "rounds.csv"
    raw = _read(path, ROUNDS_LIMIT, "rounds.csv")
    rows = parse_rounds(raw, f"rounds.csv {path}")
    check_together(summary, rows, f"run {Path(summary_path).parent}")
    return Run(summary, rows, raw)



DETECTION_COLUMNS = ["K", "round", "client", "lazy", "detector", "score", "flag", "excluded"]  # detections.csv


def expects_detections(summary: dict) -> bool:
    """Whether a run wrote ``detections.csv``: its validators ran detectors, it had lazy clients and
    some K trained."""
    config, lazy = summary.get("config", {}), summary.get("config", {}).get("lazy", {})
    lazy_clients = round(float(lazy.get("ratio", 0.0)) * int(config.get("partition", {}).get("N", 0)))
    trained = any(k.get("status") != "infeasible" for k in summary.get("per_K", []))
    return bool(lazy.get("detectors")) and lazy_clients > 0 and trained


__all__ = ["DETECTION_COLUMNS", "expects_detections", "STATUSES", "METRICS", "CURVES", "RunFileError", "Run",
           "same_number", "parse_rounds", "parse_summary", "read_rounds", "read_summary", "check_together", "read_run",
           "no_key_twice"]
