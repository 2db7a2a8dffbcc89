"""A calibration study of one dataset, as the workflow hands it to its jobs: its spec (a JSON file the
workflow writes from the config's ``calibration`` block), the first pass (the search), the choice of
the points run again, and the second pass (those points on more draws over the whole K range).

Files under the study's folder (``results/calibration/<dataset>/``): ``study.journal`` (Optuna's
storage, shared by the workers), ``trials/<point key>/`` (the first pass's runs of each reading),
``picked.json`` (the points run again, by role: ``stated``, ``best1``, ``best2``, ...) and
``rerun/<role>/`` (their runs).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import optuna

from bladefl.core import atomic, strict_yaml
from bladefl.experiments.calibration import evaluation, search
from bladefl.experiments.calibration.evaluation import Plan
from bladefl.experiments.calibration.space import Point, Space, space, space_errors
from bladefl.experiments.plan.grid import members_to_json

DEFAULTS: dict[str, Any] = {"tables": [], "window": 2, "draws": 1, "searched": 12, "sampler_seed": 0, "workers": 1,
                            "targets": {"K_star": 1.0, "accuracy": 3.0}, "rerun": {"points": 2, "draws": 3}}


def block_errors(block: Mapping[str, Any], table_names: list[str]) -> list[str]:
    """What is wrong with a ``calibration`` block, field by field (its space and points too)."""
    errors = space_errors(block)
    for name in block.get("tables") or []:
        if name not in table_names:
            errors.append(f"calibration.tables: {name!r} is not one of the paper's tables {table_names}")
    return errors


@dataclass(frozen=True)
class StudySpec:
    """What a calibration of one dataset runs and compares."""

    first: Plan  # the search's pass: the K window, the first draws
    second: Plan  # the points run again: every feasible K, more draws
    space: Space
    target: int  # trials the study holds: its named points and the searched ones
    seed: int
    k_target: float  # rounds per row the calibration aims for
    accuracy_target: float  # points per row
    rerun_points: int
    digest: str = ""  # of the spec (its data folder aside): a changed study is a new study in the journal

    @property
    def roles(self) -> list[str]:
        return ["stated", *(f"best{i}" for i in range(1, self.rerun_points + 1))]


def spec_json(config: Mapping[str, Any], tables: list[dict], dataset: str, engine: str, data_dir: str) -> str:
    """The study spec of ``dataset`` as JSON (what the workflow hands each job): the calibration block
    with its defaults, the grid's base and sweeps, t_sum, the paper's tables, the engine and data."""
    block = {**DEFAULTS, **config["calibration"]}
    block["rerun"] = {**DEFAULTS["rerun"], **block.get("rerun", {})}
    block["targets"] = {**DEFAULTS["targets"], **block.get("targets", {})}
    partition = {k: v for k, v in config.get("partition", {}).items() if k not in ("seed", "seeds")}
    return json.dumps({"dataset": dataset, "engine": engine, "data_dir": data_dir, "t_sum": config.get("t_sum", 100),
                       "base_sets": [f"partition.{k}={v}" for k, v in sorted(partition.items())],
                       "grid": {"base": config.get("base", {}), "sweeps": config.get("sweeps", [])},
                       "tables": tables, "calibration": block}, sort_keys=True, indent=1, default=str)


def load_spec(text: str) -> StudySpec:
    """The study spec from :func:`spec_json`'s JSON, checked (ValueError naming the field)."""
    doc = json.loads(text)
    block = doc["calibration"]
    errors = block_errors(block, [t["table"] for t in doc["tables"]])
    if errors:
        raise ValueError("invalid calibration: " + "; ".join(errors))
    found = evaluation.rows(doc["grid"], doc["tables"], block["tables"], doc["dataset"])
    if not found:
        raise ValueError(f"calibration.tables {block['tables']}: none of their rows is a cell of the grid's sweeps")
    t_sum = float(doc["t_sum"])
    errors = partition_pairs_errors(block["space"], doc["engine"], [str(x) for x in doc.get("base_sets", [])],
                                    sorted({r.cell.N for r in found}))
    if errors:
        raise ValueError("invalid calibration: " + "; ".join(errors))

    def plan(window: int | None, draws: int) -> Plan:
        return Plan(doc["dataset"], doc["engine"], t_sum, tuple(found), window, tuple(range(draws)), doc["data_dir"],
                    tuple(str(s) for s in doc.get("base_sets", [])))

    sp = space(block)
    digest = hashlib.sha256(json.dumps({k: v for k, v in doc.items() if k != "data_dir"}, sort_keys=True)
                            .encode()).hexdigest()[:10]
    return StudySpec(first=plan(int(block["window"]), int(block["draws"])),
                     second=plan(None, int(block["rerun"]["draws"])), space=sp,
                     target=len(sp.points) + int(block["searched"]), seed=int(block["sampler_seed"]),
                     k_target=float(block["targets"]["K_star"]), accuracy_target=float(block["targets"]["accuracy"]),
                     rerun_points=int(block["rerun"]["points"]), digest=digest)


