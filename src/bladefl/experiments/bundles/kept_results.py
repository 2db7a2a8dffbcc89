"""A workflow's results kept for good (``reference/<name>/``): the tidy tables its report is rendered
from, no run folders and no ledgers, with a manifest that says where they came from and holds every
file's SHA-256; and the same files laid out again as a results folder, to render the report from
them without running anything (``make reference-report``).

A bundle holds ``results/...`` (paths relative to the workflow's results folder), ``data/...``
(relative to its data folder: the partition manifests), ``config.yaml`` (the workflow's config),
``MANIFEST.json`` and, when the runs were imported and asked for (``bladefl keep --with-archive``),
``runs/<archive>``: the run tables archive they came from (``scripts/gpu/run.sh``'s), so that a later
change of the analyses can be applied again without the GPU. Bundles kept in git name the archive
by its SHA-256 only (it is megabytes: kept outside the repository).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from bladefl.core import atomic, owned
from bladefl.core.bounded_read import read_regular
from bladefl.data.datasets import sha256_file
from bladefl.experiments.bundles import ro_crate
from bladefl.experiments.bundles.bundle_manifest import (  # noqa: F401 - re-exported: the bundle's readers use them here
    CONFIG,
    MANIFEST,
    not_provably_kept,
    problems,
    read_manifest,
)


def bundle_path(path: str | Path, results_dir: str | Path, data_dir: str | Path) -> str:
    """Where a workflow file lies in a bundle: ``results/<path in results_dir>`` or
    ``data/<path in data_dir>``; ValueError naming it when it is in neither."""
    absolute = Path(os.path.abspath(path))  # links not followed: a linked data folder is still the data folder
    for root, prefix in ((results_dir, "results"), (data_dir, "data")):
        try:
            return f"{prefix}/{absolute.relative_to(os.path.abspath(root)).as_posix()}"
        except ValueError:
            continue
    raise ValueError(f"{path}: neither in the results folder {results_dir} nor in the data folder {data_dir}")


def about_runs(provenance_tables: Sequence[str | Path]) -> dict[str, Any]:
    """What the runs behind the tables were: how many, code versions, devices, hosts, and their run
    time in all, from the report's provenance tables (``bladefl provenance``)."""
    import io


    frames = []
    for p in provenance_tables:
        try:
            frames.append(pd.read_csv(io.BytesIO(read_regular(p, 256 << 20, "provenance table"))))
        except (OSError, ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise ValueError(f"--provenance {p}: not a provenance table ({str(exc)[:160]})") from None
    frame = pd.concat(frames, ignore_index=True)
    if "seconds" not in frame:
        raise ValueError(f"--provenance {provenance_tables[0]}: not a provenance table (no `seconds` column)")

    def values(column: str) -> list[str]:
        return sorted(map(str, frame[column].dropna().unique())) if column in frame else []

    return {"runs": len(frame), "code_versions": values("code_version"), "devices": values("device"),
            "hosts": values("host"), "run_seconds": round(float(pd.to_numeric(frame.seconds).sum()), 1)}


def keep(files: Sequence[str | Path], results_dir: str | Path, data_dir: str | Path, config_file: str | Path,
         out: str | Path, about: Mapping[str, Any], archive: str | Path | None = None) -> dict:
    """Copy ``files`` (the report's inputs) and the workflow's config into a new bundle ``out`` with
    its manifest (``about``: where the results come from; the date kept; every file's SHA-256 and
    size), and the run tables ``archive`` the runs were imported from (``runs/<its name>``). The
    bundle is assembled beside ``out`` and renamed into place: nothing half-written. An existing ``out`` is
    replaced only when it is provably a kept bundle (its manifest parses and every file matches it: never
    judged by the names it holds); any other non-empty folder is refused, nothing deleted."""
    out = Path(out)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise ValueError(f"{out}: a symbolic link or a file; not replaced")
    if out.exists() and any(out.iterdir()) and (why := not_provably_kept(out)):
        raise ValueError(f"{out}: exists, is not empty and is not provably a kept bundle ({why}); not "
                         "replaced: remove it yourself, or keep under another name")
    entries = {bundle_path(f, results_dir, data_dir): Path(f) for f in files}
    entries[CONFIG] = Path(config_file)
    if archive is not None:
        entries[f"runs/{Path(archive).name}"] = Path(archive)
    missing = [str(source) for source in entries.values() if not source.is_file()]
    if missing:
        raise ValueError(f"{missing[0]}: missing (run the workflow first)" + (
            f", and {len(missing) - 1} more" if len(missing) > 1 else ""))
    refused = owned.removal_problem(out, None, tracked_ok=True)  # a bundle git holds as it is, or none
    if refused:
        raise ValueError(refused)
    staging = out.with_name(f".{out.name}.partial")
    owned.remove(staging, None)  # an earlier keep's, cut short
    try:
        manifest = _assemble(entries, staging, about, out.name)
        owned.remove(out, None, tracked_ok=True)
        staging.rename(out)
    finally:
        owned.remove(staging, None)
    return manifest


def _assemble(entries: Mapping[str, Path], staging: Path, about: Mapping[str, Any], name: str) -> dict:
    """The bundle's files and manifest written into ``staging``, readable by others whatever the umask."""
    listed = {}
    for rel, source in sorted(entries.items()):
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        listed[rel] = {"sha256": sha256_file(target), "bytes": target.stat().st_size}
    from bladefl.experiments.runs import provenance

    # kept_by: the code that kept it, so the code that derived its verdicts (until a rejudge records another)
    about = {**about, "kept_by": provenance.code_version()}
    manifest = {"kept": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "about": about, "files": listed}
    atomic.write_json(staging / MANIFEST, manifest)
    ro_crate.write_crate(staging, manifest, ro_crate.engine_digests(staging / CONFIG), name)
    for path in staging.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    staging.chmod(0o755)
    return manifest


def lay_out(bundle: str | Path, results_dir: str | Path, data_dir: str | Path) -> int:
    """Copy a checked bundle's files to where the workflow reads them (``results/...`` under
    ``results_dir``, ``data/...`` under ``data_dir``); returns how many. ValueError listing the
    problems when the bundle does not match its manifest."""
    bundle = Path(bundle)
    found = problems(bundle)
    if found:
        more = f" (and {len(found) - 5} more)" if len(found) > 5 else ""
        raise ValueError(f"{bundle}: " + "; ".join(found[:5]) + more)
    roots = {"results": Path(results_dir), "data": Path(data_dir)}
    count = 0
    for rel in read_manifest(bundle)["files"]:
        prefix, _, rest = rel.partition("/")
        if prefix in roots and rest:
            target = roots[prefix] / rest
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(bundle / rel, target)
            count += 1
    return count


def replace_files(bundle: str | Path, files: Mapping[str, str], record: Mapping[str, Any]) -> dict:
    """Write ``files`` (bundle-relative path -> text) into a checked bundle and its manifest: each
    file's SHA-256 and size, and ``record`` appended to ``about.rejudged`` (what re-derived them,
    when). The bundle must match its manifest first (ValueError listing the problems); each file
    and the manifest are written atomically, the manifest last and write-protected again."""
    bundle = Path(bundle)
    _check_bundle(bundle)
    return _write_files(bundle, files, record)


def _check_bundle(bundle: Path) -> None:
    """ValueError listing the problems unless the bundle matches its manifest."""
    found = problems(bundle)
    if found:
        raise ValueError(f"{bundle}: " + "; ".join(found[:5]))


def _write_files(bundle: Path, files: Mapping[str, str], record: Mapping[str, Any]) -> dict:
    """:func:`replace_files` on a bundle already checked against its manifest."""
    manifest = read_manifest(bundle)
    for rel in files:
        if rel not in manifest["files"] or not rel.startswith("results/"):
            raise ValueError(f"{bundle}: {rel} is not a results file the bundle holds")
    for rel, text in sorted(files.items()):
        target = bundle / rel
        atomic.write_text(target, text)
        target.chmod(0o644)
        manifest["files"][rel] = {"sha256": sha256_file(target), "bytes": target.stat().st_size}
    about = dict(manifest.get("about", {}))
    about["rejudged"] = [*about.get("rejudged", []), dict(record)]
    manifest["about"] = about
    path = bundle / MANIFEST
    if path.exists():
        path.chmod(0o644)
    atomic.write_json(path, manifest)
    path.chmod(0o444)
    ro_crate.write_crate(bundle, manifest, ro_crate.engine_digests(bundle / CONFIG))
    return manifest


def rederive(bundle: str | Path, statements: str | Path, paper_values: str | Path, scan_settings: int = 2000,
             log: Any = print) -> tuple[dict[str, str], list[str]]:
    """A kept bundle's verdict tables derived again by this code from its own tables (:func:`judge`): the
    files (bundle-relative path -> text) and those of them whose bytes differ from the kept ones (by the
    manifest's SHA-256, which :func:`judge` holds the files to first). Nothing is written."""
    from bladefl.experiments.verdicts.table import verdict_csv

    frames = judge(bundle, statements, paper_values, scan_settings, log)
    files = {f"results/verdicts/{dataset}.csv": verdict_csv(frame) for dataset, frame in frames.items()}
    kept = read_manifest(Path(bundle))["files"]
    changed = sorted(rel for rel, text in files.items()
                     if rel not in kept or kept[rel]["sha256"] != hashlib.sha256(text.encode("utf-8")).hexdigest())
    return files, changed


def rejudge(bundle: str | Path, statements: str | Path, paper_values: str | Path, scan_settings: int = 2000,
            log: Any = print, code_version: str | None = None) -> tuple[dict, list[str]]:
    """A kept bundle's verdict tables derived again from its own tables by this code (no runs
    needed), as :func:`judge` derives them. Where any comes out different, the bundle's verdict files and
    manifest are replaced (:func:`replace_files`) and the code recorded; where every one comes out
    byte-identical, nothing is written (a rejudge that changes nothing leaves a checkout clean, and the
    record already names code that derived these bytes). Returns the manifest (new or as kept) and the
    changed files. ``code_version``: the code that derives them, where the caller took it before anything
    changed (several bundles rejudged in turn: each rewrite dirties the tree the next would read the
    version from)."""
    from bladefl.experiments.runs import provenance

    files, changed = rederive(bundle, statements, paper_values, scan_settings, log)
    if not changed:
        return read_manifest(Path(bundle)), changed
    record = {"code_version": code_version or provenance.code_version(),
              "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
              "files": sorted(files)}
    return _write_files(Path(bundle), files, record), changed


def judge(bundle: str | Path, statements: str | Path, paper_values: str | Path, scan_settings: int = 2000,
          log: Any = print, reading: Callable[[pd.DataFrame], pd.DataFrame] | None = None) -> dict[str, pd.DataFrame]:
    """Per dataset, the verdict table this code derives from a kept bundle's own tables (the summary,
    the bound's gaps and constants, the config's grid), as ``bladefl verdicts`` does; ``reading`` maps
    each tidy run table first (a measurement convention: ``conventions.read_as``). Nothing is written."""
    from bladefl.experiments.plan import config_checks, config_files, workflow_config
    from bladefl.experiments.verdicts.statements import read_inventory
    from bladefl.experiments.verdicts.table import all_verdicts, bound_cells_of

    bundle = Path(bundle)
    _check_bundle(bundle)  # hostile until checked: its files against the manifest, its config's fields
    config = config_files.read_configs([bundle / CONFIG], default=None)
    config_checks.check(config)
    members = workflow_config.members(config)
    inventory = read_inventory(statements)
    tables = yaml_tables(paper_values)
    sweep = config.get("bound_sweep", "fig3")
    margins = _margins(config)
    problems = [p for dataset in config["datasets"] for p in table_problems(bundle / "results", dataset, members)]
    if problems:  # before any analysis: one line naming the file, column and row
        raise ValueError(f"{bundle}: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    frames = {}
    for dataset in config["datasets"]:
        results = bundle / "results"
        table = pd.read_csv(results / "summary" / f"{dataset}.csv")
        table = reading(table) if reading is not None else table
        bound = results / "bound" / dataset
        gaps = pd.read_csv(bound / "gaps.csv") if (bound / "gaps.csv").is_file() else None
        constants = pd.read_csv(bound / "constants.csv") if (bound / "constants.csv").is_file() else None
        frame = all_verdicts(table, members, float(config["t_sum"]), bound_cells_of(members, sweep, config["t_sum"]),
                             gaps, constants, margins=margins, dataset=dataset, inventory=inventory,
                             paper_tables=tables, fig3_sweep=sweep, scan_settings=scan_settings,
                             model_size=workflow_config.model_size(config, dataset))
        frames[dataset] = frame.assign(dataset=dataset)
        log(f"{dataset}: {len(frame)} rows")
    return frames


def table_problems(results: Path, dataset: str, members: Any) -> list[str]:  # noqa: ANN401 - Sequence[Member]
    """A bundle's tables of one dataset held to what the workflow writes (the tidy run table, and the
    bound's gaps and constants where it has them): :mod:`bladefl.experiments.tables.table_schema`."""
    from bladefl.experiments.tables import table_schema as ts

    problems = ts.summary_problems(results / "summary" / f"{dataset}.csv", members)
    bound = results / "bound" / dataset
    for name, required in (("gaps", ts.GAPS), ("constants", ts.CONSTANTS)):
        if (bound / f"{name}.csv").is_file():
            problems += ts.bound_problems(bound / f"{name}.csv", required, f"bound's {name} table")
    return problems


def yaml_tables(path: str | Path) -> list[dict]:
    """The paper's tables (``config/paper_values.yaml``), each with the document's t_sum."""

    from bladefl.experiments.tables.paper_tables import read_paper_tables

    return read_paper_tables(path)


def _margins(config: Mapping[str, Any]) -> Any:
    from bladefl.experiments.verdicts.trend import parse_margins

    given = config.get("verdicts", {}).get("margins", {}) or {}
    return parse_margins([f"{k}={v}" for k, v in sorted(given.items())])


__all__ = ["MANIFEST", "CONFIG", "bundle_path", "about_runs", "keep", "read_manifest", "problems", "lay_out",
           "replace_files", "rejudge", "judge"]


def imported_archive(record: Mapping[str, Any], bundle: str | Path | None = None) -> Path | None:
    """The run tables archive an import record (``results/imported.json``) names: where the record
    says, else (a bundle kept again after the archive was moved into it) the copy in ``bundle``'s
    ``runs/``; None where neither is there. ValueError when the file is there but is not the
    archive that was imported (SHA-256)."""
    if not record.get("archive"):
        return None
    path = Path(str(record["archive"]))
    if not path.is_file() and bundle is not None:
        path = Path(bundle) / "runs" / path.name
    if not path.is_file():
        return None
    if sha256_file(path) != record.get("sha256"):
        raise ValueError(f"{path}: not the archive that was imported (its SHA-256 differs from the import record's)")
    return path
