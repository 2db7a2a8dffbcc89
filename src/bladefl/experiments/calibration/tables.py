"""The calibration's tables, read by its report page and the front page: the search (every trial, its
screen and, where promoted, its score on every row, the running best, why it stopped), the second
pass per picked point and row (ours beside the paper's, with the spread over draws), per table, the
cells the paper reports twice with its own spread, the settings' importances beside their control,
the outcome (how close the stated and the calibrated readings get, whether the targets are reached,
in words scoped to what was evaluated) and the calibrated engine config."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from bladefl.core import atomic
from bladefl.experiments.calibration import evaluation, importance, stopping
from bladefl.experiments.calibration.space import settings_words
from bladefl.experiments.calibration.study import StudySpec
from bladefl.experiments.calibration.words import conclusion

ENGINE_SECTIONS = ("dataset", "partition", "model", "train", "time", "lazy", "privacy", "chain", "normalize", "seed")


def _num(value: Any, default: float = math.nan) -> float:  # noqa: ANN401 - a trial attribute
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def trials_table(spec: StudySpec, trials: Sequence[Any], trials_root: str | Path | None = None
                 ) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """One row per trial (its state, named or coverage point, settings, screen distances, running best,
    whether it went on to every row and its distances there, on the front over every row or not, its
    cost), one per trial, stage and row (ours beside the paper's), and why the search stopped (its
    rule applied to the trials in order)."""
    from optuna.trial import TrialState

    from bladefl.experiments.calibration import search

    stated = spec.space.stated
    front = {t.number for t in search.full_front(trials)}
    evaluated = [t for t in trials if t.state == TrialState.COMPLETE]
    closeness = [search.screen_closeness(t) for t in evaluated]
    best = dict(zip((t.number for t in evaluated), stopping.running_best(closeness), strict=True))
    better = dict(zip((t.number for t in evaluated), stopping.improvements(closeness, spec.rule.tolerance),
                      strict=True))
    rows, per_row = [], []
    for t in trials:
        if t.state == TrialState.WAITING:
            continue
        values = list(t.values) if t.values else [math.nan, math.nan]
        point = spec.space.point(t.params)
        full = search.full_values(t) or (math.nan, math.nan)
        cost = _num(t.user_attrs.get("full_run_seconds"), _num(t.user_attrs.get("screen_run_seconds")))
        if trials_root is not None and t.state == TrialState.COMPLETE:
            plan = spec.full if search.full_values(t) is not None else spec.screen
            cost = evaluation.run_seconds(plan, Path(trials_root) / point.key)
        rows.append({"trial": t.number, "state": t.state.name.lower(), "point": t.user_attrs.get("point", ""),
                     "coverage": t.user_attrs.get("coverage", ""), "key": point.key,
                     "retry_of": t.user_attrs.get("retry_of", math.nan),
                     "duplicate_of": t.user_attrs.get("duplicate_of", math.nan), **dict(t.params),
                     "differs": "; ".join(f"{k}={v}" for k, v in point.differs(stated).items()) or "(stated)",
                     "K_star_distance": values[0], "accuracy_distance": values[1],
                     "closeness": search.screen_closeness(t) if t.values else math.nan,
                     "running_best": best.get(t.number, math.nan), "improved": better.get(t.number, False),
                     "promoted": search.full_values(t) is not None,
                     "full_K_star_distance": full[0], "full_accuracy_distance": full[1],
                     "full_closeness": _num(t.user_attrs.get("full_closeness")),
                     "pareto": t.number in front, "seconds": _num(t.user_attrs.get("seconds")),
                     "run_seconds": cost, "error": str(t.user_attrs.get("error", ""))[:200]})
        for stage in ("screen", "full"):
            per_row += [{"trial": t.number, "stage": stage, **r} for r in t.user_attrs.get(f"{stage}_rows") or []
                        if isinstance(r, Mapping)]
    running = [t.number for t in trials if t.state == TrialState.RUNNING]
    reason = (f"cut short, trial{'s' if len(running) > 1 else ''} {', '.join(map(str, running))} left running by a "
              "worker that stopped before the rule did" if running else
              stopping.stop_reason(closeness, [search.proposed(t) for t in evaluated], len(search.counted(trials)), 0,
                                   spec.rule)
              or "cut short before the rule stopped it")
    return pd.DataFrame(rows), pd.DataFrame(per_row), reason


def second_rows(spec: StudySpec, roots: Mapping[str, str | Path], picked: Mapping[str, Any]) -> pd.DataFrame:
    """Per picked point (role) and row: K*, the maximal accuracy and their sd over the draws, from the
    second pass's runs under ``roots[role]``."""
    frames = []
    for role, root in roots.items():
        entry = picked.get(role, picked["stated"])
        frames.append(evaluation.row_results(spec.second, root).assign(role=role, trial=entry.get("trial"),
                                                                       point=entry.get("name", "")))
    return pd.concat(frames, ignore_index=True)


