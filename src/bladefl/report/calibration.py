"""The calibration study on the report's pages: what it found in words computed from its tables and
scoped to what it evaluated, the search's course (each trial's closeness and the running best, why it
stopped), the per-row and per-table comparison (the paper, the stated reading and the calibrated one),
the cells the paper reports twice with its own spread and the verdicts that change under the calibrated
reading; its figures are :mod:`bladefl.report.calibration_plots`'s.

Every number in a sentence here comes from the study's tables (``results/calibration/<dataset>/``);
each says which stage it comes from (the screen: the fewest cells holding a row of every table; every
row: the promoted points; the second pass: the picked points on its draws)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from bladefl.data.datasets import NAMES
from bladefl.report.paper import table_span
from bladefl.report.tables import plus_minus

CHANGE_VERDICTS = ("reproduced", "refuted")
_NUMBER = {"type": "number", "minimum": 0, "maximum": 1e6}
_TEXT = {"type": "string", "maxLength": 2000}
_VALUES = {"type": "array", "maxItems": 100, "items": {"type": "string", "maxLength": 40}}
_PAIR = {"type": "object", "required": ["K_star", "accuracy"], "properties": {"K_star": _NUMBER, "accuracy": _NUMBER}}
# outcome.json as experiments.calibration.tables.outcome writes it: what the pages read, held to it first
OUTCOME_SCHEMA = {
    "type": "object",
    "required": ["dataset", "targets", "tables", "rows", "search", "second_pass", "per_table", "floor", "calibrated",
                 "reached", "conclusion"],
    "properties": {
        "dataset": {"type": "string", "enum": list(NAMES)},
        "targets": _PAIR,
        "floor": {"type": "object", "required": ["K_star", "accuracy"],
                  "properties": {"K_star": _NUMBER, "accuracy": _NUMBER,
                                 "cells": {"type": "integer", "minimum": 0, "maximum": 1000}}},
        "reached": {"type": "boolean"}, "conclusion": _TEXT,
        "tables": {"type": "array", "maxItems": 20, "items": {"type": "string", "pattern": "^Table [IVX]+$"}},
        "rows": {"type": "integer", "minimum": 1, "maximum": 1000},
        "search": {"type": "object", "required": ["evaluated", "promoted", "stopped", "rule", "duplicates", "coverage"],
                   "properties": {"evaluated": {"type": "integer", "minimum": 0, "maximum": 10000},
                                  "space_size": {"type": "integer", "minimum": 1, "maximum": 10**15},
                                  "promoted": {"type": "integer", "minimum": 0, "maximum": 10000},
                                  "duplicates": {"type": "integer", "minimum": 0, "maximum": 100000},
                                  "stopped": _TEXT,
                                  "rule": {"type": "object", "required": ["patience", "tolerance", "max_trials"],
                                           "properties": {"patience": _NUMBER, "tolerance": _NUMBER,
                                                          "max_trials": _NUMBER, "min_proposals": _NUMBER}},
                                  "coverage": {"type": "object", "additionalProperties": _VALUES},
                                  "origins": {"type": "object", "additionalProperties": False,
                                              "required": ["named", "coverage", "searched"],
                                              "properties": {k: {"type": "integer", "minimum": 0, "maximum": 10000}
                                                             for k in ("named", "coverage", "searched")}}}},
        "screen": {"type": "object", "properties": {"rows": _NUMBER, "cells": _NUMBER, "draws": _NUMBER,
                                                     "tables": {"type": "array", "items": _TEXT, "maxItems": 20}}},
        "second_pass": {"type": "object", "required": ["draws", "stated", "calibrated"],
                        "properties": {"draws": {"type": "integer", "minimum": 1, "maximum": 100}, "stated": _PAIR,
                                       "calibrated": _PAIR}},
        "per_table": {"type": "array", "maxItems": 20, "items": {
            "type": "object", "required": ["table", "rows", "K_star", "accuracy"],
            "properties": {"table": {"type": "string", "pattern": "^Table [IVX]+$"}, "rows": _NUMBER,
                           "K_star": _NUMBER, "accuracy": _NUMBER}}},
        "calibrated": {"type": "object", "required": ["role", "label", "differs"],
                       "properties": {"role": {"type": "string", "pattern": "^(stated|best[0-9]{1,2})$"},
                                      "label": _TEXT, "differs": {"type": "object", "maxProperties": 20}}},
        "most_important": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["setting", "importance", "control"],
            "properties": {"setting": {"type": "string", "maxLength": 40}, "importance": _NUMBER,
                           "control": _NUMBER, "p_adjusted": {"type": "number", "minimum": 0, "maximum": 1}}}},
        "screen_agreement": {"type": "object", "required": ["points"], "properties": {
            "points": {"type": "integer", "minimum": 0, "maximum": 10000},
            **{k: {"type": "object", "properties": {"tau": {"type": ["number", "null"], "minimum": -1, "maximum": 1},
                                                    "p": {"type": ["number", "null"], "minimum": 0, "maximum": 1}}}
               for k in ("K_star", "accuracy", "closeness")}}},
        "importance_test": {"type": "object", "required": ["permutations", "trials", "alpha"],
                            "properties": {"permutations": {"type": "integer", "minimum": 1, "maximum": 10000},
                                           "trials": {"type": "integer", "minimum": 0, "maximum": 10000},
                                           "alpha": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}}},
    },
}


def check_outcome(found: Mapping[str, Any], path: object) -> Mapping[str, Any]:
    """``outcome.json`` held to :data:`OUTCOME_SCHEMA` (a kept bundle's comes from elsewhere): ValueError
    naming the file and the first field that is not what the study writes."""
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(OUTCOME_SCHEMA).iter_errors(found))
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(top)"
        raise ValueError(f"{path}: not a calibration outcome: {where}: {str(error.message)[:160]}")
    return found
LABELS = {"K_star_distance": "K*", "accuracy_distance": "accuracy"}


def _settings(differs: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in differs.items()) or "the stated settings"


def _moved(outcome: Mapping[str, Any]) -> list[str]:
    """The settings that move a distance beyond noise (their adjusted permutation p-value where the outcome
    has one; an earlier outcome's control, the share pure noise gets, otherwise)."""
    def p_words(v: Mapping[str, Any]) -> str:
        return f", adjusted p = {v['p_adjusted']:.3g}" if isinstance(v.get("p_adjusted"), (int, float)) else ""

    return [f"the {LABELS.get(obj, obj)} distance: {v['setting']} ({100 * v['importance']:.0f}% of its variance, "
            f"against {100 * v['control']:.0f}% for shuffled distances{p_words(v)})"
            for obj, v in (outcome.get("most_important") or {}).items()]


def agreement_words(outcome: Mapping[str, Any]) -> str:
    """The screen's rank agreement with every row, in one sentence ("" for an outcome without it)."""
    found = outcome.get("screen_agreement")
    if not isinstance(found, Mapping):
        return ""
    n = int(found.get("points", 0))
    said = [f"{LABELS.get(k + '_distance', k)} {v['tau']:.2f} (p = {v['p']:.2g})"
            for k in ("K_star", "accuracy", "closeness") if isinstance(v := found.get(k), Mapping)
            and isinstance(v.get("tau"), (int, float)) and isinstance(v.get("p"), (int, float))]
    if not said:
        return (f"The screen's ranking cannot be checked against every row's: {n} point{'s' if n != 1 else ''} "
                "scored on both, too few for a rank correlation.")
    return (f"The screen against every row, over the {n} points scored on both (Kendall's τ of their distances): "
            f"{', '.join(said)}"
            f"{'; with so few points only a near-perfect agreement is distinguishable from chance' if n < 8 else ''}.")


def _noise_words(outcome: Mapping[str, Any]) -> str:
    """How the importances were tested, in words (an outcome written before the p-values: the control)."""
    test = outcome.get("importance_test")
    if not isinstance(test, Mapping):
        return "fANOVA over the screen's trials, beside the share shuffled distances get"
    return (f"fANOVA over the screen's {test['trials']} trials; a max-statistic permutation p-value over "
            f"{test['permutations']} shuffles of the distances, Bonferroni over the two distances, below "
            f"{test['alpha']:g}")


def _runs(outcome: Mapping[str, Any]) -> str:
    """The calibrated reading's second-pass runs in words (draws, or seeds on one draw)."""
    from bladefl.experiments.calibration.tables import runs_words

    values = outcome.get("calibrated", {}).get("values") or {}
    return runs_words(int(outcome["second_pass"]["draws"]), values.get("replicates") if isinstance(values, Mapping)
                      else None)


def outcome_sentence(outcome: Mapping[str, Any], dataset_title: str) -> str:
    """One paragraph: the conclusion scoped to what was evaluated, the stated and the calibrated readings'
    distances per row, the paper's own floor, what moves each distance beyond its control."""
    second = outcome["second_pass"]
    floor = outcome.get("floor") or {}
    parts = [f"{dataset_title}, {table_span(outcome['tables'])} ({outcome['rows']} rows). {outcome['conclusion']}",
             f"Under the stated reading our K* is {second['stated']['K_star']:.2f} rounds and our best accuracy "
             f"{second['stated']['accuracy']:.1f} points from the paper's per row on average; the calibrated "
             f"reading ({outcome['calibrated']['label']}) gets to {second['calibrated']['K_star']:.2f} rounds and "
             f"{second['calibrated']['accuracy']:.1f} points (second pass: {_runs(outcome)}, every feasible K)."]
    if floor and (floor.get("K_star", 0) > 0 or floor.get("accuracy", 0) > 0):
        cells = floor.get("cells")
        which = (f"{cells} setting{'s' if cells != 1 else ''}" if isinstance(cells, int) and cells > 0
                 else "a setting")
        parts.append(f"No reading can come nearer than {floor['K_star']:.2f} rounds and {floor['accuracy']:.2f} "
                     f"points per row: the paper gives {which} different values in different tables (below).")
    moved = _moved(outcome)
    parts.append(f"What moves it beyond noise ({_noise_words(outcome)}): " + "; ".join(moved) + "." if moved else
                 f"No setting's share of either distance's variance is distinguishable from noise with "
                 f"{outcome['search']['evaluated']} trials ({_noise_words(outcome)}): the importances do not say "
                 "which setting matters.")
    if agreement := agreement_words(outcome):
        parts.append(agreement)
    return " ".join(parts)


def front_line(outcome: Mapping[str, Any], dataset_title: str) -> str:
    """The front page's line for one dataset (``outcome.json``): the conclusion's scope, the stated and the
    calibrated readings' distance per row (second pass), and a setting only where it clears its control."""
    second, t, s = outcome["second_pass"], outcome["targets"], outcome["search"]
    moved = {obj: v["setting"] for obj, v in (outcome.get("most_important") or {}).items()}
    most = ""
    if moved:
        most = "; beyond noise, " + ", ".join(f"{LABELS.get(o, o)} moved most by {v}" for o, v in moved.items())
    reached = "within" if outcome["reached"] else "not within"
    return (f"{dataset_title} ({table_span(outcome['tables'])}, {outcome['rows']} rows; {s['evaluated']} points "
            f"evaluated, {s['promoted']} on every row, {_runs(outcome)}): stated reading "
            f"{second['stated']['K_star']:.2f} rounds and {second['stated']['accuracy']:.1f} points per row; nearest "
            f"({outcome['calibrated']['label']}) {second['calibrated']['K_star']:.2f} rounds and "
            f"{second['calibrated']['accuracy']:.1f} points, {reached} the targets ({t['K_star']:g} round, "
            f"{t['accuracy']:g} points){most}.")


def rows_view(second_rows: pd.DataFrame, calibrated: str) -> pd.DataFrame:
    """Per table row: the paper's K* and maximal accuracy, the stated reading's and the calibrated
    one's (second pass: mean curve over draws, +- sd over the draws' own optima)."""
    out = []
    for (table, value), part in second_rows.groupby(["table", "value"], sort=False):
        by = part.set_index("role")
        k_paper = by.paper_K_star.iloc[0]
        row: dict[str, Any] = {"table": table, "swept value": f"{part.sweep.iloc[0]} = {value:g}",
                               "K* paper": "none (no integer K*)" if k_paper != k_paper else f"{k_paper:g}"}
        for role, label in (("stated", "stated"), (calibrated, "calibrated")):
            if role in by.index:
                r = by.loc[role]
                row[f"K* {label}"] = plus_minus(pd.Series([r.K_star]), pd.Series([r.K_star_sd]), ".1f")[0]
        row["accuracy % paper"] = f"{by.paper_max_accuracy.iloc[0]:.2f}"
        for role, label in (("stated", "stated"), (calibrated, "calibrated")):
            if role in by.index:
                r = by.loc[role]
                row[f"accuracy % {label}"] = plus_minus(pd.Series([r.max_accuracy]), pd.Series([r.max_accuracy_sd]),
                                                        ".1f")[0]
        out.append(row)
    return pd.DataFrame(out)


def per_table_view(per_table: pd.DataFrame, calibrated: str) -> pd.DataFrame:
    """Per table: the stated and the calibrated readings' mean distances over its rows (second pass)."""
    out = []
    for table, part in per_table.groupby("table", sort=False):
        by = part.set_index("role")
        row: dict[str, Any] = {"table": table, "rows": int(part.rows.iloc[0])}
        for role, label in (("stated", "stated"), (calibrated, "calibrated")):
            if role in by.index:
                row[f"K* distance {label} (rounds)"] = f"{by.loc[role].K_star_distance:.2f}"
                row[f"accuracy distance {label} (points)"] = f"{by.loc[role].accuracy_distance:.1f}"
        out.append(row)
    return pd.DataFrame(out)


def repeated_view(repeated: pd.DataFrame, calibrated: str) -> pd.DataFrame:
    """The cells the paper reports in several rows: its values there and their spread, beside ours (the
    same runs answer every row of the cell)."""
    def cell(value: float, fmt: str) -> str:
        return "n/a" if value != value else f"{value:{fmt}}"

    out = []
    for _, r in repeated.iterrows():
        row = {"the same setting in": r["rows"], "K* paper": r.paper_K_star,
               "paper's K* spread (rounds)": cell(r.K_star_spread, "g")}
        for role, label in (("stated", "stated"), (calibrated, "calibrated")):
            row[f"K* {label}"] = cell(r.get(f"K_star {role}", math.nan), "g")
        row["accuracy % paper"] = r.paper_max_accuracy
        row["paper's accuracy spread (points)"] = cell(r.accuracy_spread, ".2f")
        for role, label in (("stated", "stated"), (calibrated, "calibrated")):
            row[f"accuracy % {label}"] = cell(r.get(f"max_accuracy {role}", math.nan), ".1f")
        out.append(row)
    return pd.DataFrame(out)


def trials_view(trials: pd.DataFrame) -> pd.DataFrame:
    """The search's evaluated trials in the order they ran: screen distances, the running best, whether
    each went on to every row and its distances there."""
    done = trials[trials.state == "complete"].sort_values("trial")

    def fmt(values: pd.Series, digits: int) -> list[str]:
        return ["" if v != v else f"{v:.{digits}f}" for v in values]

    return pd.DataFrame({
        "trial": done.trial,
        "point": [p or (f"coverage: {c}" if c else "(searched)")
                  for p, c in zip(done.point.fillna(""), done.coverage.fillna(""), strict=True)],
        "settings": done.differs,
        "screen K* (rounds per row)": fmt(done.K_star_distance, 2),
        "screen accuracy (points per row)": fmt(done.accuracy_distance, 1),
        "closeness": fmt(done.closeness, 2), "running best": fmt(done.running_best, 2),
        "every row: K*": fmt(done.full_K_star_distance, 2), "every row: accuracy": fmt(done.full_accuracy_distance, 1),
        "on the front": done.pareto.map({True: "yes", False: ""}),
        "run seconds": fmt(done.run_seconds, 0),
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
    """Each setting's share of each distance's variance beside the control (the largest share shuffled
    distances get, 95th percentile), its max-statistic permutation p-value adjusted over the two distances
    (where the table has one), and whether it is beyond noise."""
    if importances.empty:
        return importances
    out = []
    for setting, part in importances.groupby("setting", sort=True):
        by = part.set_index("objective")
        row: dict[str, Any] = {"setting": setting}
        for obj, label in LABELS.items():
            if obj in by.index:
                r = by.loc[obj]
                row[f"{label} distance (%)"] = f"{100 * r.importance:.0f}"
                row[f"{label} control (%)"] = f"{100 * r.control:.0f}"
                if "p_adjusted" in by.columns and pd.notna(r.p_adjusted):  # an earlier study's table has none
                    row[f"{label}: adjusted p"] = f"{float(r.p_adjusted):.3g}"
                row[f"{label}: beyond noise"] = "yes" if str(r.clears).lower() == "true" else "no"
        out.append(row)
    return pd.DataFrame(out)
