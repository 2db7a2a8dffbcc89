"""Run folders computed elsewhere (the GPU machine's ``grid-tables.tar.xz``) brought into a results
folder, so that the workflow's analyses and report use them without running them again.

An archive holds run folders ``<prefix>/<dataset>/<cell>/seed~<seed>/`` with their ``rounds.csv``,
``summary.json``, where detectors ran ``detections.csv``, and their ledgers ``chains/K<k>.json``
(archives packed before ledgers were carried have none), and optionally one ``ABOUT.json`` (where
and how it was computed: device, wall time, commit). Every member is checked before anything is
written: a regular file with one of those names (each of a bounded size), in a run of the workflow
config, whose files the strict reader takes (:mod:`bladefl.core.run_files`), whose summary holds
exactly the config that run would be given here (apart from where it ran: ``device`` and
``data_dir``) and the time model's tau, whose partition is the one made here; every run of the
config is present; and a run that carries ledgers has one for every K that trained, each passing
``bladefl chain verify --summary`` (the same checks), so its numbers are held to its blocks.
"""

from __future__ import annotations

import json
import lzma
import re
import shutil
import tarfile
import tempfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from bladefl.core import atomic, run_files
from bladefl.data.datasets import sha256_file
from bladefl.experiments.bundles import run_detections
from bladefl.experiments.plan import config_checks, config_files, run_id
from bladefl.experiments.plan import workflow_config as wc
from bladefl.experiments.plan.grid import Cell
from bladefl.experiments.runs import run_checks

RUN_FILES = ("rounds.csv", "summary.json", "detections.csv")
LEDGER = re.compile(r"chains/K[1-9][0-9]{0,3}\.json")  # a run's ledger of one K
ABOUT = "ABOUT.json"
# Where a run computed, not what: may differ between the machine that ran it and this one.
EXECUTION_FIELDS = ("device", "data_dir")


class ArchiveError(ValueError):
    """An archive that cannot be imported: the message names the member and the reason."""


@dataclass
class Imported:
    """What an import wrote: run folders per dataset, the archive's ABOUT.json (None: it has none)."""

    runs: dict[str, int] = field(default_factory=dict)
    about: Any = None  # the archive's ABOUT.json, held to its runs (None: the archive holds none)
    skipped: int = 0  # runs of seeds the config does not hold (a partial grid imported by its first seeds)
    verified: int = 0  # runs whose ledgers were verified against their files
    unverified: int = 0  # runs that carry no ledgers (archives packed before ledgers were carried)
    undigested: int = 0  # runs whose summary records no partition digest: their draw was not checked

    @property
    def total(self) -> int:
        return sum(self.runs.values())


def with_seeds(config: Mapping[str, Any], seeds: Sequence[int] | None) -> dict:
    """The workflow config with its part ``run_seeds`` set to ``seeds`` (None: unchanged): every seed
    and partition draw of the design is kept, so a run of seed i is the run of the whole config."""
    return dict(config) if seeds is None else {**config, "run_seeds": [int(s) for s in seeds]}


def read_config(paths: Sequence[str | Path], seeds: Sequence[int] | None = None) -> dict:
    """The workflow config of Snakemake's ``--configfile`` files (on top of the default config, merged
    in order), its part ``run_seeds`` set to ``seeds`` when given, checked as the workflow checks it."""
    config = with_seeds(config_files.read_configs(paths), seeds)
    config_checks.check(config)
    return config


def expected_configs(config: Mapping[str, Any], runs_root: str) -> dict[str, dict]:
    """Every grid run of a workflow config (run folder under ``runs_root``) and the run config its
    summary must hold, without the execution fields."""
    from bladefl.fl.run_config import load_config

    engine = wc.engine_path(config)
    out = {}
    for dataset in config["datasets"]:
        for cell in wc.all_cells(config):
            for seed in wc.run_seeds(config):
                cfg = load_config(engine, wc.run_sets(config, cell, dataset, seed)).to_dict()
                out[run_id.folder(runs_root, dataset, cell.key, seed)] = _without_execution(cfg)
    return out


def _without_execution(cfg: Mapping[str, Any]) -> dict:
    return {k: v for k, v in cfg.items() if k not in EXECUTION_FIELDS}


