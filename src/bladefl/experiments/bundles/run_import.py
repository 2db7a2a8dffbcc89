"""Run folders computed elsewhere (the GPU machine's ``grid-tables.tar.xz``) brought into a results
folder, so that the workflow's analyses and report use them without running them again.

An archive (read by :mod:`bladefl.experiments.bundles.run_archive`) holds run folders
``<prefix>/<dataset>/<cell>/seed~<seed>/`` with their ``rounds.csv``, ``summary.json``, where
detectors ran ``detections.csv``, and their ledgers ``chains/K<k>.json`` (archives packed before
ledgers were carried have none), and optionally one ``ABOUT.json`` (where and how it was computed:
device, wall time, commit), held to its runs. Every member is checked before anything is written:
a regular file with one of those names (each of a bounded size), in a run of the workflow config,
whose files the strict reader takes (:mod:`bladefl.core.run_files`), whose summary holds
exactly the config that run would be given here (apart from where it ran: ``device`` and
``data_dir``) and the time model's tau, whose partition is the one made here; every run of the
config is present; and a run that carries ledgers has one for every K that trained, each passing
``bladefl chain verify --summary`` (the same checks), so its numbers are held to its blocks. The run
folders are staged beside their place and renamed in: an import is all or nothing.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bladefl.core import run_files
from bladefl.data.datasets import sha256_file
from bladefl.experiments.bundles import import_journal, run_detections
from bladefl.experiments.bundles.import_journal import Imported
from bladefl.experiments.bundles.run_archive import ABOUT, LEDGER, RUN_FILES, ArchiveError, about_problems, read_archive
from bladefl.experiments.plan import config_checks, run_id
from bladefl.experiments.plan import workflow_config as wc
from bladefl.experiments.plan.grid import Cell
from bladefl.experiments.runs import run_checks

# Where a run computed, not what: may differ between the machine that ran it and this one.
EXECUTION_FIELDS = ("device", "data_dir")


def with_seeds(config: Mapping[str, Any], seeds: Sequence[int] | None) -> dict:
    """The workflow config with its part ``run_seeds`` set to ``seeds`` (None: unchanged): every seed
    and partition draw of the design is kept, so a run of seed i is the run of the whole config."""
    return dict(config) if seeds is None else {**config, "run_seeds": [int(s) for s in seeds]}


def read_config(paths: Sequence[str | Path], seeds: Sequence[int] | None = None) -> dict:
    """The workflow config of Snakemake's ``--configfile`` files (on top of the default config, merged
    in order), its part ``run_seeds`` set to ``seeds`` when given, checked as the workflow checks it (the
    schema too: a key the workflow does not know is refused, not passed over)."""
    return config_checks.read_checked(paths, lambda config: with_seeds(config, seeds))


def expected_configs(config: Mapping[str, Any], runs_root: str) -> dict[str, dict]:
    """Every grid run of a workflow config (run folder under ``runs_root``) and the run config its
    summary must hold, without the execution fields."""
    from bladefl.fl.run_config import load_config

    out = {}
    for dataset in config["datasets"]:
        engine = wc.engine_path(config, dataset)
        for cell in wc.all_cells(config):
            for seed in wc.run_seeds(config):
                cfg = load_config(engine, wc.run_sets(config, cell, dataset, seed)).to_dict()
                out[run_id.folder(runs_root, dataset, cell.key, seed)] = _without_execution(cfg)
    return out


def _without_execution(cfg: Mapping[str, Any]) -> dict:
    return {k: v for k, v in cfg.items() if k not in EXECUTION_FIELDS}


def differences(got: Any, expected: Any, prefix: str = "") -> list[str]:
    """The dotted fields (``train.eta``) in which two configs differ."""
    if isinstance(got, dict) and isinstance(expected, dict):
        return [d for k in sorted(set(got) | set(expected), key=str)
                for d in differences(got.get(k), expected.get(k), f"{prefix}{k}.")]
    return [] if got == expected else [prefix.rstrip(".") or "(the whole config)"]


def read_run_files(files: Mapping[str, bytes]) -> dict[str, Any]:
    """The summary of one run's archived files, read as every reader reads them
    (:mod:`bladefl.core.run_files`, strict) and held to its rounds.csv; RunFileError otherwise."""
    if "summary.json" not in files or "rounds.csv" not in files:
        raise run_files.RunFileError("rounds.csv or summary.json missing")
    summary = run_files.parse_summary(files["summary.json"])
    run_files.check_together(summary, run_files.parse_rounds(files["rounds.csv"]), "its files")
    run_detections.check(files.get("detections.csv"), summary)
    return summary


def run_problems(summary: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """Why one run (its summary, read by :func:`read_run_files`) cannot stand for the run
    ``expected`` describes (empty: it can): its config against the workflow's, its K values, and
    its tau and status against the time model."""
    problems = []
    differ = differences(_without_execution(summary["config"]), json.loads(json.dumps(expected)))
    if differ:
        problems.append(f"its config differs from this workflow's in {', '.join(differ[:5])}")
    if [r["K"] for r in summary["per_K"]] != list(expected["time"]["K"]):
        problems.append("its summary does not hold every K of the cell")
    return problems + run_checks.time_model_problems(summary)


def partition_problems(summary: Mapping[str, Any], config: Mapping[str, Any], dataset: str, cell: str,
                       seed: int) -> list[str]:
    """A run that names its partition's indices by their digest (``provenance.partition_sha256``)
    must have trained on this workflow's draw: the manifest `bladefl partition` wrote here
    (``<data_dir>/partitions/<dataset>/<key>.json``; `snakemake run_inputs` makes them). A run
    without the digest (written before digests were recorded, or stripped) is not checked here: the
    import counts it (:attr:`Imported.undigested`) and says so; a forger gains nothing by stripping
    it, since the digest of this workflow's draw is derivable from the config by anyone."""
    recorded = _partition_digest(summary)
    if recorded is None:
        return []
    spec = wc.partition_spec(config, Cell.from_key(cell).N, seed, dataset)
    here = partition_made_here(config, dataset, spec.key)
    if here is None:
        manifest = partition_manifest(config, dataset, spec.key)
        return [f"its partition {spec.key} is not made here ({manifest}: run `snakemake run_inputs` first), so the "
                "draw it trained on cannot be checked"]
    if here != recorded:
        return [f"it trained on another draw of partition {spec.key} (indices {str(recorded)[:12]}, here "
                f"{str(here)[:12]})"]
    return []


