"""A run's identity and its folder, in one place.

A grid run is one (dataset, cell, seed) under a runs root: ``<root>/<dataset>/<cell>/seed~<seed>/``
(the root names the engine, ``results/runs/<engine>``, or a sensitivity reading,
``results/sensitivity/runs/<reading>``). Every path to a run, and every identity read back from
one, goes through :func:`folder` and :func:`from_path`; the workflow's rules use the same
functions with Snakemake wildcards (``folder(root, "{dataset}", "{cell}", "{seed}")``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePath

SEED_PREFIX = "seed~"


@dataclass(frozen=True, order=True)
class RunId:
    """One run of the grid: its dataset, cell key and seed, and the runs root it lies under."""

    dataset: str
    cell: str
    seed: int
    root: str = ""

    @property
    def folder(self) -> str:
        return folder(self.root, self.dataset, self.cell, self.seed)

    @property
    def name(self) -> str:
        """``<cell>/seed~<seed>``: how a run is named in tables and logs."""
        return f"{self.cell}/{seed_name(self.seed)}"


def seed_name(seed: int | str) -> str:
    """The folder (or file stem) of one seed: ``seed~<seed>``; ``seed`` may be a wildcard."""
    return f"{SEED_PREFIX}{seed}"


def folder(root: str | Path, dataset: str, cell: str, seed: int | str) -> str:
    """A run's folder; any argument may be a Snakemake wildcard such as ``"{cell}"``."""
    return f"{root}/{dataset}/{cell}/{seed_name(seed)}"


def file(root: str | Path, dataset: str, cell: str, seed: int | str, name: str) -> str:
    """A file of a run's folder (``summary.json``, ``rounds.csv``)."""
    return f"{folder(root, dataset, cell, seed)}/{name}"


def from_path(path: str | PurePath) -> RunId:
    """The identity of the run a folder (or a file in it, such as its ``summary.json``) belongs to;
    ValueError naming the path when it is not a run folder."""
    path = Path(path)
    run = path if path.name.startswith(SEED_PREFIX) else path.parent
    seed = run.name.removeprefix(SEED_PREFIX)
    if not run.name.startswith(SEED_PREFIX) or not re.fullmatch(r"-?(0|[1-9][0-9]*)", seed) or len(run.parts) < 3:
        raise ValueError(f"{path}: not in a run folder <root>/<dataset>/<cell>/{SEED_PREFIX}<seed>")
    return RunId(run.parent.parent.name, run.parent.name, int(seed), str(run.parent.parent.parent))


__all__ = ["RunId", "SEED_PREFIX", "seed_name", "folder", "file", "from_path"]
