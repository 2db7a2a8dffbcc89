"""Reading the report's inputs: every reader fails with the path and the reason (missing file,
unreadable, missing columns, no rows), and the columns each tidy table must have."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd


class ReportInputError(RuntimeError):
    """An input of the report is missing or malformed."""


def read_csv(path: str | Path, required: Iterable[str] = ()) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise ReportInputError(f"{path}: missing (run the workflow step that writes it first)")
    try:
        frame = pd.read_csv(path)
    except Exception as exc:  # noqa: BLE001 - any parse failure is reported with the path
        raise ReportInputError(f"{path}: unreadable CSV ({exc})") from None
    missing = sorted(set(required) - set(frame.columns))
    if missing:
        raise ReportInputError(f"{path}: malformed, missing column(s) {missing}")
    if frame.empty:
        raise ReportInputError(f"{path}: malformed, no rows")
    return frame


def read_json(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise ReportInputError(f"{path}: missing (run the workflow step that writes it first)")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ReportInputError(f"{path}: malformed JSON ({exc})") from None


SUMMARY_COLUMNS = ("sweep", "vary", "value", "cell", "K", "tau", "seed", "train_loss", "test_loss", "test_accuracy",
                   "status")


OPTIMUM_COLUMNS = ("sweep", "vary", "value", "cell", "K_star_loss", "K_star_accuracy", "training_time",
                   "mining_time", "max_accuracy", "min_train_loss")


__all__ = ["ReportInputError", "read_csv", "read_json", "SUMMARY_COLUMNS", "OPTIMUM_COLUMNS"]
