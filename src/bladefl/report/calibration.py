"""The calibration study on the report's pages: what it found in words computed from its tables, the
per-row comparison (the paper, the stated reading and the calibrated one), the verdicts that change
under the calibrated reading, and its figures (the Pareto front, the settings' importances).

Every number in a sentence here comes from the study's tables (``results/calibration/<dataset>/``);
each says which pass it comes from (the first: one draw, the K window around the paper's K*; the
second: more draws over every feasible K)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from bladefl.report.tables import plus_minus

CHANGE_VERDICTS = ("reproduced", "refuted")


def _settings(differs: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in differs.items()) or "the stated settings"


def outcome_sentence(outcome: Mapping[str, Any], dataset_title: str) -> str:
    """One paragraph: how far the stated and the calibrated readings are from the paper per row,
    whether the targets are reached, what moves each distance most (from ``outcome.json``)."""
    second, first = outcome["second_pass"], outcome["first_pass"]
    targets = outcome["targets"]
    cal = outcome["calibrated"]
    tables = " and ".join(outcome["tables"]) if outcome["tables"] else "every table"
    parts = [f"{dataset_title}, {tables} ({outcome['rows']} rows): under the stated reading our K* is "
             f"{second['stated']['K_star']:.2f} rounds and our best accuracy {second['stated']['accuracy']:.1f} "
             f"points from the paper's per row on average; the calibrated reading ({_settings(cal['differs'])}) "
             f"gets to {second['calibrated']['K_star']:.2f} rounds and {second['calibrated']['accuracy']:.1f} points "
             f"(second pass: {second['draws']} draws, every feasible K)."]
    if outcome["reached"]:
        parts.append(f"That is within the targets ({targets['K_star']:g} round and {targets['accuracy']:g} points "
                     "per row).")
    else:
        closest = first.get("closest") or {}
        parts.append(f"No point of the search comes within {targets['K_star']:g} round and {targets['accuracy']:g} "
                     f"points per row on both: the paper's tables are not reached in this space"
                     + (f" (the closest on the first pass: {closest['differs']}, {closest['K_star']:.2f} rounds, "
                        f"{closest['accuracy']:.1f} points)." if closest else "."))
    moved = outcome.get("most_important") or {}
    said = [f"the {'K*' if obj == 'K_star_distance' else 'accuracy'} distance: {v['setting']} "
            f"({100 * v['importance']:.0f}% of its variance over the trials)"
            for obj, v in moved.items() if v["importance"] > 0]
    if said:
        parts.append("What moves it most (fANOVA over the first pass's trials): " + "; ".join(said) + ".")
    return " ".join(parts)


def front_line(outcome: Mapping[str, Any], dataset_title: str) -> str:
    """The front page's line for one dataset (``outcome.json``): the stated and the calibrated readings'
    distance to the paper per row (second pass), whether the targets are met, what moves it most."""
    second, t = outcome["second_pass"], outcome["targets"]
    moved = {obj: v["setting"] for obj, v in (outcome.get("most_important") or {}).items() if v["importance"] > 0}
    most = ""
    if len(set(moved.values())) > 1:
        most = (f"; K* moved most by {moved.get('K_star_distance', '?')}, accuracy by "
                f"{moved.get('accuracy_distance', '?')}")
    elif moved:
        most = f"; both moved most by {next(iter(moved.values()))}"
    reached = "within" if outcome["reached"] else "not within"
    tables = " and ".join(outcome["tables"]) if outcome["tables"] else "every table"
    return (f"{dataset_title} ({tables}, {outcome['rows']} rows, {second['draws']} draws): stated reading "
            f"{second['stated']['K_star']:.2f} rounds and {second['stated']['accuracy']:.1f} points per row; "
            f"calibrated ({_settings(outcome['calibrated']['differs'])}) {second['calibrated']['K_star']:.2f} "
            f"rounds and {second['calibrated']['accuracy']:.1f} points, {reached} the targets ({t['K_star']:g} round, "
            f"{t['accuracy']:g} points){most}.")


def rows_view(second_rows: pd.DataFrame, calibrated: str) -> pd.DataFrame:
    """Per table row: the paper's K* and maximal accuracy, the stated reading's and the calibrated
    one's (second pass: mean curve over draws, +- sd over the draws' own optima)."""
    out = []
    for (table, value), part in second_rows.groupby(["table", "value"], sort=False):
        by = part.set_index("role")
        row: dict[str, Any] = {"table": table, "swept value": f"{part.sweep.iloc[0]} = {value:g}",
                               "K* paper": by.paper_K_star.iloc[0]}
        for role, label in (("stated", "stated"), (calibrated, "calibrated")):
            if role in by.index:
                r = by.loc[role]
                row[f"K* {label}"] = plus_minus(pd.Series([r.K_star]), pd.Series([r.K_star_sd]), ".1f")[0]
        row["accuracy % paper"] = by.paper_max_accuracy.iloc[0]
        for role, label in (("stated", "stated"), (calibrated, "calibrated")):
            if role in by.index:
                r = by.loc[role]
                row[f"accuracy % {label}"] = plus_minus(pd.Series([r.max_accuracy]), pd.Series([r.max_accuracy_sd]),
                                                        ".1f")[0]
        out.append(row)
    return pd.DataFrame(out)


def trials_view(trials: pd.DataFrame) -> pd.DataFrame:
    """The search's trials as the page lists them (first pass)."""
    done = trials[trials.state == "complete"].sort_values(["closeness", "trial"])
    return pd.DataFrame({
        "trial": done.trial, "point": done.point.fillna("").replace("", "(searched)"), "settings": done.differs,
        "K* distance (rounds per row)": done.K_star_distance.round(2),
        "accuracy distance (points per row)": done.accuracy_distance.round(2),
        "on the front": done.pareto.map({True: "yes", False: ""}),
        "run seconds": (done.run_seconds if "run_seconds" in done else done.seconds).round(0),
    })


