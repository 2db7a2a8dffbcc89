"""A calibration study of one dataset, as the workflow hands it to its jobs: its spec (a JSON file the
workflow writes from the config's ``calibration`` block), the search (every trial on the screen, the
best on every row: successive halving), the choice of the points run again, and the second pass
(those points on the second pass's draws; runs the search already made are taken, not trained again).

Files under the study's folder (``results/calibration/<dataset>/``): ``study.journal`` (Optuna's
storage, shared by the workers), ``trials/<point key>/`` (each reading's runs), ``picked.json`` (the
points run again, by role: ``stated``, ``best1``, ``best2``, ...) and ``rerun/<role>/`` (their runs).

This module imports no Optuna at import time: the workflow reads specs when it is parsed, on
machines that may not carry Optuna (the GPU machine's script runs the grid only).
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bladefl.core import atomic, strict_yaml
from bladefl.core.values import is_finite, is_int
from bladefl.experiments.calibration import evaluation, stopping
from bladefl.experiments.calibration.evaluation import Plan
from bladefl.experiments.calibration.space import AXES, Point, Space, space, space_errors
from bladefl.experiments.plan.config_checks import MAX_T_SUM
from bladefl.experiments.plan.grid import members_to_json

if TYPE_CHECKING:
    import optuna
    import pandas as pd

    from bladefl.experiments.calibration.stopping import StopRule

DEFAULTS: dict[str, Any] = {"tables": [], "draws": 2, "promote": 4, "coverage": ["partition"], "sampler_seed": 0,
                            "workers": 1, "stop": {"patience": 8, "tolerance": 0.05, "max_trials": 60},
                            "targets": {"K_star": 1.0, "accuracy": 3.0}, "rerun": {"points": 2, "draws": 2}}
# The shuffles behind the importances' p-values: an analysis setting, outside DEFAULTS so a study's digest
# (its identity in the journal) does not change with it.
PERMUTATIONS = 200
# Bounds of the block's numbers (checked before any trial: a spec from elsewhere is hostile).
LIMITS = {"draws": (2, 100), "promote": (1, 100), "workers": (1, 256), "sampler_seed": (0, 2**31 - 1),
          "stop.patience": (1, 1000), "stop.max_trials": (1, 10_000), "rerun.points": (1, 20),
          "rerun.draws": (1, 100)}


def permutations_of(block: Mapping[str, Any]) -> Any:  # noqa: ANN401 - checked by _number_errors
    """The block's ``importance.permutations`` (:data:`PERMUTATIONS` where unsaid; None where the block's
    ``importance`` is no mapping)."""
    importance = block.get("importance", {})
    return importance.get("permutations", PERMUTATIONS) if isinstance(importance, Mapping) else None


def _number_errors(block: Mapping[str, Any]) -> list[str]:
    errors = []
    for field, (lo, hi) in LIMITS.items():
        node: Any = block
        for part in field.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if not (is_int(node) and lo <= node <= hi):
            errors.append(f"calibration.{field} must be an integer in {lo}..{hi} (got {node!r})")
    stop = block.get("stop")
    least = stop.get("min_proposals", 1) if isinstance(stop, Mapping) else 1
    if not (is_int(least) and 1 <= least <= 10_000):
        errors.append(f"calibration.stop.min_proposals must be an integer in 1..10000 (got {least!r})")
    tol: Any = stop.get("tolerance") if isinstance(stop, Mapping) else None
    if not (is_finite(tol) and 0 <= tol <= 100):
        errors.append(f"calibration.stop.tolerance must be a number in [0, 100] (got {tol!r})")
    targets = block.get("targets")
    for name in ("K_star", "accuracy"):
        v: Any = targets.get(name) if isinstance(targets, Mapping) else None
        if not (is_finite(v) and 0 < v <= 1000):
            errors.append(f"calibration.targets.{name} must be a number in (0, 1000] (got {v!r})")
    coverage = block.get("coverage")
    if not (isinstance(coverage, list) and all(isinstance(a, str) for a in coverage)):
        errors.append(f"calibration.coverage must be a list of axes (got {coverage!r})")
    else:
        axes: Any = block.get("space") if isinstance(block.get("space"), Mapping) else {}
        errors += [f"calibration.coverage: {a!r} is not an axis of calibration.space {sorted(axes)}"
                   for a in coverage if a not in axes]
    for gone in ("window", "searched"):
        if gone in block:
            errors.append(f"calibration.{gone}: no longer a setting (every feasible K is run; the search stops on "
                          "calibration.stop)")
    most: Any = block.get("max_draws", block.get("draws"))  # outside DEFAULTS: unset, a study of before it
    if is_int(block.get("draws")) and not (is_int(most) and block["draws"] <= most <= 100):
        errors.append(f"calibration.max_draws must be an integer in draws..100 (got {most!r})")
    importance: Any = block.get("importance", {})
    shuffles = permutations_of(block)
    if not (is_int(shuffles) and 1 <= shuffles <= 10_000) or set(importance or {}) - {"permutations"}:
        errors.append(f"calibration.importance must be {{permutations: an integer in 1..10000}} (got {importance!r})")
    allowed = sorted({*DEFAULTS, "space", "points", "first", "importance", "max_draws"})
    unknown = sorted(set(block) - {*allowed, "window", "searched"})
    if unknown:
        errors.append(f"calibration: unknown field(s) {[str(u)[:40] for u in unknown]}; allowed: {allowed}")
    return errors


def block_errors(block: Mapping[str, Any], table_names: list[str]) -> list[str]:
    """What is wrong with a ``calibration`` block, field by field (its numbers, space and points too)."""
    errors = _number_errors(block) + space_errors(block)
    tables = block.get("tables")
    if not isinstance(tables, list):
        errors.append(f"calibration.tables must be a list of the paper's tables {table_names} (got {tables!r})")
    else:
        for name in tables:
            if name not in table_names:
                errors.append(f"calibration.tables: {name!r} is not one of the paper's tables {table_names}")
    return errors


@dataclass(frozen=True)
class StudySpec:
    """What a calibration of one dataset runs and compares."""

    screen: Plan  # what every trial runs: the screen's rows, the study's draws, every feasible K
    full: Plan  # what a promoted trial runs: every row
    second: Plan  # the points run again: every row on the second pass's draws
    space: Space
    rule: StopRule
    promote: int  # successive halving: the best 1/promote of the screened points go on to every row
    coverage: tuple[str, ...]  # axes whose every value the search visits
    seed: int
    k_target: float  # rounds per row the calibration aims for
    accuracy_target: float  # points per row
    rerun_points: int
    max_draws: int = 0  # where two draws of a row differ by more than the targets, up to this many (0: draws)
    permutations: int = 200  # shuffles of the distances behind each importance's p-value (not in the digest)
    digest: str = ""  # of the spec (its data folder aside): a changed study is a new study in the journal

    @property
    def dataset(self) -> str:
        return self.full.dataset

    @property
    def roles(self) -> list[str]:
        return ["stated", *(f"best{i}" for i in range(1, self.rerun_points + 1))]


def _with_defaults(block: Mapping[str, Any]) -> dict[str, Any]:
    out = {**DEFAULTS, **block}
    for part in ("stop", "targets", "rerun"):
        given = block.get(part, {})
        out[part] = {**DEFAULTS[part], **given} if isinstance(given, Mapping) else given
    return out


def spec_json(config: Mapping[str, Any], tables: list[dict], dataset: str, engine: str, data_dir: str) -> str:
    """The study spec of ``dataset`` as JSON (what the workflow hands each job): the calibration block
    with its defaults, the grid's base and sweeps, t_sum, the paper's tables, the engine and data."""
    block = _with_defaults(config["calibration"])
    partition = {k: v for k, v in config.get("partition", {}).items() if k not in ("seed", "seeds")}
    return json.dumps({"dataset": dataset, "engine": engine, "data_dir": data_dir, "t_sum": config.get("t_sum", 100),
                       "base_sets": [f"partition.{k}={v}" for k, v in sorted(partition.items())],
                       "grid": {"base": config.get("base", {}), "sweeps": config.get("sweeps", [])},
                       "tables": tables, "calibration": block}, sort_keys=True, indent=1, default=str)


def load_spec(text: str) -> StudySpec:
    """The study spec from :func:`spec_json`'s JSON, checked (ValueError naming the field) before any run."""
    from bladefl.experiments.calibration.stopping import StopRule, proposal_floor

    doc = json.loads(text)
    if not isinstance(doc, Mapping) or not isinstance(doc.get("calibration"), Mapping):
        raise ValueError("calibration spec: a mapping with a `calibration` block is needed")
    block = _with_defaults(doc["calibration"])
    if not isinstance(doc.get("tables"), list) or not all(isinstance(t, Mapping) and "table" in t
                                                          for t in doc["tables"]):
        raise ValueError("calibration spec: `tables` must be the paper's tables (a list of mappings)")
    errors = block_errors(block, [t["table"] for t in doc["tables"]])
    t_sum: Any = doc.get("t_sum")
    if not (is_finite(t_sum) and 0 < t_sum <= MAX_T_SUM):
        errors.append(f"t_sum must be a number in (0, {MAX_T_SUM:g}] (got {t_sum!r})")
    if errors:
        raise ValueError("invalid calibration: " + "; ".join(errors))
    found = evaluation.rows(doc["grid"], doc["tables"], block["tables"], doc["dataset"])
    if not found:
        raise ValueError(f"calibration.tables {block['tables']}: none of their rows is a cell of the grid's sweeps")
    t_sum = float(t_sum)
    base_sets = [str(x) for x in doc.get("base_sets", [])]
    errors = partition_pairs_errors(block["space"], doc["engine"], base_sets, sorted({r.cell.N for r in found}))
    if errors:
        raise ValueError("invalid calibration: " + "; ".join(errors))

    def plan(rows: Sequence[evaluation.Row], draws: int) -> Plan:
        return Plan(doc["dataset"], doc["engine"], t_sum, tuple(rows), tuple(range(draws)), doc["data_dir"],
                    tuple(base_sets))

    sp = space(block)
    identity = {k: v for k, v in doc.items() if k != "data_dir"}
    if block.get("max_draws", block["draws"]) == block["draws"]:  # its neutral value: the study of before it
        identity["calibration"] = {k: v for k, v in doc["calibration"].items() if k != "max_draws"}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:10]
    stop = block["stop"]
    return StudySpec(screen=plan(evaluation.screen_rows(found), int(block["draws"])),
                     full=plan(found, int(block["draws"])), second=plan(found, int(block["rerun"]["draws"])), space=sp,
                     rule=StopRule(int(stop["patience"]), float(stop["tolerance"]), int(stop["max_trials"]),
                                   int(stop.get("min_proposals", proposal_floor(len(sp.axes))))),
                     promote=int(block["promote"]), coverage=tuple(block["coverage"]),
                     seed=int(block["sampler_seed"]), k_target=float(block["targets"]["K_star"]),
                     accuracy_target=float(block["targets"]["accuracy"]), rerun_points=int(block["rerun"]["points"]),
                     max_draws=int(block.get("max_draws", block["draws"])),
                     permutations=int(permutations_of(block)), digest=digest)


