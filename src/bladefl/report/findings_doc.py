"""docs/findings.md, computed: what the kept bundles' verdict tables say, the headline bundle in full and
each other beside it, as a Markdown page (the front page's findings box without the HTML). Every number comes from the
bundle's own tables, checked against its manifest first; a test regenerates the page and compares,
so the page never drifts from the tables it summarises (`bladefl findings`)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from bladefl.data.datasets import registry_order
from bladefl.report.bundle_read import check_verdicts, checked_about
from bladefl.report.bundle_read import md as _md
from bladefl.report.findings import BASES, LABELS
from bladefl.report.front_page import _names, _replication, accuracy_line, changed, counted, dataset_title
from bladefl.report.inputs import read_csv
from bladefl.report.verdict_rows import refuted_by

HEADER = ("# What the kept grids find\n\n"
          "Commands here run in the project's environment: after `make`, `source .venv/bin/activate`. "
          "Computed from the kept bundles' verdict and comparison tables by `bladefl findings` (do not edit: "
          "`tests/test_findings_doc.py` regenerates this page and compares). Each statement of the paper counts "
          "once per dataset; its other readings are judged beside it and are on the report's pages. The verdicts' "
          "meaning: [docs/workflow.md](workflow.md#verdicts); the words: [docs/glossary.md](glossary.md).\n")


def _bullets(by: dict[str, dict[str, pd.Series]], datasets: Sequence[str], verdicts: Sequence[str]) -> list[str]:
    lines = []
    for rows in by.values():
        hit = [d for d in datasets if d in rows and rows[d].verdict in verdicts]
        if not hit:
            continue
        first = rows[hit[0]]
        verdict = "" if first.verdict in ("reproduced", "refuted") else f", {first.verdict}"
        found = "; ".join(f"{dataset_title(d)}: " + (f"{decided}: " if (decided := refuted_by(rows[d])) else "")
                          + _md(rows[d].finding) for d in hit if isinstance(rows[d].finding, str) and rows[d].finding)
        lines.append(f"- **{_md(first.claim)}** ({', '.join(dataset_title(d) for d in hit)}{verdict})"
                     + (f": {found}" if found else ""))
    return lines


def _read_bundle(bundle: Path) -> tuple[dict, pd.DataFrame, dict[str, pd.DataFrame], list[str]]:
    """A kept bundle's manifest ``about`` (its rejudge records and runs checked), verdict table,
    paper comparisons and the opening lines of its section (name, runs and units, who derived the
    verdicts, the tally)."""
    from bladefl.report.inputs import VERDICT_COLUMNS
    from bladefl.report.pages import verdict_tally

    about = checked_about(bundle)
    rejudged = about.get("rejudged") or []
    if not (isinstance(rejudged, list) and all(isinstance(r, dict) and all(
            isinstance(r.get(k), str) and len(r[k]) < 100 for k in ("code_version", "date")) for r in rejudged)):
        raise ValueError(f"{bundle}: the manifest's about.rejudged is not a list of {{code_version, date}} records")
    if not (isinstance(about.get("runs", 0), int) and not isinstance(about.get("runs", 0), bool)):
        raise ValueError(f"{bundle}: the manifest's about.runs is not a whole number")
    results = bundle / "results"
    first = sorted((results / "verdicts").glob("*.csv"), key=lambda p: registry_order(p.stem))
    table = pd.concat([check_verdicts(read_csv(p, VERDICT_COLUMNS), p) for p in first], ignore_index=True)
    comparisons = {p.name.removesuffix("_paper_comparison.csv"): read_csv(p) for p in
                   sorted((results / "tables").glob("*_paper_comparison.csv"))}
    judged = (rejudged or [{}])[-1]
    by_code = (f", verdicts derived by code {_md(judged['code_version'])} on {_md(judged['date'])}" if judged
               else "")
    lines = [f"## `{bundle.as_posix()}`\n", f"{about.get('runs', '?')} runs; the units: {_replication(table)}"
             f"{by_code}.\n", f"**Tally.** {_md(verdict_tally(table))}.\n"]
    return about, table, comparisons, lines


def bundle_section(bundle: Path) -> str:
    """One bundle's findings: its replication, who derived the verdicts, the tally, per basis and
    verdict a bullet per statement with each dataset's finding, the paper's errors, the accuracy."""
    return _full_section(*_read_bundle(bundle)[1:])


def _full_section(table: pd.DataFrame, comparisons: dict[str, pd.DataFrame], lines: list[str]) -> str:
    datasets = list(dict.fromkeys(table.dataset))
    rows = counted(table)
    for basis, title in BASES:
        by = _names(rows[(rows.basis == basis) & (rows.verdict != "paper error")], datasets)
        if not by:
            continue
        lines.append(f"### {title}\n")
        for label, verdicts in LABELS:
            bullets = _bullets(by, datasets, verdicts)
            if bullets:
                lines += [f"**{label}**\n", *bullets, ""]
    errors = _names(rows[rows.verdict == "paper error"], datasets)
    if errors:
        lines += ["### The paper's own errors\n", *_bullets(errors, datasets, ("paper error",)), ""]
    ambiguous = _names(rows[rows.verdict == "ambiguous"], datasets)
    if ambiguous:
        lines += ["### The paper's own ambiguities (both readings judged, neither called an error)\n",
                  *_bullets(ambiguous, datasets, ("ambiguous",)), ""]
    accuracy = html.unescape(accuracy_line(comparisons))
    if accuracy:
        lines.append(f"**Best accuracy**: {_md(accuracy)}\n")
    return "\n".join(lines)


def beside_section(bundle: Path, headline: Path, head: pd.DataFrame) -> str:
    """Another bundle beside the headline (``head``: its verdict table): its replication and tally, then
    each counted statement whose verdict differs from the headline's on a dataset, with this bundle's
    finding (the whole comparison, every reading and table row: ``bladefl diff``)."""
    _, table, comparisons, lines = _read_bundle(bundle)
    differ = changed(table, head)
    lines.append(f"**Beside `{headline.as_posix()}`**: {len(differ)} of {len(counted(table))} counted verdicts "
                 "differ" + (":\n" if len(differ) else ".\n"))
    lines += [f"- **{_md(r.claim)}** ({dataset_title(r.dataset)}): {r.verdict} here, {r.theirs} there"
              + (f"; {_md(r.finding)}" if isinstance(r.finding, str) and r.finding else "")
              for r in differ.itertuples()]
    accuracy = html.unescape(accuracy_line(comparisons))
    if accuracy:
        lines += ["", f"**Best accuracy**: {_md(accuracy)}\n"]
    return "\n".join(lines) + "\n"


def calibration_outcomes(bundle: str | Path) -> list[dict]:
    """A kept calibration bundle's outcome per dataset, the bundle checked against its manifest first and each
    outcome read as hostile (:func:`bladefl.report.index_inputs.read_outcomes`)."""
    from bladefl.report.index_inputs import read_outcomes

    folder = Path(bundle)
    checked_about(folder)
    paths = sorted((folder / "results" / "calibration").glob("*/outcome.json"),
                   key=lambda p: registry_order(p.parent.name))
    return [dict(o) for o in read_outcomes(paths)]


def findings_markdown(bundles: Sequence[str | Path], calibration: str | Path | None = None) -> str:
    """docs/findings.md for ``bundles`` (each a kept bundle folder): first, where another bundle ran the
    headline's design under another engine, every claim under both readings (what holds under both first,
    :func:`bladefl.report.readings_beside.markdown`); then the first, the headline, in full (read and checked
    once); each other one by its tally and the verdicts that differ from the headline's. ``calibration``: a
    kept calibration bundle whose outcomes say which setting moves a distance that stays far from the paper."""
    from bladefl.experiments.plan import config_files
    from bladefl.report import readings_beside as rb
    from bladefl.report.distance import targets_of

    first, *others = [Path(b) for b in bundles]
    _, head, comparisons, lines = _read_bundle(first)
    paired = rb.beside(config_files.read_configs([first / "config.yaml"], default=None), [str(b) for b in others],
                       first)
    outcomes = calibration_outcomes(calibration) if calibration is not None else []
    both = ([rb.markdown([rb.read_reading(first), *map(rb.read_reading, paired)], targets_of(outcomes), outcomes)]
            if paired else [])
    sections = [*both, _full_section(head, comparisons, lines), *(beside_section(b, first, head) for b in others)]
    return "\n".join([HEADER, *sections]).rstrip("\n") + "\n"


__all__ = ["check_verdicts", "checked_about", "findings_markdown", "bundle_section", "beside_section"]
