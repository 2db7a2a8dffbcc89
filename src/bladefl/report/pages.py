"""The report's front pages: the verdicts' (tally, headline figure, provenance line, links grouped by
dataset), the sensitivity study's and the calibration's. A notebook's own page: report.page_html."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from bladefl.core import atomic
from bladefl.experiments.runs import provenance as provenance_module
from bladefl.report.distance import convention_line, distance_section
from bladefl.report.findings import findings
from bladefl.report.inputs import read_csv, read_json
from bladefl.report.page_html import NOTEBOOK_TITLES, dataset_title, href
from bladefl.report.paper_figures import figure_section, headline_caption, inventory
from bladefl.report.verdict_rows import role

VERDICT_COLOURS = {"reproduced": "#dfd", "refuted": "#fdd", "inconclusive": "#ffd", "too few runs": "#eee",
                   "single seed": "#eee", "not applicable": "#dde8f5", "vacuous": "#eee", "paper error": "#f3e0f7",
                   "ambiguous": "#f5ecdc"}


def verdict_tally(table: pd.DataFrame) -> str:
    """Per dataset, the statements counted once each, by what they were judged on (experiment,
    bound, mathematics), and the paper's own errors apart (derived rows and other readings not
    counted)."""
    counted = table[[role(r) in ("claim", "paper error") for r in table.itertuples()]]
    parts = []
    for d, part in counted.groupby("dataset", sort=False):
        basis = []
        for name in ("experiment", "bound", "mathematics"):
            rows = part[(part.basis == name) & ~part.verdict.isin(["paper error", "ambiguous"])]
            if len(rows):
                counts = rows.verdict.value_counts()
                shown = ", ".join(f"{int(counts[v])} {v}" for v in VERDICT_COLOURS if counts.get(v, 0))
                basis.append(f"{name} {len(rows)} statements ({shown})")
        errors = int((part.verdict == "paper error").sum())
        if errors:
            basis.append(f"{errors} errors of the paper's own")
        ambiguous = int((part.verdict == "ambiguous").sum())
        if ambiguous:
            basis.append(f"{ambiguous} ambiguit{'y' if ambiguous == 1 else 'ies'} of the paper's own (both readings "
                         "judged)")
        parts.append(f"{dataset_title(d)}: " + "; ".join(basis))
    return ". ".join(parts)


def _links(path: Path, pages: Sequence[str | Path]) -> str:
    """One line per dataset: its pages, named short, in the notebooks' order."""
    groups: dict[str, list[Path]] = {}
    for p in map(Path, pages):
        groups.setdefault(p.parent.name, []).append(p)
    lines = []
    for dataset, members in groups.items():
        items = " · ".join(f"<a href='{html.escape(href(p, path.parent))}'>"
                           f"{html.escape(NOTEBOOK_TITLES.get(p.stem, p.stem).split(':')[0])}</a>"
                           for p in sorted(members, key=lambda p: p.stem))
        lines.append(f"<b>{html.escape(dataset_title(dataset))}</b>: {items}")
    return "<p class='links'>" + "<br>".join(lines) + "</p>"


def _write_front_page(path: Path, title: str, provenance: str, body: str, pages: Sequence[str | Path],
                      style: str = "") -> Path:
    """A front page: title, provenance line, ``body`` (HTML), then the links to ``pages`` by dataset."""
    from bladefl.report.front_page import PAPER_LINE, STYLE, footer

    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{style or STYLE}</style>