def convention_table(spec: StudySpec, roots: Mapping[str, str | Path]) -> pd.DataFrame:
    """Per role (scored reading), paper table and measurement convention pair
    (:mod:`bladefl.experiments.tables.conventions`), from the second pass's runs: the mean distances of K*
    and of the accuracy to the paper's over the table's rows, how many rows have each, and the mean spread
    of one run's K* and accuracy; NaN for a convention whose curves the runs did not record."""
    from bladefl.experiments.tables import conventions
    from bladefl.experiments.tables.tidy import collect

    rows = []
    for role, root in roots.items():
        table = collect(evaluation.summaries(root, spec.second), evaluation.row_members(spec.second.rows))
        ok = table[table.status == "ok"]
        for r in spec.second.rows:
            cell = ok[(ok.sweep == r.sweep) & (ok.cell == r.cell.key)]
            if len(cell):
                rows += [{"role": role, "table": r.table, "value": r.value, **d}
                         for d in conventions.cell_distances(cell, r.paper_K_star, r.paper_accuracy)]
    if not rows:
        return pd.DataFrame(columns=["role", "table", "k_star_from", "accuracy", "K_star_distance", "K_rows",
                                     "K_star_sd", "accuracy_distance", "accuracy_rows", "accuracy_sd_pct",
                                     "headline"])
    per_row = pd.DataFrame(rows)
    return pd.concat([conventions.distance_summary(part).assign(role=role)
                      for role, part in per_row.groupby("role", sort=False)], ignore_index=True)


def second_summary(rows: pd.DataFrame, spec: StudySpec) -> pd.DataFrame:
    """Per role: the two distances on the second pass (mean over rows) and the closeness to the targets."""
    out = []
    for role, part in rows.groupby("role", sort=False):
        k, acc = evaluation.distances(part)
        out.append({"role": role, "point": part.point.iloc[0], "trial": part.trial.iloc[0], "K_star_distance": k,
                    "accuracy_distance": acc, "closeness": evaluation.closeness(k, acc, spec.k_target,
                                                                                spec.accuracy_target),
                    "rows": len(part), "runs": int(part["runs"].min()) if "runs" in part else int(part.draws.min()),
                    "draws": int(part.draws.min())})
    return pd.DataFrame(out)


def per_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per role and table: the mean |K* - paper's| and |accuracy - paper's| over the table's rows."""
    out = []
    for (role, table), part in rows.groupby(["role", "table"], sort=False):
        k = part.K_star_distance.dropna()
        acc = part.accuracy_distance.dropna()
        out.append({"role": role, "table": table, "rows": len(part),
                    "K_star_distance": float(k.mean()) if len(k) else math.nan,
                    "accuracy_distance": float(acc.mean()) if len(acc) else math.nan})
    return pd.DataFrame(out, columns=["role", "table", "rows", "K_star_distance", "accuracy_distance"])


def repeated_table(spec: StudySpec, rows: pd.DataFrame) -> pd.DataFrame:
    """The cells the paper reports in several rows: its values and spread there, beside ours (each
    role's K* and accuracy at that cell, one value whatever the table)."""
    paper = evaluation.repeated_cells(spec.second.rows)
    for role, part in rows.groupby("role", sort=False):
        at = part.drop_duplicates("cell").set_index("cell")
        paper[f"K_star {role}"] = [float(at.K_star.get(c, math.nan)) for c in paper.cell]
        paper[f"max_accuracy {role}"] = [float(at.max_accuracy.get(c, math.nan)) for c in paper.cell]
    return paper


def importance_table(spec: StudySpec, trials: Sequence[Any]) -> pd.DataFrame:
    """fANOVA over the evaluated trials' screen distances (every trial has them), each with its permutation
    p-value over ``spec.permutations`` shuffles."""
    from optuna.trial import TrialState

    done = [t for t in trials if t.state == TrialState.COMPLETE]
    return importance.importances(done, [a.name for a in spec.space.axes], permutations=spec.permutations)