def partition_pairs_errors(axes: Mapping[str, Any], engine: str, base_sets: list[str], Ns: list[int]) -> list[str]:
    """Each value of the ``partition`` axis must make a partition with each value of ``samples`` (each
    N of the rows): a pair that cannot (``classes3`` with 512 samples) is refused before any trial."""
    from bladefl.data.datasets import TRAIN_SIZE
    from bladefl.data.partition import partition_errors
    from bladefl.experiments.calibration.space import overrides
    from bladefl.fl.run_config import load_config

    base = dataclasses.asdict(load_config(engine, base_sets).partition)
    parts = (axes.get("partition") or {}).get("values") or [None]
    sizes = (axes.get("samples") or {}).get("values") or [base["n"]]
    errors = []
    for part in parts:
        fields = {k.split(".", 1)[1]: v for k, v in (overrides("partition", part) if part else {}).items()}
        for n in sizes:
            for N in Ns:
                wrong = partition_errors(SimpleNamespace(**{**base, **fields, "n": n, "N": N}), train_size=TRAIN_SIZE)
                if wrong:
                    errors.append(f"calibration.space: partition {part} with samples {n} (N={N}): {wrong[0]}")
                    break
    return errors


def study_name(spec: StudySpec) -> str:
    """The study's name in its journal: the dataset and the spec's digest (a study whose spec changed
    starts again beside the old one, whose trials stay in the journal)."""
    return f"calibration-{spec.first.dataset}-{spec.digest}"


def spec_from_files(config: Mapping[str, Any], paper_values: str | Path, dataset: str, engine: str,
                    data_dir: str) -> str:
    """:func:`spec_json` with the paper's tables read from their file (``config/paper_values.yaml``)."""
    tables = strict_yaml.read_file(paper_values)["tables"]
    return spec_json(config, tables, dataset, engine, data_dir)


def members_json(spec: StudySpec) -> str:
    """The study's rows as the grid's sweep members (JSON), for the tidy tables and verdicts."""
    return members_to_json(evaluation.row_members(spec.second.rows))


def first_pass(spec: StudySpec, storage: str | Path, trials_root: str | Path, worker: str, *, threads: int = 0,
               log: Callable[[str], None] = print) -> int:
    """One worker of the search: trials until the study holds its target; returns how many it ran."""
    study = search.open_study(storage, study_name(spec), spec.seed, worker)

    def evaluate(point: Point) -> search.Outcome:
        root = Path(trials_root) / point.key
        seconds = evaluation.run(spec.first, point, root, threads=threads)
        results = evaluation.row_results(spec.first, root)
        cost = evaluation.run_seconds(spec.first, root)
        return search.Outcome(evaluation.distances(results), {
            "key": point.key, "seconds": round(seconds, 1), "run_seconds": round(cost, 1),
            "rows": results.to_dict(orient="records")})

    return search.run_worker(study, spec.space, storage, worker, spec.target, evaluate, log)


