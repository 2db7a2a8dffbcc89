"""Commands that write the report: verdicts, the paper's tables beside ours, provenance, the front page and
each notebook page (the sensitivity study's own: ``cli.sensitivity``).

Each command: its arguments (``add_*``) beside its handler (``_cmd_*``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bladefl.cli.common import Command, dataset_name, json_text, names_in, one_line, t_sum, whole


def add_calibration_index(p: argparse.ArgumentParser) -> None:
    p.add_argument("--outcomes", nargs="+", required=True, help="results/calibration/<dataset>/outcome.json")
    p.add_argument("--pages", nargs="+", required=True, help="rendered calibration pages (HTML)")
    p.add_argument("--out", required=True)


def _cmd_calibration_index(args: argparse.Namespace) -> int:
    from bladefl.report.pages import write_calibration_index

    write_calibration_index(args.out, args.outcomes, args.pages)
    print(f"wrote {args.out}")
    return 0


def add_report_index(p: argparse.ArgumentParser) -> None:
    p.add_argument("--verdicts", nargs="+", required=True, help="results/verdicts/<dataset>.csv")
    p.add_argument("--provenance", nargs="+", required=True, help="the runs' provenance tables, one per dataset")
    p.add_argument("--pages", nargs="+", required=True, help="rendered notebooks (HTML)")
    p.add_argument("--summaries", nargs="+", required=True, help="tidy run tables results/summary/<dataset>.csv")
    p.add_argument("--comparisons", nargs="+", required=True, help="results/tables/<dataset>_paper_comparison.csv")
    p.add_argument("--configfiles", nargs="*", default=[], help="the workflow's config file(s), for provenance")
    p.add_argument("--seeds", nargs="+", type=whole(0, 2**31 - 1), required=True,
                   help="the grid's seeds, for provenance")
    p.add_argument("--figures", required=True, help="folder for the headline figure (PNG and SVG)")
    p.add_argument("--calibration", nargs="*", default=[],
                   help="a calibration study's outcome per dataset (results/calibration/<dataset>/outcome.json of a "
                        "kept bundle): why our numbers differ from the paper's, on the front page")
    p.add_argument("--calibration-page", help="the calibration study's rendered report, linked where it exists")
    p.add_argument("--engine", help="the runs' engine (config/engines/<engine>.yaml): its reading, stated on the page")
    p.add_argument("--beside", nargs="*", default=[],
                   help="kept bundles of the same design under another reading (config readings_beside): each "
                        "claim's verdict and each table's distance to the paper under them, beside this report's")
    p.add_argument("--paper-values", help="the paper's tables: which reading of K* comes nearest them, on the front "
                   "page (default: config/paper_values.yaml where it is there)")
    p.add_argument("--out", required=True)


def _cmd_report_index(args: argparse.Namespace) -> int:

    from bladefl.report import bundle_design, pages, plots
    from bladefl.report.index_inputs import read_index_inputs

    found = read_index_inputs(verdicts=args.verdicts, provenance=args.provenance, summaries=args.summaries,
                              comparisons=args.comparisons, calibration=args.calibration,
                              configfiles=args.configfiles, engine=args.engine, paper_values=args.paper_values,
                              out=args.out, figures=args.figures, beside=args.beside)  # every input checked first
    panels = pages.headline_panels(found.summaries, found.comparisons)
    headline = None
    if panels:
        headline = plots.save_png_svg(plots.headline_figure(panels), "headline", os.path.realpath(args.figures))[0]
    line = bundle_design.provenance_line(found.provenance, args.configfiles, args.seeds)
    seeds = {int(t[t.status == "ok"].seed.nunique()) for t in found.summaries.values()}
    sensitivity = Path(args.out).parent / "sensitivity.html"
    out = pages.write_index(args.out, found.verdicts, args.pages, headline, line, comparisons=found.comparisons,
                            runs_per_point=min(seeds) if seeds else None, sensitivity=sensitivity,
                            summaries=found.summaries, outcomes=found.outcomes,
                            calibration_page=args.calibration_page, engine=args.engine,
                            paper_tables=found.paper_tables, beside=found.beside)
    print(f"wrote {out}")
    return 0


def add_verdicts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, type=dataset_name)
    p.add_argument("--summary", required=True, help="results/summary/<dataset>.csv")
    p.add_argument("--members", required=True, help="the grid's sweep members (JSON, or @file holding it)")
    p.add_argument("--t-sum", type=t_sum, required=True)
    p.add_argument("--engine", help="the runs' engine file (config/engines/<name>.yaml): its model's parameter count "
                   "sizes the lazy noise (default: the paper engine's model)")
    p.add_argument("--bound-sweep", help="the sweep whose cells the bound is drawn for (default fig3)")
    p.add_argument("--gaps", help="results/bound/<dataset>/gaps.csv (omit when constants are not measured)")
    p.add_argument("--constants", help="results/bound/<dataset>/constants.csv")
    p.add_argument("--margins", nargs="*", default=[], metavar="QUANTITY=MARGIN",
                   help="equivalence margins of the experiment's claims: K (rounds), mining_time and min_loss "
                        "(relative), max_accuracy (absolute); defaults: bladefl.experiments.verdicts.trend.Margins")
    p.add_argument("--resamples", type=whole(1, 100_000), default=1000,
                   help="(unused: the experiment's claims are tested, "
                   "not resampled; kept for old command lines)")
    p.add_argument("--bound-resamples", type=whole(1, 100_000), default=100,
                   help="bootstrap resamples of the bound claims")
    p.add_argument("--statements", default=None, help="config/paper_statements.yaml: the paper's statements, each "
                   "judged once (default: the project's)")
    p.add_argument("--paper-values", default=None, help="config/paper_values.yaml: the paper's tables, for the rows "
                   "of the paper's own errors (default: the project's)")
    p.add_argument("--out", required=True)


def _cmd_verdicts(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.experiments.plan.grid import members_from_json
    from bladefl.experiments.runs import provenance
    from bladefl.experiments.tables.table_schema import summary_problems
    from bladefl.experiments.verdicts.statements import problems, read_inventory
    from bladefl.experiments.verdicts.table import all_verdicts, bound_cells_of, verdict_csv
    from bladefl.experiments.verdicts.trend import parse_margins
    from bladefl.fl.run_config import ModelConfig, load_config
    from bladefl.fl.shape import parameters_on
    from bladefl.report.inputs import SUMMARY_COLUMNS, read_csv
    from bladefl.report.pages import verdict_tally
    from bladefl.report.paper import paper_tables

    config = provenance.project_root() / "config"
    inventory = read_inventory(args.statements or config / "paper_statements.yaml")
    tables = paper_tables(args.paper_values or config / "paper_values.yaml")
    members = members_from_json(json_text(args.members))
    table = read_csv(args.summary, SUMMARY_COLUMNS)
    found = summary_problems(Path(args.summary), members)  # a table of another grid judges nothing: refused
    if found:
        raise ValueError(found[0])
    from bladefl.experiments.tables import table_schema as ts

    for option, path, required in (("--gaps", args.gaps, ts.GAPS), ("--constants", args.constants, ts.CONSTANTS)):
        if path and (wrong := ts.bound_problems(Path(path), required, option)):  # the bound's tables as it writes them
            raise ValueError(wrong[0])
    gaps = read_csv(args.gaps) if args.gaps else None
    constants = read_csv(args.constants) if args.constants else None
    if args.bound_sweep is not None:
        names_in(args.bound_sweep, {m.sweep for m in members}, "--bound-sweep")
    args.bound_sweep = args.bound_sweep or "fig3"
    cells = bound_cells_of(members, args.bound_sweep, args.t_sum)
    margins = parse_margins(args.margins)
    frame = all_verdicts(table, members, args.t_sum, cells, gaps, constants, resamples=args.resamples,
                         bound_resamples=args.bound_resamples, margins=margins, dataset=args.dataset,
                         inventory=inventory, paper_tables=tables, fig3_sweep=args.bound_sweep,
                         model_size=parameters_on(args.dataset, (load_config(args.engine).model if args.engine
                                                                  else ModelConfig()).hidden))
    frame = frame.assign(dataset=args.dataset)
    for problem in problems(frame, inventory, args.dataset):
        print(f"warning: {problem}", file=sys.stderr)
    atomic.write_text(args.out, verdict_csv(frame))
    print(f"wrote {args.out}: {verdict_tally(frame)} (derived rows and other readings not counted)")
    return 0


def add_paper_comparison(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, type=dataset_name)
    p.add_argument("--summary", required=True)
    p.add_argument("--optimum", required=True)
    p.add_argument("--paper-values", required=True)
    p.add_argument("--t-sum", type=t_sum, required=True)
    p.add_argument("--out", required=True, type=csv_path,
                   help="the comparison table (<name>.csv); its Markdown goes beside it (<name>.md)")


def csv_path(value: str) -> str:
    """An output path ending in .csv (a Markdown twin is written beside it under the same name)."""
    if not value.endswith(".csv") or value == ".csv":
        raise argparse.ArgumentTypeError(f"a .csv file (its Markdown goes beside it as .md), got {value!r}")
    return value


def _cmd_paper_comparison(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.report.inputs import OPTIMUM_COLUMNS, SUMMARY_COLUMNS, read_csv
    from bladefl.report.paper import paper_comparison, paper_tables
    from bladefl.report.tables import markdown

    frame = paper_comparison(read_csv(args.optimum, OPTIMUM_COLUMNS), read_csv(args.summary, SUMMARY_COLUMNS),
                             paper_tables(args.paper_values), args.dataset, args.t_sum)
    atomic.write_csv(args.out, frame)
    atomic.write_text(args.out.removesuffix(".csv") + ".md", markdown(frame))
    print(f"wrote {args.out}: {len(frame)} rows")
    return 0


def add_provenance(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", nargs="+", required=True, help="the runs' summary.json files")
    p.add_argument("--out", required=True, help="output CSV, one row per run")


def _cmd_provenance(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.report.views import provenance

    table = provenance(args.runs)
    atomic.write_csv(args.out, table)
    print(f"wrote {args.out} ({len(table)} runs)")
    return 0


def add_render_page(p: argparse.ArgumentParser) -> None:
    p.add_argument("notebook", help="the executed notebook (.ipynb)")
    p.add_argument("--out", required=True, help="the HTML page")
    p.add_argument("--index", required=True, help="the report's front page (linked from the page)")


def _cmd_render_page(args: argparse.Namespace) -> int:
    from bladefl.report.page_html import render_html

    print(f"wrote {render_html(args.notebook, args.out, args.index)}")
    return 0


def add_run_page(p: argparse.ArgumentParser) -> None:
    p.add_argument("notebook", help="the report notebook (notebooks/*.ipynb)")
    p.add_argument("--parameters", required=True, help="its parameters (YAML mapping, as papermill -f reads)")
    p.add_argument("--executed", required=True, help="the executed notebook to write (.ipynb)")
    p.add_argument("--out", required=True, help="the HTML page")
    p.add_argument("--index", required=True, help="the report's front page (linked from the page)")
    p.add_argument("--results-dir", default="results",
                   help="the run's results folder: every path parameter lies in it or in --data-dir")
    p.add_argument("--data-dir", default="data", help="the run's data folder (partition manifests)")


def _cmd_run_page(args: argparse.Namespace) -> int:
    from bladefl.report.execution import execute_notebook
    from bladefl.report.page_html import render_html
    from bladefl.report.page_parameters import ParameterError, read

    try:
        parameters = read(args.parameters, args.notebook, args.results_dir, args.data_dir)
    except ParameterError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    from papermill.exceptions import PapermillExecutionError

    from bladefl.report.execution import page_outputs

    executed, _ = page_outputs(args.executed, args.out)  # both checked before the kernel starts
    try:  # no executed notebook is left behind by a page that fails
        execute_notebook(args.notebook, executed, parameters)
    except PapermillExecutionError as exc:
        executed.unlink(missing_ok=True)
        print(f"error: {args.notebook} failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}"[:2000],
              file=sys.stderr)
        return 1
    except BaseException:
        executed.unlink(missing_ok=True)
        raise
    print(f"wrote {args.executed}")
    print(f"wrote {render_html(args.executed, args.out, args.index)}")
    return 0


def add_findings(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundles", nargs="+", help="kept bundles, e.g. reference/paper-20seeds reference/default-2seeds")
    p.add_argument("--calibration", help="a kept calibration bundle (reference/calibration-cpu): which setting moves "
                                         "a distance that stays far from the paper")
    p.add_argument("--out", help="the page to write (docs/findings.md); without it, printed")


def _cmd_findings(args: argparse.Namespace) -> int:
    from bladefl.report.findings_doc import findings_markdown

    # every bundle checked against its manifest first
    return _page(findings_markdown(args.bundles, args.calibration), args)


def _page(text: str, args: argparse.Namespace) -> int:
    """A page computed from bundles: into ``--out`` (atomically) or printed."""
    from bladefl.core import atomic

    if args.out:
        atomic.write_text(args.out, text)
        print(f"wrote {args.out} from {', '.join(args.bundles)}")
    else:
        print(text, end="")
    return 0


def add_summary(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundles", nargs="+", help="kept bundles, the headline first (reference/paper-20seeds ...)")
    p.add_argument("--calibration", help="a kept calibration bundle (reference/calibration-cpu): which setting moves "
                                         "a distance that stays far from the paper")
    p.add_argument("--out", help="write the page here (docs/summary.md); else print it")


def _cmd_summary(args: argparse.Namespace) -> int:
    from bladefl.report.summary_doc import summary_markdown

    # every bundle checked against its manifest first
    return _page(summary_markdown(args.bundles, args.calibration), args)


COMMANDS: list[Command] = [
    ("calibration-index", "the calibration study's front page", add_calibration_index, _cmd_calibration_index),
    ("report-index", "the report's front page: verdicts, headline figure, pages by dataset",
     add_report_index, _cmd_report_index),
    ("verdicts", "every statement of the paper judged once on one dataset", add_verdicts, _cmd_verdicts),
    ("findings", "docs/findings.md computed from kept bundles' verdict tables", add_findings, _cmd_findings),
    ("summary", "docs/summary.md: the reproduction summary computed from kept bundles", add_summary, _cmd_summary),
    ("paper-comparison", "the paper's Tables II-VII beside ours, one row per table row",
     add_paper_comparison, _cmd_paper_comparison),
    ("provenance", "one row per run: code version, device, host, data checksum, run time",
     add_provenance, _cmd_provenance),
    ("render-page", "an executed report notebook as a stand-alone HTML page", add_render_page, _cmd_render_page),
    ("run-page", "a report notebook executed with its parameters (a kernel of its own), then rendered",
     add_run_page, _cmd_run_page),
]