def _member_run(name: str) -> tuple[run_id.RunId, str]:
    """A member's run (identity, root '') and file name; ArchiveError when it is not a run file."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise ArchiveError(f"{name}: a path outside the archive's folder")
    ledger = len(path.parts) >= 2 and LEDGER.fullmatch("/".join(path.parts[-2:])) is not None
    if path.name not in RUN_FILES and not ledger:
        raise ArchiveError(f"{name}: not a run file ({', '.join(RUN_FILES)}, chains/K<k>.json) nor {ABOUT}")
    try:
        run = run_id.from_path(path.parent.parent if ledger else path.parent)
    except ValueError as exc:
        raise ArchiveError(str(exc)) from None
    return run, f"chains/{path.name}" if ledger else path.name


# Bytes a member may hold before its reading is refused (a summary is a few kB, a run's tables a few MB).
MEMBER_LIMITS = {"summary.json": 16 * 2**20, ABOUT: 2**20, "ledger": 256 * 2**20}
MEMBER_LIMIT = 512 * 2**20


def read_archive(archive: Path) -> tuple[dict[tuple[str, str, int], dict[str, bytes]], Any]:
    """The archive's run files by (dataset, cell, seed), and its ABOUT.json as read (None: none)."""
    runs: dict[tuple[str, str, int], dict[str, bytes]] = {}
    about: Any = None
    if not Path(archive).is_file():
        raise ArchiveError("no such file")
    try:
        tar = tarfile.open(archive, "r:*")
    except (EOFError, OSError, tarfile.TarError, lzma.LZMAError, zlib.error):  # truncated at its very start too
        raise ArchiveError("not a readable tar archive (plain, gzip, bzip2 or xz)") from None
    try:
        with tar:
            for member in tar:
                if not member.name.isprintable():  # a newline or escape in a name would forge the messages
                    raise ArchiveError(f"{ascii(member.name)}: a member name with control characters")
                if member.isdir():
                    continue
                if not member.isfile():
                    raise ArchiveError(f"{member.name}: not a regular file (links and devices are refused)")
                name = PurePosixPath(member.name).name
                limit = MEMBER_LIMITS.get("ledger" if name.startswith("K") else name, MEMBER_LIMIT)
                if member.size > limit:
                    raise ArchiveError(f"{member.name}: {member.size} bytes, more than such a file holds ({limit})")
                data = tar.extractfile(member).read()  # type: ignore[union-attr]
                if PurePosixPath(member.name).name == ABOUT and len(PurePosixPath(member.name).parts) <= 2:
                    if about is not None:
                        raise ArchiveError(f"{member.name}: a second {ABOUT}")
                    about = _json(member.name, data)  # the archive's own, beside its dataset folders
                    continue
                run, name = _member_run(member.name)
                files = runs.setdefault((run.dataset, run.cell, run.seed), {})
                if name in files:  # a second member of one name: which one a reader takes is arbitrary
                    raise ArchiveError(f"{member.name}: the archive holds this run file twice")
                files[name] = data
    except (EOFError, OSError, tarfile.TarError, lzma.LZMAError, zlib.error) as exc:
        raise ArchiveError(f"truncated or corrupt ({exc.__class__.__name__}: {exc})") from None
    return runs, about


def _json(name: str, data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise ArchiveError(f"{name}: not JSON ({exc})") from None


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
    spec = wc.partition_spec(config, Cell.from_key(cell).N, seed)
    manifest = Path(config.get("data_dir", "data")) / "partitions" / dataset / f"{spec.key}.json"
    try:
        here = json.loads(manifest.read_text()).get("indices_sha256")
    except (OSError, ValueError):
        return [f"its partition {spec.key} is not made here ({manifest}: run `snakemake run_inputs` first), so the "
                "draw it trained on cannot be checked"]
    if here != recorded:
        return [f"it trained on another draw of partition {spec.key} (indices {str(recorded)[:12]}, here "
                f"{str(here)[:12]})"]
    return []


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
                secret: bytes | None = None) -> Imported:
    """Check every member of ``archive`` against the workflow ``config`` (see the module's text),
    then write the run folders under ``runs_root`` (``results/runs/<engine>``). Runs of seeds the
    config does not hold are skipped (counted): a grid cut short is imported by its first seeds.
    Nothing is written when a check fails; an existing run folder is refused unless ``replace``."""
    try:
        runs, about = read_archive(archive)
    except ArchiveError as exc:
        raise ArchiveError(f"{archive}: nothing imported: {exc}") from None
    expected = expected_configs(config, str(runs_root))
    problems: list[str] = []
    found = set()
    code_versions: list[str] = []
    undigested = 0  # runs whose summary names no partition digest (counted as their files are read)
    seeds = set(wc.run_seeds(config))
    skipped = {key for key in runs if key[2] not in seeds}
    for (dataset, cell, seed), files in sorted(runs.items()):
        folder = run_id.folder(runs_root, dataset, cell, seed)
        if (dataset, cell, seed) in skipped:
            continue
        if folder not in expected:
            problems.append(f"{run_id.RunId(dataset, cell, seed).name} ({dataset}): not a run of this workflow config")
            continue
        found.add(folder)
        try:
            summary = read_run_files(files)
        except run_files.RunFileError as exc:
            problems.append(f"{folder}: {exc}")
        else:
            undigested += _partition_digest(summary) is None
            provenance = summary.get("provenance")
            if isinstance(provenance, Mapping) and isinstance(provenance.get("code_version"), str):
                code_versions.append(provenance["code_version"])
            problems += [f"{folder}: {p}" for p in run_problems(summary, expected[folder])
                         + partition_problems(summary, config, dataset, cell, seed)]
        link = link_problem(Path(folder), Path(runs_root))
        if link:
            problems.append(link)
        elif not replace and Path(folder).exists():
            problems.append(f"{folder}: exists already (pass replace to overwrite)")
    if about is not None:
        problems += about_problems(about, sorted(runs), code_versions)
    missing = sorted(set(expected) - found)
    if missing:
        problems.append(f"{len(missing)} of the config's {len(expected)} runs are not in the archive, "
                        f"e.g. {missing[0]} (import a config with fewer seeds)")
    verified = 0
    if not problems:  # the ledgers, once every run's files are known to be sound
        for (dataset, cell, seed), files in sorted(runs.items()):
            if (dataset, cell, seed) in skipped or not any(LEDGER.fullmatch(n) for n in files):
                continue
            folder = run_id.folder(runs_root, dataset, cell, seed)
            problems += [f"{folder}: {p}" for p in ledger_problems(files, secret)]
            verified += 1
    if problems:
        shown = problems[:10] + ([f"... and {len(problems) - 10} more"] if len(problems) > 10 else [])
        raise ArchiveError(f"{archive}: nothing imported:\n  " + "\n  ".join(shown))
    result = Imported(about=about, skipped=len(skipped), verified=verified,
                      unverified=len(runs) - len(skipped) - verified, undigested=undigested)
    wanted = {key: files for key, files in sorted(runs.items()) if key not in skipped}
    _write_staged({Path(run_id.folder(runs_root, *key)): files for key, files in wanted.items()}, Path(runs_root))
    for dataset, _, _ in wanted:
        result.runs[dataset] = result.runs.get(dataset, 0) + 1
    return result


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