</head><body><h1>{html.escape(title)}</h1>
{PAPER_LINE}
<p class="prov">{html.escape(provenance)}</p>
{body}
<h2>Pages</h2>
{_links(path, pages)}
{footer()}
</body></html>
"""
    atomic.write_text(path, page)
    return path


def write_index(path: str | Path, table: pd.DataFrame, pages: Sequence[str | Path],
                headline_png: str | Path | None = None, provenance: str = "",
                title: str = "BLADE-FL reproduction report", comparisons: Mapping[str, pd.DataFrame] | None = None,
                runs_per_point: int | None = None, sensitivity: str | Path | None = None,
                summaries: Mapping[str, pd.DataFrame] | None = None, outcomes: Sequence[Mapping] = (),
                calibration_page: str | Path | None = None, engine: str | None = None,
                paper_tables: Sequence[Mapping] = (), beside: Sequence[Any] = ()) -> Path:
    """The report's front page (:mod:`bladefl.report.front_page`): a banner where the design judges
    little, the findings, the pages, every statement with each dataset's verdict (``table``:
    :func:`bladefl.report.bundle_read.read_verdicts`), the headline figure, the accuracy beside the
    paper's, the runs that diverged; ``outcomes``: :func:`bladefl.report.index_inputs.read_outcomes`;
    ``beside``: kept bundles of the same design under another reading
    (:func:`bladefl.report.readings_beside.read_reading`), each claim's verdict and each table's distance
    under them shown beside this report's."""
    from bladefl.report import bundle_design, readings_beside
    from bladefl.report import front_page as fp

    path = Path(path)
    study = href(sensitivity, path.parent) if sensitivity and Path(sensitivity).exists() else None
    figure = figure_section(headline_png, headline_caption(summaries or {})) if summaries else ""
    link = (href(calibration_page, path.parent)
            if calibration_page and Path(calibration_page).is_file() else None)
    design = bundle_design.design_of_runs(summaries or {})
    readings = [readings_beside.Reading(engine or "paper", "", table, summaries or {}, comparisons or {}), *beside]
    distance = distance_section(readings, outcomes, link, study, engine, design)
    if distance and (conventions := convention_line(summaries or {}, paper_tables, f"{readings[0].label}, {design}")):
        distance += f"<details class='small'><summary>K* read from other curves of the same runs</summary>{conventions}"
        distance += "</details>"
    words = provenance_module.project_root() / "docs" / "glossary.md"
    glossary = (f"<p class='small'>The statistics' words (Page test, FDR, equivalence margin, draw, unit, too few "
                f"runs, witness): <a href='{html.escape(href(words, path.parent))}'>the glossary</a>.</p>"
                if words.is_file() else "")
    datasets_run = sorted(set(table["dataset"].astype(str))) if "dataset" in table else None
    engine_line = bundle_design.engine_reading(engine, datasets_run or ()) if engine else ""
    basis = fp.basis_line(design, engine_line, sensitivity_link(path))
    body = f"""{fp.banner(table)}{basis}<h2>Findings</h2>
{findings(table, comparisons)}
{readings_beside.section(readings)}
{distance}
<h2>Pages</h2>
{_links(path, pages)}
<h2>Every statement of the paper, judged once</h2>
<p class='small'><strong>{html.escape(verdict_tally(table))}.</strong></p>
{fp.LEGEND}
{glossary}
{fp.statement_table(table, comparisons, {r.label: r.verdicts for r in beside})}
{fp.unjudged_section(inventory().statements, datasets_run)}
{_diverged_section(summaries or {})}
{figure}"""
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{fp.STYLE}</style>
</head><body><h1>{html.escape(title)}</h1>
{fp.PAPER_LINE}
<p class="prov">{html.escape(provenance)}</p>
{body}
{fp.footer()}
</body></html>
"""
    atomic.write_text(path, page)
    return path


def sensitivity_link(page: Path) -> str:
    """The sensitivity study's page (docs/sensitivity.md) relative to ``page``, "" where it is absent."""
    doc = provenance_module.project_root() / "docs" / "sensitivity.md"
    return href(doc, page.parent) if doc.is_file() else ""


