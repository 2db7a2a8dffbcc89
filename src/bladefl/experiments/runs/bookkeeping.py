"""The grid's bookkeeping under ``grouping: partition`` (profiles/gpu), measured against its computation:
per group job, the seconds from the end of its computation (its mark records when its computation
started and ended) to the moment the last of its runs is in its place (the run folder's last change:
its summary, moved last), over the seconds its computation took. What a user waits for between one
group's computation and the next is that bookkeeping; the target is at most 5% of the computation.

``bladefl bench --bookkeeping CONFIG`` runs the grid of a workflow config through Snakemake with the GPU
profile's grouping on this machine (``gpu_profile_on_cpu``) into a folder of its own and prints this
table (:func:`bookkeeping`). Torch-free: it reads marks and folders."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

TARGET = 0.05  # bookkeeping seconds over computation seconds, per group and over the grid


def bookkeeping(config: Mapping[str, Any], results_dir: str | Path) -> pd.DataFrame:
    """Per group job of ``config`` whose mark (kept: ``--notemp``) records its computation under
    ``results_dir``: its runs in place, the computation's seconds, the bookkeeping's seconds after it
    and their ratio."""
    from bladefl.experiments.plan import workflow_config as wc
    from bladefl.experiments.runs.run_source import group_mark

    engine = config.get("engine", "paper")
    runs_root = str(Path(results_dir) / "runs" / engine)
    rows = []
    for group in wc.partition_jobs(config):
        mark = group_mark(results_dir, engine, group.name)
        try:
            record = json.loads(mark.read_text())
            start, end = (float(x) for x in record["seconds"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a group that did not compute here (not in the part, or no mark kept)
        folders = [Path(f) for f in group.run_dirs(runs_root)]  # a group holds the part's seeds only
        placed = [f.stat().st_mtime for f in folders if (f / "summary.json").is_file()]
        last = max(placed) if placed else math.nan
        rows.append({"group": group.name, "runs": len(folders), "in_place": len(placed),
                     "computation_s": end - start, "bookkeeping_s": last - end,
                     "ratio": (last - end) / (end - start) if end > start else math.nan})
    return pd.DataFrame(rows, columns=["group", "runs", "in_place", "computation_s", "bookkeeping_s", "ratio"])


def interpreter_env() -> dict[str, str]:
    """This process's environment with this interpreter's folder first on PATH, so a workflow's jobs run this
    ``bladefl`` and ``snakemake``."""
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def run_grid(configfiles: Sequence[str], results_dir: Path, cores: int, workdir: Path) -> float:
    """``snakemake run_folders`` of the config under the GPU profile on this machine (no GPU needed),
    its results, logs and benchmarks under ``results_dir``, marks kept; returns its wall seconds."""
    folder = str(results_dir)
    cmd = [sys.executable, "-m", "snakemake", "run_folders", "--profile", "profiles/gpu", "--cores", str(cores),
           "--notemp", "--scheduler", "greedy", "--configfile", *configfiles, "--config", "gpu_profile_on_cpu=True",
           f"results_dir={folder}", f"logs_dir={folder}/logs", f"benchmarks_dir={folder}/benchmarks"]
    env = interpreter_env()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"snakemake failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-1500:]}")
    return time.perf_counter() - start


__all__ = ["TARGET", "bookkeeping", "interpreter_env", "run_grid"]