def _write_staged(folders: Mapping[Path, Mapping[str, bytes]], runs_root: Path) -> None:
    """Write every run folder beside its place first (a staging folder next to ``runs_root``), then
    rename each into place, an existing one (``replace``) set aside and removed once all are in;
    if a rename fails, those already moved are put back: no run folder is ever half-written."""
    runs_root.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{runs_root.name}.import-", dir=runs_root.parent))
    moved: list[tuple[Path, Path, Path | None]] = []
    try:
        for i, (target, files) in enumerate(folders.items()):
            for name, data in files.items():
                (stage / str(i) / name).parent.mkdir(parents=True, exist_ok=True)
                (stage / str(i) / name).write_bytes(data)
        for i, target in enumerate(folders):
            target.parent.mkdir(parents=True, exist_ok=True)
            old = None
            if target.exists():
                old = stage / f"old-{i}"
                target.rename(old)
            (stage / str(i)).rename(target)
            moved.append((target, stage / str(i), old))
    except BaseException:
        for target, staged, old in reversed(moved):
            target.rename(staged)
            if old is not None:
                old.rename(target)
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def about_problems(about: Any, runs: Sequence[tuple[str, str, int]], code_versions: Sequence[str]) -> list[str]:
    """Why an archive's ``ABOUT.json`` (its record of where and how it ran) contradicts its runs
    (empty: it does not): not an object; a run count (``runs``) other than the archive's; runs of
    seeds outside its ``run_seeds``; a commit (``code_version``) other than the one each run's
    summary records. Fields it lacks are not checked."""
    if not isinstance(about, dict):
        return [f"{ABOUT}: a JSON object expected, got {type(about).__name__}"]
    problems = []
    if "runs" in about and about["runs"] != len(runs):
        problems.append(f"{ABOUT}: says runs={about['runs']!r}, the archive holds {len(runs)}")
    seeds = about.get("run_seeds")  # the seeds it ran, as a list (grid_seeds is the caller's text)
    if seeds is not None:
        if not isinstance(seeds, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds):
            problems.append(f"{ABOUT}: run_seeds must be a list of seeds, got {seeds!r}")
        else:
            outside = sorted({seed for _, _, seed in runs} - set(seeds))
            if outside:
                problems.append(f"{ABOUT}: run_seeds {seeds}, but the archive holds runs of seed {outside[0]}")
    commit = _commit(about.get("code_version"))
    if commit:
        other = sorted({v for v in code_versions if _commit(v) and not _same_commit(_commit(v), commit)})
        if other:
            problems.append(f"{ABOUT}: code_version {about['code_version']!r}, but runs record {other[0]!r}")
    return problems


def _commit(version: Any) -> str | None:
    """The commit in a code version ("e17af3c", "0.1.0+e17af3c", "v0.2.0-3-gb0b6004-dirty"), or None."""
    if not isinstance(version, str):
        return None
    found = re.findall(r"(?:^|[+g-])([0-9a-f]{7,40})(?=$|[-.+])", version)
    return found[-1] if found else None


def _same_commit(a: str, b: str) -> bool:
    return a.startswith(b) or b.startswith(a)


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
           "partition_problems", "ledger_problems", "link_problem", "about_problems", "import_runs", "earlier_imports", "record"]
