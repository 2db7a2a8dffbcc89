"""The measurement conventions (:mod:`bladefl.experiments.tables.conventions`): K* and the accuracy read
from run folders, or from a tidy run table against the paper's tables, under each convention pair."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from bladefl.cli.common import Command

if TYPE_CHECKING:
    import pandas as pd


def add_conventions(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="*", help="run folders of one cell (each holding summary.json and rounds.csv): "
                   "their seeds' final curves are averaged per K")
    p.add_argument("--summary", help="instead of run folders: a tidy run table (results/summary/<dataset>.csv), "
                   "read against the paper's tables per convention pair")
    p.add_argument("--dataset", help="the tidy table's dataset (with --summary)")
    p.add_argument("--paper-values", default="config/paper_values.yaml", help="the paper's tables (with --summary)")
    p.add_argument("--csv", help="also write the table here")


def _cmd_conventions(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.experiments.tables import conventions

    if bool(args.runs) == bool(args.summary):
        raise ValueError("give run folders or --summary (with --dataset), one of them")
    if args.summary:
        out, what = _convention_distances(args), f"the paper's tables against {args.summary}"
    else:
        from bladefl.experiments.runs.run_checks import read_checked_run

        for folder in args.runs:
            if not (Path(folder) / "summary.json").is_file():
                raise ValueError(f"{folder}: not a run folder (no summary.json in it)")
        runs = [read_checked_run(Path(folder) / "summary.json") for folder in args.runs]
        out, what = conventions.table(conventions.final_curves(runs)), f"{len(runs)} run(s)"
    if args.csv:
        atomic.write_csv(Path(args.csv), out)
    values = out.drop(columns=["headline"]).select_dtypes("number")
    shown = out[values.notna().any(axis=1) & ~(values.fillna(0) == 0).all(axis=1) | out.headline]
    print(f"K* and accuracy of {what} under each measurement convention (headline first; nan: a curve these "
          f"runs did not record; {len(out) - len(shown)} of {len(out)} rows read no recorded curve and are left "
          "out here" + (f", not from {args.csv}" if args.csv else "") + ")")
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0


def _convention_distances(args: argparse.Namespace) -> pd.DataFrame:
    from bladefl.data.datasets import SPECS
    from bladefl.experiments.tables import conventions
    from bladefl.experiments.tables.paper_tables import read_paper_tables
    from bladefl.report.inputs import SUMMARY_COLUMNS, read_csv

    datasets = sorted(SPECS)
    if args.dataset not in datasets:
        raise ValueError(f"--dataset must be one of {datasets} (got {args.dataset!r})")
    summary = read_csv(args.summary, SUMMARY_COLUMNS)
    distances = conventions.paper_distances(summary, read_paper_tables(args.paper_values), args.dataset)
    return conventions.distance_summary(distances)


COMMANDS: list[Command] = [
    ("conventions", "K* and accuracy of run folders, or a tidy table against the paper, under each measurement "
     "convention", add_conventions, _cmd_conventions),
]
