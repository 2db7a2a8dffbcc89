"""Reading the report's inputs: every reader fails with the path and the reason (missing file,
unreadable, missing columns, no rows), and the columns each tidy table must have."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from bladefl.core.errors import BladeflError


class ReportInputError(BladeflError, RuntimeError):
    """An input of the report is missing or malformed."""


VERDICT_COLUMNS = ("dataset", "claim", "source", "basis", "verdict", "evidence")  # results/verdicts/<dataset>.csv
MAX_CSV_BYTES = 256 << 20  # the 20-draw grid's largest table is a few MB
MAX_JSON_BYTES = 16 << 20


def _bytes(path: Path, limit: int) -> bytes:
    """A report input's bytes, read as hostile (kept bundles come from elsewhere): a regular file of at
    most ``limit`` bytes (a FIFO would hang, /dev/zero fill memory)."""
    from bladefl.core.bounded_read import read_regular

    if not path.exists():
        raise ReportInputError(f"{path}: missing (run the workflow step that writes it first)")
    try:
        return read_regular(path, limit, "report input")
    except OSError as exc:
        raise ReportInputError(f"{path}: unreadable ({exc})") from None


def read_csv(path: str | Path, required: Iterable[str] = ()) -> pd.DataFrame:
    import io

    path = Path(path)
    data = _bytes(path, MAX_CSV_BYTES)
    try:
        frame = pd.read_csv(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - any parse failure is reported with the path
        raise ReportInputError(f"{path}: unreadable CSV ({str(exc)[:200]})") from None
    missing = sorted(set(required) - set(frame.columns))
    if missing:
        raise ReportInputError(f"{path}: malformed, missing column(s) {missing}")
    if frame.empty:
        raise ReportInputError(f"{path}: malformed, no rows")
    return frame


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def read_json(path: str | Path) -> dict:
    """A JSON object, read as hostile: bounded, UTF-8, no key given twice, no NaN or Infinity."""
    from bladefl.core.run_files import no_key_twice

    path = Path(path)
    data = _bytes(path, MAX_JSON_BYTES)
    try:
        found = json.loads(data.decode("utf-8"), object_pairs_hook=no_key_twice, parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ReportInputError(f"{path}: malformed JSON ({str(exc)[:200]})") from None
    if not isinstance(found, dict):
        raise ReportInputError(f"{path}: malformed, a JSON object is needed (got a {type(found).__name__})")
    return found


SUMMARY_COLUMNS = ("sweep", "vary", "value", "cell", "K", "tau", "seed", "train_loss", "test_loss", "test_accuracy",
                   "status")


OPTIMUM_COLUMNS = ("sweep", "vary", "value", "cell", "K_star_loss", "K_star_accuracy", "training_time",
                   "mining_time", "max_accuracy", "min_train_loss")


__all__ = ["ReportInputError", "read_csv", "read_json", "SUMMARY_COLUMNS", "OPTIMUM_COLUMNS"]
