"""A runs' archive as it travels (the GPU machine's ``grid-tables.tar.xz``, a grid part's
``part-seed<i>.tar.xz``): its members read as hostile, each checked before any is kept, and its
``ABOUT.json`` (where and how it was computed) held to the runs it ships with.

Members are ``<prefix>/<dataset>/<cell>/seed~<seed>/`` run files (``rounds.csv``, ``summary.json``,
``detections.csv``, ledgers ``chains/K<k>.json``), each a regular file of a bounded size, and at most
one ``ABOUT.json`` beside the dataset folders. What the runs must hold against a workflow config is
:mod:`bladefl.experiments.bundles.run_import`'s.
"""

from __future__ import annotations

import json
import lzma
import re
import tarfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from bladefl.core.errors import BladeflError
from bladefl.experiments.plan import run_id

RUN_FILES = ("rounds.csv", "summary.json", "detections.csv")
LEDGER = re.compile(r"chains/K[1-9][0-9]{0,3}\.json")  # a run's ledger of one K
ABOUT = "ABOUT.json"


class ArchiveError(BladeflError):
    """An archive that cannot be imported: the message names the member and the reason."""


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
    for member, data in archive_files(Path(archive), _within_its_limit):
        if PurePosixPath(member).name == ABOUT and len(PurePosixPath(member).parts) <= 2:
            if about is not None:
                raise ArchiveError(f"{member}: a second {ABOUT}")
            about = _json(member, data)  # the archive's own, beside its dataset folders
            continue
        run, name = _member_run(member)
        files = runs.setdefault((run.dataset, run.cell, run.seed), {})
        if name in files:  # a second member of one name: which one a reader takes is arbitrary
            raise ArchiveError(f"{member}: the archive holds this run file twice")
        files[name] = data
    return runs, about


def _within_its_limit(member: tarfile.TarInfo) -> None:
    name = PurePosixPath(member.name).name
    limit = MEMBER_LIMITS.get("ledger" if name.startswith("K") else name, MEMBER_LIMIT)
    if member.size > limit:
        raise ArchiveError(f"{member.name}: {member.size} bytes, more than such a file holds ({limit})")


def archive_files(archive: Path, admit: Callable[[tarfile.TarInfo], None]) -> Iterator[tuple[str, bytes]]:
    """Each regular file of a tar archive from elsewhere, as (member name, bytes), read only once ``admit`` (which
    raises ArchiveError naming the member) let it through. Refused first: a file that is no tar archive, a member
    name with control characters, a link or a device; folders are skipped; a truncated or corrupt archive is an
    ArchiveError. The one walk of the run and optima archives."""
    if not archive.is_file():
        raise ArchiveError("no such file")
    if not tar_magic(archive):  # checked first: xz reads a file of zeros as stream padding, all of it
        raise ArchiveError("not a readable tar archive (plain, gzip, bzip2 or xz, by its first bytes)")
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
                admit(member)
                yield member.name, tar.extractfile(member).read()  # type: ignore[union-attr]
    except (EOFError, OSError, tarfile.TarError, lzma.LZMAError, zlib.error) as exc:
        raise ArchiveError(f"truncated or corrupt ({exc.__class__.__name__}: {exc})") from None


# The first bytes of each archive form tarfile reads: gzip, bzip2, xz, and a plain (ustar) tar's magic at 257.
MAGIC = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00")


def tar_magic(path: Path) -> bool:
    with path.open("rb") as f:
        head = f.read(263)
    return head.startswith(MAGIC) or head[257:262] == b"ustar"


def _json(name: str, data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise ArchiveError(f"{name}: not JSON ({exc})") from None


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
        other = sorted({v for v in code_versions if (c := _commit(v)) is not None and not _same_commit(c, commit)})
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


__all__ = ["RUN_FILES", "LEDGER", "ABOUT", "ArchiveError", "MEMBER_LIMITS", "MEMBER_LIMIT", "read_archive",
           "about_problems"]
