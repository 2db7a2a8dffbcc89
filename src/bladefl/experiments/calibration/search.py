"""The search over the space of readings, with Optuna: a multi-objective study (the K* distance and
the accuracy distance to the paper, both minimised: a Pareto front, not a weighted sum) kept in a
journal file, so a killed worker's study resumes where it stopped and several workers (jobs on a
cluster) can share it.

A worker first enqueues the named points not yet in the study (the stated reading first, then the
sensitivity study's readings: the search can do no worse than the best of them), then asks the
sampler (TPE, multivariate, with the constant liar for workers side by side) for trials until the
study holds its target. A trial left running by a killed worker (one of the same name: one job per
worker) is marked failed and its point asked again: its finished runs are reused, since a reading's
runs lie in a folder named by its values (:attr:`bladefl.experiments.calibration.space.Point.key`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from filelock import FileLock
from optuna.distributions import BaseDistribution, CategoricalDistribution
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock
from optuna.trial import FrozenTrial, TrialState

from bladefl.experiments.calibration.space import Point, Space, named_values

OBJECTIVES = ("K_star_distance", "accuracy_distance")


@dataclass(frozen=True)
class Outcome:
    """A trial's result: its two distances and what to keep beside them."""

    values: tuple[float, float]
    attrs: dict[str, Any]


def open_study(storage: str | Path, name: str, seed: int, worker: str = "") -> optuna.Study:
    """The study ``name`` in the journal file ``storage`` (made if missing), its sampler seeded by
    ``seed`` and the worker's name (so that workers side by side do not propose the same points)."""
    Path(storage).parent.mkdir(parents=True, exist_ok=True)
    backend = JournalFileBackend(str(storage), lock_obj=JournalFileOpenLock(str(storage)))
    sampler = optuna.samplers.TPESampler(seed=seed + sum(map(ord, worker)), multivariate=True, constant_liar=True,
                                         n_startup_trials=4)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(study_name=name, storage=JournalStorage(backend), sampler=sampler,
                               directions=["minimize", "minimize"], load_if_exists=True)


def distributions(space: Space) -> dict[str, BaseDistribution]:
    return {a.name: CategoricalDistribution(list(a.values)) for a in space.axes}


def _lock(storage: str | Path) -> FileLock:
    return FileLock(f"{storage}.workers.lock")


def counted(trials: list[FrozenTrial]) -> list[FrozenTrial]:
    """The trials that count toward the target: every one asked, less those a killed worker left
    (failed as stale, their points asked again: the retry names them in ``retry_of``)."""
    retried = {t.user_attrs.get("retry_of") for t in trials}
    return [t for t in trials if t.state != TrialState.WAITING
            and not (t.state == TrialState.FAIL and t.number in retried)]


def prepare(study: optuna.Study, space: Space, worker: str) -> list[int]:
    """Before a worker asks: its own trials left running (by a killed run of the same worker) are
    marked failed and their points enqueued again; the named points not yet in the study are
    enqueued (in order). Returns the numbers of the trials failed as stale."""
    stale = []
    for t in study.get_trials(deepcopy=False):
        if t.state == TrialState.RUNNING and t.user_attrs.get("worker") == worker:
            study.tell(t.number, state=TrialState.FAIL)
            attrs = {"retry_of": t.number, **({"point": t.user_attrs["point"]} if t.user_attrs.get("point") else {})}
            study.enqueue_trial(dict(t.params), user_attrs=attrs)
            stale.append(t.number)
    known = {t.user_attrs.get("point") for t in study.get_trials(deepcopy=False)}
    for point in space.points:
        if point.name not in known:
            study.enqueue_trial(dict(point.values), user_attrs={"point": point.name})
    return stale


def run_worker(study: optuna.Study, space: Space, storage: str | Path, worker: str, target: int,
               evaluate: Callable[[Point], Outcome], log: Callable[[str], None] = print) -> int:
    """Ask and evaluate trials until the study holds ``target`` counted trials (the named points
    always, beyond the target if they are more); returns how many this worker finished."""
    named = named_values(space.points)
    dists = distributions(space)
    with _lock(storage):
        stale = prepare(study, space, worker)
    if stale:
        log(f"trials {stale} were left running by a killed run of worker {worker}: failed, their points asked again")
    done = 0
    while True:
        with _lock(storage):
            trials = study.get_trials(deepcopy=False)
            waiting = any(t.state == TrialState.WAITING for t in trials)
            if len(counted(trials)) >= target and not waiting:
                break
            trial = study.ask(dists)
            trial.set_user_attr("worker", worker)
        point = space.point(trial.params, trial.user_attrs.get("point") or "")
        if not point.name and point.key in named:
            point = space.point(trial.params, named[point.key])
        log(f"trial {trial.number} ({point.name or 'searched'}): {point.differs(space.stated) or 'the stated reading'}")
        try:
            outcome = evaluate(point)
        except ValueError as exc:  # a reading the engine refuses (a field out of range)
            trial.set_user_attr("error", str(exc)[:500])
            study.tell(trial, state=TrialState.FAIL)
            log(f"trial {trial.number} failed: {exc}")
            continue
        for key, value in outcome.attrs.items():
            trial.set_user_attr(key, value)
        if not all(math.isfinite(v) for v in outcome.values):
            trial.set_user_attr("error", "no finite distance (the runs diverged)")
            study.tell(trial, state=TrialState.FAIL)
            log(f"trial {trial.number} failed: no finite distance")
            continue
        study.tell(trial, list(outcome.values))
        done += 1
        log(f"trial {trial.number}: K* {outcome.values[0]:.2f} rounds, accuracy {outcome.values[1]:.2f} points per row")
    return done


def complete(study: optuna.Study) -> list[FrozenTrial]:
    return [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]


def pareto(trials: list[FrozenTrial]) -> list[FrozenTrial]:
    """The trials no other trial beats on both distances (a tie on both keeps the first)."""
    front: list[FrozenTrial] = []
    for t in trials:
        beaten = any(all(o <= v for o, v in zip(u.values, t.values, strict=True)) and u.values != t.values
                     for u in trials)
        if not beaten and all(u.values != t.values for u in front):
            front.append(t)
    return front


def importances(study: optuna.Study, params: list[str]) -> dict[str, dict[str, float]]:
    """Per objective, each setting's share of the variation in that distance over the completed trials
    (Optuna's fANOVA evaluator; a setting every trial gave the same value has none, and so has every
    setting of a distance no trial changed); empty when too few trials completed."""
    trials = complete(study)
    varied = [p for p in params if len({repr(t.params.get(p)) for t in trials}) > 1]
    if len(trials) < 3 or not varied:
        return {}
    out = {}
    for i, name in enumerate(OBJECTIVES):
        if len({t.values[i] for t in trials}) == 1:  # no setting moved this distance (fANOVA has no variance)
            out[name] = dict.fromkeys(params, 0.0)
            continue
        def target(t: FrozenTrial, i: int = i) -> float:
            return float(t.values[i])

        found = optuna.importance.get_param_importances(
            study, params=varied, target=target, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0))
        out[name] = {p: float(found.get(p, 0.0)) for p in params}
    return out