def pick(spec: StudySpec, storage: str | Path) -> dict[str, dict[str, Any]]:
    """The points run again, by role: the stated reading, then the Pareto front's points nearest the
    targets (:func:`bladefl.experiments.calibration.evaluation.closeness`), the stated reading left out."""
    study = search.open_study(storage, study_name(spec), spec.seed)
    front = search.pareto(search.complete(study))
    stated = spec.space.stated
    def near(t: optuna.trial.FrozenTrial) -> tuple[float, int]:
        return evaluation.closeness(t.values[0], t.values[1], spec.k_target, spec.accuracy_target), t.number

    ranked = sorted((t for t in front if spec.space.point(t.params).key != stated.key), key=near)
    if not ranked:  # the stated reading alone is on the front: the nearest other points
        ranked = sorted((t for t in search.complete(study) if spec.space.point(t.params).key != stated.key), key=near)
    picked: dict[str, dict[str, Any]] = {"stated": {"values": dict(stated.values), "trial": None, "name": "stated"}}
    for role, t in zip(spec.roles[1:], ranked, strict=False):
        picked[role] = {"values": dict(t.params), "trial": t.number, "name": t.user_attrs.get("point", "")}
    return picked


def second_pass(spec: StudySpec, picked: Mapping[str, Mapping[str, Any]], role: str, root: str | Path, *,
                threads: int = 0) -> float:
    """Run one picked point (``role``) on the second pass's draws over every feasible K, under ``root``
    (a role the first pass left empty, with fewer front points than roles, runs the stated reading)."""
    entry = picked.get(role, picked["stated"])
    point = spec.space.point(entry["values"], entry.get("name") or role)
    return evaluation.run(spec.second, point, root, threads=threads)


def trials_table(spec: StudySpec, storage: str | Path, trials_root: str | Path | None = None) -> tuple[Any, Any]:
    """Two tables of the search: one row per trial (its state, named point, settings, distances,
    on the Pareto front or not, its cost: the trial's wall and what its runs cost to compute, read
    from their folders under ``trials_root`` where given, else as the trial recorded it) and one per
    completed trial and row (ours beside the paper's)."""
    import pandas as pd

    study = search.open_study(storage, study_name(spec), spec.seed)
    trials = study.get_trials(deepcopy=False)
    front = {t.number for t in search.pareto(search.complete(study))}
    stated = spec.space.stated
    rows, per_row = [], []
    for t in trials:
        if t.state == optuna.trial.TrialState.WAITING:
            continue
        values = t.values if t.values else [math.nan, math.nan]
        point = spec.space.point(t.params)
        rows.append({"trial": t.number, "state": t.state.name.lower(), "point": t.user_attrs.get("point", ""),
                     "key": point.key, "retry_of": t.user_attrs.get("retry_of", math.nan), **dict(t.params),
                     "differs": "; ".join(f"{k}={v}" for k, v in point.differs(stated).items()) or "(stated)",
                     "K_star_distance": values[0], "accuracy_distance": values[1],
                     "closeness": evaluation.closeness(values[0], values[1], spec.k_target, spec.accuracy_target)
                     if t.values else math.nan,
                     "pareto": t.number in front, "seconds": t.user_attrs.get("seconds", math.nan),
                     "run_seconds": (evaluation.run_seconds(spec.first, Path(trials_root) / point.key)
                                     if trials_root is not None and t.values else
                                     t.user_attrs.get("run_seconds", math.nan)),
                     "error": t.user_attrs.get("error", "")})
        per_row += [{"trial": t.number, **r} for r in t.user_attrs.get("rows", [])]
    return pd.DataFrame(rows), pd.DataFrame(per_row)


def write_picked(path: str | Path, picked: Mapping[str, Any]) -> None:
    atomic.write_json(path, dict(picked))