def verdict_changes(verdicts: Mapping[str, pd.DataFrame], calibrated: str) -> pd.DataFrame:
    """Each claim the second pass judges, its verdict under the stated reading and under the calibrated
    one; ``changes`` where a decided verdict flips (reproduced against refuted), ``differs`` where any does."""
    stated, cal = verdicts["stated"], verdicts.get(calibrated)
    if cal is None:
        return pd.DataFrame(columns=["claim", "stated", "calibrated", "changes", "differs"])
    left = stated[["claim", "verdict"]].rename(columns={"verdict": "stated"})
    right = cal[["claim", "verdict"]].rename(columns={"verdict": "calibrated"})
    both = left.merge(right, on="claim", how="outer")
    decided = both.apply(lambda r: {r.stated, r.calibrated} <= set(CHANGE_VERDICTS) and r.stated != r.calibrated,
                         axis=1)
    return both.assign(changes=decided, differs=both.stated != both.calibrated)


def importance_view(importances: pd.DataFrame) -> pd.DataFrame:
    if importances.empty:
        return importances
    table = importances.pivot_table(index="setting", columns="objective", values="importance", aggfunc="first")
    return (100 * table).round(0).reset_index().rename(columns={"K_star_distance": "K* distance (%)",
                                                                 "accuracy_distance": "accuracy distance (%)"})


def pareto_figure(trials: pd.DataFrame, outcome: Mapping[str, Any], title: str):  # noqa: ANN201 - Figure
    """K* distance against accuracy distance for every completed trial of the first pass: the
    front joined, the stated reading and each named reading marked and labelled, the targets as a box."""
    import matplotlib.pyplot as plt

    done = trials[trials.state == "complete"]
    fig, ax = plt.subplots(figsize=(7.5, 5.0))
    searched = done[done.point.fillna("") == ""]
    ax.scatter(searched.K_star_distance, searched.accuracy_distance, s=28, color="#9e9e9e", label="searched trial")
    named = done[(done.point.fillna("") != "") & (done.point != "stated")]
    ax.scatter(named.K_star_distance, named.accuracy_distance, s=44, marker="s", color="#1f77b4",
               label="sensitivity reading")
    for r in named.itertuples():
        ax.annotate(r.point, (r.K_star_distance, r.accuracy_distance), fontsize=8, xytext=(4, 3),
                    textcoords="offset points")
    stated = done[done.point == "stated"]
    ax.scatter(stated.K_star_distance, stated.accuracy_distance, s=90, marker="*", color="#d62728",
               label="stated reading", zorder=3)
    front = done[done.pareto].sort_values("K_star_distance")
    ax.plot(front.K_star_distance, front.accuracy_distance, color="#2ca02c", lw=1.2, zorder=1, label="Pareto front")
    trial = outcome["calibrated"].get("trial")
    cal = done[done.trial == trial] if trial is not None and not (isinstance(trial, float) and math.isnan(trial)) \
        else done.iloc[0:0]
    ax.scatter(cal.K_star_distance, cal.accuracy_distance, s=160, facecolors="none", edgecolors="black", lw=1.5,
               label="calibrated reading", zorder=4)
    t = outcome["targets"]
    ax.axvspan(0, t["K_star"], ymax=1, color="#2ca02c", alpha=0.04)
    ax.axhline(t["accuracy"], color="#2ca02c", lw=0.8, ls="--")
    ax.axvline(t["K_star"], color="#2ca02c", lw=0.8, ls="--", label="targets")
    ax.set_xlabel("K* distance: mean |K* - K*paper| per row (rounds)")
    ax.set_ylabel("accuracy distance: mean |acc - paper's| per row (points)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def importance_figure(importances: pd.DataFrame, title: str):  # noqa: ANN201 - Figure
    """Each setting's share of each distance's variance over the trials (fANOVA), as bars."""
    import matplotlib.pyplot as plt
    import numpy as np

    settings = sorted(importances.setting.unique())
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    width = 0.38
    x = np.arange(len(settings))
    colours = {"K_star_distance": "#1f77b4", "accuracy_distance": "#ff7f0e"}
    labels = {"K_star_distance": "K* distance", "accuracy_distance": "accuracy distance"}
    for i, (obj, part) in enumerate(importances.groupby("objective", sort=False)):
        values = part.set_index("setting").importance.reindex(settings).fillna(0)
        ax.bar(x + (i - 0.5) * width, 100 * values, width, color=colours.get(obj), label=labels.get(obj, obj))
    ax.set_xticks(x, settings, rotation=20)
    ax.set_ylabel("share of the variance (%)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
