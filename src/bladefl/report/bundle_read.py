"""A kept bundle read as hostile, for every page and document that shows one: its manifest checked against its
files before a word of it is read, its verdict tables held to the vocabulary, and text from it made plain for
a Markdown line. The modules that read bundles (findings_doc, summary_doc, bundle_diff, readings_beside,
index_inputs) share these and import nothing of each other for them."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from bladefl.data.datasets import SPECS
from bladefl.report.inputs import VERDICT_COLUMNS, read_csv

MAX_ROWS = 5000  # a verdict table holds a few hundred rows per dataset


def md(text: object) -> str:
    """Plain text for a Markdown line, whatever it holds: control characters as escapes (no terminal escape
    sequence), HTML escaped (no tag, no script), brackets and
    parentheses escaped (no link, no javascript: target), asterisks (K*) and underscores kept literal,
    a leading ``=``, ``+`` or ``@`` escaped (no spreadsheet formula), one line."""
    flat = " ".join(str(text).split())
    # a control character (a terminal's escape sequence, U+2028) written as its escape, never raw
    flat = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in flat)
    plain = html.escape(flat, quote=False)
    for c in "\\*_[]`":
        plain = plain.replace(c, "\\" + c)
    return "\\" + plain if plain.startswith(("=", "+", "@")) else plain  # no formula when pasted into a sheet


def check_verdicts(table: pd.DataFrame, path: object) -> pd.DataFrame:
    """A kept bundle's verdict table held to what the workflow writes before a word of it is printed:
    at most :data:`MAX_ROWS` rows, every verdict a verdict of the vocabulary, every dataset one of the
    workflow's, the texts strings; ValueError naming the file and the first problem."""
    from bladefl.experiments.verdicts.vocabulary import VERDICTS

    if len(table) > MAX_ROWS:
        raise ValueError(f"{path}: {len(table)} rows, more than a verdict table holds ({MAX_ROWS})")
    wrong = table[~table.verdict.isin(VERDICTS)]
    if len(wrong):
        raise ValueError(f"{path}: verdict {str(wrong.verdict.iloc[0])[:40]!r} is not one of {list(VERDICTS)}")
    if not table.dataset.isin(list(SPECS)).all():
        raise ValueError(f"{path}: a dataset other than the registry's {sorted(SPECS)}")
    return table


def checked_about(bundle: Path) -> dict:
    """A kept bundle's manifest ``about``, once the bundle matches its manifest (hostile until checked):
    ValueError naming the bundle and its first problem otherwise."""
    from bladefl.experiments.bundles import kept_results

    found = kept_results.problems(bundle)
    if found:
        raise ValueError(f"{bundle}: {found[0]}")
    about = kept_results.read_manifest(bundle).get("about", {})
    if not isinstance(about, dict):
        raise ValueError(f"{bundle}: the manifest's about is not a mapping")
    return about


def read_verdicts(paths: Sequence[str | Path]) -> pd.DataFrame:
    """The verdict tables (``results/verdicts/<dataset>.csv``) as one, each read as hostile, with the
    columns an older table lacks filled in."""
    table = pd.concat([read_csv(p, VERDICT_COLUMNS) for p in paths], ignore_index=True)
    for column in ("statement", "role", "decided_by", "finding", "quote", "page", "replication"):
        if column not in table:
            table[column] = table.claim if column == "statement" else ""
    return table



__all__ = ["MAX_ROWS", "check_verdicts", "checked_about", "md", "read_verdicts"]