def partition_manifest(config: Mapping[str, Any], dataset: str, key: str) -> Path:
    """Where `bladefl partition` writes partition ``key``'s manifest under the config's ``data_dir``."""
    return Path(config.get("data_dir", "data")) / "partitions" / dataset / f"{key}.json"


def partition_made_here(config: Mapping[str, Any], dataset: str, key: str) -> str | None:
    """The SHA-256 of the indices of partition ``key`` as made here (its manifest), None where none is
    made or it names no digest."""
    try:
        digest = json.loads(partition_manifest(config, dataset, key).read_text()).get("indices_sha256")
    except (OSError, ValueError, AttributeError):
        return None
    return digest if isinstance(digest, str) else None


def _partition_digest(summary: Mapping[str, Any]) -> str | None:
    provenance = summary.get("provenance")
    recorded = provenance.get("partition_sha256") if isinstance(provenance, Mapping) else None
    return recorded if isinstance(recorded, str) and recorded else None


def ledger_problems(files: Mapping[str, bytes], secret: bytes | None = None) -> list[str]:
    """A run's ledgers (``chains/K<k>.json``) checked as ``bladefl chain verify --summary`` checks
    them, in a scratch folder: one for each K that trained and none other, each verifying against
    the run's summary and rounds.csv (``secret``: the verifier's copy of a key secret)."""
    from bladefl.chain.verify import verify_chain

    summary = run_files.parse_summary(files["summary.json"])  # sound: read_run_files has read it
    trained = {f"chains/K{e['K']}.json" for e in summary["per_K"] if e["status"] != "infeasible"}
    ledgers = {n for n in files if LEDGER.fullmatch(n)}
    if ledgers != trained:
        odd = sorted(ledgers ^ trained)
        return [f"its ledgers are not one per K that trained ({', '.join(odd[:3])} "
                f"{'missing' if odd[0] in trained else 'extra'})"]
    with tempfile.TemporaryDirectory(prefix="bladefl-import-") as scratch:
        for name, data in files.items():
            (Path(scratch) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(scratch) / name).write_bytes(data)
        for name in sorted(ledgers):
            problem = verify_chain(Path(scratch) / name, summary=Path(scratch) / "summary.json", secret=secret)
            if problem is not None:
                return [f"{name}: {'genesis/file' if problem.height == 0 else f'block {problem.height}'}: "
                        f"{problem.reason}"]
    return []


