"""How far our numbers are from the paper's, on the report's front page: per paper table, the mean
distance of our K* and best accuracy from the paper's over its rows, and why they differ (the kept
calibration study's outcome, where one is given)."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

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
    from bladefl.report.readings_beside import distance_html, distance_tables, gap_lines, gaps, last_row_lines

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
    spread_line = (f"<p class='small'>At the paper's largest lazy noise: {html.escape('; '.join(spread))}.</p>"
                   if spread else "")
    said = (f"<p class='small'>{html.escape('; '.join(lines))}.</p>" if without else "")  # the rest is the table's
    return f"""<h2>How far our numbers are from the paper's</h2>
{said}
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


__all__ = ["convention_line", "distance_section", "distance_table", "reconciled", "targets_of"]
