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


def distance_tables(readings: Sequence[Reading], targets: Mapping[str, float]) -> pd.DataFrame:
    """Every reading's distance table (:func:`paper_distance.distances`), a column ``reading`` added."""
    from bladefl.experiments.tables import paper_distance

    datasets = sorted({d for r in readings for d in r.summaries if d in r.comparisons}, key=registry_order)
    frames = [paper_distance.distances(r.summaries[d], r.comparisons[d], d, targets).assign(reading=r.label)
              for d in datasets for r in readings if d in r.summaries and d in r.comparisons]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=[*paper_distance.COLUMNS, "reading"])


def _interval(row: pd.Series, fmt: str) -> str:
    if not math.isfinite(row.distance):
        return ""
    band = f" [{row.low:{fmt}}, {row.high:{fmt}}]" if math.isfinite(row.low) else ""
    text = f"{row.distance:{fmt}}{band}"
    return f"<b>{text}</b>" if row.within else text


def distance_html(table: pd.DataFrame, targets: Mapping[str, float]) -> str:
    """Per paper table and over every row, each dataset's and reading's K* and accuracy distance with its
    interval; in bold where the interval's upper end is within the target."""
    from bladefl.experiments.tables import paper_distance
    from bladefl.report.plots import param_name

    if table.empty:
        return ""
    part = table[table.scope != "row"]
    columns = list(dict.fromkeys(zip(part.dataset, part.reading, strict=True)))
    head = "".join(f"<th colspan='2'>{html.escape(dataset_title(d))}, {html.escape(r)}</th>" for d, r in columns)
    sub = "<th>K*, rounds</th><th>accuracy, points</th>" * len(columns)
    body = []
    for name in [*dict.fromkeys(part[part.scope == "table"].table), ""]:
        rows = part[part.table == name]
        if rows.empty:
            continue
        swept = str(rows.parameter.iloc[0])
        title = f"{name} ({param_name(swept)})" if name else "every row"
        cells = []
        for d, r in columns:
            for measure, fmt in (("K_star", ".2f"), ("accuracy", ".1f")):
                hit = rows[(rows.dataset == d) & (rows.reading == r) & (rows.measure == measure)]
                cells.append(f"<td>{_interval(hit.iloc[0], fmt) if len(hit) else ''}</td>")
        body.append(f"<tr><td>{html.escape(title)}</td>{''.join(cells)}</tr>")
    units = sorted({int(u) for u in part.units})
    return (f"<p class='small'>Mean |ours &minus; paper's| per row, [{paper_distance.LEVEL:.0%} "
            f"{html.escape(paper_distance.METHOD)}, {', '.join(map(str, units))} units]; bold: the upper end within "
            f"the targets ({targets.get('K_star', math.nan):g} round, {targets.get('accuracy', math.nan):g} "
            f"points).</p>"
            f"<table class='small'><tr><th rowspan='2'>table (swept)</th>{head}</tr><tr>{sub}</tr>"
            + "".join(body) + "</table>")


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
    from bladefl.experiments.tables import paper_distance

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
             *[f"- {_md(line)}" for line in holds], "",
             "| statement | dataset | " + " | ".join(labels) + " | |",
             "| --- | --- | " + " | ".join("---" for _ in labels) + " | --- |"]
    ordered = pd.concat([frame[~frame.depends], frame[frame.depends]])
    for _, row in ordered.iterrows():
        lines.append(f"| {_md(row['claim'])} | {dataset_title(row['dataset'])} | "
                     + " | ".join(_md(_v(row[lab])) for lab in labels)
                     + f" | {'**depends on the reading**' if row['depends'] else ''} |")
    table = distance_tables(readings, targets)
    part = table[table.scope != "row"]
    if len(part):
        columns = list(dict.fromkeys(zip(part.dataset, part.reading, strict=True)))
        lines += ["", f"**How far each reading is from the paper** (mean |ours - paper's| per row; in brackets the "
                      f"{paper_distance.LEVEL:.0%} {paper_distance.METHOD}, {paper_distance.RESAMPLES} resamples; in "
                      f"bold where its upper end is within the targets, {targets.get('K_star', math.nan):g} round and "
                      f"{targets.get('accuracy', math.nan):g} points):\n",
                  "| table | " + " | ".join(f"{dataset_title(d)}, {r}: K\\*, rounds | accuracy, points"
                                            for d, r in columns) + " |",
                  "| --- | " + " | ".join("--- | ---" for _ in columns) + " |"]
        for name in [*dict.fromkeys(part[part.scope == "table"].table), ""]:
            rows = part[part.table == name]
            cells = []
            for d, r in columns:
                for measure, fmt in (("K_star", ".2f"), ("accuracy", ".1f")):
                    hit = rows[(rows.dataset == d) & (rows.reading == r) & (rows.measure == measure)]
                    cells.append(_interval(hit.iloc[0], fmt).replace("<b>", "**").replace("</b>", "**")
                                 if len(hit) else "")
            lines.append(f"| {name or 'every row'} | " + " | ".join(cells) + " |")
        found = gap_lines(gaps(readings, table, outcomes))
        if found:
            lines += ["", "**Where every reading stays above the targets**, the change over the table's sweep beside "
                          "the paper's:\n", *[f"- {_md(line)}" for line in found]]
        spread = last_row_lines(table)
        if spread:
            lines += ["", "**One run's spread, averaged over the units**: " + _md("; ".join(spread)) + "."]
    return "\n".join(lines) + "\n"