def screen_agreement(done: pd.DataFrame) -> dict[str, Any]:
    """How well the screen ranks the points as every row does: over the points scored on both (the
    promoted ones), Kendall's tau between their screen and their full distance, per distance and for the
    closeness the search minimises, with scipy's two-sided p-value (None with fewer than 3 points, or
    where a distance is the same for all)."""
    from scipy import stats

    both = done[done.promoted] if "promoted" in done else done.iloc[0:0]
    out: dict[str, Any] = {"points": int(len(both))}
    for name, screen in (("K_star", "K_star_distance"), ("accuracy", "accuracy_distance"), ("closeness", "closeness")):
        pair = both[[screen, f"full_{screen}"]].astype(float).dropna() if len(both) else both
        tau, p = stats.kendalltau(pair.iloc[:, 0], pair.iloc[:, 1]) if len(pair) >= 3 else (math.nan, math.nan)
        ok = math.isfinite(tau)
        out[name] = {"tau": float(tau) if ok else None, "p": float(p) if ok else None}
    return out


def calibrated_role(summary: pd.DataFrame) -> str:
    """The picked point the second pass brings nearest the targets (not the stated reading); the
    stated one when no other was picked."""
    others = summary[summary.role != "stated"]
    if others.empty:
        return "stated"
    return str(others.sort_values(["closeness", "role"]).role.iloc[0])


def _label(role: str, entry: Mapping[str, Any], differs: Mapping[str, Any]) -> str:
    name = entry.get("name") or ""
    settings = settings_words(differs)
    return f"{name}: {settings}" if name and name != role else settings


def _search_found(spec: StudySpec, trials: pd.DataFrame, done: pd.DataFrame, reason: str) -> dict[str, Any]:
    """The search's size, rule, coverage, origins and cost, as outcome.json holds them."""
    promoted = done[done.promoted] if "promoted" in done else done.iloc[0:0]
    named = done.point.fillna("").astype(str) != ""
    covering = ~named & (done.coverage.fillna("").astype(str) != "")
    return {"evaluated": int(len(done)), "promoted": int(len(promoted)), "promote": spec.promote,
            "space_size": spec.space.size,
            "failed": int(((trials.state == "fail") & trials.duplicate_of.isna()).sum()),
            "duplicates": int(trials.duplicate_of.notna().sum()), "stopped": reason,
            "rule": {"patience": spec.rule.patience, "tolerance": spec.rule.tolerance,
                     "max_trials": spec.rule.max_trials, "min_proposals": spec.rule.min_proposals},
            "coverage": {a: sorted({str(v) for v in done[a]}) if a in done else [] for a in spec.coverage},
            "points": [p.name for p in spec.space.points],
            "promoted_replicates": {str(k): int(v) for k, v in promoted.replicates.value_counts().items()}
            if "replicates" in promoted else {},
            "origins": {"named": int(named.sum()), "coverage": int(covering.sum()),
                        "searched": int((~named & ~covering).sum())},
            "seconds_per_screen": float(done.run_seconds[~done.promoted].mean())
            if len(done) and (~done.promoted).any() else math.nan,
            "seconds_per_full": float(promoted.run_seconds.mean()) if len(promoted) else math.nan}


def outcome(spec: StudySpec, trials: pd.DataFrame, reason: str, second: pd.DataFrame, rows: pd.DataFrame,
            importances: pd.DataFrame, picked: Mapping[str, Any], nearest: pd.DataFrame | None = None
            ) -> dict[str, Any]:
    """What the study found, as the pages say it: the stated and the calibrated readings' distances on
    the second pass overall and per table, whether the targets are met, the search's size and why it
    stopped, the paper's own floor, the settings that move a distance beyond their control, and per table
    the measurement convention nearest the paper (``nearest``: :func:`conventions.nearest`)."""
    done = trials[trials.state == "complete"]
    role = calibrated_role(second)
    by_role = second.set_index("role")

    def distances(where: str) -> dict[str, float]:
        row = by_role.loc[where]
        return {"K_star": float(row.K_star_distance), "accuracy": float(row.accuracy_distance)}

    tables_of = per_table(rows)
    cal_tables = tables_of[tables_of.role == role]
    chosen = picked.get(role, picked["stated"])
    differs = spec.space.point(chosen["values"]).differs(spec.space.stated)
    floor = evaluation.paper_floor(spec.second.rows)
    clears = importances[importances.clears] if len(importances) else importances
    first = {obj: g.sort_values("importance", ascending=False).iloc[0] for obj, g in clears.groupby("objective")}
    top = {obj: {"setting": str(r.setting), "importance": float(r.importance), "control": float(r.control),
                 "p_adjusted": float(r.p_adjusted)} for obj, r in first.items()}
    calibrated = by_role.loc[role]
    reached = bool(calibrated.K_star_distance <= spec.k_target and calibrated.accuracy_distance <= spec.accuracy_target)
    found = {
        "dataset": spec.dataset, "targets": {"K_star": spec.k_target, "accuracy": spec.accuracy_target},
        "tables": sorted({r.table for r in spec.full.rows}), "rows": len(spec.full.rows),
        "screen": {"rows": len(spec.screen.rows), "cells": len(spec.screen.cells()),
                   "tables": sorted({r.table for r in spec.screen.rows}), "draws": len(spec.screen.draws)},
        "search": _search_found(spec, trials, done, reason),
        "second_pass": {"draws": len(spec.second.draws), "stated": distances("stated"), "calibrated": distances(role)},
        "per_table": [{"table": r.table, "rows": int(r.rows), "K_star": float(r.K_star_distance),
                       "accuracy": float(r.accuracy_distance)} for r in cal_tables.itertuples()],
        "floor": {"K_star": floor[0], "accuracy": floor[1],
                  "cells": int(len(evaluation.repeated_cells(spec.second.rows)))},
        "calibrated": {"role": role, "values": dict(chosen["values"]), "differs": differs,
                       "trial": chosen.get("trial"), "label": _label(role, chosen, differs)},
        "reached": reached,
        "most_important": top,
        "importance_test": {"permutations": spec.permutations, "trials": int(len(done)), "alpha": importance.ALPHA},
        "screen_agreement": screen_agreement(done),
    }
    found["conclusion"] = conclusion(found)
    return found | {"conventions": [] if nearest is None else json.loads(nearest.to_json(orient="records"))}