def import_runs(archive: Path, config: Mapping[str, Any], runs_root: Path, replace: bool = False,
                secret: bytes | None = None, keep_journal: bool = False) -> Imported:
    """Check every member of ``archive`` against the workflow ``config`` (see the module's text),
    then write the run folders under ``runs_root`` (``results/runs/<engine>``). Runs of seeds the
    config does not hold are skipped (counted): a grid cut short is imported by its first seeds.
    Nothing is written when a check fails; an existing run folder is refused unless ``replace``. The same
    import run again after a kill finishes the one cut short (:mod:`import_journal`; ``Imported.resumed``).
    ``keep_journal``: the staging folder is left for the caller to remove (:func:`import_journal.done`) once it has
    written its record, so a kill before the record is finished by the next call too."""
    try:
        runs, about = read_archive(archive)
    except ArchiveError as exc:
        raise ArchiveError(f"{archive}: nothing imported: {exc}") from None
    if secret is not None and not any(LEDGER.fullmatch(n) for files in runs.values() for n in files):
        raise ArchiveError(f"{archive}: nothing imported: --key-secret given, but the archive carries no ledgers to "
                           "verify with it")
    # the archive read (a regular, bounded file): an import of it cut short is finished, not done again
    expected = expected_configs(config, str(runs_root))
    finished = import_journal.resume(archive, config, runs_root, set(expected), keep_journal)
    if finished is not None:
        finished.resumed = True
        return finished
    seeds = set(wc.run_seeds(config))
    wanted = {key: files for key, files in sorted(runs.items()) if key[2] in seeds}
    problems, code_versions, undigested = _check_runs(wanted, config, expected, runs_root, replace)
    if about is not None:
        problems += about_problems(about, sorted(runs), code_versions)
    verified = 0
    if not problems:  # the ledgers, once every run's files are known to be sound
        verified, problems = _verify_ledgers(wanted, runs_root, secret)
    if problems:
        shown = problems[:10] + ([f"... and {len(problems) - 10} more"] if len(problems) > 10 else [])
        raise ArchiveError(f"{archive}: nothing imported:\n  " + "\n  ".join(shown))
    result = Imported(about=about, skipped=len(runs) - len(wanted), verified=verified,
                      unverified=len(wanted) - verified, undigested=undigested)
    stage = import_journal.write_staged({Path(run_id.folder(runs_root, *key)): files for key, files in wanted.items()},
                                        Path(runs_root), import_journal.stage_name(archive, runs_root), result)
    return import_journal.finish(stage, config, runs_root, keep_journal)


def _check_runs(runs: Mapping[tuple[str, str, int], Mapping[str, bytes]], config: Mapping[str, Any],
                expected: Mapping[str, dict], runs_root: Path, replace: bool) -> tuple[list[str], list[str], int]:
    """(problems, the runs' code versions, runs whose summary names no partition digest) of the archive's
    runs of the config's seeds, each checked against the run the config expects in its folder (``expected``:
    :func:`expected_configs`); the config's runs the archive lacks are a problem too."""
    problems: list[str] = []
    found = set()
    code_versions: list[str] = []
    undigested = 0
    for (dataset, cell, seed), files in sorted(runs.items()):
        folder = run_id.folder(runs_root, dataset, cell, seed)
        if folder not in expected:
            problems.append(f"{run_id.RunId(dataset, cell, seed).name} ({dataset}): not a run of this workflow config")
            continue
        found.add(folder)
        summary, said = _one_run(files, expected[folder], config, (dataset, cell, seed))
        problems += [f"{folder}: {p}" for p in said]
        if summary is not None:
            undigested += _partition_digest(summary) is None
            provenance = summary.get("provenance")
            if isinstance(provenance, Mapping) and isinstance(provenance.get("code_version"), str):
                code_versions.append(provenance["code_version"])
        link = link_problem(Path(folder), Path(runs_root))
        if link:
            problems.append(link)
        elif not replace and Path(folder).exists():
            problems.append(f"{folder}: exists already (pass replace to overwrite)")
    return problems + _missing(set(expected) - found, len(expected)), code_versions, undigested


