"""The same design judged under more than one reading of what the paper leaves unsaid: the report's own
runs and the kept bundles of the same grid under another engine (``readings_beside``: the paper engine's
10-draw bundle beside the calibrated one), each judged on its own runs. Per counted statement, the
verdict under each reading and whether it depends on the reading; per paper table, each reading's
distance to the paper with its interval (:mod:`bladefl.experiments.tables.paper_distance`).

A kept bundle is read as hostile: its files against its manifest, its verdict table against the
vocabulary, its tables with their columns, before a word of it is shown."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bladefl.data.datasets import registry_order
from bladefl.report.front_page import counted, dataset_title

# The keys that make a design: two configs equal on these ran the same grid on the same units (only the
# engine and the folders may differ).
ON_RUNS = ("experiment", "bound")  # the bases whose verdicts rest on a reading's runs
DESIGN_KEYS = ("datasets", "seeds", "partition", "t_sum", "base", "sweeps", "detection", "measure_constants",
               "bound_sweep")


@dataclass(frozen=True)
class Reading:
    """One reading's judged runs: its engine, where it comes from (a kept bundle's folder, or "" for the
    report's own runs), its verdict table and, per dataset, its tidy run table and paper comparison."""

    engine: str
    source: str
    verdicts: pd.DataFrame
    summaries: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    comparisons: Mapping[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return engine_label(self.engine)


def engine_label(engine: str) -> str:
    """A reading's short name on the page."""
    return {"paper": "paper engine", "calibrated": "calibrated"}.get(engine, f"engine {engine}")


def design(config: Mapping[str, Any]) -> dict:
    """The part of a workflow config that is its design (:data:`DESIGN_KEYS`)."""
    return {k: config.get(k) for k in DESIGN_KEYS}


def beside(config: Mapping[str, Any], candidates: Sequence[str], own: str | Path | None = None) -> list[str]:
    """The kept bundles among ``candidates`` (config ``readings_beside``) that ran this config's design under
    another engine: present, not ``own`` (the bundle this report renders), their config's design equal to
    this one's. A candidate whose config cannot be read is left out (its report says nothing of it)."""
    from bladefl.experiments.plan import config_files

    out = []
    for folder in candidates:
        path = Path(folder)
        if own is not None and path.resolve() == Path(own).resolve():
            continue
        try:
            theirs = config_files.read_configs([path / "config.yaml"], default=None)
        except (OSError, ValueError):
            continue
        if str(theirs.get("engine", "paper")) != str(config.get("engine", "paper")) and \
                design(theirs) == design(config):
            out.append(str(folder))
    return out


def read_reading(bundle: str | Path) -> Reading:
    """A kept bundle as a :class:`Reading`, read as hostile (ValueError naming the bundle and its first
    problem): its manifest and files, its verdict tables, its summaries and paper comparisons."""
    from bladefl.core import strict_yaml
    from bladefl.report.bundle_read import check_verdicts, checked_about, read_verdicts
    from bladefl.report.inputs import SUMMARY_COLUMNS, read_csv
    from bladefl.report.paper import COMPARISON_COLUMNS

    bundle = Path(bundle)
    checked_about(bundle)
    config = strict_yaml.read_file(bundle / "config.yaml")
    engine = str(config.get("engine", "paper")) if isinstance(config, Mapping) else "paper"
    results = bundle / "results"
    paths = sorted((results / "verdicts").glob("*.csv"), key=lambda p: registry_order(p.stem))
    if not paths:
        raise ValueError(f"{bundle}: no verdict table under results/verdicts")
    verdicts = check_verdicts(read_verdicts(paths), bundle)
    datasets = list(dict.fromkeys(verdicts.dataset))
    return Reading(engine, bundle.as_posix(), verdicts,
                   {d: read_csv(results / "summary" / f"{d}.csv", SUMMARY_COLUMNS) for d in datasets},
                   {d: read_csv(results / "tables" / f"{d}_paper_comparison.csv", COMPARISON_COLUMNS)
                    for d in datasets})


def side_by_side(readings: Sequence[Reading]) -> pd.DataFrame:
    """Per counted statement and dataset (the first reading's), each reading's verdict (column = its label)
    and ``depends``: whether the verdicts differ (a reading that did not judge it counts as no verdict)."""
    first = counted(readings[0].verdicts)
    out = first[["statement", "dataset", "claim", "basis", "role"]].copy()
    for r in readings:
        there = counted(r.verdicts).set_index(["statement", "dataset"]).verdict
        out[r.label] = there.reindex(pd.MultiIndex.from_frame(out[["statement", "dataset"]])).to_numpy()
    labels = [r.label for r in readings]
    out["depends"] = out[labels].nunique(axis=1, dropna=False) > 1
    return out.reset_index(drop=True)


def verdict_lines(frame: pd.DataFrame, labels: Sequence[str]) -> tuple[list[str], list[str]]:
    """What holds under every reading (per verdict, the statements and datasets) and what depends on the
    reading (each statement with every reading's verdict), as plain sentences."""
    same = frame[~frame.depends]
    holds = []
    for verdict, part in same.groupby(labels[0], sort=False):
        named = _named(part)
        holds.append(f"{verdict} under both ({len(part)}): {named}")
    depends = []
    for (_, claim), part in frame[frame.depends].groupby(["statement", "claim"], sort=False):
        per = "; ".join(f"{dataset_title(row['dataset'])} " + " / ".join(f"{lab} {_v(row[lab])}" for lab in labels)
                        for _, row in part.iterrows())
        depends.append(f"{claim}: {per}")
    return holds, depends


def _v(value: object) -> str:
    return "not judged" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _named(part: pd.DataFrame) -> str:
    out = []
    for (_, claim), rows in part.groupby(["statement", "claim"], sort=False):
        datasets = ", ".join(dataset_title(d) for d in rows.dataset)
        out.append(f"{claim} ({datasets})")
    return "; ".join(out)


def section(readings: Sequence[Reading]) -> str:
    """The front page's section: the readings, what holds under both and what depends on the reading, over
    the statements judged on the runs and on the bound fitted to them (the mathematics and the paper's own
    errors do not depend on the runs); "" with one reading. Each reading's distance to the paper is in the
    distance section (:func:`bladefl.report.distance.distance_section`)."""
    if len(readings) < 2:
        return ""
    labels = [r.label for r in readings]
    frame = side_by_side(readings)
    frame = frame[(frame.role == "claim") & frame.basis.isin(ON_RUNS)]
    holds, depends = verdict_lines(frame, labels)
    sources = "; ".join(f"<b>{html.escape(r.label)}</b>: " + (f"<code>{html.escape(r.source)}</code>" if r.source
                                                              else "this report's runs") for r in readings)
    fold = "".join(f"<li>{html.escape(line)}</li>" for line in depends)
    counts = "; ".join(f"{len(part)} {verdict}" for verdict, part in frame[~frame.depends].groupby(labels[0],
                                                                                              sort=False))
    return (f"<h2>Under both readings</h2>\n<p class='small'>The same design run under each reading of what the paper "
            f"leaves unsaid, each judged on its own runs ({sources}). Of {len(frame)} claims judged on the runs or on "
            f"the bound fitted to them (statement and dataset), <b>{int((~frame.depends).sum())} get the same verdict "
            f"under both</b> ({html.escape(counts)}) and {int(frame.depends.sum())} depend on the reading (marked in "
            "the table below).</p>\n<details class='small'><summary>what holds under both</summary><ul>"
            + "".join(f"<li>{html.escape(line)}</li>" for line in holds)
            + f"</ul></details>\n<details class='small'><summary>the {len(depends)} claims whose verdict depends on "
              f"the reading</summary><ul>{fold}</ul></details>\n")


def _md(text: object) -> str:
    from bladefl.report.bundle_read import md

    return md(text)


def markdown(readings: Sequence[Reading], targets: Mapping[str, float], outcomes: Sequence[Mapping] = ()) -> str:
    """docs/findings.md's section for the same design under several readings: what holds under every reading
    first, then every claim judged on the runs with each reading's verdict (those that depend on the reading
    marked), then each reading's distance to the paper per table with its interval."""
    labels = [r.label for r in readings]
    frame = side_by_side(readings)
    frame = frame[(frame.role == "claim") & frame.basis.isin(ON_RUNS)]
    holds, _ = verdict_lines(frame, labels)
    sources = "; ".join(f"{r.label}: `{r.source}`" for r in readings)
    lines = ["## Under both readings\n",
             f"The same design run under each reading of what the paper leaves unsaid, each judged on its own runs "
             f"({sources}). Of {len(frame)} claims judged on the runs or on the bound fitted to them (statement and "
             f"dataset), **{int((~frame.depends).sum())} get the same verdict under both** and "
             f"{int(frame.depends.sum())} depend on the reading.\n",
             *[f"- {_md(line)}" for line in holds], "", *_claims_markdown(frame, labels)]
    return "\n".join(lines + _distances_markdown(readings, targets, outcomes)) + "\n"


def _claims_markdown(frame: pd.DataFrame, labels: Sequence[str]) -> list[str]:
    """Every claim with each reading's verdict, those the same under both first."""
    lines = ["| statement | dataset | " + " | ".join(labels) + " | |",
             "| --- | --- | " + " | ".join("---" for _ in labels) + " | --- |"]
    for _, row in pd.concat([frame[~frame.depends], frame[frame.depends]]).iterrows():
        lines.append(f"| {_md(row['claim'])} | {dataset_title(row['dataset'])} | "
                     + " | ".join(_md(_v(row[lab])) for lab in labels)
                     + f" | {'**depends on the reading**' if row['depends'] else ''} |")
    return lines


def _distances_markdown(readings: Sequence[Reading], targets: Mapping[str, float],
                        outcomes: Sequence[Mapping]) -> list[str]:
    """Each reading's distance per table with its interval, the gaps every reading leaves, Table VII's spread."""
    from bladefl.experiments.tables import paper_distance
    from bladefl.report.distance import distance_grid, distance_tables, gap_lines, gaps, last_row_lines

    table = distance_tables(readings, targets)
    if table[table.scope != "row"].empty:
        return []
    columns, grid = distance_grid(table)
    lines = ["", f"**How far each reading is from the paper** (mean |ours - paper's| per row; in brackets the "
                 f"{paper_distance.LEVEL:.0%} {paper_distance.METHOD}, {paper_distance.RESAMPLES} resamples; in "
                 f"bold where its upper end is within the targets, {targets.get('K_star', math.nan):g} round and "
                 f"{targets.get('accuracy', math.nan):g} points):\n",
             "| table | " + " | ".join(f"{dataset_title(d)}, {r}: K\\*, rounds | accuracy, points" for d, r in columns)
             + " |", "| --- | " + " | ".join("--- | ---" for _ in columns) + " |"]
    lines += [f"| {name or 'every row'} | " + " | ".join(c.replace("<b>", "**").replace("</b>", "**") for c in cells)
              + " |" for name, _, cells in grid]
    if found := gap_lines(gaps(readings, table, outcomes)):
        lines += ["", "**Where every reading stays above the targets**, the change over the table's sweep beside "
                      "the paper's:\n", *[f"- {_md(line)}" for line in found]]
    if spread := last_row_lines(table):
        lines += ["", "**At the paper's largest lazy noise** (Table VII's last row, the best accuracy): "
                  + _md("; ".join(spread)) + "."]
    return lines

__all__ = ["DESIGN_KEYS", "ON_RUNS", "Reading", "beside", "design", "engine_label", "markdown", "read_reading",
           "section", "side_by_side", "verdict_lines"]
