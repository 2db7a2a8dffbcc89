"""A run's records held to its own config: what the strict reader (:mod:`bladefl.core.run_files`)
cannot know. Each K's ``tau`` is the time model's for the config's alpha, beta and t_sum, and a K
is infeasible exactly when that tau is below 1 (so an ok K turned "infeasible", or the reverse,
cannot move K*). The analyses and the import read every run through :func:`read_checked_run`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bladefl.core import run_files
from bladefl.fl.timemodel import TAU_RULES, allocate


def time_model_problems(summary: Mapping[str, Any]) -> list[str]:
    """Where the summary's tau or status is not what its config's time model gives."""
    time = summary["config"].get("time", {})
    try:
        alpha, beta, t_sum = (float(time[k]) for k in ("alpha", "beta", "t_sum"))
    except (KeyError, TypeError, ValueError, OverflowError):
        return ["config.time lacks alpha, beta or t_sum (numbers)"]
    rule = time.get("tau_rule", "paper")  # a run recorded before the field: the paper's rule
    if rule not in TAU_RULES:
        return [f"config.time.tau_rule must be one of {list(TAU_RULES)} (got {str(rule)[:40]!r})"]
    if not (0 < alpha <= 1e6 and 0 <= beta <= 1e6 and 0 < t_sum <= 1e6):  # NaN fails every comparison
        return [f"config.time: alpha in (0, 1e6], beta in [0, 1e6] and t_sum in (0, 1e6] (got alpha {alpha!r}, "
                f"beta {beta!r}, t_sum {t_sum!r})"]
    problems = []
    for entry in summary["per_K"]:
        expected = allocate(int(entry["K"]), alpha, beta, t_sum, rule)
        if entry["tau"] != expected.tau:
            problems.append(f"K={entry['K']}: tau = {entry['tau']}, the time model gives {expected.tau}")
        elif (entry["status"] == "infeasible") == expected.feasible:
            problems.append(f"K={entry['K']}: status {entry['status']!r}, but tau = {expected.tau} is "
                            f"{'feasible' if expected.feasible else 'infeasible'}")
    return problems


def read_checked_run(summary_path: str | Path) -> run_files.Run:
    """A run folder read strictly (:func:`bladefl.core.run_files.read_run`) and held to its config's
    time model; :class:`bladefl.core.run_files.RunFileError` naming the run otherwise."""
    run = run_files.read_run(summary_path)
    problems = time_model_problems(run.summary)
    if problems:
        raise run_files.RunFileError(f"summary.json {summary_path}: {problems[0]}")
    return run


__all__ = ["time_model_problems", "read_checked_run"]
