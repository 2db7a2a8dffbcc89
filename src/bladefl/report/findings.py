"""The front page's findings box: what the paper's statements came to, by what decided each (the runs
first, then the bound fitted to them, then the bound's formula as mathematics, folded so no reader takes
it for the runs), a bullet per statement with its datasets, what the data show and, where it differs
from the paper, the likely reason (the inventory's ``if_differs``)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import pandas as pd

from bladefl.report.front_page import (
    COLOURS,
    FOLD_AFTER,
    UNSETTLED,
    _has,
    _names,
    _replication,
    _short,
    accuracy_line,
    counted,
    dataset_title,
)
from bladefl.report.verdict_rows import refuted_by

LABELS = (("Reproduced", ("reproduced",)), ("Refuted", ("refuted",)), ("Not settled", UNSETTLED))  # findings' groups
BASES = (("experiment", "On the runs"), ("bound", "On the bound fitted to the runs"),
         ("mathematics", "The bound's formula, over the valid settings of its constants (algebra, no runs)"))


def _reason(statement: str) -> str:
    """The likely reason a statement is not borne out (the inventory's ``if_differs``), or ""."""
    from bladefl.report.paper_figures import inventory

    s = inventory().get(statement)
    return s.if_differs if s is not None and s.if_differs else ""


def _items(by: Mapping[str, Mapping[str, pd.Series]], hits: Sequence[str], datasets: Sequence[str],
           verdicts: Sequence[str], reason: bool) -> str:
    """One bullet per statement: its name, the datasets where it has this verdict, what the data show,
    and (``reason``) the likely reason it differs from the paper."""
    lines = []
    for s in hits:
        tagged = [d for d in datasets if _has(by[s], d, verdicts)]
        first = by[s][tagged[0]]
        found = [(d, by[s][d].finding) for d in tagged if isinstance(by[s][d].finding, str) and by[s][d].finding]
        # each dataset's own numbers where the item names two; a refutation says what decided it
        shown = [html.escape((f"{dataset_title(d)}: " if len(found) > 1 else "")
                             + (f"{decided}: " if (decided := refuted_by(by[s][d])) else "") + _short(f, 110))
                 for d, f in found]
        if reason and (why := _reason(s)):
            shown.append(f"<i>likely: {html.escape(_short(why, 110))}</i>")
        where = ", ".join(dataset_title(d) for d in tagged)
        aside = where + (f", {first.verdict}" if first.verdict not in ("reproduced", "refuted") else "")
        said = f" — {'; '.join(shown)}" if shown else ""
        lines.append(f"<li><b>{html.escape(str(first.claim))}</b> <span class='muted'>({html.escape(aside)})"
                     f"</span>{said}</li>")
    return "<ul class='small' style='margin:.1em 0'>" + "".join(lines) + "</ul>"


def findings(table: pd.DataFrame, comparisons: Mapping[str, pd.DataFrame] | None = None) -> str:
    """The findings block, by what decided each statement (the runs first, then the bound fitted to
    them, then the formula as mathematics, folded): per verdict its count per dataset and a bullet per
    statement with its datasets, what the data show and, where it differs from the paper, the likely
    reason; the paper's own errors; the best accuracy beside the paper's."""
    rows = counted(table)
    datasets = list(dict.fromkeys(table.dataset))
    parts = [f"<p>{_lead(table, rows, datasets)}</p>"]
    for basis, title in BASES:
        by = _names(rows[(rows.basis == basis) & (rows.verdict != "paper error")], datasets)
        if not by:
            continue
        blocks = []
        for label, verdicts in LABELS:
            hits = [s for s in by if any(by[s][d].verdict in verdicts for d in by[s])]
            if not hits:
                continue
            counts = " · ".join(f"{dataset_title(d)} {sum(_has(by[s], d, verdicts) for s in hits)}" for d in datasets)
            colour = COLOURS["reproduced" if label == "Reproduced" else "refuted" if label == "Refuted"
                             else "inconclusive"]
            head = (f"<span class='v' style='background:{colour}'>{label}</span> "
                    f"<span class='muted small'>({counts})</span>")
            listed = _items(by, hits, datasets, verdicts, reason=label != "Reproduced")
            # the long, agreeing lists and what is not settled folded under their count; what the runs refute shown
            if label != "Refuted" or len(hits) > FOLD_AFTER:
                blocks.append(f"<details><summary>{head}: {len(hits)} statements</summary>{listed}</details>")
            else:
                blocks.append(f"<div>{head}:{listed}</div>")
        body = "".join(blocks)
        per = " · ".join(f"{dataset_title(d)} {sum(d in by[s] for s in by)}" for d in datasets)
        if basis == "mathematics":  # not about the runs: folded whole, so no reader takes it for them
            parts.append(f"<details><summary><b>{title}</b>: {per} statements</summary>{body}</details>")
        else:
            parts.append(f"<p style='margin:.5em 0 .1em'><b>{title}</b> ({per} statements)</p>{body}")
    errors = _names(rows[rows.verdict == "paper error"], datasets)
    if errors:
        items = "; ".join(html.escape(str(next(iter(v.values())).claim)) for v in errors.values())
        parts.append(f"<details><summary><span class='v' style='background:{COLOURS['paper error']}'>The paper's own "
                     f"errors</span> <span class='muted small'>({len(errors)})</span></summary>"
                     f"<p class='small'>{items}.</p></details>")
    ambiguous = _names(rows[rows.verdict == "ambiguous"], datasets)
    if ambiguous:
        first = [next(iter(v.values())) for v in ambiguous.values()]
        items = "".join(f"<li><b>{html.escape(str(r.claim))}</b>: {html.escape(_short(r.decided_by, 400))}</li>"
                        for r in first)
        parts.append(f"<details><summary><span class='v' style='background:{COLOURS['ambiguous']}'>Ambiguities of the "
                     f"paper's own</span> <span class='muted small'>({len(ambiguous)}: both readings judged, neither "
                     f"called an error)</span></summary><ul class='small'>{items}</ul></details>")
    gap = accuracy_line(comparisons or {})
    if gap:
        parts.append(f"<p><b>Best accuracy</b>: {gap}</p>")
    return "<div class='findings'>" + "\n".join(parts) + "</div>"


def _lead(table: pd.DataFrame, rows: pd.DataFrame, datasets: Sequence[str]) -> str:
    one = rows[rows.dataset == datasets[0]] if len(datasets) else rows
    one = one[~one.verdict.isin(["paper error", "ambiguous"])]
    names = {"experiment": "on the runs", "bound": "on the bound fitted to the runs",
             "mathematics": "on the bound's formula as mathematics"}
    kinds = [f"{int((one.basis == b).sum())} {names[b]}" for b in names if (one.basis == b).any()]
    replication = _replication(table)
    over = f"; the runs: {html.escape(replication)}" if replication else ""
    return (f"<b>{len(one)} statements</b> of the paper judged on {' and '.join(dataset_title(d) for d in datasets)}: "
            f"{', '.join(kinds)}{over}. Each is counted once (other readings are judged beside it, not counted).")


__all__ = ["BASES", "LABELS", "findings"]