def diverged_counts(summaries: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per dataset: the (cell, seed, K) that trained, and of them those that diverged (a non-finite
    loss or accuracy)."""
    rows = []
    for dataset, table in summaries.items():
        trained = table[table.status != "infeasible"].drop_duplicates(["cell", "seed", "K"])
        diverged = trained[trained.status == "diverged"]
        rows.append({"dataset": dataset, "trained": len(trained), "diverged": len(diverged),
                     "cells": ", ".join(sorted(diverged.cell.unique())[:3])})
    return pd.DataFrame(rows, columns=["dataset", "trained", "diverged", "cells"])


def _diverged_section(summaries: Mapping[str, pd.DataFrame]) -> str:
    counts = diverged_counts(summaries)
    counts = counts[counts.diverged > 0]
    if counts.empty:
        return ""
    items = "".join(f"<li>{html.escape(dataset_title(r.dataset))}: {r.diverged} of {r.trained} (cell, seed, K) "
                    f"(e.g. <code>{html.escape(r.cells)}</code>)</li>" for r in counts.itertuples())
    return (f"<h2>Runs that diverged</h2>\n<p>A loss or accuracy that went non-finite (an overflow) marks its K "
            f"<em>diverged</em>: it counts as no result, left out of K* and of every verdict as an infeasible K "
            f"is (status <code>diverged</code> in the summary tables).</p>\n<ul>{items}</ul>")


def headline_panels(summaries: Mapping[str, pd.DataFrame], comparisons: Mapping[str, pd.DataFrame],
                    max_sweeps: int = 3) -> list[dict]:
    """Per dataset, the first ``max_sweeps`` of the paper's tables that the grid ran, with our
    curves and the paper's (K*, maximal accuracy) per swept value (from the paper-comparison
    table), for :func:`plots.headline_figure`; a dataset whose grid ran none of them (no paper table
    of it) shows its own first sweeps, with no paper point."""
    from bladefl.report.paper_figures import figure_of
    from bladefl.report.views import sweep_units

    panels = []
    for dataset, summary in summaries.items():
        comparison = comparisons[dataset]
        ran = comparison[comparison.parameter.isin(set(summary.sweep))]
        tables = {t: ran[ran.table == t] for t in list(dict.fromkeys(ran.table))[:max_sweeps]}
        # a grid with none of the paper's table sweeps (Cifar-10's epsilon sweep): its own sweeps, no paper point
        chosen = ({str(rows.parameter.iloc[0]): rows for rows in tables.values()} if tables else
                  {str(sw): ran.iloc[:0] for sw in list(dict.fromkeys(summary.sweep))[:max_sweeps]})
        for sweep, rows in chosen.items():
            vary = summary[summary.sweep == sweep].vary.iloc[0]
            figure = figure_of(str(vary), dataset)
            panels.append({
                "dataset": dataset_title(dataset), "sweep": sweep, "figure": figure.number if figure else None,
                "vary": vary,
                "units": sweep_units(summary, sweep),
                "paper": [{"value": r.value, "paper_K_star": r.paper_K_star, "paper_max_accuracy": r.paper_max_accuracy}
                          for r in rows.itertuples()],
            })
    return panels


def write_sensitivity_index(path: str | Path, rankings: Sequence[str | Path], pages: Sequence[str | Path],
                            provenance: str = "") -> Path:
    """The sensitivity study's front page: per dataset, the readings ranked by their distance to
    the paper, and links to the pages."""
    path = Path(path)
    sections = []
    for ranking in rankings:
        table = read_csv(ranking, ["reading", "axis", "dataset", "rank", "K_star_distance", "accuracy_distance"])
        rows = "\n".join(
            f"<tr><td>{int(r['rank'])}</td><td>{html.escape(str(r['reading']))}</td>"
            f"<td>{html.escape(str(r['axis']))}</td><td>{r['K_star_distance']:g} "
            f"({r['K_star_distance_seeds']:.1f} &plusmn; {r['K_star_distance_sd']:.1f})</td>"
            f"<td>{r['accuracy_distance']:.1f} ({r['accuracy_distance_seeds']:.1f} &plusmn; "
            f"{r['accuracy_distance_sd']:.1f})</td><td>{r['max_accuracy']:.1f}</td></tr>" for _, r in table.iterrows())
        sections.append(f"<h2>{html.escape(dataset_title(table.dataset.iloc[0]))}</h2>\n<table><tr><th>rank</th>"
                        f"<th>reading</th><th>axis</th><th>K* distance (per seed: mean &plusmn; sd)</th>"
                        f"<th>accuracy distance, points (per seed)</th><th>best accuracy %</th></tr>\n{rows}\n</table>")
    title = "BLADE-FL sensitivity study: readings of what the paper does not say"
    body = f"""<p>Each reading runs the same grid under one choice the paper leaves open. The distance to the paper
sums, over the rows of the paper's tables the grid covers, |K* &minus; K*<sub>paper</sub>| and |maximal
accuracy &minus; the paper's| (in points), from the seed-mean curves and, in brackets, per seed (mean
&plusmn; standard deviation). Readings are ranked by the K* distance, then the accuracy distance.</p>
{''.join(sections)}"""
    return _write_front_page(path, title, provenance, body, pages)


def write_calibration_index(path: str | Path, outcomes: Sequence[str | Path], pages: Sequence[str | Path],
                            provenance: str = "") -> Path:
    """The calibration study's front page: per dataset, what it found (computed from its outcome),
    and links to the pages."""
    from bladefl.report.calibration import outcome_sentence
    from bladefl.report.calibration_outcome import check_outcome

    path = Path(path)
    found = [check_outcome(read_json(p), p) for p in outcomes]
    sections = "".join(f"<h2>{html.escape(dataset_title(o['dataset']))}</h2>\n<p>"
                       f"{html.escape(outcome_sentence(o, dataset_title(o['dataset'])))}</p>\n" for o in found)
    title = "BLADE-FL calibration study: the paper's unstated settings searched jointly"
    body = f"""<p>The settings the paper leaves unstated are searched together (Optuna, two objectives kept
apart: the mean distance to the paper's K* and to its maximal accuracy per table row of Tables II-VII) for the
reading that comes closest to its tables: every trial on the screen, the best of them on every row, each
scored point on its draws over every feasible K; the picked points form the second pass
(docs/calibration.md).</p>
{sections}"""
    return _write_front_page(path, title, provenance, body, pages)


__all__ = ["write_calibration_index", "write_index", "write_sensitivity_index", "headline_panels", "verdict_tally"]
