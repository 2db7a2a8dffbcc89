"""Commands of the calibration study (docs/calibration.md): a search worker, the choice of the
points run again, their second pass, and the study's tables. The workflow writes each dataset's
study spec (``results/calibration/<dataset>/spec.json``) and passes it to every one of them."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

from bladefl.cli.common import Command, folder_option, whole

SPEC_HELP = "the study's spec (JSON the workflow writes: results/calibration/<dataset>/spec.json)"


def _json_file(path: str, option: str, limit: int) -> object:
    """A JSON file read as hostile: a regular file of at most ``limit`` bytes, UTF-8, no key twice."""
    from bladefl.core.bounded_read import read_regular
    from bladefl.core.run_files import no_key_twice

    try:
        return json.loads(read_regular(path, limit, option).decode("utf-8"), object_pairs_hook=no_key_twice)
    except OSError as exc:
        raise ValueError(f"{option} {path}: cannot read it ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{option} {path}: not JSON ({exc})") from None


def _spec(path: str):  # noqa: ANN202 - StudySpec
    from bladefl.experiments.calibration.study import load_spec

    doc = _json_file(path, "--spec", 16 << 20)
    try:
        return load_spec(json.dumps(doc))
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"--spec {path}: not a calibration spec ({exc.__class__.__name__}: {exc})") from None


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def add_calibrate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--spec", required=True, help=SPEC_HELP)
    p.add_argument("--storage", required=True, help="the study's Optuna journal file (made if missing; shared by "
                                                     "the workers, and a killed study resumes from it)")
    p.add_argument("--trials-dir", required=True, help="where each reading's runs go (<dir>/<point key>/...)")
    p.add_argument("--worker", default="w0", help="this worker's name (one job per name: a trial a killed run of "
                                                  "the same worker left running is asked again)")
    p.add_argument("--threads", type=whole(0, 1024), default=0, help="torch threads (default: torch's choice)")
    p.add_argument("--done", help="a file to write once the study holds its target (what the workflow waits for)")


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.experiments.calibration.study import first_pass

    spec = _spec(args.spec)
    folder_option(args.trials_dir, "--trials-dir")
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", args.worker):  # it names the worker's lock file beside the journal
        raise ValueError(f"--worker: 1 to 64 ASCII letters, digits, '-' and '_' (got {args.worker[:40]!r})")
    _log(f"{spec.dataset}: {len(spec.full.rows)} table rows ({len(spec.screen.rows)} on the screen, "
         f"{len(spec.screen.cells())} cells), {len(spec.full.draws)} draws, every feasible K; "
         f"{len(spec.space.points)} named points first, then at least {spec.rule.min_proposals} sampler proposals and "
         f"until none of the last {spec.rule.patience} lowers the running best by more than "
         f"{spec.rule.tolerance:g}, or {spec.rule.max_trials} trials; "
         f"worker {args.worker}")
    if args.done is not None and not args.done.strip():
        raise ValueError("--done: a file path is needed (got '')")
    ran, reason = first_pass(spec, args.storage, args.trials_dir, args.worker, threads=args.threads, log=_log)
    _log(f"worker {args.worker}: {ran} trials run; the search stopped: {reason}")
    if args.done:
        atomic.write_json(args.done, {"worker": args.worker, "trials": ran, "stopped": reason})
    return 0


def add_pick(p: argparse.ArgumentParser) -> None:
    p.add_argument("--spec", required=True, help=SPEC_HELP)
    p.add_argument("--storage", required=True, help="the study's Optuna journal file")
    p.add_argument("--out", required=True, help="JSON: the points run again, by role (stated, best1, ...)")


def _trials(spec, storage: str) -> list:  # noqa: ANN001 - StudySpec
    """The study's trials from its journal, read as hostile (never written) and held to the spec."""
    from bladefl.experiments.calibration.checks import checked_trials
    from bladefl.experiments.calibration.search import read_study
    from bladefl.experiments.calibration.study import study_name

    return checked_trials(spec, read_study(storage, study_name(spec)))


def _cmd_pick(args: argparse.Namespace) -> int:
    from bladefl.experiments.calibration.space import settings_words
    from bladefl.experiments.calibration.study import pick, write_picked

    spec = _spec(args.spec)
    picked = pick(spec, _trials(spec, args.storage))
    write_picked(args.out, picked)
    for role, entry in picked.items():
        settings = settings_words(spec.space.point(entry["values"]).differs(spec.space.stated))
        name = f", {entry['name']}" if entry["name"] else ""
        source = "" if entry["trial"] is None else f"trial {entry['trial']}{name}: "
        print(f"{role}: {source}{settings}")
    print(f"-> {args.out}")
    return 0


def _picked(spec, path: str) -> dict:  # noqa: ANN001 - StudySpec
    """The picked points, read as hostile and held to the spec (roles, axes, values) before any run."""
    from bladefl.experiments.calibration.checks import checked_picked

    try:
        return checked_picked(spec, _json_file(path, "--picked", 1 << 20))
    except ValueError as exc:
        raise ValueError(f"{exc} ({path})") from None


