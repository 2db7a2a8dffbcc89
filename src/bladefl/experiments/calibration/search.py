"""The search over the space of readings, with Optuna: a multi-objective study (the K* distance and
the accuracy distance to the paper, both minimised: a Pareto front, not a weighted sum) kept in a
journal file, so a killed worker's study resumes where it stopped and several workers (jobs on a
cluster) can share it.

A worker first enqueues the named points not yet in the study (the stated reading first, then the
sensitivity study's readings: the search can do no worse than the best of them), then one point per
value of each **coverage** axis no trial has visited (the axis set, the others proposed by the
sampler), then asks the sampler (TPE, multivariate, with the constant liar for workers side by side)
until the study's **stopping rule** holds (:func:`stop_reason`). Every trial is scored on the screen;
the best fraction goes on to every row (successive halving: :func:`promoted`).

A trial left running by a worker that is gone is failed and its point asked again (its finished runs
are reused, since a reading's runs lie in a folder named by its values,
:attr:`bladefl.experiments.calibration.space.Point.key`). A worker asks and tags its trial inside
one hold of the workers' lock, and holds a lock of its own while it lives: a running trial with no
tag, or one whose worker holds no lock, was left by a killed worker, whenever the kill came. A point
the sampler proposes again is not evaluated twice: it is failed as a duplicate and not counted.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import optuna
from filelock import FileLock, Timeout
from optuna.distributions import BaseDistribution, CategoricalDistribution
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock
from optuna.trial import FrozenTrial, TrialState

from bladefl.experiments.calibration.journal import check_records, set_aside_torn_tail
from bladefl.experiments.calibration.space import Point, Space, named_values
from bladefl.experiments.calibration.stopping import StopRule, stop_reason

OBJECTIVES = ("K_star_distance", "accuracy_distance")
T = TypeVar("T")


@dataclass(frozen=True)
class Outcome:
    """A trial's result: its two distances on the screen and what to keep beside them."""

    values: tuple[float, float]
    attrs: dict[str, Any]


def _sampler(seed: int, worker: str) -> optuna.samplers.BaseSampler:
    return optuna.samplers.TPESampler(seed=seed + sum(map(ord, worker)), multivariate=True, constant_liar=True,
                                      n_startup_trials=4)


def open_study(storage: str | Path, name: str, seed: int, worker: str = "") -> optuna.Study:
    """The study ``name`` in the journal file ``storage`` (made if missing; a torn end set aside first:
    :func:`set_aside_torn_tail`), its sampler seeded by ``seed`` and the worker's name (so that workers
    side by side do not propose the same points). For the search's workers only: a reader uses
    :func:`read_study`, which never writes."""
    Path(storage).parent.mkdir(parents=True, exist_ok=True)
    aside = set_aside_torn_tail(storage)
    if aside is not None:
        print(f"{storage}: its last record was cut; set aside in {aside}, the study resumes from the record "
              "before it", file=sys.stderr)
    backend = JournalFileBackend(str(storage), lock_obj=JournalFileOpenLock(str(storage)))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(study_name=name, storage=JournalStorage(backend), sampler=_sampler(seed, worker),
                               directions=["minimize", "minimize"], load_if_exists=True)


MAX_JOURNAL_BYTES = 256 << 20  # a journal of 10,000 trials with their rows is about 100 MB
MAX_TRIALS = 10_000


def read_study(storage: str | Path, name: str) -> list[FrozenTrial]:
    """The trials of the study ``name`` in the journal ``storage``, read as hostile and never written:
    a regular file of at most :data:`MAX_JOURNAL_BYTES`, a journal (:func:`check_records`) that holds that
    study, with at most :data:`MAX_TRIALS` trials; ValueError naming the file otherwise (a missing journal is
    not made)."""
    import json
    import stat

    path = Path(storage)
    try:
        info = path.stat()
    except OSError as exc:
        raise ValueError(f"--storage {path}: cannot read it ({exc.strerror or exc}; run `bladefl calibrate` "
                         "first)") from None
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"--storage {path}: not a regular file")
    if info.st_size > MAX_JOURNAL_BYTES:
        raise ValueError(f"--storage {path}: {info.st_size} bytes, over the {MAX_JOURNAL_BYTES} a journal may hold")
    check_records(path)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        backend = JournalFileBackend(str(path), lock_obj=JournalFileOpenLock(str(path)))
        summaries = optuna.get_all_study_summaries(JournalStorage(backend), include_best_trial=False)
        names = [s.study_name for s in summaries]
        if name not in names:
            raise ValueError(f"--storage {path}: holds no study {name!r} (it holds {names[:5]}"
                             f"{' ...' if len(names) > 5 else ''}): not this spec's journal")
        trials = optuna.load_study(study_name=name, storage=JournalStorage(backend)).get_trials(deepcopy=False)
    except ValueError:
        raise
    except (KeyError, TypeError, AttributeError, IndexError, AssertionError, json.JSONDecodeError,
            UnicodeDecodeError, RuntimeError, optuna.exceptions.OptunaError) as exc:
        raise ValueError(f"--storage {path}: not an Optuna journal ({exc.__class__.__name__}: {str(exc)[:200]})"
                         ) from None
    if len(trials) > MAX_TRIALS:
        raise ValueError(f"--storage {path}: {len(trials)} trials, over the {MAX_TRIALS} a study may hold")
    return trials


