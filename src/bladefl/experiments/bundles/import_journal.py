"""An import's runs moved into place so that a kill at any point is finished by the same import run again: every
run folder staged beside its place under a folder named for the archive, a journal written once all are staged
(the targets in order and the import's result), then each renamed in. A rerun that finds the journal moves what
is still staged and reports the import as the journal records it; one that finds a stage without its journal
(killed while staging: nothing moved) starts again. The journal goes once the caller has written its record."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bladefl.core import atomic, owned
from bladefl.data.datasets import sha256_file
from bladefl.experiments.bundles.run_archive import ArchiveError
from bladefl.experiments.plan import run_id
from bladefl.experiments.runs import run_source


@dataclass
class Imported:
    """What an import wrote: run folders per dataset, the archive's ABOUT.json (None: it has none)."""

    runs: dict[str, int] = field(default_factory=dict)
    about: Any = None  # the archive's ABOUT.json, held to its runs (None: the archive holds none)
    skipped: int = 0  # runs of seeds the config does not hold (a partial grid imported by its first seeds)
    verified: int = 0  # runs whose ledgers were verified against their files
    unverified: int = 0  # runs that carry no ledgers (archives packed before ledgers were carried)
    undigested: int = 0  # runs whose summary records no partition digest: their draw was not checked
    marks: int = 0  # group marks written for the imported runs (run_source.mark_imported_groups)
    resumed: bool = False  # the import finished one of the same archive that a kill cut short
    stage: Path | None = None  # its staging folder and journal, until done() removes them

    @property
    def total(self) -> int:
        return sum(self.runs.values())


JOURNALED = ("about", "skipped", "verified", "unverified", "undigested")  # what a resumed import reports again


def stage_name(archive: Path, runs_root: Path) -> Path:
    """The staging folder of an import of ``archive`` into ``runs_root``: named for the archive's content, so
    that the same import, run again after a kill, finds the work it left (:func:`resume`)."""
    return Path(runs_root).parent / f".{Path(runs_root).name}.import-{sha256_file(archive)[:16]}"


JOURNAL = "JOURNAL.json"  # written once every run is staged: the import's targets, in the order they move


def resume(archive: Path, config: Mapping[str, Any], runs_root: Path, expected: set[str],
           keep_journal: bool = False) -> Imported | None:
    """An import of ``archive`` cut short (killed while it moved its runs in, or before its record) finished: every run
    still staged moved into place, the group marks written, the staging folder removed (``keep_journal``: left
    for the caller, who removes it with :func:`done` once its record is written); None where no import of it was
    cut short (``expected``: the run folders of the config it is resumed under). A staging folder without its
    journal (killed while staging: nothing was moved) is removed and None returned, so the import starts again."""
    stage = stage_name(archive, runs_root)
    if not stage.exists():
        return None
    if not (stage / JOURNAL).is_file():
        owned.remove(stage, None)
        return None
    journal = json.loads((stage / JOURNAL).read_text())
    targets = [Path(t) for t in journal["targets"]]
    if not {str(t) for t in targets} <= expected:
        raise ArchiveError(f"{archive}: an import of it under another config was cut short ({stage}); rerun that "
                           "import to finish it, or remove the folder")
    for i, target in enumerate(targets):
        staged = stage / str(i)
        if staged.exists():  # not yet moved: move it now (an existing one set aside, as --replace does)
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists() and not (stage / f"old-{i}").exists():
                target.rename(stage / f"old-{i}")
            staged.rename(target)
    return finish(stage, config, runs_root, keep_journal)


def finish(stage: Path, config: Mapping[str, Any], runs_root: Path, keep_journal: bool) -> Imported:
    """Once every run is in place: the group marks, the result as the journal records it, the stage removed
    unless the caller keeps it for its record."""
    journal = json.loads((stage / JOURNAL).read_text())
    result = Imported(**journal["result"])
    keys = [run_id.from_path(Path(t) / "summary.json") for t in journal["targets"]]
    wanted = {(k.dataset, k.cell, k.seed): None for k in keys}
    result.marks = len(run_source.mark_imported_groups(config, runs_root, wanted))
    result.runs = {}
    for dataset, _, _ in wanted:
        result.runs[dataset] = result.runs.get(dataset, 0) + 1
    result.stage = stage
    if not keep_journal:
        done(result)
    return result


def done(imported: Imported) -> None:
    """The import's staging folder and journal removed: called once the import's record is written."""
    if imported.stage is not None and imported.stage.exists():
        owned.remove(imported.stage, None)


def write_staged(folders: Mapping[Path, Mapping[str, bytes]], runs_root: Path, stage: Path,
                  result: Imported) -> Path:
    """Write every run folder beside its place first (``stage``, next to ``runs_root``), then the journal
    (the targets in order and the result), then rename each into place, an existing one (``replace``) set
    aside in the stage. A failure raised here puts back those already moved and removes the stage; a kill
    leaves the stage and its journal, and the same import run again finishes it (:func:`resume`): no run
    folder is ever half-written and none is lost. Returns the stage."""
    runs_root.parent.mkdir(parents=True, exist_ok=True)
    if stage.exists():
        owned.remove(stage, None)
    stage.mkdir()
    moved: list[tuple[Path, Path, Path | None]] = []
    try:
        for i, files in enumerate(folders.values()):
            for name, data in files.items():
                atomic.write_bytes(stage / str(i) / name, data)  # flushed to disk before the renames
        record = {"targets": [str(t) for t in folders],
                  "result": {k: v for k, v in dataclasses.asdict(result).items() if k in JOURNALED}}
        atomic.write_json(stage / JOURNAL, record)  # from here on, a kill is finished by the next call
        for i, target in enumerate(folders):
            target.parent.mkdir(parents=True, exist_ok=True)
            old = None
            if target.exists():
                old = stage / f"old-{i}"
                target.rename(old)
            (stage / str(i)).rename(target)
            moved.append((target, stage / str(i), old))
    except Exception:
        for target, staged, old in reversed(moved):
            target.rename(staged)
            if old is not None:
                old.rename(target)
        owned.remove(stage, None)
        raise
    return stage



__all__ = ["JOURNAL", "JOURNALED", "Imported", "done", "finish", "resume", "stage_name", "write_staged"]