def add_rerun(p: argparse.ArgumentParser) -> None:
    p.add_argument("--spec", required=True, help=SPEC_HELP)
    p.add_argument("--picked", required=True, help="the points run again (`bladefl calibration-pick`)")
    p.add_argument("--role", required=True, help="which of them: stated, best1, best2, ...")
    p.add_argument("--out-dir", required=True, help="its runs (<dir>/<dataset>/<cell>/seed~<draw>) and engine.yaml")
    p.add_argument("--trials-dir", help="the search's runs (<dir>/<point key>/...): those of the point are taken, "
                                        "not trained again")
    p.add_argument("--threads", type=whole(0, 1024), default=0, help="torch threads (default: torch's choice)")


def _cmd_rerun(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.experiments.calibration.study import second_pass
    from bladefl.experiments.calibration.tables import engine_yaml

    spec = _spec(args.spec)
    if args.role not in spec.roles:
        raise ValueError(f"--role must be one of {spec.roles} (got {args.role!r})")
    picked = _picked(spec, args.picked)
    out = folder_option(args.out_dir, "--out-dir")
    trials = folder_option(args.trials_dir, "--trials-dir") if args.trials_dir else None
    seconds = second_pass(spec, picked, args.role, out, threads=args.threads, trials_root=trials)
    entry = picked.get(args.role, picked["stated"])
    atomic.write_text(out / "engine.yaml", engine_yaml(spec, entry["values"], spec.dataset,
                                                      f"The calibration's {args.role} reading (second pass)."))
    print(f"{args.role}: {len(spec.second.rows)} rows on {len(spec.second.draws)} draws in {seconds:.0f} s -> {out}")
    return 0


def add_tables(p: argparse.ArgumentParser) -> None:
    p.add_argument("--spec", required=True, help=SPEC_HELP)
    p.add_argument("--storage", required=True, help="the study's Optuna journal file")
    p.add_argument("--picked", required=True, help="the points run again (`bladefl calibration-pick`)")
    p.add_argument("--roots", nargs="+", required=True, metavar="ROLE=DIR", help="each role's second-pass runs")
    p.add_argument("--trials-dir", help="the first pass's runs (<dir>/<point key>/...): each trial's cost from them")
    p.add_argument("--out-dir", required=True)


def _cmd_tables(args: argparse.Namespace) -> int:
    from bladefl.experiments.calibration.tables import write_tables

    spec = _spec(args.spec)
    roots = dict(item.split("=", 1) for item in args.roots if "=" in item)
    if len(roots) != len(args.roots) or set(roots) != set(spec.roles):
        raise ValueError(f"--roots: one ROLE=DIR for each of {spec.roles} (got {[r[:60] for r in args.roots[:8]]})")
    for role, folder in roots.items():
        folder_option(folder, f"--roots {role}")
    from pathlib import Path

    if args.trials_dir is not None and (not Path(args.trials_dir).is_dir() or Path(args.trials_dir).is_symlink()):
        raise ValueError(f"--trials-dir {args.trials_dir}: not a folder (the first pass's runs, each trial's cost)")
    trials = _trials(spec, args.storage)
    if args.trials_dir is not None:  # the folder of the trials' runs: at least one completed trial's there
        from optuna.trial import TrialState

        keys = {spec.space.point(t.params).key for t in trials if t.state == TrialState.COMPLETE}
        if keys and not any((Path(args.trials_dir) / key).is_dir() for key in keys):
            raise ValueError(f"--trials-dir {args.trials_dir}: holds the runs of none of the study's {len(keys)} "
                             "completed trials (<dir>/<point key>/)")
    written = write_tables(spec, trials, _picked(spec, args.picked), roots, folder_option(args.out_dir, "--out-dir"),
                           args.trials_dir)
    print("wrote " + ", ".join(str(p) for p in written), file=sys.stdout)
    return 0


def add_conventions(p: argparse.ArgumentParser) -> None:
    p.add_argument("--spec", required=True, help=SPEC_HELP)
    p.add_argument("--roots", nargs="+", required=True, metavar="ROLE=DIR", help="each role's second-pass runs")
    p.add_argument("--out", required=True, help="the table (CSV): per role, paper table and convention pair")


def _cmd_conventions(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.experiments.calibration.tables import convention_table

    spec = _spec(args.spec)
    roots = dict(item.split("=", 1) for item in args.roots if "=" in item)
    if len(roots) != len(args.roots) or not roots or not set(roots) <= set(spec.roles):
        raise ValueError(f"--roots: ROLE=DIR for roles of {spec.roles} (got {[r[:60] for r in args.roots[:8]]})")
    for role, folder in roots.items():
        folder_option(folder, f"--roots {role}")
    table = convention_table(spec, roots)
    atomic.write_csv(args.out, table)
    print(f"wrote {args.out}: {len(table)} rows ({len(roots)} readings, {table.table.nunique()} tables)")
    return 0


COMMANDS: list[Command] = [
    ("calibrate", "a worker of the calibration study's search (docs/calibration.md)", add_calibrate, _cmd_calibrate),
    ("calibration-pick", "the calibration's points run again (Pareto front nearest the targets)", add_pick, _cmd_pick),
    ("calibration-rerun", "one picked point on more draws over every feasible K", add_rerun, _cmd_rerun),
    ("calibration-tables", "the calibration study's tables and the calibrated engine", add_tables, _cmd_tables),
    ("calibration-conventions", "the calibration's distances to the paper per table under each measurement "
     "convention", add_conventions, _cmd_conventions),
]
