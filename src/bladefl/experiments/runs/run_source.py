"""Where a grid run comes from: trained by its own job (``grouping: cell``, the default), or computed
by its group job (``grouping: partition``, the GPU profile) and taken from the group's folder.

The workflow plans the same group jobs under both groupings, and every run folder is written by the
same rule with one command, one list of inputs and one set of parameters, so that a run folder written
under one profile is not planned again under the other (Snakemake reruns a job whose recorded command,
inputs or parameters changed). Under ``grouping: cell`` a group job is told to compute nothing
(``bladefl run-group --compute 0``, from its ``gpu`` resource) and says so in its mark (``runs: 0``),
and each run trains in its own job; under ``grouping: partition`` the group computes its runs and
each run's job moves it to its place.

Torch-free: taking a run moves files and reads the strict run-file readers, nothing more.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bladefl.core import atomic, owned
from bladefl.fl.run_config import RunConfig

# A run's folder inside its group's folder: <group>/<dataset>/<cell>/seed~<seed>.
_GROUP_DEPTH = 3


def write_group_mark(path: str | Path, runs: int, seconds: tuple[float, float] | None = None) -> Path:
    """The mark a group job leaves once done: how many runs its folder holds (0: none computed, each
    run trains in its own job) and, where it computed them, when its computation started and ended
    (seconds since the epoch: what the bookkeeping benchmark holds the runs' moves to)."""
    record: dict = {"runs": int(runs)}
    if seconds is not None:
        record["seconds"] = [float(seconds[0]), float(seconds[1])]
    atomic.write_json(Path(path), record)
    return Path(path)


def group_mark(results_dir: str | Path, engine: str, group: str) -> Path:
    """Where group job ``group`` leaves its mark (``<results>/groups/<engine>/<group>.done``, the
    workflow's ``GROUP_RUNS``)."""
    return Path(results_dir) / "groups" / engine / f"{group}.done"


def mark_imported_groups(config: Mapping[str, Any], runs_root: str | Path,
                         runs: Iterable[tuple[str, str, int]]) -> list[Path]:
    """The marks of the whole design's group jobs that hold the imported ``runs`` (dataset, cell key,
    seed) under ``runs_root`` (``<results>/runs/<engine>``), each written (unless a group that computed
    its runs left it) as a group that computed none (``runs: 0``). A run job depends on its group's
    mark as an ancient input (workflow/rules/helpers/grid.smk), so where the mark exists the group's
    job, run for a run still missing (a design imported in parts, then completed here), plans none of
    the imported runs again."""
    from bladefl.experiments.plan import workflow_config as wc

    wanted = set(runs)
    whole = {k: v for k, v in config.items() if k != "run_seeds"}
    root = Path(runs_root)
    names = sorted({g.name for g in wc.partition_jobs(whole)
                    if any((g.dataset, c, s) in wanted for c in g.cells for s in g.seeds)})
    marks = [group_mark(root.parent.parent, root.name, name) for name in names]
    return [write_group_mark(mark, 0) for mark in marks if not mark.exists() or _written_empty(mark)]


def _written_empty(mark: Path) -> bool:
    """Whether an existing mark is one a group that computed nothing left (rewritten by an import, so
    that it is newer than the part's inputs); a computing group's mark, or one unreadable, is kept."""
    try:
        return not group_computed(mark)
    except ValueError:
        return False


def group_computed(path: str | Path) -> bool:
    """Whether the group job that left the mark ``path`` computed its runs (the mark checked: a JSON
    object with exactly one key, ``runs``, a whole number of at least 0)."""
    from bladefl.core.bounded_read import read_regular
    from bladefl.core.run_files import no_key_twice

    try:  # read as hostile: a regular file of at most 1 KiB (a FIFO would hang, /dev/zero fill memory), no key twice
        record = json.loads(read_regular(path, 1024, "--group").decode("utf-8"), object_pairs_hook=no_key_twice)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"--group {path}: not a readable group mark ({exc})") from None
    keys_ok = isinstance(record, dict) and "runs" in record and set(record) <= {"runs", "seconds"}
    runs = record.get("runs") if keys_ok else None
    seconds = record.get("seconds", [0.0, 0.0]) if keys_ok else None
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 0 or not (
            isinstance(seconds, list) and len(seconds) == 2 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in seconds)):
        raise ValueError(f'--group {path}: expected {{"runs": <whole number>, "seconds": [start, end]}} (the mark '
                         "`bladefl run-group --done` writes)")
    return runs > 0


