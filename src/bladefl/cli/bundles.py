"""Commands that move results between machines: keep a results folder for good, import run
folders computed elsewhere, lay a kept bundle out again, re-judge it with this code.

Each command: its arguments (``add_*``) beside its handler (``_cmd_*``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bladefl.cli.common import Command, folder_option, key_secret, one_line


def add_keep(p: argparse.ArgumentParser) -> None:
    p.add_argument("--files", nargs="+", required=True, help="the report's input files")
    p.add_argument("--provenance", nargs="+", required=True, help="the runs' provenance tables (kept too)")
    p.add_argument("--imported", help="results/imported.json when the runs were imported (bladefl import-runs)")
    p.add_argument("--results-dir", required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--config-file", required=True, help="the workflow's config (results/report/config.yaml)")
    p.add_argument("--out", required=True, help="the bundle folder, e.g. reference/paper-20seeds")
    p.add_argument("--with-archive", action="store_true",
                   help="also copy the imported run tables archive into the bundle (runs/); off by default: "
                        "the archive (megabytes) stays out of git, the manifest names it by its SHA-256")


def _cmd_keep(args: argparse.Namespace) -> int:
    import json

    from bladefl.experiments.bundles import kept_results

    for option, folder in (("--results-dir", args.results_dir), ("--data-dir", args.data_dir)):
        if not Path(folder).is_dir() or Path(folder).is_symlink():  # the folders the files are named under
            raise ValueError(f"{option} {folder}: not a folder")
    from bladefl.experiments.plan import config_files
    from bladefl.experiments.plan.config_checks import SCHEMA, schema_errors

    # a workflow config: read strictly and bounded, with only the workflow's keys
    if wrong := schema_errors(config_files.read_configs([args.config_file], default=None), SCHEMA,
                              layer=True):
        raise ValueError(f"--config-file {args.config_file}: not a workflow config ({wrong[0]})")
    about = kept_results.about_runs(args.provenance)
    archive = None
    if args.imported:
        from bladefl.core import run_files
        from bladefl.core.bounded_read import read_regular

        try:  # read as hostile: a regular file of at most 16 MiB, JSON, no key twice, an import record
            record = json.loads(read_regular(args.imported, 16 << 20, "--imported").decode("utf-8"),
                                object_pairs_hook=run_files.no_key_twice)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"--imported {args.imported}: not an import record ({exc})") from None
        if not isinstance(record, dict) or not isinstance(record.get("archive"), str):
            raise ValueError(f"--imported {args.imported}: not an import record (no archive named)")
        about["imported"] = record
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


def add_import_runs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--archive", required=True,
                   help="run folders' tables, e.g. grid-tables.tar.xz from scripts/gpu/run.sh")
    p.add_argument("--configfile", nargs="+", required=True,
                   help="the workflow config the runs belong to, as Snakemake reads it: files merged in order, "
                        "e.g. config/config.yaml config/paper.yaml")
    p.add_argument("--seeds", type=int, nargs="+",
                   help="only these run seeds of it (a part of the grid, e.g. one call's; parts imported one after "
                        "another into one results folder make the whole grid)")
    p.add_argument("--results-dir", help="the results folder (default: the config's results_dir)")
    p.add_argument("--replace", action="store_true", help="overwrite run folders that exist")
    p.add_argument("--key-secret", metavar="FILE",
                   help="the verifier's copy of the runs' key secret (chain.key_secret_file), to verify their ledgers")


def _cmd_import_runs(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.experiments.bundles import import_journal, run_import

    config = run_import.read_config(args.configfile, args.seeds)
    results = folder_option(args.results_dir or config["results_dir"], "--results-dir")
    runs_root = results / "runs" / config.get("engine", "paper")
    secret = key_secret(args.key_secret)
    earlier = run_import.earlier_imports(results / "imported.json")  # read first: a refusal writes no run
    try:
        imported = run_import.import_runs(Path(args.archive), config, runs_root, replace=args.replace, secret=secret,
                                          keep_journal=True)
    except run_import.ArchiveError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 1
    record = run_import.record(Path(args.archive), " ".join(args.configfile), config, imported)
    if earlier and not (imported.resumed and earlier[-1].get("sha256") == record["sha256"]):
        record["earlier_imports"] = earlier  # a grid imported in parts: every part's record kept (once each)
    elif imported.resumed and earlier:
        record["earlier_imports"] = earlier[:-1]
    atomic.write_json(results / "imported.json", record)
    import_journal.done(imported)  # the journal goes once the record is written: a kill before it is finished next time
    if imported.resumed:
        print(f"finished an import of {args.archive} that was cut short: every run of it is in place")
    print(f"imported {imported.total} run folders ({', '.join(f'{d}: {n}' for d, n in imported.runs.items())}) "
          f"under {runs_root}" + (f", skipped {imported.skipped} runs of other seeds" if imported.skipped else "")
          + f"; ledgers verified for {imported.verified}"
          + (f", none carried by {imported.unverified} (packed without ledgers)" if imported.unverified else "")
          + (f"; {imported.undigested} record no partition digest, so the draw they trained on was not checked"
             if imported.undigested else "")
          + ("; the archive holds no ABOUT.json, so where it ran is not recorded" if imported.about is None else "")
          + f"; record in {results / 'imported.json'}")
    return 0


def _optima_config(args: argparse.Namespace) -> dict:
    from bladefl.experiments.bundles import run_import

    return run_import.read_config(args.configfile, args.seeds)


def _add_optima_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--configfile", nargs="+", required=True,
                   help="the workflow config the optima belong to, as Snakemake reads it: files merged in order, "
                        "e.g. config/config.yaml config/paper.yaml config/paper_part10.yaml")
    p.add_argument("--seeds", type=int, nargs="+", help="only the optima these run seeds' runs read (a part)")
    p.add_argument("--results-dir", help="the results folder (default: the config's results_dir)")


def add_pack_optima(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="the archive, e.g. reference/runs/paper-10draws/optima.tar.xz")
    _add_optima_common(p)


def _cmd_pack_optima(args: argparse.Namespace) -> int:
    from bladefl.experiments.bundles import optima_archive
    from bladefl.experiments.runs.provenance import code_version

    config = _optima_config(args)
    try:
        count = optima_archive.pack(config, args.out, args.results_dir, code_version())
    except optima_archive.ArchiveError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 1
    print(f"packed {count} reference optima into {args.out} ({Path(args.out).stat().st_size / 1e6:.1f} MB)")
    return 0


def add_import_optima(p: argparse.ArgumentParser) -> None:
    p.add_argument("--archive", required=True, help="reference optima packed by `bladefl pack-optima`")
    _add_optima_common(p)
    p.add_argument("--replace", action="store_true", help="overwrite optima that exist and differ")


def _cmd_import_optima(args: argparse.Namespace) -> int:
    from bladefl.experiments.bundles import optima_archive

    config = _optima_config(args)
    try:
        done = optima_archive.install(args.archive, config, args.results_dir, replace=args.replace)
    except optima_archive.ArchiveError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 1
    root = optima_archive.references_root(config, args.results_dir)
    print(f"reference optima from {args.archive}: {done.written} written under {root}, {done.present} already there"
          + (f", {done.skipped} of other run seeds left in the archive" if done.skipped else ""))
    return 0


def add_lay_out(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", help="a kept bundle, e.g. reference/paper-20seeds")
    p.add_argument("--results-dir", required=True, help="where its results/ files go")
    p.add_argument("--data-dir", required=True, help="where its data/ files go")


def _cmd_lay_out(args: argparse.Namespace) -> int:
    from bladefl.experiments.bundles import kept_results

    folder_option(args.results_dir, "--results-dir")
    folder_option(args.data_dir, "--data-dir")
    try:
        count = kept_results.lay_out(args.bundle, args.results_dir, args.data_dir)
    except ValueError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 1
    print(f"laid out {count} files of {args.bundle} under {args.results_dir} and {args.data_dir}")
    return 0


def add_rejudge(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", help="a kept bundle, e.g. reference/paper-20seeds")
    p.add_argument("--statements", default="config/paper_statements.yaml", help="the paper's statements")
    p.add_argument("--paper-values", default="config/paper_values.yaml", help="the paper's tables")
    p.add_argument("--check", action="store_true",
                   help="write nothing: say which verdict tables this code derives differently from the kept ones "
                        "(exit 1 where any does)")


def _cmd_rejudge(args: argparse.Namespace) -> int:
    from bladefl.experiments.bundles import kept_results

    if args.check:
        files, changed = kept_results.rederive(args.bundle, args.statements, args.paper_values)
        same = sorted(set(files) - set(changed))
        print(f"{args.bundle}: " + "; ".join(
            [f"derived differently by this code: {', '.join(changed)}"] * bool(changed)
            + [f"as kept: {', '.join(same)}"] * bool(same)) + " (nothing written)")
        return 1 if changed else 0
    from bladefl.report.bundle_design import verdicts_code

    manifest, changed = kept_results.rejudge(args.bundle, args.statements, args.paper_values)
    if not changed:
        print(f"the verdict tables of {args.bundle} come out as kept: nothing written (the code on record as "
              f"deriving them: {verdicts_code(Path(args.bundle))})")
        return 0
    record = manifest["about"]["rejudged"][-1]
    print(f"re-derived {', '.join(record['files'])} of {args.bundle} with code {record['code_version']} "
          f"({', '.join(changed)} changed); manifest updated")
    return 0


def add_regenerate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-rejudge", action="store_true",
                   help="write the pages from the bundles as kept, without re-judging them first")


def _cmd_regenerate(args: argparse.Namespace) -> int:
    from bladefl.report.regenerate import regenerate

    regenerate(".", rejudge=not args.no_rejudge)
    return 0


def add_ro_crate(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", help="a kept bundle (reference/<name>); `keep` and `rejudge` write its crate themselves")


def _cmd_ro_crate(args: argparse.Namespace) -> int:
    from bladefl.experiments.bundles import kept_results, ro_crate

    bundle = Path(args.bundle)
    found = kept_results.problems(bundle)
    if found:
        raise ValueError(f"{bundle}: " + "; ".join(found[:5]))
    path = ro_crate.write_crate(bundle, kept_results.read_manifest(bundle),
                                ro_crate.engine_digests(bundle / kept_results.CONFIG))
    print(f"wrote {path}")
    return 0


def add_diff(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", help="a kept bundle (reference/<name>) or a results folder")
    p.add_argument("b", help="the bundle or results folder to set beside it")
    p.add_argument("--out", help="write the Markdown page here (else it is printed)")
    p.add_argument("--csv-dir", help="write the two tables into this folder: verdicts.csv and tables.csv")


def _cmd_diff(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.report import bundle_diff
    from bladefl.report.tables import spreadsheet_safe

    a, b = Path(args.a), Path(args.b)
    verdict_rows, table_rows = bundle_diff.diff(a, b)
    page = bundle_diff.markdown(a, b, verdict_rows, table_rows)
    if args.csv_dir:
        folder = folder_option(args.csv_dir, "--csv-dir")
        atomic.write_csv(folder / "verdicts.csv", spreadsheet_safe(verdict_rows))
        atomic.write_csv(folder / "tables.csv", spreadsheet_safe(table_rows))
    if args.out:
        atomic.write_text(Path(args.out), page)
        print(f"wrote {args.out}: {int(verdict_rows.changed.sum())} verdicts and {int(table_rows.changed.sum())} "
              "table rows differ")
    else:
        print(page, end="")
    return 0


COMMANDS: list[Command] = [
    ("keep", "keep the report's inputs for good (reference/<name>/, with a manifest)", add_keep, _cmd_keep),
    ("import-runs", "bring run folders computed elsewhere (grid-tables.tar.xz) into a results folder",
     add_import_runs, _cmd_import_runs),
    ("pack-optima", "the reference optima a results folder's runs read, packed to travel with its runs",
     add_pack_optima, _cmd_pack_optima),
    ("import-optima", "reference optima packed elsewhere (optima.tar.xz) put where the workflow reads them, so "
                      "they are not trained again", add_import_optima, _cmd_import_optima),
    ("lay-out", "a kept bundle's files laid out as a results folder (for the report)", add_lay_out, _cmd_lay_out),
    ("rejudge", "a kept bundle's verdict tables derived again from its own tables by this code (written only where "
                "they change)",
     add_rejudge, _cmd_rejudge),
    ("regenerate", "every kept bundle of reference/bundles.yaml re-judged, then docs/findings.md and docs/summary.md "
                   "written from them", add_regenerate, _cmd_regenerate),
    ("ro-crate", "a kept bundle's provenance as a Process Run RO-Crate (ro-crate-metadata.json)", add_ro_crate,
     _cmd_ro_crate),
    ("diff", "two bundles side by side: verdicts, K*, accuracy and distances to the paper, changed rows first",
     add_diff, _cmd_diff),
]
