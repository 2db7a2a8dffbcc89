"""Commands that read the grid's runs into tables: the tidy summary and optimum, the measured and
fitted bound, the lazy-client detection quality. Each command: its arguments (``add_*``) beside its
handler (``_cmd_*``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bladefl.cli.common import MEMBERS_HELP, Command, json_text, names_in


def add_bound(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", nargs="+", required=True, help="the runs' summary.json files")
    p.add_argument("--members", required=True, help=MEMBERS_HELP)
    p.add_argument("--references", nargs="+", required=True, help="reference .npz files, one per partition")
    p.add_argument("--out-dir", required=True)


def _cmd_bound(args: argparse.Namespace) -> int:
    from bladefl.experiments.plan.grid import members_from_json
    from bladefl.experiments.tables.bound_analysis import write_report

    written = write_report(args.runs, members_from_json(json_text(args.members)), args.references, args.out_dir)
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def add_detection(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", nargs="+", required=True, help="the runs' summary.json files (detections.csv beside)")
    p.add_argument("--members", required=True, help=MEMBERS_HELP)
    p.add_argument("--exclude-sweeps", nargs="*", default=[], help="sweeps whose lazy cells also ran with exclusion")
    p.add_argument("--out-dir", required=True)


def _cmd_detection(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.experiments.plan.grid import members_from_json
    from bladefl.experiments.tables import detection_analysis as da

    members = members_from_json(json_text(args.members))
    names_in(args.exclude_sweeps, {m.sweep for m in members}, "--exclude-sweeps")  # a typo shows no exclusion
    detections = da.read_detections(args.runs)
    out = Path(args.out_dir)
    tables = {
        "quality": da.quality(detections, members),
        "per_round": da.per_round(detections),
        "roc": da.roc_table(detections, members),
        "exclusion": da.exclusion(args.runs, members, args.exclude_sweeps),
        "exclusion_curves": da.exclusion_curves(args.runs, members, args.exclude_sweeps),
    }
    for name, frame in tables.items():
        atomic.write_csv(out / f"{name}.csv", frame)
    print(f"wrote {out}/: {len(detections)} detections of {detections.cell.nunique()} cells; "
          f"{len(tables['quality'])} quality rows, {len(tables['exclusion'])} exclusion rows")
    return 0


def add_summarize(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", nargs="+", required=True, help="the runs' summary.json files")
    p.add_argument("--members", required=True, help=MEMBERS_HELP)
    p.add_argument("--table", required=True, help="output CSV, one row per sweep, cell, K and seed")
    p.add_argument("--optimum", required=True, help="output CSV, one row per sweep and cell")


def _cmd_summarize(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.experiments.plan.grid import members_from_json
    from bladefl.experiments.tables.tidy import collect, optimum

    table = collect(args.runs, members_from_json(json_text(args.members)))
    atomic.write_csv(args.table, table)
    atomic.write_csv(args.optimum, optimum(table))
    print(f"wrote {args.table} ({len(table)} rows) and {args.optimum}")
    return 0


COMMANDS: list[Command] = [
    ("bound", "measured and fitted bound against the experiments, per cell", add_bound, _cmd_bound),
    ("detection", "lazy-client detection quality and what exclusion recovers", add_detection, _cmd_detection),
    ("summarize", "tidy summary and optimum tables over the grid's runs", add_summarize, _cmd_summarize),
]