def finished_run(folder: str | Path, cfg: RunConfig) -> bool:
    """Whether ``folder`` holds a complete run of exactly ``cfg``: its summary and rounds.csv read by
    the strict readers and agreeing, the summary's config equal to ``cfg`` (a damaged folder or
    another config's run is not finished)."""
    from bladefl.core import run_files

    folder = Path(folder)
    summary, rounds = folder / "summary.json", folder / "rounds.csv"
    if not (summary.is_file() and rounds.is_file()):
        return False
    try:
        record = run_files.read_summary(summary)
        run_files.check_together(record, run_files.read_rounds(rounds), f"run {folder}")
    except (OSError, ValueError):  # RunFileError is a ValueError
        return False
    return record.get("config") == json.loads(json.dumps(cfg.to_dict()))


def take_run(computed_in: str | Path, cfg: RunConfig, out: str | Path) -> Path:
    """Move the finished run ``computed_in`` (a folder ``<group>/<dataset>/<cell>/seed~<seed>`` of a
    group job, a run of exactly ``cfg``) to ``out``, its summary last (a run folder is complete once
    its summary is there), then remove the folders it emptied up to and including the group's.
    Refused, with nothing moved, when the folder is not a finished run of ``cfg``."""
    src, out = Path(computed_in), Path(out)
    if ".." in src.parts or len(src.parts) <= _GROUP_DEPTH:
        raise ValueError(f"--computed-in {src}: expected <group folder>/<dataset>/<cell>/seed~<seed>")
    if ".." in out.parts:  # X/.. is not X's parent once X is made: the run would hold a stray folder
        raise ValueError(f"--out {out}: a path without '..' (the run's own folder); nothing moved")
    overlap = overlap_problem(src, out)
    if overlap:
        raise ValueError(overlap)
    if not finished_run(src, cfg):
        raise ValueError(f"--computed-in {src}: not a finished run of this config (its group job did not write "
                         "it, or wrote another config's run): run the group job again")
    out.mkdir(parents=True, exist_ok=True)
    for entry in sorted(src.iterdir(), key=lambda p: p.name == "summary.json"):  # the summary last
        target = out / entry.name
        if target.is_dir() and not target.is_symlink():
            owned.remove(target, None)
        shutil.move(str(entry), str(target))
    _remove_empty(src, src.parents[_GROUP_DEPTH - 1])
    return out


def overlap_problem(src: Path, out: Path) -> str | None:
    """Why the run ``src`` may not be moved to ``out`` before anything moves (None: it may): a link on
    its way, a source outside a group's folder (``.../groups/.../<group>/<dataset>/<cell>/seed~<s>``:
    a finished run elsewhere, under ``results/runs/``, is not a group's to give), or folders that
    overlap (the same folder, one inside the other, or the target inside the group's folder)."""
    for part in (src, *list(src.parents)[:_GROUP_DEPTH]):
        if part.is_symlink():
            return f"--computed-in {src}: {part} is a link (a group's run folders are plain folders)"
    if not src.is_dir():
        return f"--computed-in {src}: no such folder"
    real_src, real_out = Path(os.path.realpath(src)), Path(os.path.realpath(out))
    group = real_src.parents[_GROUP_DEPTH - 1]
    if "groups" not in group.parent.parts:
        return (f"--computed-in {src}: not in a group's folder (<results>/groups/.../<group>/<dataset>/<cell>/"
                "seed~<seed>); nothing moved")
    if real_out == real_src or real_src in real_out.parents or real_out in real_src.parents:
        return f"--out {out} and --computed-in {src} overlap (one is, or holds, the other); nothing moved"
    if group in real_out.parents:
        return f"--out {out} lies inside the group's folder {group}, which is removed once emptied; nothing moved"
    return None


def _remove_empty(folder: Path, top: Path) -> None:
    """Remove ``folder`` and its parents while they are empty, up to and including ``top``."""
    for path in (folder, *folder.parents):
        try:
            os.rmdir(path)
        except OSError:  # not empty (another run still there) or already gone
            return
        if path == top:
            return


__all__ = ["finished_run", "group_computed", "group_mark", "mark_imported_groups", "overlap_problem", "take_run",
           "write_group_mark"]
