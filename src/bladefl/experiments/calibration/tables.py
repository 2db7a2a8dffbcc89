"""The calibration's tables, read by its report page and the front page: the search (every trial,
its rows), the second pass per picked point and row (ours beside the paper's, with the spread over
draws), the settings' importances, the outcome (how close the stated and the calibrated readings get,
whether the targets are reached, what moves the distances most) and the calibrated engine config.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from bladefl.core import atomic
from bladefl.experiments.calibration import evaluation, search, study
from bladefl.experiments.calibration.study import StudySpec

ENGINE_SECTIONS = ("dataset", "partition", "model", "train", "time", "lazy", "privacy", "chain", "normalize", "seed")


def second_rows(spec: StudySpec, roots: Mapping[str, str | Path], picked: Mapping[str, Any]) -> pd.DataFrame:
    """Per picked point (role) and row: K*, the maximal accuracy and their sd over the draws, from the
    second pass's runs under ``roots[role]``."""
    frames = []
    for role, root in roots.items():
        entry = picked.get(role, picked["stated"])
        frames.append(evaluation.row_results(spec.second, root).assign(role=role, trial=entry.get("trial"),
                                                                       point=entry.get("name", "")))
    return pd.concat(frames, ignore_index=True)


def second_summary(rows: pd.DataFrame, spec: StudySpec) -> pd.DataFrame:
    """Per role: the two distances on the second pass (mean over rows) and the closeness to the targets."""
    out = []
    for role, part in rows.groupby("role", sort=False):
        k, acc = evaluation.distances(part)
        out.append({"role": role, "point": part.point.iloc[0], "trial": part.trial.iloc[0], "K_star_distance": k,
                    "accuracy_distance": acc, "closeness": evaluation.closeness(k, acc, spec.k_target,
                                                                                spec.accuracy_target),
                    "rows": len(part), "draws": int(part.draws.min())})
    return pd.DataFrame(out)


def importance_table(spec: StudySpec, storage: str | Path) -> pd.DataFrame:
    st = search.open_study(storage, study.study_name(spec), spec.seed)
    found = search.importances(st, [a.name for a in spec.space.axes])
    return pd.DataFrame([{"objective": obj, "setting": p, "importance": v}
                         for obj, per in found.items() for p, v in per.items()],
                        columns=["objective", "setting", "importance"])


def calibrated_role(summary: pd.DataFrame) -> str:
    """The picked point the second pass brings nearest the targets (not the stated reading); the
    stated one when no other was picked."""
    others = summary[summary.role != "stated"]
    if others.empty:
        return "stated"
    return str(others.sort_values(["closeness", "role"]).role.iloc[0])


