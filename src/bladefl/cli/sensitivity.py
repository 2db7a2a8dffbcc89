"""Commands of the sensitivity study (docs/sensitivity.md): the readings of the paper's unstated settings ranked
by their distance to the paper, and the study's front page.

Each command: its arguments (``add_*``) beside its handler (``_cmd_*``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bladefl.cli.common import Command, dataset_name, names_in, t_sum


def add_sensitivity(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, type=dataset_name)
    p.add_argument("--readings", nargs="+", required=True)
    p.add_argument("--axes", nargs="+", required=True, help="each reading's axis (partition, iteration, ...)")
    p.add_argument("--summaries", nargs="+", required=True, help="each reading's tidy run table")
    p.add_argument("--optima", nargs="+", required=True, help="each reading's optimum table")
    p.add_argument("--verdicts", nargs="+", required=True, help="each reading's verdicts")
    p.add_argument("--paper-values", required=True, help="config/paper_values.yaml")
    p.add_argument("--t-sum", type=t_sum, required=True)
    p.add_argument("--sweeps", nargs="+", help="sweeps whose curves the page draws (default: the alpha and beta "
                                              "sweeps the summaries hold, else every sweep they hold)")
    p.add_argument("--out-dir", required=True)


def _cmd_sensitivity(args: argparse.Namespace) -> int:

    import re

    from bladefl.core import atomic
    from bladefl.experiments.plan.readings import AXES
    from bladefl.report import sensitivity as sens
    from bladefl.report.inputs import OPTIMUM_COLUMNS, SUMMARY_COLUMNS, read_csv
    from bladefl.report.paper import paper_tables

    n = len(args.readings)
    if not (len(args.axes) == len(args.summaries) == len(args.optima) == len(args.verdicts) == n):
        raise ValueError("--readings, --axes, --summaries, --optima and --verdicts must list one entry per reading")
    odd = [r for r in args.readings if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", r)]
    if odd or len(set(args.readings)) != n:
        raise ValueError(f"--readings: distinct names of letters, digits and _.- (got "
                         f"{(odd or args.readings)[0][:40]!r})")
    names_in(args.axes, AXES, "--axes")
    summaries = {r: read_csv(f, SUMMARY_COLUMNS) for r, f in zip(args.readings, args.summaries, strict=True)}
    held = list(dict.fromkeys(str(s) for t in summaries.values() for s in t.sweep.unique()))
    if args.sweeps is None:  # the time split's sweeps where the study ran them (a study may run neither)
        args.sweeps = [s for s in ("alpha", "beta") if s in held] or held
    names_in(args.sweeps, set(held), "--sweeps")
    optima = {r: read_csv(f, OPTIMUM_COLUMNS) for r, f in zip(args.readings, args.optima, strict=True)}
    verdicts = {r: read_csv(f, ["claim", "source", "verdict"])
                for r, f in zip(args.readings, args.verdicts, strict=True)}
    tables = paper_tables(args.paper_values)
    out = Path(args.out_dir)
    ranked = sens.ranking(summaries, tables, args.dataset, args.t_sum, optima, dict(zip(args.readings, args.axes,
                                                                                         strict=True)))
    changes = sens.verdict_changes(verdicts)
    atomic.write_csv(out / "ranking.csv", ranked)
    atomic.write_csv(out / "verdict_changes.csv", changes)
    atomic.write_csv(out / "curves.csv", sens.accuracy_curves(summaries, args.sweeps))
    atomic.write_csv(out / "paper_points.csv", sens.paper_points(tables, args.dataset, args.sweeps))
    best = ranked.iloc[0]
    print(f"wrote {out}/: closest to the paper: {best.reading} (K* distance {best.K_star_distance:g}, accuracy "
          f"distance {best.accuracy_distance:.1f} points); {int(changes.depends_on_reading.sum())} of "
          f"{len(changes)} verdicts depend on the reading")
    return 0


def add_sensitivity_index(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rankings", nargs="+", required=True, help="results/sensitivity/<dataset>/ranking.csv")
    p.add_argument("--pages", nargs="+", required=True, help="rendered sensitivity pages (HTML)")
    p.add_argument("--out", required=True)


def _cmd_sensitivity_index(args: argparse.Namespace) -> int:
    from bladefl.report.pages import write_sensitivity_index

    write_sensitivity_index(args.out, args.rankings, args.pages)
    print(f"wrote {args.out}")
    return 0


COMMANDS: list[Command] = [
    ("sensitivity", "rank readings of the unstated settings by distance to the paper",
     add_sensitivity, _cmd_sensitivity),
    ("sensitivity-index", "the sensitivity study's front page", add_sensitivity_index, _cmd_sensitivity_index),
]