def partition_pairs_errors(axes: Mapping[str, Any], engine: str, base_sets: list[str], Ns: list[int]) -> list[str]:
    """Each value of the ``partition`` axis must make a partition with each value of ``samples`` (each
    N of the rows): a pair that cannot (``classes3`` with 512 samples) is refused before any trial."""
    from bladefl.data.datasets import train_size
    from bladefl.data.partition import partition_errors
    from bladefl.experiments.calibration.space import overrides
    from bladefl.fl.run_config import load_config

    cfg = load_config(engine, base_sets)
    base, size = cfg.partition.record(), train_size(cfg.dataset)
    parts = (axes.get("partition") or {}).get("values") or [None]
    sizes = (axes.get("samples") or {}).get("values") or [base["n"]]
    errors = []
    for part in parts:
        fields = {k.split(".", 1)[1]: v for k, v in (overrides("partition", part) if part else {}).items()}
        for n in sizes:
            for N in Ns:
                wrong = partition_errors({**base, **fields, "n": n, "N": N}, train_size=size)
                if wrong:
                    errors.append(f"calibration.space: partition {part} with samples {n} (N={N}): {wrong[0]}")
                    break
    return errors


def study_name(spec: StudySpec) -> str:
    """The study's name in its journal: the dataset and the spec's digest (a study whose spec changed
    starts again beside the old one, whose trials stay in the journal)."""
    return f"calibration-{spec.dataset}-{spec.digest}"


