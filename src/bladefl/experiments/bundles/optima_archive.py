"""The reference optima (w*, F*) a kept bundle's bound tables were computed from, packed beside its
run parts (``reference/runs/<bundle>/optima.tar.xz``) and installed where the workflow's ``reference``
rule would write them, so that a re-derivation reads the same optima instead of training them again.

Why they travel: an optimum is trained on the CPU, and the last bits of its float32 sums follow the
CPU's instruction path (AVX2, AVX-512, a library's compatible mode); F* then moves at about 1e-7, and
the bound's fits and the constant scan's counts with it (docs/measurements.md). The runs do not move:
they are imported, not trained.

An archive holds ``optima/<dataset>/<key>.npz`` and ``.json`` (the files ``bladefl reference``
writes) for each draw, and ``optima/ABOUT.json``: the engine they belong to, the code that packed
them (``packed_by``) and, for each, the SHA-256 of the partition indices it trained on. Read as
hostile: every member a regular file of a bounded size under that layout, each optimum checked as
:func:`bladefl.theory.reference.parse` checks it, of the model size of the config's engine, of a draw
of this config, trained on the partition made here (its digest); all of it before any file is written.
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from bladefl.core import atomic
from bladefl.experiments.bundles.run_archive import ArchiveError, archive_files
from bladefl.experiments.bundles.run_import import partition_made_here
from bladefl.experiments.plan import workflow_config as wc

PREFIX = "optima"
ABOUT = f"{PREFIX}/ABOUT.json"
MEMBER = re.compile(rf"{PREFIX}/(?P<dataset>[a-z0-9_]+)/(?P<key>[A-Za-z0-9_.~=+-]+)\.(?P<ext>npz|json)")
ARCHIVE_LIMIT = 512 * 2**20  # bytes read from an archive, all members together (20 optima of 256 units: 16 MB)


@dataclass(frozen=True)
class Optimum:
    """One reference optimum as it travels: its two files' bytes."""

    npz: bytes
    record: bytes


@dataclass(frozen=True)
class Installed:
    written: int  # optima written here
    present: int  # already here, byte for byte
    skipped: int  # of the config's other run seeds (a part imports its own)


def references_root(config: Mapping[str, Any], results_dir: str | Path | None = None) -> Path:
    """Where the workflow's ``reference`` rule writes the config's optima (``REFERENCES``)."""
    return Path(results_dir or config["results_dir"]) / "reference" / str(config.get("engine", "paper"))


def _check(config: Mapping[str, Any], dataset: str, key: str, optimum: Optimum, where: str) -> None:
    """One optimum held to the config: readable, of the engine's model and dataset; ArchiveError otherwise."""
    from bladefl.theory.reference import parse

    try:
        parse(optimum.npz, optimum.record, wc.model_size(config, dataset), f"{where}.npz", f"{where}.json")
    except ValueError as exc:
        raise ArchiveError(str(exc)) from None
    record = json.loads(optimum.record)  # parse() read it: a JSON object with its keys once
    model = wc.engine(config, dataset).to_dict()["model"]
    if record.get("dataset") != dataset or record.get("model") != model:
        raise ArchiveError(f"{where}.json: an optimum of dataset {record.get('dataset')!r}, model "
                           f"{record.get('model')!r}; this config's is of {dataset!r}, {model!r}")


def pack(config: Mapping[str, Any], out: str | Path, results_dir: str | Path | None = None,
         code_version: str = "unknown") -> int:
    """Every optimum of the config's ``run_seeds`` (:func:`wc.reference_keys`), read from where the workflow
    wrote them, checked, packed into ``out`` (.tar.xz, members sorted and stamped alike, so the same optima
    give the same bytes), written whole or not at all. Returns how many; ArchiveError naming a missing one."""
    root, members, digests = references_root(config, results_dir), {}, {}
    for dataset, key in wc.reference_keys(config):
        base = root / dataset / key
        try:
            optimum = Optimum(base.with_suffix(".npz").read_bytes(), base.with_suffix(".json").read_bytes())
        except OSError:
            raise ArchiveError(f"{base}.npz: no reference optimum here (the workflow's run_inputs trains it)") from None
        _check(config, dataset, key, optimum, str(base))
        digest = partition_made_here(config, dataset, key)
        if digest is None:
            raise ArchiveError(f"partition {dataset}/{key}: no manifest under {config.get('data_dir', 'data')}"
                               "/partitions, so the draw the optimum trained on cannot be named")
        members[f"{PREFIX}/{dataset}/{key}.npz"] = optimum.npz
        members[f"{PREFIX}/{dataset}/{key}.json"] = optimum.record
        digests[f"{dataset}/{key}"] = digest
    about = {"engine": str(config.get("engine", "paper")), "packed_by": code_version,
             "partition_sha256": digests}
    members[ABOUT] = (json.dumps(about, indent=1, sort_keys=True) + "\n").encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz", preset=6) as tar:
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(members[name]), 0, 0o644
            tar.addfile(info, io.BytesIO(members[name]))
    atomic.write_bytes(out, buf.getvalue())
    return len(digests)


