"""Tables as files: CSV for machines, Markdown for the pages."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from bladefl.core import atomic


def escape(text: object) -> str:
    """Text as a Markdown table cell: pipes, emphasis markers and backslashes escaped."""
    out = str(text)
    for ch in ("\\", "|", "*", "_", "`"):
        out = out.replace(ch, "\\" + ch)
    return out


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as the start of a formula


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A table others' text reaches, for a CSV people open in a spreadsheet: a text cell that a
    spreadsheet would read as a formula (``=HYPERLINK(...)``, ``+1``, ``@x``) gets a leading
    apostrophe, as spreadsheets themselves mark text; numbers and other text unchanged."""
    def safe(v: object) -> object:
        return "'" + v if isinstance(v, str) and v.startswith(FORMULA_START) else v

    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or pd.api.types.is_string_dtype(out[column]):
            out[column] = out[column].map(safe)
    return out


ZERO = 1e-12  # a float this close to 0 is printed as 0 (round-off, e.g. a gap of 6.7e-19, is not a number to read)


def markdown(frame: pd.DataFrame, digits: int = 4) -> str:
    def cell(v: object) -> str:
        if isinstance(v, float):
            if math.isnan(v):
                return ""
            return "0" if abs(v) < ZERO else f"{v:.{digits}g}"
        return escape(v)

    head = "| " + " | ".join(escape(c) for c in frame.columns) + " |"
    # text left, numbers right (a rendered notebook right-aligns every cell otherwise)
    rule = "| " + " | ".join("---:" if pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(
        frame[c]) else ":---" for c in frame.columns) + " |"
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join([head, rule, *body]) + "\n"


def plus_minus(means: pd.Series, sds: pd.Series, fmt: str, sd_fmt: str | None = None,
               missing: str = "n/a") -> list[str]:
    """Cells "mean +- sd" (``fmt`` for the mean, ``sd_fmt`` for the sd, default the same);
    ``missing`` where the mean is NaN."""
    sd_fmt = sd_fmt or fmt
    return [missing if m != m else f"{m:{fmt}} +- {s:{sd_fmt}}" for m, s in zip(means, sds, strict=True)]


def run_span(numbers: Sequence[int]) -> tuple[int, int] | None:
    """The first and last of more than two consecutive integers in order (None otherwise): what a page
    writes as a range (seeds 0-19, Tables II-VII)."""
    values = list(numbers)
    if len(values) > 2 and values == list(range(values[0], values[0] + len(values))):
        return values[0], values[-1]
    return None


def write_table(frame: pd.DataFrame, name: str, folder: str | Path) -> list[Path]:
    """``<folder>/<name>.csv`` and ``.md`` (the folder re-checked for links at each write)."""
    folder = Path(folder)
    atomic.write_csv(atomic.plain_folder(folder) / f"{name}.csv", frame)
    atomic.write_text(atomic.plain_folder(folder) / f"{name}.md", markdown(frame))
    return [folder / f"{name}.csv", folder / f"{name}.md"]


__all__ = ["markdown", "run_span", "write_table"]