def spec_from_files(config: Mapping[str, Any], paper_values: str | Path, dataset: str, engine: str,
                    data_dir: str) -> str:
    """:func:`spec_json` with the paper's tables read from their file (``config/paper_values.yaml``)."""
    tables = strict_yaml.read_file(paper_values)["tables"]
    return spec_json(config, tables, dataset, engine, data_dir)


def members_json(spec: StudySpec) -> str:
    """The study's rows as the grid's sweep members (JSON), for the tidy tables and verdicts."""
    return members_to_json(evaluation.row_members(spec.second.rows))


def _scored(results: pd.DataFrame, spec: StudySpec) -> tuple[tuple[float, float], list[dict[str, Any]], float]:
    k, acc = evaluation.distances(results)
    return (k, acc), results.to_dict(orient="records"), evaluation.closeness(k, acc, spec.k_target,
                                                                              spec.accuracy_target)


def first_pass(spec: StudySpec, storage: str | Path, trials_root: str | Path, worker: str, *, threads: int = 0,
               log: Callable[[str], None] = print) -> tuple[int, str]:
    """One worker of the search: trials until the stopping rule holds; returns how many it ran and why
    the search stopped. Each trial runs the screen; the best 1/``promote`` of the screened points (and
    the stated reading, the yardstick) go on to every row."""
    from bladefl.experiments.calibration import search

    study = search.open_study(storage, study_name(spec), spec.seed, worker)

    def evaluate(point: Point, trial: optuna.Trial) -> search.Outcome:
        root = Path(trials_root) / point.key
        targets = (spec.k_target, spec.accuracy_target)
        screen, seconds, results = evaluation.run_enough(spec.screen, point, root, targets, spec.max_draws,
                                                         threads=threads)
        values, rows, closeness = _scored(results, spec)
        trial.set_user_attr("screen_closeness", closeness)
        attrs: dict[str, Any] = {"key": point.key, "screen_rows": rows, "screen_seconds": round(seconds, 1),
                                 "screen_run_seconds": round(evaluation.run_seconds(screen, root), 1)}
        with search._lock(storage):
            others = [search.screen_closeness(t) for t in study.get_trials(deepcopy=False)
                      if t.number != trial.number and "screen_closeness" in t.user_attrs]
        if point.name == "stated" or stopping.promoted(closeness, others, spec.promote):
            log(f"trial {trial.number}: screen closeness {closeness:.2f}, on to every row")
            every, more, results = evaluation.run_enough(spec.full.with_draws(len(screen.draws)), point, root,
                                                         targets, spec.max_draws, threads=threads)
            seconds += more
            full, full_rows, full_closeness = _scored(results, spec)
            attrs |= {"full_values": list(full), "full_rows": full_rows, "full_closeness": full_closeness,
                      "full_run_seconds": round(evaluation.run_seconds(every, root), 1)}
        attrs["seconds"] = round(seconds, 1)
        return search.Outcome(values, attrs)

    return search.run_worker(study, spec.space, storage, worker, spec.rule, evaluate, log, spec.coverage)