def outcome(spec: StudySpec, trials: pd.DataFrame, second: pd.DataFrame, importances: pd.DataFrame,
            picked: Mapping[str, Any]) -> dict[str, Any]:
    """What the study found, as the pages say it: the stated and the calibrated readings' distances
    on each pass, whether the targets are met, the closest point of the search, the setting that
    moves each distance most."""
    done = trials[trials.state == "complete"]
    role = calibrated_role(second)
    by_role = second.set_index("role")

    def pass_distances(where: str) -> dict[str, float]:
        row = by_role.loc[where]
        return {"K_star": float(row.K_star_distance), "accuracy": float(row.accuracy_distance)}

    stated_first = done[done.point == "stated"]
    closest = done.sort_values(["closeness", "trial"]).iloc[0] if len(done) else None
    top = {obj: (str(g.sort_values("importance", ascending=False).setting.iloc[0]),
                 float(g.importance.max())) for obj, g in importances.groupby("objective")} if len(importances) else {}
    calibrated = by_role.loc[role]
    chosen = picked.get(role, picked["stated"])["values"]
    reached = bool(calibrated.K_star_distance <= spec.k_target and calibrated.accuracy_distance <= spec.accuracy_target)
    return {
        "dataset": spec.first.dataset, "targets": {"K_star": spec.k_target, "accuracy": spec.accuracy_target},
        "tables": sorted(set(r.table for r in spec.first.rows)), "rows": len(spec.first.rows),
        "first_pass": {"draws": len(spec.first.draws), "window": spec.first.window, "trials": int(len(done)),
                       "failed": int((trials.state == "fail").sum()), "points": [p.name for p in spec.space.points],
                       "stated": ({"K_star": float(stated_first.K_star_distance.iloc[0]),
                                   "accuracy": float(stated_first.accuracy_distance.iloc[0])}
                                  if len(stated_first) else None),
                       "closest": ({"trial": int(closest.trial), "point": closest.point, "differs": closest.differs,
                                    "K_star": float(closest.K_star_distance),
                                    "accuracy": float(closest.accuracy_distance)} if closest is not None else None),
                       "seconds_per_trial": float(done.run_seconds.mean()) if len(done) else math.nan},
        "second_pass": {"draws": len(spec.second.draws), "stated": pass_distances("stated"),
                        "calibrated": pass_distances(role)},
        "calibrated": {"role": role, "values": dict(chosen),
                       "differs": spec.space.point(chosen).differs(spec.space.stated),
                       "trial": picked.get(role, {}).get("trial")},
        "reached": reached,
        "most_important": {obj: {"setting": s, "importance": v} for obj, (s, v) in top.items()},
    }


def engine_yaml(spec: StudySpec, values: Mapping[str, Any], dataset: str, note: str) -> str:
    """The calibrated reading as an engine config (``config/engines/calibrated-<dataset>.yaml``): the
    study's engine with the reading's settings, its header saying where it comes from."""
    from bladefl.fl.run_config import load_config

    point = spec.space.point(values)
    cfg = load_config(spec.first.engine, [*point.sets(), f"dataset={dataset}"]).to_dict()
    body = {k: cfg[k] for k in ENGINE_SECTIONS}
    header = "".join(f"# {line}\n" for line in note.splitlines())
    return header + yaml.safe_dump(body, sort_keys=False, default_flow_style=None)


def write_tables(spec: StudySpec, storage: str | Path, picked: Mapping[str, Any], roots: Mapping[str, str | Path],
                 out: str | Path, trials_root: str | Path | None = None) -> list[Path]:
    """Every table of the study into ``out``: trials.csv, trial_rows.csv, second_rows.csv,
    second.csv, importances.csv, outcome.json, calibrated-<dataset>.yaml."""
    out = Path(out)
    trials, trial_rows = study.trials_table(spec, storage, trials_root)
    second = second_rows(spec, roots, picked)
    summary = second_summary(second, spec)
    importances = importance_table(spec, storage)
    found = outcome(spec, trials, summary, importances, picked)
    dataset = spec.first.dataset
    note = (f"Engine \"calibrated-{dataset}\": the reading of the paper's unstated settings that the calibration "
            f"study\n(config/calibration.yaml, docs/calibration.md) brings nearest the paper's "
            f"{', '.join(found['tables'])} on {dataset}:\n"
            + (", ".join(f"{k} = {v}" for k, v in found["calibrated"]["differs"].items()) or "the stated reading")
            + f" (second pass: K* {found['second_pass']['calibrated']['K_star']:.2f} rounds, accuracy "
            f"{found['second_pass']['calibrated']['accuracy']:.2f} points per row from the paper's).")
    files = {"trials.csv": trials, "trial_rows.csv": trial_rows, "second_rows.csv": second, "second.csv": summary,
             "importances.csv": importances}
    written = []
    for name, frame in files.items():
        atomic.write_csv(out / name, frame)
        written.append(out / name)
    atomic.write_json(out / "outcome.json", found)
    atomic.write_text(out / f"calibrated-{dataset}.yaml",
                      engine_yaml(spec, found["calibrated"]["values"], dataset, note))
    return [*written, out / "outcome.json", out / f"calibrated-{dataset}.yaml"]
