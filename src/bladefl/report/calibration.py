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

from bladefl.report.paper import table_span
from bladefl.report.tables import plus_minus

CHANGE_VERDICTS = ("reproduced", "refuted")
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


def calibrated_runs(outcome: Mapping[str, Any]) -> str:
    """The calibrated reading's second-pass runs in words (draws, or seeds on one draw)."""
    from bladefl.experiments.calibration.words import runs_words

    values = outcome.get("calibrated", {}).get("values") or {}
    return runs_words(int(outcome["second_pass"]["draws"]), values.get("replicates") if isinstance(values, Mapping)
                      else None)


def outcome_sentence(outcome: Mapping[str, Any], dataset_title: str) -> str:
    """One paragraph: the conclusion scoped to what was evaluated, the stated and the calibrated readings'
    distances per row, the paper's own floor, what moves each distance beyond its control."""
    second = outcome["second_pass"]
    floor = outcome.get("floor") or {}
    from bladefl.experiments.calibration.words import conclusion

    parts = [f"{dataset_title}, {table_span(outcome['tables'])} ({outcome['rows']} rows). {conclusion(outcome)}",
             f"Under the stated reading our K* is {second['stated']['K_star']:.2f} rounds and our best accuracy "
             f"{second['stated']['accuracy']:.1f} points from the paper's per row on average; the calibrated "
             f"reading ({outcome['calibrated']['label']}) gets to {second['calibrated']['K_star']:.2f} rounds and "
             f"{second['calibrated']['accuracy']:.1f} points (second pass: {calibrated_runs(outcome)}, every "
             "feasible K)."]
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
    if conventions := conventions_words(outcome, dataset_title):
        parts.append(conventions)
    return " ".join(parts)


def front_line(outcome: Mapping[str, Any], dataset_title: str) -> str:
    """The front page's line for one dataset (``outcome.json``): the conclusion's scope, the stated and the
    calibrated readings' distance per row (second pass), and a setting only where it clears its control."""
    second, t, s = outcome["second_pass"], outcome["targets"], outcome["search"]
    moved = {obj: v["setting"] for obj, v in (outcome.get("most_important") or {}).items()}
    most = ""
    if moved:
        most = "; beyond noise, " + ", ".join(f"{LABELS.get(o, o)} moved most by {v}" for o, v in moved.items())
    from bladefl.experiments.calibration.words import promoted_words

    reached = "within" if outcome["reached"] else "not within"
    return (f"{dataset_title} ({table_span(outcome['tables'])}, {outcome['rows']} rows; {s['evaluated']} points "
            f"evaluated, {s['promoted']} on every row with {promoted_words(outcome)}): stated reading "
            f"{second['stated']['K_star']:.2f} rounds and {second['stated']['accuracy']:.1f} points per row; nearest "
            f"({outcome['calibrated']['label']}; {calibrated_runs(outcome)}) {second['calibrated']['K_star']:.2f} "
            f"rounds and {second['calibrated']['accuracy']:.3g} points, {reached} the targets ({t['K_star']:g} round, "
            f"{t['accuracy']:g} points) in sample, on the runs that picked it{most}.")


def _reading(role: str, calibrated: str) -> str:
    return "stated" if role == "stated" else "calibrated" if role == calibrated else f"picked ({role})"


def _num(value: Any, fmt: str) -> str:  # noqa: ANN401 - a number, None or NaN from outcome.json
    return "n/a" if not isinstance(value, (int, float)) or value != value else f"{value:{fmt}}"


def conventions_view(outcome: Mapping[str, Any]) -> pd.DataFrame:
    """Per table (outcome.json's ``conventions``): the headline convention's distances under the stated
    reading, the reading and convention nearest the paper on K* and on accuracy (second pass, the same
    runs read every way) with one run's spread there, and the paper's own spread in that table."""
    calibrated = str(outcome["calibrated"]["role"])
    out = []
    for r in outcome.get("conventions") or []:
        out.append({"table": r["table"],
                    "K* distance, headline (rounds)": _num(r.get("headline_K_star_distance"), ".2f"),
                    "nearest K*: reading, curve": (f"{_reading(r['K_star_reading'], calibrated)}, {r['K_star_from']}"
                                                   if r["K_star_from"] else "n/a"),
                    "its K* distance (rounds; one run's sd)": f"{_num(r.get('K_star_distance'), '.2f')} "
                                                              f"({_num(r.get('K_star_sd'), '.2f')})",
                    "accuracy distance, headline (points)": _num(r.get("headline_accuracy_distance"), ".1f"),
                    "nearest accuracy: reading, convention": (f"{_reading(r['accuracy_reading'], calibrated)}, "
                                                              f"{r['accuracy_from']}" if r["accuracy_from"] else "n/a"),
                    "its accuracy distance (points; one run's sd)": f"{_num(r.get('accuracy_distance'), '.1f')} "
                                                                    f"({_num(r.get('accuracy_sd_pct'), '.1f')})",
                    "paper's own spread (rounds, points)": f"{_num(r.get('paper_K_star_spread'), 'g')}, "
                                                           f"{_num(r.get('paper_accuracy_spread'), '.2f')}"})
    return pd.DataFrame(out)


def conventions_words(outcome: Mapping[str, Any], dataset_title: str) -> str:
    """One sentence of the per-table nearest conventions: the convention nearest most often on each
    distance, the mean nearest distance per table against the headline's, the paper's own largest
    spread ("" for an outcome without conventions)."""
    from collections import Counter

    near = [r for r in outcome.get("conventions") or [] if r.get("K_star_from") and r.get("accuracy_from")]
    if not near:
        return ""

    def mean(key: str) -> float:
        values = [float(r[key]) for r in near if isinstance(r.get(key), (int, float))]
        return sum(values) / len(values) if values else math.nan

    (k_from, k_n), = Counter(r["K_star_from"] for r in near).most_common(1)
    (a_from, a_n), = Counter(r["accuracy_from"] for r in near).most_common(1)
    spreads = [(r.get("paper_K_star_spread"), r.get("paper_accuracy_spread")) for r in near]
    k_spread = max((float(k) for k, _ in spreads if isinstance(k, (int, float))), default=math.nan)
    a_spread = max((float(a) for _, a in spreads if isinstance(a, (int, float))), default=math.nan)
    return (f"{dataset_title}, read under every measurement convention (the calibration's second-pass runs of its "
            f"stated and picked readings, not a report's grid): K* nearest the "
            f"paper from {k_from} in {k_n} of {len(near)} tables, on average over the tables "
            f"{_num(mean('K_star_distance'), '.2f')} rounds per row at the nearest (a minimum over readings and "
            f"conventions taken per table, then averaged: optimistic, the same runs choose and score it) against "
            f"{_num(mean('headline_K_star_distance'), '.2f')} under the headline; accuracy from {a_from} in {a_n}, "
            f"{_num(mean('accuracy_distance'), '.1f')} points against {_num(mean('headline_accuracy_distance'), '.1f')}"
            f"; the paper's own spread where its tables share a "
            f"setting is up to {_num(k_spread, 'g')} rounds and {_num(a_spread, '.2f')} points.")


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