def distributions(space: Space) -> dict[str, BaseDistribution]:
    return {a.name: CategoricalDistribution(list(a.values)) for a in space.axes}


def _lock(storage: str | Path) -> FileLock:
    return FileLock(f"{storage}.workers.lock")


def alive_lock(storage: str | Path, worker: str) -> FileLock:
    """The lock a worker holds while it lives (released by the system when its process dies)."""
    return FileLock(f"{storage}.{worker}.alive")


def is_alive(storage: str | Path, worker: str) -> bool:
    """Whether a process holds ``worker``'s lock now."""
    lock = alive_lock(storage, worker)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    lock.release()
    return False


def counted(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    """The trials that count toward the cap: every one asked, less those a killed worker left (failed
    as stale, their points asked again: the retry names them in ``retry_of``) and the sampler's
    proposals of points already evaluated (``duplicate_of``)."""
    retried = {t.user_attrs.get("retry_of") for t in trials}
    return [t for t in trials if t.state != TrialState.WAITING and "duplicate_of" not in t.user_attrs
            and not (t.state == TrialState.FAIL and t.number in retried)]


def stale(trials: Sequence[FrozenTrial], worker: str, alive: Callable[[str], bool]) -> list[FrozenTrial]:
    """The running trials no living worker holds (read under the workers' lock): untagged ones (a kill
    between ask and tag: both happen in one hold of the lock), this worker's own (a killed run of it),
    and those of a worker that holds no lock."""
    out = []
    for t in trials:
        if t.state != TrialState.RUNNING:
            continue
        owner = t.user_attrs.get("worker")
        if owner is None or owner == worker or not alive(str(owner)):
            out.append(t)
    return out


def prepare(study: optuna.Study, space: Space, worker: str, storage: str | Path,
            coverage: Sequence[str] = ()) -> list[int]:
    """Before a worker asks (under the workers' lock): the running trials no living worker holds are
    failed and their points enqueued again; the named points not yet in the study are enqueued (in
    order), then a point for each value of each ``coverage`` axis that no trial visits. Returns the
    numbers of the trials failed as stale."""
    trials = study.get_trials(deepcopy=False)
    left = stale(trials, worker, lambda w: is_alive(storage, w))
    for t in left:
        study.tell(t.number, state=TrialState.FAIL)
        keep = {k: t.user_attrs[k] for k in ("point", "coverage") if t.user_attrs.get(k)}
        study.enqueue_trial(dict(t.params), user_attrs={"retry_of": t.number, **keep})
    trials = study.get_trials(deepcopy=False)
    known = {t.user_attrs.get("point") for t in trials}
    for point in space.points:
        if point.name not in known:
            study.enqueue_trial(dict(point.values), user_attrs={"point": point.name})
    visited = {(axis, repr(p.values[axis])) for p in space.points for axis in coverage}
    visited |= {(axis, repr(t.params[axis])) for t in trials for axis in coverage if axis in t.params}
    visited |= {tuple(t.user_attrs["coverage"].split("=", 1)) for t in trials if t.user_attrs.get("coverage")}
    for axis in coverage:
        for value in space.axis(axis).values:
            if (axis, repr(value)) not in visited and (axis, str(value)) not in visited:
                study.enqueue_trial({axis: value}, user_attrs={"coverage": f"{axis}={value}"})
    return [t.number for t in left]


def proposed(t: FrozenTrial) -> bool:
    """Whether the sampler proposed the trial's point (not a named or coverage point, nor a retry of one)."""
    return not (t.user_attrs.get("point") or t.user_attrs.get("coverage"))


def screen_closeness(t: FrozenTrial) -> float:
    value = t.user_attrs.get("screen_closeness")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan


def _next_trial(study: optuna.Study, space: Space, worker: str, dists: dict[str, BaseDistribution], rule: StopRule,
                duplicates: int) -> tuple[optuna.Trial | None, Point | None, str | None]:
    """Under the workers' lock: why the search stops (its rule), else the next trial, asked and tagged with
    its worker in one hold of the lock, and its point; a proposal of a point already evaluated is failed
    as a duplicate (trial None)."""
    trials = study.get_trials(deepcopy=False)
    evaluated = [t for t in trials if t.state == TrialState.COMPLETE]
    waiting = sum(t.state == TrialState.WAITING for t in trials)
    reason = stop_reason([screen_closeness(t) for t in evaluated], [proposed(t) for t in evaluated],
                         len(counted(trials)), waiting, rule)
    if reason is None and duplicates >= 3 * rule.patience:
        reason = f"the sampler proposed only points already evaluated ({duplicates} in a row)"
    if reason is not None:
        return None, None, reason
    trial = study.ask(dists)
    trial.set_user_attr("worker", worker)
    point = space.point(trial.params, trial.user_attrs.get("point") or "")
    seen = next((t.number for t in trials if t.state in (TrialState.COMPLETE, TrialState.RUNNING)
                 and "duplicate_of" not in t.user_attrs and space.point(t.params).key == point.key), None)
    if seen is not None and not trial.user_attrs.get("retry_of"):
        trial.set_user_attr("duplicate_of", seen)
        study.tell(trial, state=TrialState.FAIL)
        return None, None, None
    return trial, point, None


def run_worker(study: optuna.Study, space: Space, storage: str | Path, worker: str, rule: StopRule,
               evaluate: Callable[[Point, optuna.Trial], Outcome], log: Callable[[str], None] = print,
               coverage: Sequence[str] = ()) -> tuple[int, str]:
    """Ask and evaluate trials until the stopping rule holds; returns how many this worker finished and
    why the search stopped."""
    named = named_values(space.points)
    dists = distributions(space)
    alive = alive_lock(storage, worker)
    try:
        alive.acquire(timeout=0)
    except Timeout:
        raise ValueError(f"--worker {worker}: another process runs this worker of the study now") from None
    try:
        with _lock(storage):
            left = prepare(study, space, worker, storage, coverage)
        if left:
            log(f"trials {left} were left running by a worker that is gone: failed, their points asked again")
        done, duplicates = 0, 0
        while True:
            with _lock(storage):
                trial, point, reason = _next_trial(study, space, worker, dists, rule, duplicates)
            if reason is not None:
                break
            if trial is None or point is None:  # the sampler proposed a point already evaluated: not run, not counted
                duplicates += 1
                continue
            duplicates = 0
            if not point.name and point.key in named:
                point = space.point(trial.params, named[point.key])
            log(f"trial {trial.number} ({point.name or trial.user_attrs.get('coverage') or 'searched'}): "
                f"{point.differs(space.stated) or 'the stated reading'}")
            try:
                outcome = evaluate(point, trial)
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
            full = outcome.attrs.get("full_values")
            log(f"trial {trial.number}: screen K* {outcome.values[0]:.2f} rounds, accuracy {outcome.values[1]:.2f} "
                "points per row" + (f"; every row: {full[0]:.2f} rounds, {full[1]:.2f} points" if full else ""))
        log(f"the search stops: {reason}")
        return done, reason
    finally:
        alive.release()


def complete(study: optuna.Study) -> list[FrozenTrial]:
    return [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]


def full_values(t: FrozenTrial) -> tuple[float, float] | None:
    """A trial's two distances over every row (None: not promoted past the screen; NaN: promoted, and
    every run of some row diverged, a reading that cannot train that row)."""
    v = t.user_attrs.get("full_values")
    if isinstance(v, (list, tuple)) and len(v) == 2:
        return float(v[0]), float(v[1])
    return None


def trained_every_row(t: FrozenTrial) -> bool:
    """Promoted, with finite distances over every row: a candidate to pick (a promoted reading that
    diverged on a row is kept in the tables, never picked)."""
    v = full_values(t)
    return v is not None and all(math.isfinite(x) for x in v)


def pareto(trials: Sequence[T], values: Callable[[T], Sequence[float]] = lambda t: t.values  # type: ignore[attr-defined]
           ) -> list[T]:
    """The trials no other trial beats on both distances (a tie on both keeps the first), in their
    order; a sort and one sweep, so a journal of thousands of trials is read in milliseconds."""
    keyed = sorted(((float(values(t)[0]), float(values(t)[1]), i) for i, t in enumerate(trials)))
    best, keep = math.inf, []
    for _, second, i in keyed:
        if second < best:
            keep.append(i)
            best = second
    return [trials[i] for i in sorted(keep)]


def full_front(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    """The Pareto front of the trials scored on every row (:func:`trained_every_row`), by their distances there."""
    scored = [t for t in trials if t.state == TrialState.COMPLETE and trained_every_row(t)]
    return pareto(scored, lambda t: full_values(t) or (math.nan, math.nan))