def pick(spec: StudySpec, trials: Sequence[optuna.trial.FrozenTrial]) -> dict[str, dict[str, Any]]:
    """The points run again, by role: the stated reading, then the points of the front over every row
    nearest the targets (:func:`bladefl.experiments.calibration.evaluation.closeness`), the stated
    reading left out, then (where the front holds fewer points than roles) the other points scored on
    every row, nearest first; ``trials`` checked against the spec first (:func:`bladefl.experiments.calibration.checks.
    checked_trials`)."""
    from bladefl.experiments.calibration import search

    stated = spec.space.stated

    def near(t: optuna.trial.FrozenTrial) -> tuple[float, int]:
        k, acc = search.full_values(t) or (math.nan, math.nan)
        return evaluation.closeness(k, acc, spec.k_target, spec.accuracy_target), t.number

    scored = [t for t in trials if search.trained_every_row(t)]
    if not scored:
        raise ValueError(f"the study {study_name(spec)} holds no trial scored on every row: nothing to pick "
                         "(run `bladefl calibrate` first)")
    front = search.full_front(trials)
    ranked = sorted((t for t in front if spec.space.point(t.params).key != stated.key), key=near)
    on_front = {t.number for t in ranked}
    # fewer front points than roles: the nearest other points scored on every row fill the rest
    ranked += sorted((t for t in scored if spec.space.point(t.params).key != stated.key
                      and t.number not in on_front), key=near)
    picked: dict[str, dict[str, Any]] = {"stated": {"values": dict(stated.values), "trial": None, "name": "stated",
                                                    "key": stated.key}}
    for role, t in zip(spec.roles[1:], ranked, strict=False):
        picked[role] = {"values": dict(t.params), "trial": t.number, "name": t.user_attrs.get("point", ""),
                        "key": spec.space.point(t.params).key}
    return picked


def second_pass(spec: StudySpec, picked: Mapping[str, Mapping[str, Any]], role: str, root: str | Path, *,
                threads: int = 0, trials_root: str | Path | None = None) -> float:
    """Run one picked point (``role``) on the second pass's draws over every feasible K, under ``root``
    (a role the search left empty, with fewer points scored on every row than roles, runs the stated reading). The
    runs the search already made of that point (under ``trials_root``) are taken, not trained again."""
    entry = picked.get(role, picked["stated"])
    point = spec.space.point(entry["values"], entry.get("name") or role)
    if trials_root is not None:
        made = Path(trials_root) / point.key
        for summary in evaluation.summaries(made, spec.second):
            run = Path(summary).parent
            target = Path(root) / run.relative_to(made)
            # the run's folder may already be there, empty (Snakemake makes its outputs' folders first)
            if Path(summary).is_file() and not (target / "summary.json").exists():
                shutil.copytree(run, target, symlinks=False, dirs_exist_ok=True)
    return evaluation.run(spec.second, point, root, threads=threads)


def write_picked(path: str | Path, picked: Mapping[str, Any]) -> None:
    atomic.write_json(path, dict(picked))


__all__ = ["AXES", "DEFAULTS", "StudySpec", "first_pass", "load_spec", "members_json", "pick", "second_pass",
           "spec_json", "study_name", "write_picked"]
