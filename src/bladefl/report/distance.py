"""How far our numbers are from the paper's, on the report's front page: per paper table, the mean
distance of our K* and best accuracy from the paper's over its rows, and why they differ (the kept
calibration study's outcome, where one is given)."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from bladefl.data.datasets import registry_order
from bladefl.report.front_page import dataset_title


def distance_table(comparisons: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per dataset and paper table: how far our K* and best accuracy are from the paper's per row (mean
    |K* - K*paper| and its signed mean over the rows with a paper K*; mean (ours - paper) accuracy and
    its mean absolute value over the rows with a paper accuracy). A table with no paper value to compare with
    (every table of Cifar-10, which the paper reports in a figure only) has no row."""
    rows = []
    for dataset, frame in comparisons.items():
        for table, part in frame.groupby("table", sort=False):
            k = part.dropna(subset=["K_star", "paper_K_star"])
            acc = part.dropna(subset=["max_accuracy", "paper_max_accuracy"])
            dk, dacc = k.K_star - k.paper_K_star, acc.max_accuracy - acc.paper_max_accuracy
            rows.append({"dataset": dataset, "table": table, "parameter": str(part.parameter.iloc[0]),
                         "K_rows": len(k), "K_abs": float(dk.abs().mean()) if len(k) else math.nan,
                         "K_signed": float(dk.mean()) if len(k) else math.nan, "acc_rows": len(acc),
                         "acc_abs": float(dacc.abs().mean()) if len(acc) else math.nan,
                         "acc_signed": float(dacc.mean()) if len(acc) else math.nan})
    out = pd.DataFrame(rows)
    return out[(out.K_rows > 0) | (out.acc_rows > 0)].reset_index(drop=True) if len(out) else out


def _cause(outcomes: Sequence[Mapping], calibration_link: str | None, sensitivity_link: str | None) -> str:
    """Why our numbers differ: the calibration study's outcome where one is given, else where to run it."""
    from bladefl.report.calibration import front_line

    one_axis = (f"<a href='{html.escape(sensitivity_link)}'>this run's sensitivity study</a>" if sensitivity_link
                else "the sensitivity study (docs/sensitivity.md)")
    if outcomes:
        found = " ".join(front_line(o, dataset_title(o["dataset"])) for o in outcomes)
        where = (f" (<a href='{html.escape(calibration_link)}'>its report</a>)"
                 if calibration_link else " (docs/calibration.md; <code>make reference-report "
                 "REF=reference/calibration-cpu</code> renders its report)")
        cause = (f"<p class='small'><strong>Why they differ</strong>: the calibration study{where} searches the "
                 f"unstated settings jointly ({one_axis}: one at a time). {html.escape(found)}</p>")
    else:
        cause = ("<p class='small'>Why they differ: the calibration study (<code>snakemake --configfile "
                 "config/calibration.yaml</code>, docs/calibration.md) searches the paper's unstated settings jointly "
                 f"({one_axis} changes one at a time); no calibration outcome was given to this report.</p>")
    return cause


def reconciled(lines: Mapping[str, float], outcomes: Sequence[Mapping], design: str) -> str:
    """One line where the calibration's stated reading (the paper engine's settings) is the reading of
    this report's runs: the two accuracy distances per row come from different runs of the same
    reading ("" where no outcome is given)."""
    said = []
    for o in outcomes:
        d = str(o.get("dataset"))
        second = o.get("second_pass") or {}
        stated = (second.get("stated") or {}).get("accuracy")
        if d in lines and isinstance(stated, (int, float)) and math.isfinite(lines[d]):
            said.append(f"{dataset_title(d)} {lines[d]:.1f} here against {stated:.1f} in its second pass "
                        f"({second.get('draws', '?')} draws)")
    if not said:
        return ""
    return (f"<p class='small'>The same reading, two sets of runs: the paper engine's accuracy distance per row is "
            f"{html.escape('; '.join(said))}; this report's runs are {html.escape(design or 'its own')}, the "
            f"calibration's are runs of its own, so the two differ by their draws and seeds.</p>")


