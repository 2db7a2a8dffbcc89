"""The tables a kept bundle carries, held to what the workflow writes before any analysis reads them
(``bladefl rejudge`` of a bundle whose manifest anyone can re-hash): the tidy run table
(:func:`bladefl.experiments.tables.tidy.collect`) and the bound's gaps and constants tables. A table
that is not one of them is a list of problems, each naming the file, the column and the row, instead of
a traceback in the middle of the analysis or a silent verdict on repeated rows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bladefl.experiments.plan.grid import Member
from bladefl.experiments.tables.tidy import COLUMNS, OPTIONAL

STATUSES = ("ok", "infeasible", "diverged")
MAX_ROWS = 10_000_000  # far above any grid (the paper's 20-draw grid: about 25,000 rows per dataset)
INTEGERS = {"K": (1, 1000), "tau": (-1_000_000, 1_000_000), "seed": (0, 2**31 - 1), "partition": (0, 2**31 - 1),
            "N": (1, 60_000)}
NUMBERS = ("value", "alpha", "beta", "eta", "lazy_ratio", "sigma2", "epsilon", "train_loss", "test_loss",
           "test_accuracy", "training_time", "mining_time")
GAPS = ("cell", "seed", "K", "gap", "G_fit")
CONSTANTS = ("cell", "seed", "L", "xi", "delta")


def read_table(path: Path, what: str) -> tuple[pd.DataFrame | None, list[str]]:
    """A CSV as text columns (nothing parsed yet), or the reason it cannot be one."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, nrows=MAX_ROWS + 1)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        return None, [f"{path}: not a {what} ({exc.__class__.__name__}: {str(exc)[:120]})"]
    if len(frame) > MAX_ROWS:
        return None, [f"{path}: more than {MAX_ROWS} rows (no grid writes that many)"]
    return frame, []


def _numbers(frame: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(frame[column].replace({"inf": "inf", "": "nan"}), errors="coerce")


def summary_problems(path: Path, members: Sequence[Member]) -> list[str]:
    """What keeps ``path`` from being the tidy run table of the grid of ``members`` (empty: it is)."""
    frame, problems = read_table(path, "tidy run table")
    if frame is None:
        return problems
    missing = [c for c in COLUMNS if c not in frame]
    if missing:
        return [f"{path}: columns {missing} missing (not the tidy run table `bladefl summarize` writes)"]
    if frame.empty:
        return [f"{path}: no rows"]
    for column, (low, high) in INTEGERS.items():
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = ~(values.notna() & (values == np.floor(values)) & values.between(low, high))
        if column == "tau":
            bad &= frame.status.ne("infeasible") | values.isna()
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            return [f"{path}: row {i + 2}: {column} must be a whole number in {low}..{high} "
                    f"(got {frame[column].iloc[i][:40]!r})"]
    for column in (*NUMBERS, *(c for c in OPTIONAL if c in frame)):  # the curves: where the table has them
        text = frame[column]
        values = _numbers(frame, column)
        bad = values.isna() & ~text.isin(["", "nan", "NaN"])
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            return [f"{path}: row {i + 2}: {column} must be a number (got {text.iloc[i][:40]!r})"]
    status = ~frame.status.isin(STATUSES)
    if status.any():
        i = int(np.flatnonzero(status.to_numpy())[0])
        return [f"{path}: row {i + 2}: status must be one of {list(STATUSES)} (got {frame.status.iloc[i][:40]!r})"]
    for name in ("test_accuracy", "client_test_accuracy"):
        accuracy = _numbers(frame, name) if name in frame else pd.Series(dtype=float)
        if (accuracy.notna() & ~accuracy.between(0, 1)).any():
            return [f"{path}: {name} must lie in [0, 1]"]
    keys = {(m.sweep, m.cell.key) for m in members}
    unknown = [(s, c) for s, c in zip(frame.sweep, frame.cell, strict=True) if (s, c) not in keys]
    if unknown:
        return [f"{path}: sweep {unknown[0][0][:40]!r}, cell {unknown[0][1][:80]!r} is not a member of the grid's "
                "members (a bundle's config, or --members)"]
    twice = frame.duplicated(["sweep", "cell", "K", "seed"])
    if twice.any():
        i = int(np.flatnonzero(twice.to_numpy())[0])
        return [f"{path}: row {i + 2} repeats sweep, cell, K and seed of an earlier row ({int(twice.sum())} "
                "repeated rows): each run's K is one row"]
    absent = sorted({m.cell.key for m in members} - set(frame.cell))
    if absent:
        return [f"{path}: no rows for cell {absent[0][:80]} of the grid's members (a bundle's config, or --members)"]
    return []


def bound_problems(path: Path, required: Sequence[str], what: str) -> list[str]:
    """What keeps ``path`` from being the bound's ``what`` table (``required`` columns, numeric but the
    cell, seeds whole numbers, no row twice)."""
    frame, problems = read_table(path, what)
    if frame is None:
        return problems
    missing = [c for c in required if c not in frame]
    if missing:
        return [f"{path}: columns {missing} missing (not the {what} `bladefl bound` writes)"]
    for column in required:
        if column == "cell":
            continue
        values = _numbers(frame, column)
        if (values.isna() & ~frame[column].isin(["", "nan", "NaN"])).any():
            return [f"{path}: {column} must be numbers"]
        if column in ("seed", "K") and not all(math.isfinite(v) and v == int(v) and v >= 0 for v in values):
            return [f"{path}: {column} must be whole numbers >= 0"]
    keys = [c for c in ("cell", "seed", "K") if c in required]
    if frame.duplicated(keys).any():
        return [f"{path}: a row repeats {', '.join(keys)} of an earlier row"]
    return []


__all__ = ["CONSTANTS", "GAPS", "STATUSES", "bound_problems", "read_table", "summary_problems"]
