"""The measurement conventions (:mod:`bladefl.experiments.tables.conventions`): K* and the accuracy read
from run folders, or from a tidy run table against the paper's tables, under each convention pair."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from bladefl.cli.common import Command, refuse_unread

if TYPE_CHECKING:
    import pandas as pd


def add_conventions(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="*", help="run folders of one cell (each holding summary.json and rounds.csv): "
                   "their seeds' final curves are averaged per K")
    p.add_argument("--summary", help="instead of run folders: a tidy run table (results/summary/<dataset>.csv), "
                   "read against the paper's tables per convention pair")
    p.add_argument("--dataset", help="the tidy table's dataset (with --summary)")
    p.add_argument("--paper-values", help="the paper's tables (with --summary or --bundle; default "
                                          "config/paper_values.yaml)")
    p.add_argument("--bundle", help="instead: a kept bundle, judged again with K* and every loss read from "
                   "--k-star-from and the accuracy on --accuracy-on; prints each counted verdict that changes")
    p.add_argument("--k-star-from", help="with --bundle: the curve K* and the losses are read from (objective, "
                   "test-loss (default), authors-client-test-loss, authors-local-loss)")
    p.add_argument("--accuracy-on", help="with --bundle: where the accuracy is measured (full-test (default), "
                   "client-test)")
    p.add_argument("--statements", help="with --bundle: the statements (default config/paper_statements.yaml)")
    p.add_argument("--csv", help="also write the table here")


def _cmd_conventions(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.experiments.tables import conventions

    if sum(map(bool, (args.runs, args.summary, args.bundle))) != 1:
        raise ValueError("give run folders, --summary (with --dataset) or --bundle, one of them")
    # an option the chosen reading does not read is refused, never passed over
    unread = {"--k-star-from": args.k_star_from, "--accuracy-on": args.accuracy_on,
              "--statements": args.statements} if not args.bundle else {}
    if args.runs:
        unread["--paper-values"] = args.paper_values
    if not args.summary:
        unread["--dataset"] = args.dataset
    refuse_unread(unread, f"with {'run folders' if args.runs else '--summary' if args.summary else '--bundle'} "
                          "(--k-star-from, --accuracy-on, --statements: with --bundle; --dataset: with --summary)")
    args.paper_values = args.paper_values or "config/paper_values.yaml"
    args.k_star_from, args.accuracy_on = args.k_star_from or "test-loss", args.accuracy_on or "full-test"
    args.statements = args.statements or "config/paper_statements.yaml"
    if args.bundle:
        return _changed_verdicts(args)
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


def _changed_verdicts(args: argparse.Namespace) -> int:
    """The kept bundle's counted verdicts judged again under the convention; those that change, printed."""
    from bladefl.core import atomic
    from bladefl.experiments.bundles import kept_results
    from bladefl.experiments.tables import conventions
    from bladefl.report.front_page import changed
    from bladefl.report.inputs import VERDICT_COLUMNS, read_csv

    if args.k_star_from not in conventions.K_STAR or args.accuracy_on not in conventions.ACCURACY_SETS:
        raise ValueError(f"--k-star-from must be one of {list(conventions.K_STAR)} and --accuracy-on one of "
                         f"{list(conventions.ACCURACY_SETS)} (got {args.k_star_from!r}, {args.accuracy_on!r})")
    bundle = Path(args.bundle)
    frames = kept_results.judge(bundle, args.statements, args.paper_values, log=lambda m: None,
                                reading=lambda t: conventions.read_as(t, args.k_star_from, args.accuracy_on))
    import pandas as pd

    kept = pd.concat([read_csv(bundle / "results/verdicts" / f"{d}.csv", VERDICT_COLUMNS) for d in frames],
                     ignore_index=True)
    rows = [{"dataset": r.dataset, "statement": r.statement, "claim": r.claim, "kept": r.theirs, "under": r.verdict,
             "finding": r.finding} for r in changed(pd.concat(frames.values(), ignore_index=True), kept).itertuples()]
    print(f"{bundle}: {len(rows)} counted verdicts change with K* and the losses from {args.k_star_from} and the "
          f"accuracy on {args.accuracy_on}" + (":" if rows else ""))
    for r in rows:
        print(f"  {r['dataset']} {r['statement']}: {r['kept']} -> {r['under']} ({r['claim']}; {r['finding']})")
    if args.csv:
        atomic.write_csv(Path(args.csv), pd.DataFrame(rows, columns=["dataset", "statement", "claim", "kept",
                                                                      "under", "finding"]))
    return 0


COMMANDS: list[Command] = [
    ("conventions", "K* and accuracy of run folders, or a tidy table against the paper, under each measurement "
     "convention", add_conventions, _cmd_conventions),
]