def engine_yaml(spec: StudySpec, values: Mapping[str, Any], dataset: str, note: str) -> str:
    """The calibrated reading as an engine config (``config/engines/calibrated-<dataset>.yaml``): the
    study's engine with the reading's settings, its header saying where it comes from (written by
    the YAML dumper, comments included: a note is data, never YAML)."""
    from bladefl.fl.run_config import load_config

    point = spec.space.point(values)
    cfg = load_config(spec.full.engine, [*point.sets(), f"dataset={dataset}"]).to_dict()
    body = {k: cfg[k] for k in ENGINE_SECTIONS}
    safe = "".join(c if c.isprintable() and c.isascii() else " " for c in note.replace("\n", " "))
    header = "".join(f"# {line}\n" for line in _wrap(safe))
    return header + yaml.safe_dump(body, sort_keys=False, default_flow_style=None)


def _wrap(text: str, width: int = 100) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]


def write_tables(spec: StudySpec, trials: Sequence[Any], picked: Mapping[str, Any], roots: Mapping[str, str | Path],
                 out: str | Path, trials_root: str | Path | None = None) -> list[Path]:
    """Every table of the study into ``out``: trials.csv, trial_rows.csv, second_rows.csv, second.csv,
    per_table.csv, repeated.csv, importances.csv, conventions.csv (:func:`convention_table`), outcome.json
    (with the nearest convention per table, from conventions.csv), calibrated-<dataset>.yaml."""
    from bladefl.experiments.tables import conventions

    out = Path(out)
    table, trial_rows, reason = trials_table(spec, trials, trials_root)
    second = second_rows(spec, roots, picked)
    summary = second_summary(second, spec)
    importances = importance_table(spec, trials)
    by_convention = convention_table(spec, roots)
    near = conventions.nearest(by_convention, evaluation.table_spreads(spec.second.rows))
    found = outcome(spec, table, reason, summary, second, importances, picked, near)
    dataset = spec.dataset
    note = (f"Engine \"calibrated-{dataset}\": the reading of the paper's unstated settings that the calibration "
            f"study (config/calibration.yaml, docs/calibration.md) brings nearest the paper's "
            f"{', '.join(found['tables'])} on {dataset}: "
            + (", ".join(f"{k} = {v}" for k, v in found["calibrated"]["differs"].items()) or "the stated reading")
            + f" (second pass: K* {found['second_pass']['calibrated']['K_star']:.2f} rounds, accuracy "
            f"{found['second_pass']['calibrated']['accuracy']:.2f} points per row from the paper's).")
    files = {"trials.csv": table, "trial_rows.csv": trial_rows, "second_rows.csv": second, "second.csv": summary,
             "per_table.csv": per_table(second), "repeated.csv": repeated_table(spec, second),
             "importances.csv": importances, "conventions.csv": by_convention}
    written = []
    for name, frame in files.items():
        atomic.write_csv(out / name, frame)
        written.append(out / name)
    atomic.write_json(out / "outcome.json", found)
    atomic.write_text(out / f"calibrated-{dataset}.yaml",
                      engine_yaml(spec, found["calibrated"]["values"], dataset, note))
    return [*written, out / "outcome.json", out / f"calibrated-{dataset}.yaml"]