def read(archive: str | Path) -> tuple[dict[tuple[str, str], Optimum], dict[str, Any]]:
    """The optima of an archive by (dataset, key), and its ABOUT.json; ArchiveError naming the member
    and the reason for anything else in it, a member twice, half an optimum, or no ABOUT.json."""
    files: dict[str, bytes] = {}
    total = 0

    def admit(member: tarfile.TarInfo) -> None:
        nonlocal total
        name = PurePosixPath(member.name).as_posix()
        if name != ABOUT and not MEMBER.fullmatch(name):
            raise ArchiveError(f"{member.name}: not an optimum's file ({PREFIX}/<dataset>/<key>.npz or .json) nor "
                               f"{ABOUT}")
        total += member.size
        if total > ARCHIVE_LIMIT:
            raise ArchiveError(f"{member.name}: the archive holds more than {ARCHIVE_LIMIT} bytes")

    try:
        for member, data in archive_files(Path(archive), admit):
            name = PurePosixPath(member).as_posix()
            if name in files:
                raise ArchiveError(f"{member}: the archive holds this file twice")
            files[name] = data
    except ArchiveError as exc:  # the archive named, as run_import names a runs archive
        raise ArchiveError(f"{archive}: {exc}") from None
    if ABOUT not in files:
        raise ArchiveError(f"{archive}: no {ABOUT} (the partition each optimum trained on)")
    try:
        about = json.loads(files.pop(ABOUT))
    except ValueError as exc:
        raise ArchiveError(f"{ABOUT}: not JSON ({exc})") from None
    if not isinstance(about, dict) or not isinstance(about.get("partition_sha256"), dict):
        raise ArchiveError(f"{ABOUT}: an object with a 'partition_sha256' object expected")
    optima: dict[tuple[str, str], Optimum] = {}
    for name in sorted(files):
        found = MEMBER.fullmatch(name)
        assert found is not None  # every other name was refused above
        dataset, key = found["dataset"], found["key"]
        if (dataset, key) in optima:
            continue
        npz, record = files.get(f"{PREFIX}/{dataset}/{key}.npz"), files.get(f"{PREFIX}/{dataset}/{key}.json")
        if npz is None or record is None:
            raise ArchiveError(f"{name}: half an optimum (its .npz and .json travel together)")
        optima[(dataset, key)] = Optimum(npz, record)
    return optima, about


def install(archive: str | Path, config: Mapping[str, Any], results_dir: str | Path | None = None,
            replace: bool = False) -> Installed:
    """The archive's optima of the config's ``run_seeds`` written where the workflow's ``reference`` rule
    writes them, after every one is checked: each optimum the seeds' runs read present, of the engine's model,
    trained on the partition made here (its digest against the partition's manifest: make the partitions
    first); an optimum of no draw of the config refused. A different optimum already there is refused unless
    ``replace``; an identical one is left as it is, so an install cut short is finished by the same call."""
    optima, about = read(archive)
    every = set(wc.reference_keys({**config, "run_seeds": None}))
    wanted = wc.reference_keys(config)
    stray = sorted(set(optima) - every)
    if stray:
        raise ArchiveError(f"{PREFIX}/{stray[0][0]}/{stray[0][1]}.npz: an optimum of no draw of this config")
    root = references_root(config, results_dir)
    writes: list[tuple[Path, Optimum]] = []
    present = 0
    for dataset, key in wanted:
        where = f"{PREFIX}/{dataset}/{key}"
        if (dataset, key) not in optima:
            raise ArchiveError(f"{where}.npz: missing (the runs of this config read it)")
        optimum = optima[(dataset, key)]
        _check(config, dataset, key, optimum, where)
        here = partition_made_here(config, dataset, key)
        if here is None:
            raise ArchiveError(f"partition {dataset}/{key} is not made here (make the partitions first: "
                               "snakemake run_inputs --omit-from reference), so the draw the optimum trained on "
                               "cannot be checked")
        if about["partition_sha256"].get(f"{dataset}/{key}") != here:
            raise ArchiveError(f"{where}: trained on another draw of partition {key} (indices "
                               f"{str(about['partition_sha256'].get(f'{dataset}/{key}'))[:12]}, here {here[:12]})")
        base = root / dataset / key
        existing = [_bytes(base.with_suffix(s)) for s in (".npz", ".json")]
        if existing == [optimum.npz, optimum.record]:
            present += 1
            continue
        if any(e is not None for e in existing) and not replace:
            raise ArchiveError(f"{base}.npz: another optimum is there (trained here?); --replace puts the "
                               "archive's in its place (then the runs that read it are older than it)")
        writes.append((base, optimum))
    for base, optimum in writes:  # the record last: the workflow sees an optimum whole once both are there
        atomic.write_bytes(base.with_suffix(".npz"), optimum.npz)
        atomic.write_bytes(base.with_suffix(".json"), optimum.record)
    return Installed(written=len(writes), present=present, skipped=len(set(optima) - set(wanted)))


def _bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() and not path.is_symlink() else None
    except OSError:
        return None


__all__ = ["PREFIX", "ABOUT", "ArchiveError", "Optimum", "Installed", "references_root", "pack",
           "read", "install"]
