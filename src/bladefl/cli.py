"""Command-line entry point ``bladefl``: thin wrappers over the library."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from bladefl import cli_args


def _json_text(arg: str) -> str:
    """A JSON argument given inline, or as ``@path`` to a file holding it (what the workflow passes)."""
    return Path(arg[1:]).read_text() if arg.startswith("@") else arg


def _cmd_fetch(args: argparse.Namespace) -> int:
    from bladefl.data.fetch import FetchError, fetch

    try:
        fetch(args.dataset, args.root, sources=args.sources, log=lambda m: print(m, flush=True))
    except FetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _cmd_partition(args: argparse.Namespace) -> int:
    from bladefl.data.partition import PartitionSpec
    from bladefl.data.partition_store import PartitionPaths, write_partition

    spec = PartitionSpec.from_key(args.key)
    paths = PartitionPaths.under(args.out, args.dataset, spec)
    info = write_partition(args.dataset, spec, args.root, paths)
    print(f"wrote {paths.indices} ({info['shape'][0]} clients x {info['shape'][1]} samples), "
          f"{paths.manifest}, {paths.figure}")
    return 0


def _partition_indices(path: str, spec, dataset: str):  # noqa: ANN001, ANN202 - PartitionSpec -> np.ndarray
    """The client index file at ``path``, checked before any work: it exists, holds integers, is a
    partition of the training set with ``spec``'s N x n disjoint clients, and, where `bladefl
    partition`'s manifest lies beside it, is the very draw the run's config asks for."""

    from bladefl.data.datasets import TRAIN_SIZE
    from bladefl.data.partition_store import index_problems, manifest_problems, read_partition

    if not Path(path).is_file():
        raise ValueError(f"--partition {path}: no such file (write it with `bladefl partition`)")
    try:
        indices = read_partition(path)
    except ValueError as exc:
        raise ValueError(f"--partition {exc}") from None
    problems = index_problems(indices, spec, TRAIN_SIZE) or manifest_problems(path, indices, dataset, spec)
    if problems:
        raise ValueError(f"--partition {path}: " + "; ".join(problems))
    return indices


def _by_draw(paths: list[str], specs: list, option: str) -> dict:  # noqa: ANN001 - PartitionSpec keys
    """Each partition draw's file among ``paths``: the one named by the draw's key (``<key>.npy``,
    ``<key>.npz``, as the workflow names them); a single file for a single draw."""
    if len(paths) == 1 and len(specs) == 1:
        return {specs[0]: paths[0]}
    by_key = {Path(p).stem: p for p in paths}
    missing = [spec.key for spec in specs if spec.key not in by_key]
    if missing:
        raise ValueError(f"{option}: no file named for draw {missing[0]} (give one {option} per partition draw, "
                         f"named <key>: {', '.join(spec.key for spec in specs)})")
    return {spec: by_key[spec.key] for spec in specs}


def _writable_folder(path: str | Path, option: str) -> None:
    """Refuse, before any work, an output folder that is an existing file (or empty)."""
    if not str(path).strip():
        raise ValueError(f"{option}: give a folder (got an empty path)")
    if Path(path).exists() and not Path(path).is_dir():
        raise ValueError(f"{option} {path}: exists and is not a folder")


def _cmd_run(args: argparse.Namespace) -> int:
    from bladefl.experiments.runs.runner import run_cell
    from bladefl.fl.execution import resolve
    from bladefl.fl.run_config import load_config

    cfg = load_config(args.config, args.set)  # every field validated before any work starts
    _writable_folder(args.out, "--out")
    if args.reference and not Path(args.reference).is_file():
        raise ValueError(f"--reference {args.reference}: no such file (`bladefl reference` writes it)")
    execution = resolve(cfg.device, threads=args.threads)
    execution.apply()
    data = None
    if args.partition:
        from bladefl.fl.engine import load_client_data

        data = load_client_data(cfg, _partition_indices(args.partition, cfg.partition, cfg.dataset))
    reference = None
    if args.reference:
        from bladefl.theory.reference import load

        reference = load(args.reference).w_star
    summary = run_cell(cfg, args.out, data=data, progress=not args.quiet, reference=reference, execution=execution)
    for row in summary["per_K"]:
        if row["status"] == "ok":
            print(f"K={row['K']:>2} tau={row['tau']:>3} train_loss={row['train_loss']:.4f} "
                  f"test_loss={row['test_loss']:.4f} test_acc={row['test_accuracy']:.4f}")
        else:
            print(f"K={row['K']:>2} tau={row['tau']:>3} {row['status']}")
    print(f"wrote {args.out}/rounds.csv and {args.out}/summary.json ({summary['seconds']['total']:.1f} s)")
    return 0


def _cmd_run_group(args: argparse.Namespace) -> int:
    import json

    from bladefl.experiments.runs.runner import CellJob, run_cells
    from bladefl.fl.run_config import load_config

    plan = json.loads(_json_text(args.plan))
    bad = [i for i, item in enumerate(plan if isinstance(plan, list) else [None])
           if not (isinstance(item, dict) and isinstance(item.get("out"), str) and isinstance(item.get("set"), list))]
    if not isinstance(plan, list) or bad:
        raise ValueError(f"--plan: a list of {{\"out\": folder, \"set\": [overrides]}} entries (entries {bad} are not)")
    cfgs = [load_config(args.config, [*args.set, *item["set"]]) for item in plan]  # all validated first
    if not cfgs:
        raise ValueError("--plan lists no runs")
    from bladefl.fl.client_data import load_draws
    from bladefl.fl.execution import resolve

    execution = resolve(cfgs[0].device, threads=args.threads, max_rows=args.max_rows,
                        chain_processes=None if args.chain_processes < 0 else args.chain_processes)
    execution.apply()

    specs = list(dict.fromkeys(c.partition for c in cfgs))  # the group's partition draws, in plan order
    if any(c.dataset != cfgs[0].dataset for c in cfgs) or len({dataclasses.replace(p, seed=0) for p in specs}) > 1:
        raise ValueError("--plan: every run of a group must share the dataset and the partition scheme, N and n "
                         "(its draws may differ)")
    paths = _by_draw(args.partition, specs, "--partition")
    references = _by_draw(args.reference, specs, "--reference") if args.reference else {}
    indices = [_partition_indices(paths[spec], spec, cfgs[0].dataset) for spec in specs]
    loaded = {}
    if references:
        from bladefl.theory.reference import load

        loaded = {spec: load(path).w_star for spec, path in references.items()}
    draw = {spec: i for i, spec in enumerate(specs)}
    jobs = [CellJob(cfg, Path(item["out"]), loaded.get(cfg.partition) if item.get("reference") else None,
                    draw[cfg.partition]) for cfg, item in zip(cfgs, plan, strict=True)]
    missing = [str(j.out) for j, item in zip(jobs, plan, strict=True) if item.get("reference") and j.reference is None]
    if missing:
        raise ValueError(f"--reference: no reference optimum for the draw of {missing[0]}"
                         + (f" and {len(missing) - 1} more runs" if len(missing) > 1 else ""))
    data = load_draws(cfgs[0], indices)
    summaries = run_cells(jobs, data, execution, progress=not args.quiet, resume=True)
    done = sum(s is not None for s in summaries)
    print(f"{done} run folders written, {len(jobs) - done} already finished (of {len(jobs)})")
    return 0


def _cmd_detection(args: argparse.Namespace) -> int:

    from bladefl.core import atomic
    from bladefl.experiments.plan.grid import members_from_json
    from bladefl.experiments.tables import detection_analysis as da

    members = members_from_json(_json_text(args.members))
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


def _cmd_sensitivity(args: argparse.Namespace) -> int:

    from bladefl.core import atomic
    from bladefl.report import sensitivity as sens
    from bladefl.report.inputs import OPTIMUM_COLUMNS, SUMMARY_COLUMNS, read_csv
    from bladefl.report.paper import paper_tables

    n = len(args.readings)
    if not (len(args.axes) == len(args.summaries) == len(args.optima) == len(args.verdicts) == n):
        raise ValueError("--readings, --axes, --summaries, --optima and --verdicts must list one entry per reading")
    summaries = {r: read_csv(f, SUMMARY_COLUMNS) for r, f in zip(args.readings, args.summaries, strict=True)}
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


def _cmd_sensitivity_index(args: argparse.Namespace) -> int:
    from bladefl.report.pages import write_sensitivity_index

    write_sensitivity_index(args.out, args.rankings, args.pages)
    print(f"wrote {args.out}")
    return 0


def _cmd_summarize(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.experiments.plan.grid import members_from_json
    from bladefl.experiments.tables.tidy import collect, optimum

    table = collect(args.runs, members_from_json(_json_text(args.members)))
    atomic.write_csv(args.table, table)
    atomic.write_csv(args.optimum, optimum(table))
    print(f"wrote {args.table} ({len(table)} rows) and {args.optimum}")
    return 0


def _cmd_reference(args: argparse.Namespace) -> int:
    from bladefl.core.rng import torch_generator
    from bladefl.data.partition_store import read_partition
    from bladefl.fl import engine
    from bladefl.fl.run_config import load_config
    from bladefl.theory import reference

    indices = read_partition(args.partition)
    cfg = load_config(args.config, [*args.set, f"partition.N={indices.shape[0]}", f"partition.n={indices.shape[1]}"])
    data = engine.load_client_data(cfg, indices)
    shape = engine.model_shape(cfg, data.x.shape[2])
    ref = reference.train_reference(data.x, data.y, shape, engine.initial_model(cfg, shape), eta=args.eta,
                                    batch_size=cfg.train.batch_size, max_epochs=args.max_epochs,
                                    generator=torch_generator(cfg.seed, "reference"))
    reference.save(ref, args.out, {"dataset": cfg.dataset, "partition": str(args.partition), "eta": args.eta,
                                   "model": cfg.to_dict()["model"], "seed": cfg.seed})
    print(f"reference: F* = {ref.f_star:.5f} after {ref.epochs} epochs -> {args.out}")
    return 0


def _cmd_bound(args: argparse.Namespace) -> int:
    from bladefl.experiments.plan.grid import members_from_json
    from bladefl.experiments.tables.bound_analysis import write_report

    written = write_report(args.runs, members_from_json(_json_text(args.members)), args.references, args.out_dir)
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


def _cmd_report_index(args: argparse.Namespace) -> int:

    from bladefl.report import pages, plots
    from bladefl.report.inputs import SUMMARY_COLUMNS, read_csv
    from bladefl.report.paper import COMPARISON_COLUMNS

    summaries = {Path(p).stem: read_csv(p, SUMMARY_COLUMNS) for p in args.summaries}
    comparisons = {Path(p).stem.removesuffix("_paper_comparison"): read_csv(p, COMPARISON_COLUMNS)
                   for p in args.comparisons}
    panels = pages.headline_panels(summaries, comparisons)
    headline = None
    if panels:
        headline = plots.save_png_svg(plots.headline_figure(panels), "headline", args.figures)[0]
    provenance = {Path(p).parents[1].name: read_csv(p) for p in args.provenance}  # tables/<dataset>/<page>/
    line = pages.provenance_line(provenance, args.configfiles, args.seeds)
    seeds = {int(t[t.status == "ok"].seed.nunique()) for t in summaries.values()}
    sensitivity = Path(args.out).parent / "sensitivity.html"
    out = pages.write_index(args.out, args.verdicts, args.pages, headline, line, comparisons=comparisons,
                            runs_per_point=min(seeds) if seeds else None, sensitivity=sensitivity,
                            summaries=summaries)
    print(f"wrote {out}")
    return 0


def _cmd_verdicts(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.experiments.plan.grid import members_from_json
    from bladefl.experiments.runs import provenance
    from bladefl.experiments.verdicts.statements import problems, read_inventory
    from bladefl.experiments.verdicts.table import all_verdicts, bound_cells_of
    from bladefl.experiments.verdicts.trend import parse_margins
    from bladefl.report.inputs import SUMMARY_COLUMNS, read_csv
    from bladefl.report.pages import verdict_tally
    from bladefl.report.paper import paper_tables

    config = provenance.project_root() / "config"
    inventory = read_inventory(args.statements or config / "paper_statements.yaml")
    tables = paper_tables(args.paper_values or config / "paper_values.yaml")
    members = members_from_json(_json_text(args.members))
    table = read_csv(args.summary, SUMMARY_COLUMNS)
    gaps = read_csv(args.gaps) if args.gaps else None
    constants = read_csv(args.constants) if args.constants else None
    cells = bound_cells_of(members, args.bound_sweep, args.t_sum)
    margins = parse_margins(args.margins)
    frame = all_verdicts(table, members, args.t_sum, cells, gaps, constants, resamples=args.resamples,
                         bound_resamples=args.bound_resamples, margins=margins, dataset=args.dataset,
                         inventory=inventory, paper_tables=tables, fig3_sweep=args.bound_sweep)
    frame = frame.assign(dataset=args.dataset)
    for problem in problems(frame, inventory, args.dataset):
        print(f"warning: {problem}", file=sys.stderr)
    atomic.write_csv(args.out, frame)
    print(f"wrote {args.out}: {verdict_tally(frame)} (derived rows and other readings not counted)")
    return 0


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


def _cmd_provenance(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.report.views import provenance

    table = provenance(args.runs)
    atomic.write_csv(args.out, table)
    print(f"wrote {args.out} ({len(table)} runs)")
    return 0


def _cmd_keep(args: argparse.Namespace) -> int:
    import json

    from bladefl.experiments.bundles import kept_results

    about = kept_results.about_runs(args.provenance)
    archive = None
    if args.imported:
        about["imported"] = json.loads(Path(args.imported).read_text())
        if args.with_archive:
            archive = kept_results.imported_archive(about["imported"], args.out)
    manifest = kept_results.keep([*args.files, *args.provenance], args.results_dir, args.data_dir,
                                 args.config_file, args.out, about, archive)
    size = sum(f["bytes"] for f in manifest["files"].values())
    print(f"kept {len(manifest['files'])} files ({size / 1e6:.1f} MB) in {args.out}")
    if args.imported:  # say where the runs' archive is, or that it is not kept
        print(f"  run tables archive: runs/{archive.name}" if archive else
              f"  run tables archive {about['imported'].get('archive')}: not kept (the import record keeps its "
              f"SHA-256{'' if args.with_archive else '; --with-archive copies it in'})")
    return 0


def _key_secret(path: str | None) -> bytes | None:
    """The verifier's own copy of a key secret (``--key-secret``; None when not given): a regular,
    non-empty file of at most 1 MiB, else a one-line error naming it."""
    if path is None:
        return None
    from bladefl.chain.round import read_secret

    if not path.strip():
        raise ValueError("--key-secret: give the secret's file (an empty path gives no secret)")
    try:
        return read_secret(path)
    except OSError as exc:
        raise ValueError(f"--key-secret {path}: {exc.strerror or exc}") from None


def _cmd_import_runs(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.experiments.bundles import run_import

    config = run_import.read_config(args.configfile, args.seeds)
    results = Path(args.results_dir or config["results_dir"])
    runs_root = results / "runs" / config.get("engine", "paper")
    secret = _key_secret(args.key_secret)
    try:
        imported = run_import.import_runs(Path(args.archive), config, runs_root, replace=args.replace, secret=secret)
    except run_import.ArchiveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    record = run_import.record(Path(args.archive), " ".join(args.configfile), config, imported)
    atomic.write_json(results / "imported.json", record)
    print(f"imported {imported.total} run folders ({', '.join(f'{d}: {n}' for d, n in imported.runs.items())}) "
          f"under {runs_root}" + (f", skipped {imported.skipped} runs of other seeds" if imported.skipped else "")
          + f"; ledgers verified for {imported.verified}"
          + (f", none carried by {imported.unverified} (packed without ledgers)" if imported.unverified else "")
          + f"; record in {results / 'imported.json'}")
    return 0


def _cmd_lay_out(args: argparse.Namespace) -> int:
    from bladefl.experiments.bundles import kept_results

    try:
        count = kept_results.lay_out(args.bundle, args.results_dir, args.data_dir)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"laid out {count} files of {args.bundle} under {args.results_dir} and {args.data_dir}")
    return 0


def _cmd_rejudge(args: argparse.Namespace) -> int:
    from bladefl.experiments.bundles import kept_results

    manifest = kept_results.rejudge(args.bundle, args.statements, args.paper_values)
    record = manifest["about"]["rejudged"][-1]
    print(f"re-derived {', '.join(record['files'])} of {args.bundle} with code {record['code_version']}; "
          f"manifest updated")
    return 0


def _cmd_render_page(args: argparse.Namespace) -> int:
    from bladefl.report.pages import render_html

    print(f"wrote {render_html(args.notebook, args.out, args.index)}")
    return 0


def _cmd_run_page(args: argparse.Namespace) -> int:
    from bladefl.report.execution import execute_notebook, read_parameters
    from bladefl.report.pages import render_html

    try:
        parameters = read_parameters(args.parameters)
    except (OSError, ValueError) as exc:
        print(f"error: --parameters: {exc}", file=sys.stderr)
        return 1
    execute_notebook(args.notebook, args.executed, parameters)
    print(f"wrote {args.executed}")
    print(f"wrote {render_html(args.executed, args.out, args.index)}")
    return 0


def _cmd_chain_verify(args: argparse.Namespace) -> int:
    from bladefl.chain.verify import verify_chain

    if args.key_secret is not None and not args.summary:
        raise ValueError("--key-secret needs --summary (the run's seed and clients the keys derive from)")
    secret = _key_secret(args.key_secret)
    problem = verify_chain(args.path, store=args.store, summary=args.summary, secret=secret)
    if problem is None and args.summary:  # the run's tau and status against its config's time model
        from bladefl.chain.ledger_file import Problem
        from bladefl.core import run_files
        from bladefl.experiments.runs.run_checks import time_model_problems

        wrong = time_model_problems(run_files.read_summary(args.summary))
        problem = Problem(0, f"summary {args.summary}: {wrong[0]}") if wrong else None
    if problem is None:
        print(f"{args.path}: chain valid" + (f", its tip is the run's ({args.summary})" if args.summary else ""))
        return 0
    where = "genesis/file" if problem.height == 0 else f"block {problem.height}"
    print(f"{args.path}: {where}: {problem.reason}; last good height {problem.last_good_height}")
    return 1


def _cmd_device_check(args: argparse.Namespace) -> int:
    import pandas as pd

    from bladefl.core import atomic
    from bladefl.experiments.runs import device_check

    if args.tables:
        check = device_check.summary_check(*(pd.read_csv(p) for p in args.tables))
        table = check.runs
        print(table.to_string(index=False, float_format=lambda x: f"{x:.2e}"))
        print(f"\n{check.compared} runs compared ({args.tables[0]} vs {args.tables[1]}): K* by loss identical in "
              f"{check.k_star_loss_same}, by accuracy in {check.k_star_accuracy_same}; largest differences: "
              f"accuracy {check.accuracy_max_abs:.2e}, training loss {check.loss_max_abs:.2e}")
        ok = True
    else:
        table = device_check.mixed_group_check(args.device)
        print(table.to_string(index=False, float_format=lambda x: f"{x:.2e}"))
        ok = bool(table.within.all())
        print(f"\nmixed group, {args.device} vs cpu: {int(table.within.sum())} of {len(table)} runs within "
              f"tolerance (model {device_check.MODEL_TOL:g}, accuracy {device_check.ACCURACY_TOL:g}, loss "
              f"{device_check.LOSS_TOL:g}; miners, votes, members, flags identical)")
    if args.out:
        atomic.write_text(Path(args.out), table.to_csv(index=False))
    return 0 if ok else 1


def _cmd_bench(args: argparse.Namespace) -> int:
    from bladefl.bench import main as bench_main

    return bench_main(args)


def _commands() -> list[tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[..., int]]]:
    """(command, help, its arguments, its handler) of every command."""
    return [
        ("fetch", "fetch and verify a dataset's raw IDX files", cli_args.add_fetch, _cmd_fetch),
        ("partition", "write a non-IID partition (indices, manifest, heatmap)", cli_args.add_partition, _cmd_partition),
        ("run", "run one cell over its K values (per-round CSV, summary JSON)", cli_args.add_run, _cmd_run),
        ("run-group", "run many cells and seeds sharing one partition as one computation",
         cli_args.add_run_group, _cmd_run_group),
        ("reference", "train the reference optimum w* on the union of the clients' data",
         cli_args.add_reference, _cmd_reference),
        ("bound", "measured and fitted bound against the experiments, per cell", cli_args.add_bound, _cmd_bound),
        ("detection", "lazy-client detection quality and what exclusion recovers",
         cli_args.add_detection, _cmd_detection),
        ("sensitivity", "rank readings of the unstated settings by distance to the paper",
         cli_args.add_sensitivity, _cmd_sensitivity),
        ("sensitivity-index", "the sensitivity study's front page",
         cli_args.add_sensitivity_index, _cmd_sensitivity_index),
        ("summarize", "tidy summary and optimum tables over the grid's runs", cli_args.add_summarize, _cmd_summarize),
        ("report-index", "the report's front page: verdicts, headline figure, pages by dataset",
         cli_args.add_report_index, _cmd_report_index),
        ("verdicts", "every statement of the paper judged once on one dataset",
         cli_args.add_verdicts, _cmd_verdicts),
        ("paper-comparison", "the paper's Tables II-VII beside ours, one row per table row",
         cli_args.add_paper_comparison, _cmd_paper_comparison),
        ("provenance", "one row per run: code version, device, host, data checksum, run time",
         cli_args.add_provenance, _cmd_provenance),
        ("keep", "keep the report's inputs for good (reference/<name>/, with a manifest)", cli_args.add_keep,
         _cmd_keep),
        ("import-runs", "bring run folders computed elsewhere (grid-tables.tar.xz) into a results folder",
         cli_args.add_import_runs, _cmd_import_runs),
        ("lay-out", "a kept bundle's files laid out as a results folder (for the report)", cli_args.add_lay_out,
         _cmd_lay_out),
        ("rejudge", "a kept bundle's verdict tables derived again from its own tables by this code",
         cli_args.add_rejudge, _cmd_rejudge),
        ("render-page", "an executed report notebook as a stand-alone HTML page",
         cli_args.add_render_page, _cmd_render_page),
        ("run-page", "a report notebook executed with its parameters (a kernel of its own), then rendered",
         cli_args.add_run_page, _cmd_run_page),
        ("chain", "ledger tools", cli_args.add_chain, _cmd_chain_verify),
        ("device-check", "a device's results against the CPU's (the mixed group, or two run tables)",
         cli_args.add_device_check, _cmd_device_check),
        ("bench", "engine vs GEMM peak vs a per-client loop; chain share; memory", cli_args.add_bench, _cmd_bench),
    ]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bladefl", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_, add_arguments, handler in _commands():
        p = sub.add_parser(name, help=help_)
        add_arguments(p)
        p.set_defaults(func=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, RuntimeError, FileNotFoundError) as exc:  # bad input: one line, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
