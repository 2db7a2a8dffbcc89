"""A part of a grid through Snakemake as a user runs it on this machine, and what it cost: ``bladefl bench
--workflow CONFIG``.

Where ``--grid`` times the runs as stacked groups in this process, this runs the workflow's own shape:
``snakemake run_inputs`` (partitions, reference optima), then ``snakemake run_folders`` (every run of the part),
at the config's grouping (on the CPU ``cell``: one ``bladefl run`` process per run, ``threads_per_run`` threads)
on ``--cores`` cores, into a folder of its own. Each step's CPU is the user and system time of every process it
started (``getrusage`` of the waited children: Snakemake, its jobs and theirs, exact, not sampled), beside its
wall; the runs' own clocks (each run's summary) say how much of that CPU the engines account for, the rest being
process starts, imports, data loading and Snakemake. The same command on two commits compares them (the CPU
ratio a speed change is judged by). Torch-free."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

RUN_TARGETS = ("run_inputs", "run_folders")  # the workflow's run targets, in order (workflow/Snakefile)


@dataclass(frozen=True)
class Cost:
    """What one command cost: its wall seconds and the user + system CPU seconds of every process it started."""

    wall: float
    cpu: float


def measured(cmd: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> tuple[Cost, str]:
    """``cmd`` run to its end in ``cwd``: its :class:`Cost` and its output's tail (RuntimeError where it fails).
    The CPU is the change in this process's waited children's usage, so one call at a time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(list(cmd), cwd=cwd, env=None if env is None else dict(env), capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    tail = (proc.stdout + proc.stderr)[-1500:]
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd[:3])} ... failed ({proc.returncode}): {tail}")
    return Cost(wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)), tail


def snakemake_command(target: str, configfiles: Sequence[str], out: Path, cores: int, seeds: Sequence[int],
                      workdir: Path, overrides: Sequence[str] = ()) -> list[str]:
    """``snakemake <target>`` of the config's part ``seeds`` with its results, logs and benchmarks under ``out``
    (``paths_outside_workdir`` only where ``out`` lies outside ``workdir``); ``overrides``: more ``--config``
    items (``grouping=partition``)."""
    if target not in RUN_TARGETS:
        raise ValueError(f"target: {target!r} is not one of {', '.join(RUN_TARGETS)}")
    outside = not out.resolve().is_relative_to(workdir.resolve())
    return [sys.executable, "-m", "snakemake", target, "--cores", str(cores), "--configfile", *configfiles,
            "--config", f"results_dir={out}", f"logs_dir={out}/logs", f"benchmarks_dir={out}/benchmarks",
            "run_seeds=" + ",".join(str(s) for s in seeds), *(["paths_outside_workdir=True"] * outside), *overrides]


def run_part(configfiles: Sequence[str], out: Path, cores: int, seeds: Sequence[int], workdir: Path,
             overrides: Sequence[str] = ()) -> dict[str, Cost]:
    """Each run target of the part in turn (:data:`RUN_TARGETS`), with this interpreter's folder first on PATH (the
    jobs' ``bladefl`` is this one's): each target's :class:`Cost`."""
    from bladefl.experiments.runs.bookkeeping import interpreter_env

    env = interpreter_env()
    return {target: measured(snakemake_command(target, configfiles, out, cores, seeds, workdir, overrides),
                             workdir, env)[0] for target in RUN_TARGETS}


def engine_seconds(out: Path) -> pd.DataFrame:
    """Per run folder under ``out``'s runs: its cell, the engine's wall on its own clock, and its parts
    (training, evaluation, detection, the bound's constants, the chain), from each run's summary."""
    rows = []
    for summary in sorted((out / "runs").glob("*/*/*/*/summary.json")):
        record = json.loads(summary.read_text())
        engine = record["seconds"]["engine"]
        rows.append({"run": str(summary.parent.relative_to(out / "runs")), "total": record["seconds"]["total"],
                     "engine": engine["wall"], "train": engine["train"], "evaluation": engine["evaluation"],
                     "detection": engine["detection"], "constants": engine["constants"]})
    return pd.DataFrame(rows, columns=["run", "total", "engine", "train", "evaluation", "detection", "constants"])


def report(costs: Mapping[str, Cost], runs: pd.DataFrame, cores: int, baseline_cpu: float | None = None
           ) -> list[str]:
    """What ``bench --workflow`` prints: each target's wall and CPU, the CPU per run, the engines' share of the
    runs' CPU by part, and the CPU over ``baseline_cpu`` (the same part's ``run_folders`` CPU measured on other
    code) where given."""
    lines = [f"  {target}: {c.wall:.1f} s wall, {c.cpu:.1f} CPU-s on {cores} cores" for target, c in costs.items()]
    folders = costs.get("run_folders")
    if folders is None or runs.empty:
        return [*lines, "  no run computed"]
    lines.append(f"  {len(runs)} runs: {folders.cpu / len(runs):.1f} CPU-s a run; their engines' clocks "
                 f"{runs.engine.sum():.1f} s ({runs.engine.sum() / folders.cpu:.1%} of run_folders' CPU: "
                 + ", ".join(f"{part} {runs[part].sum() / folders.cpu:.1%}"
                             for part in ("train", "evaluation", "detection", "constants"))
                 + "); the rest is process starts, imports, data loading and Snakemake")
    if baseline_cpu:
        lines.append(f"  run_folders' CPU over the baseline's {baseline_cpu:.1f} CPU-s: "
                     f"{folders.cpu / baseline_cpu:.3f}")
    return lines


def overrides_of(grouping: str | None) -> list[str]:
    """The ``--config`` items a ``--grouping`` gives (none: the config's own, ``cell`` on the CPU)."""
    if grouping is None:
        return []
    if grouping not in ("cell", "partition"):
        raise ValueError(f"--grouping: {grouping!r} is not one of cell, partition")
    return [f"grouping={grouping}"] + (["threads_per_group=1"] if grouping == "partition" else [])


def bench_main(configfiles: Sequence[str], config: Mapping[str, Any], out: Path, cores: int,
               grouping: str | None, baseline_cpu: float | None) -> int:
    """``bladefl bench --workflow``: the part of ``config`` (its ``run_seeds`` set) run into a fresh ``out``; the
    lines printed."""
    from bladefl.core import owned
    from bladefl.experiments.plan.workflow_config import run_seeds

    seeds = run_seeds(config)
    folder = owned.fresh(out, "bench-workflow").resolve()
    print(f"workflow {' '.join(configfiles)}, run seeds {list(seeds)}, grouping "
          f"{grouping or config.get('grouping') or 'cell'}, {cores} cores, into {folder}", flush=True)
    costs = run_part(configfiles, folder, cores, seeds, Path.cwd(), overrides_of(grouping))
    print("\n".join(report(costs, engine_seconds(folder), cores, baseline_cpu)))
    return 0


__all__ = ["RUN_TARGETS", "Cost", "bench_main", "engine_seconds", "measured", "overrides_of", "report", "run_part",
           "snakemake_command"]
