"""A run folder that a group job computed, held to what an import of it would be held to before the
run's own job takes it (``bladefl run --group --computed-in``): regular files of a run's names only,
read strictly and held together, its config, K values and time model, its detections, a ledger per
trained K verifying against its summary (:mod:`bladefl.experiments.bundles.run_import`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bladefl.core import run_files
from bladefl.experiments.bundles.run_archive import LEDGER, MEMBER_LIMIT, MEMBER_LIMITS, RUN_FILES
from bladefl.experiments.bundles.run_import import (
    _without_execution,
    ledger_problems,
    read_run_files,
    run_problems,
)


def folder_files(folder: Path, keeps_models: bool) -> tuple[dict[str, bytes], list[str]]:
    """A run folder's files as an archive's members (``summary.json``, ``chains/K1.json``, ...), read as
    hostile, and what is wrong with the folder: anything but regular files of the run's names (links,
    devices, FIFOs, unknown names; ``models/`` only where the config keeps models) and files over their
    size limit are problems, not read."""
    files: dict[str, bytes] = {}
    problems: list[str] = []
    for entry in sorted(folder.rglob("*")):
        name = entry.relative_to(folder).as_posix()
        if name == "chains" or (keeps_models and name == "models"):
            if entry.is_symlink() or not entry.is_dir():
                problems.append(f"{name}: not a folder")
            continue
        if keeps_models and name.startswith("models/"):
            if entry.is_symlink() or not entry.is_file():
                problems.append(f"{name}: not a regular file (links, devices and FIFOs are refused)")
            continue
        if name not in RUN_FILES and not LEDGER.fullmatch(name):
            problems.append(f"{name}: not a run file ({', '.join(RUN_FILES)}, chains/K<k>.json)")
            continue
        if entry.is_symlink() or not entry.is_file():
            problems.append(f"{name}: not a regular file (links, devices and FIFOs are refused)")
            continue
        limit = MEMBER_LIMITS.get("ledger" if name.startswith("chains/") else name, MEMBER_LIMIT)
        if entry.stat().st_size > limit:
            problems.append(f"{name}: larger than {limit} bytes")
            continue
        files[name] = entry.read_bytes()
    return files, problems


def run_folder_problems(folder: str | Path, expected: Mapping[str, Any]) -> list[str]:
    """What stops the run folder ``folder`` from standing for the run whose config is ``expected`` (a
    run config's record): the checks an import makes of an archived run (its files read strictly and
    held together, its config, K values and time model, its detections, a ledger per trained K each
    verifying against the summary), on the folder's regular files; empty when it may."""
    folder = Path(folder)
    keeps_models = bool(expected.get("chain", {}).get("save_models"))
    files, problems = folder_files(folder, keeps_models)
    if problems:
        return problems
    try:
        summary = read_run_files(files)
    except run_files.RunFileError as exc:
        return [str(exc)]
    found = run_problems(summary, _without_execution(dict(expected)))
    return found or ledger_problems(files)


def take_group_run(mark: str, computed_in: str | None, cfg: Any, out: str) -> bool:  # noqa: ANN401 - RunConfig
    """Whether the run's group job computed it (its ``mark``): then the run is moved from ``computed_in``
    to ``out`` once its folders do not overlap and it passes :func:`run_folder_problems` (nothing
    moved otherwise: ValueError naming the first problem), and nothing is trained."""
    from bladefl.experiments.runs.run_source import group_computed, overlap_problem, take_run

    if not group_computed(mark):
        return False
    if not computed_in:
        raise ValueError(f"--group {mark}: its group computed the run: give --computed-in (where it lies)")
    overlap = overlap_problem(Path(computed_in), Path(out))  # before any file is read or moved
    if overlap:
        raise ValueError(overlap)
    problems = run_folder_problems(computed_in, json.loads(json.dumps(cfg.to_dict())))
    if problems:
        raise ValueError(f"--computed-in {computed_in}: not a finished run of this config: {problems[0]}"
                         + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "") + "; nothing moved")
    take_run(computed_in, cfg, out)
    return True


__all__ = ["folder_files", "run_folder_problems", "take_group_run"]