def _verify_ledgers(runs: Mapping[tuple[str, str, int], Mapping[str, bytes]], runs_root: Path,
                    secret: bytes | None) -> tuple[int, list[str]]:
    """(runs whose ledgers were verified, problems found) over the runs that carry ledgers."""
    problems: list[str] = []
    verified = 0
    for key, files in sorted(runs.items()):
        if not any(LEDGER.fullmatch(n) for n in files):
            continue
        problems += [f"{run_id.folder(runs_root, *key)}: {p}" for p in ledger_problems(files, secret)]
        verified += 1
    return verified, problems


def _missing(missing: set[str], expected: int) -> list[str]:
    return [f"{len(missing)} of the config's {expected} runs are not in the archive, e.g. {min(missing)} "
            "(import a config with fewer seeds)"] if missing else []


def _one_run(files: Mapping[str, bytes], expected: Mapping[str, Any], config: Mapping[str, Any],
             key: tuple[str, str, int]) -> tuple[dict[str, Any] | None, list[str]]:
    """One run's summary (None where its files cannot be read) and why it cannot stand for the
    workflow's run ``key`` (its config, time model and partition)."""
    try:
        summary = read_run_files(files)
    except run_files.RunFileError as exc:
        return None, [str(exc)]
    return summary, run_problems(summary, expected) + partition_problems(summary, config, *key)


def link_problem(target: Path, runs_root: Path) -> str | None:
    """Why the run folder ``target`` may not be written (None: it may): a symbolic link on its way
    below the results folder (the runs root, a dataset or cell folder, the run folder or a file in
    it), through which an import would write somewhere else."""
    top = runs_root.parent
    path = target
    on_way = [*(target / name for name in (*RUN_FILES, "chains") if (target / name).is_symlink())]
    while path != top and path != path.parent:
        if path.is_symlink():
            on_way.append(path)
        path = path.parent
    return f"{on_way[0]}: a symbolic link (an import writes plain folders only)" if on_way else None


def earlier_imports(path: Path) -> list[dict]:
    """The import records already in a results folder's ``imported.json`` (the last one and those it
    keeps), read as hostile (a regular file of at most 16 MiB, JSON, no key twice): what a new part of
    the grid keeps beside its own record; empty without one."""
    from bladefl.core.bounded_read import read_regular

    if not path.exists():
        return []
    try:
        last = json.loads(read_regular(path, 16 << 20, "imported.json").decode("utf-8"),
                          object_pairs_hook=run_files.no_key_twice)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path}: not an import record ({exc}); move it away to import anew") from None
    if not isinstance(last, dict):
        raise ValueError(f"{path}: not an import record (a {type(last).__name__}); move it away to import anew")
    kept = last.pop("earlier_imports", [])
    return [*(r for r in kept if isinstance(r, dict)), last]


def record(archive: Path, configfile: str, config: Mapping[str, Any], imported: Imported) -> dict:
    """What ``results/imported.json`` says of an import: the archive and its SHA-256, when, the
    config and seeds, the runs per dataset and the archive's ABOUT.json (device, wall time, commit;
    null when the archive holds none: where it ran is then not recorded)."""
    return {"archive": str(archive), "sha256": sha256_file(archive),
            "imported": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "config": str(configfile),
            "seeds": wc.run_seeds(config), "runs": imported.runs, "ledgers_verified": imported.verified,
            "without_ledgers": imported.unverified, "without_partition_digest": imported.undigested,
            "about": imported.about}


__all__ = ["RUN_FILES", "ABOUT", "EXECUTION_FIELDS", "ArchiveError", "Imported", "with_seeds",
           "read_config", "expected_configs", "read_archive", "differences", "read_run_files", "run_problems",
           "partition_problems", "ledger_problems", "link_problem", "about_problems", "import_runs",
           "earlier_imports", "record"]