def convention_line(summaries: Mapping[str, pd.DataFrame], paper_tables: Sequence[Mapping], runs: str = "") -> str:
    """Which way of reading K* (a measurement convention: docs/calibration.md) brings it nearest the
    paper's, per dataset over the paper's tables, from this report's runs: the paper's text's reading,
    F(w), against every other curve the runs record ("" without paper tables or another curve)."""
    from bladefl.experiments.tables import conventions

    said = []
    for dataset, summary in summaries.items():
        rows = conventions.distance_summary(conventions.paper_distances(summary, paper_tables, dataset)) \
            if paper_tables else pd.DataFrame()
        if rows.empty:
            continue
        rows = rows[(rows.accuracy == "max full-test") & (rows.K_rows > 0) & rows.K_star_distance.notna()]
        per = rows.pivot_table(index="table", columns="k_star_from", values="K_star_distance", sort=False)
        if "objective" not in per or per.shape[1] < 2:
            continue
        others = per.drop(columns="objective")
        nearer = [(t, str(others.loc[t].idxmin()), float(others.loc[t].min()), float(per.loc[t, "objective"]))
                  for t in per.index if others.loc[t].min() < per.loc[t, "objective"]]
        text = (f"{dataset_title(dataset)}: F(w) nearest or tied in {len(per) - len(nearer)} of {len(per)} tables "
                f"(against {', '.join(map(str, others.columns))})")
        text += "".join(f"; {o} nearer in {t} ({d:.2f} against {f:.2f} rounds)" for t, o, d, f in nearer)
        said.append(text)
    if not said:
        return ""
    which = f"this report's runs ({runs})" if runs else "this report's runs"
    return (f"<p class='small'>K* read from other curves of {html.escape(which)}, the same runs (mean distance to "
            f"the paper's K* per row; docs/calibration.md, the measurement conventions; the calibration page reads "
            f"its own runs under other readings): {html.escape('. '.join(said))}.</p>")


def distance_section(readings: Sequence[Any], outcomes: Sequence[Mapping], calibration_link: str | None,
                     sensitivity_link: str | None = None, engine: str | None = None, design: str = "") -> str:
    """How far our numbers are from the paper's, per dataset and table, for each reading's runs (``readings``:
    :class:`bladefl.report.readings_beside.Reading`, this report's first), every distance with its interval
    over the independent units; and what the calibration study found about why (from its outcome, where
    one is given; the sensitivity study, one setting at a time, linked where this run made it). Where this
    report's engine is the paper engine, the calibration's stated reading is the same reading: a line says
    why their distances differ. No figure here is a minimum over readings or conventions."""

    if not readings:
        return ""
    targets = targets_of(outcomes)
    table = distance_tables(readings, targets)
    if table.empty:
        return ""
    own = table[(table.reading == readings[0].label) & (table.scope == "dataset")]
    without = [dataset_title(d) for d in readings[0].comparisons if d not in set(own.dataset)]
    lines: list[str] = [f"{', '.join(without)}: none (the paper gives no table value of it)"] if without else []
    accuracy: dict[str, float] = {}
    for d, part in own.groupby("dataset", sort=False):
        k, acc = part[part.measure == "K_star"], part[part.measure == "accuracy"]
        accuracy[str(d)] = float(acc.distance.iloc[0]) if len(acc) else math.nan

        def said(rows: pd.DataFrame, unit: str, fmt: str) -> str:
            if rows.empty:
                return f"no {unit}"
            r = rows.iloc[0]
            band = f" [{r.low:{fmt}}, {r.high:{fmt}}]" if math.isfinite(r.low) else ""
            return f"{r.distance:{fmt}}{band} {unit} ({int(r.rows)} rows)"

        lines.append(f"{dataset_title(d)} K* {said(k, 'rounds', '.2f')}, best accuracy {said(acc, 'points', '.1f')}")
    cause = _cause(outcomes, calibration_link, sensitivity_link)
    if engine == "paper":
        cause += reconciled(accuracy, outcomes, design)
    found = gap_lines(gaps(readings, table, outcomes))
    folded = (f"<details class='small'><summary>Where {'every reading stays' if len(readings) > 1 else 'it stays'} "
              f"above the targets ({len(found)}): the change over each table's sweep beside the paper's</summary><ul>"
              + "".join(f"<li>{html.escape(line)}</li>" for line in found) + "</ul></details>") if found else ""
    spread = last_row_lines(table)
    spread_line = (f"<details class='small'><summary>At the paper's largest lazy noise (Table VII's last row), each "
                   "reading's best accuracy with its interval</summary>"
                   f"<p>{html.escape('; '.join(spread))}.</p></details>" if spread else "")
    opening = (f"<p class='small'>{html.escape('; '.join(lines))}.</p>" if without else "")  # the rest: the table's
    return f"""<h2>How far our numbers are from the paper's</h2>
{opening}
{distance_html(table, targets)}
{folded}
{spread_line}
<details class='small'><summary>Why they differ: what the calibration study found</summary>{cause}</details>"""