def gaps(readings: Sequence[Reading], table: pd.DataFrame, outcomes: Sequence[Mapping] = ()) -> pd.DataFrame:
    """The tables whose distance stays above its target under every reading (the interval's lower end above
    it), and for each the change over its sweep (first to last value) beside the paper's: per reading the
    mean change per unit with its t interval (:func:`paper_distance.slope`), and what the calibration found
    moves that distance beyond noise (``outcomes``: its outcome.json per dataset; "" where it names nothing)."""
    from bladefl.experiments.tables import paper_distance

    part = table[(table.scope == "table") & table.target.notna()]
    labels = [r.label for r in readings]
    out = []
    for (dataset, name, measure), rows in part.groupby(["dataset", "table", "measure"], sort=False):
        above = rows.set_index("reading").reindex(labels)
        if above.low.isna().any() or not (above.low > above.target).all():
            continue
        sweep = str(rows.parameter.iloc[0])
        paper_column = "paper_K_star" if measure == "K_star" else "paper_max_accuracy"
        paper = readings[0].comparisons[dataset]
        paper = paper[(paper.table == name) & paper[paper_column].notna()].sort_values("value")
        moved = next((o.get("most_important") or {} for o in outcomes if o.get("dataset") == dataset), {})
        objective = "K_star_distance" if measure == "K_star" else "accuracy_distance"
        found = moved.get(objective) if isinstance(moved, Mapping) else None
        for r in readings:
            change = paper_distance.slope(r.summaries[dataset], sweep, measure)
            out.append({"dataset": dataset, "table": name, "measure": measure, "sweep": sweep, "reading": r.label,
                        "first": change["first"], "last": change["last"], "change": change["change"],
                        "low": change["low"], "high": change["high"], "units": change["units"],
                        "paper_change": float(paper[paper_column].iloc[-1] - paper[paper_column].iloc[0])
                        if len(paper) > 1 else math.nan,
                        "moved_by": str(found.get("setting", "")) if isinstance(found, Mapping) else ""})
    return pd.DataFrame(out, columns=["dataset", "table", "measure", "sweep", "reading", "first", "last", "change",
                                      "low", "high", "units", "paper_change", "moved_by"])


def gap_lines(found: pd.DataFrame) -> list[str]:
    """Each gap of :func:`gaps` in words: the sweep, the paper's change, each reading's with its interval, and
    whether a setting of the calibration moves that distance beyond noise ("not explained" where none does)."""
    lines = []
    for (dataset, name, measure), rows in found.groupby(["dataset", "table", "measure"], sort=False):
        unit = "rounds" if measure == "K_star" else "points"
        what = "K*" if measure == "K_star" else "the best accuracy"
        first = rows.iloc[0]
        ours = "; ".join(f"{r.reading} {r.change:+.1f} [{r.low:+.1f}, {r.high:+.1f}]" for r in rows.itertuples())
        matches = all(r.low <= r.paper_change <= r.high for r in rows.itertuples())
        shape = ("the paper's change lies inside every reading's interval: the gap is in the level, not the slope; "
                 if matches else "")
        why = (f"the calibration names {first.moved_by} as moving this distance beyond noise (its pick set it)"
               if first.moved_by else "no setting the calibration searched moves this distance beyond noise: "
                                      "not explained")
        lines.append(f"{dataset_title(dataset)} {name}: {what} over {first.sweep} {first['first']:g} to "
                     f"{first['last']:g} changes by {first.paper_change:+.1f} {unit} in the paper; ours {ours} {unit} "
                     f"(mean per unit, 95% t interval); {shape}{why}")
    return lines


def last_row_lines(table: pd.DataFrame, name: str = "Table VII") -> list[str]:
    """Per dataset, the best accuracy at the last row of paper table ``name`` (Table VII: the largest lazy
    noise, where one run's accuracy spreads most) under each reading, with its interval over the units."""
    rows = table[(table.scope == "row") & (table.table == name) & (table.measure == "accuracy")]
    lines = []
    for dataset, part in rows.groupby("dataset", sort=False):
        last = part[part.value == part.value.max()]
        said = "; ".join(f"{r.reading} {r.ours:.1f}% [{r.ours_low:.1f}, {r.ours_high:.1f}]" for r in last.itertuples())
        first = last.iloc[0]
        lines.append(f"{dataset_title(dataset)} {name} at {first.parameter} = {first.value:g}: the paper "
                     f"{first.paper:.1f}%, ours {said} ({int(first.units)} units)")
    return lines


__all__ = ["DESIGN_KEYS", "ON_RUNS", "Reading", "beside", "design", "distance_html", "distance_tables",
           "engine_label", "gap_lines", "gaps", "last_row_lines", "markdown", "read_reading", "section",
           "side_by_side", "verdict_lines"]