def targets_of(outcomes: Sequence[Mapping]) -> dict[str, float]:
    """The calibration's targets (K* rounds, accuracy points): the outcomes' own where given, else the
    study's defaults."""
    from bladefl.experiments.calibration.study import DEFAULTS

    for o in outcomes:
        if isinstance(o.get("targets"), Mapping):
            return {k: float(v) for k, v in o["targets"].items()}
    return {k: float(v) for k, v in DEFAULTS["targets"].items()}



def distance_tables(readings: Sequence[Any], targets: Mapping[str, float]) -> pd.DataFrame:
    """Every reading's distance table (:func:`paper_distance.distances`), a column ``reading`` added."""
    from bladefl.experiments.tables import paper_distance

    datasets = sorted({d for r in readings for d in r.summaries if d in r.comparisons}, key=registry_order)
    frames = [paper_distance.distances(r.summaries[d], r.comparisons[d], d, targets).assign(reading=r.label)
              for d in datasets for r in readings if d in r.summaries and d in r.comparisons]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=[*paper_distance.COLUMNS, "reading"])


def interval(row: pd.Series, fmt: str) -> str:
    if not math.isfinite(row.distance):
        return ""
    band = f" [{row.low:{fmt}}, {row.high:{fmt}}]" if math.isfinite(row.low) else ""
    text = f"{row.distance:{fmt}}{band}"
    return f"<b>{text}</b>" if row.within else text


def distance_grid(table: pd.DataFrame) -> tuple[list[tuple[str, str]], list[tuple[str, str, list[str]]]]:
    """The distance table laid out as the pages show it: its (dataset, reading) columns, and per paper table
    and then over every row ("") the table's name, its swept parameter and each column's K* and accuracy
    cell (:func:`interval`; "" where that column has none)."""
    part = table[table.scope != "row"]
    columns = list(dict.fromkeys(zip(part.dataset, part.reading, strict=True)))
    rows = []
    for name in [*dict.fromkeys(part[part.scope == "table"].table), ""]:
        here = part[part.table == name]
        if here.empty:
            continue
        cells = []
        for d, r in columns:
            for measure, fmt in (("K_star", ".2f"), ("accuracy", ".1f")):
                hit = here[(here.dataset == d) & (here.reading == r) & (here.measure == measure)]
                cells.append(interval(hit.iloc[0], fmt) if len(hit) else "")
        rows.append((str(name), str(here.parameter.iloc[0]), cells))
    return columns, rows


def distance_html(table: pd.DataFrame, targets: Mapping[str, float]) -> str:
    """Per paper table and over every row, each dataset's and reading's K* and accuracy distance with its
    interval; in bold where the interval's upper end is within the target."""
    from bladefl.experiments.tables import paper_distance
    from bladefl.report.plots import param_name

    if table.empty:
        return ""
    columns, grid = distance_grid(table)
    head = "".join(f"<th colspan='2'>{html.escape(dataset_title(d))}, {html.escape(r)}</th>" for d, r in columns)
    sub = "<th>K*, rounds</th><th>accuracy, points</th>" * len(columns)
    body = [f"<tr><td>{html.escape(f'{name} ({param_name(swept)})' if name else 'every row')}</td>"
            + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>" for name, swept, cells in grid]
    units = sorted({int(u) for u in table[table.scope != "row"].units})
    return (f"<p class='small'>Mean |ours &minus; paper's| per row, [{paper_distance.LEVEL:.0%} "
            f"{html.escape(paper_distance.METHOD)}, {', '.join(map(str, units))} units]; bold: the upper end within "
            f"the targets ({targets.get('K_star', math.nan):g} round, {targets.get('accuracy', math.nan):g} "
            f"points).</p>"
            f"<table class='small'><tr><th rowspan='2'>table (swept)</th>{head}</tr><tr>{sub}</tr>"
            + "".join(body) + "</table>")


def gaps(readings: Sequence[Any], table: pd.DataFrame, outcomes: Sequence[Mapping] = ()) -> pd.DataFrame:
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


__all__ = ["convention_line", "distance_grid", "distance_html", "distance_section", "distance_table",
           "distance_tables", "gap_lines",
           "gaps", "interval", "last_row_lines", "reconciled", "targets_of"]
