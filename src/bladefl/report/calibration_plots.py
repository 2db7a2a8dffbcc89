"""The calibration study's figures on its page (notebooks/07_calibration.ipynb): each trial's closeness
and the running best, the points scored on every row with their Pareto front, and the settings'
importances beside their control. The words and tables are :mod:`bladefl.report.calibration`'s."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from bladefl.report.calibration import LABELS
from bladefl.report.plots import PALETTE


def running_best_figure(trials: pd.DataFrame, outcome: Mapping[str, Any], title: str):  # noqa: ANN201 - Figure
    """Each evaluated trial's closeness to the targets on the screen, in the order they ran, the running
    best as a step line, the trials promoted to every row marked, and why the search stopped."""
    import matplotlib.pyplot as plt

    done = trials[trials.state == "complete"].sort_values("trial")
    fig, ax = plt.subplots(figsize=(9, 3.8))
    order = range(1, len(done) + 1)
    ax.scatter(order, done.closeness, s=26, color=PALETTE[7], label="a trial (screen)", zorder=2)
    up = [i for i, p in zip(order, done.promoted, strict=True) if p]
    ax.scatter(up, done.closeness[done.promoted], s=60, facecolors="none", edgecolors=PALETTE[0], lw=1.4,
               label="went on to every row", zorder=3)
    ax.step(list(order), done.running_best, where="post", color=PALETTE[2], lw=1.6, label="running best", zorder=1)
    ax.axhline(1.0, color=PALETTE[5], lw=0.8, ls="--", label="the targets (closeness 1)")
    ax.set_xlabel("evaluated trial, in the order it ran")
    ax.set_ylabel("closeness to the targets\n(larger distance / its target)")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter, MaxNLocator, ScalarFormatter

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if round(v, 6) in (0.5, 2, 3, 5, 20, 30, 50)
                                               else ""))
    ax.set_title(title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)  # beside: no trial hidden
    fig.text(0.01, 0.01, f"stopped: {outcome['search']['stopped']}", fontsize=7.5)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def pareto_figure(trials: pd.DataFrame, outcome: Mapping[str, Any], title: str):  # noqa: ANN201 - Figure
    """K* distance against accuracy distance over every row, for each trial promoted there: the front
    joined, the stated reading and each named reading labelled, the calibrated one circled, the targets
    and the paper's own floor as lines."""
    import matplotlib.pyplot as plt

    done = trials[(trials.state == "complete") & trials.promoted]
    fig, ax = plt.subplots(figsize=(7.5, 5.0))
    x, y = "full_K_star_distance", "full_accuracy_distance"
    searched = done[done.point.fillna("") == ""]
    ax.scatter(searched[x], searched[y], s=28, color=PALETTE[7], label="searched or coverage point")
    named = done[(done.point.fillna("") != "") & (done.point != "stated")]
    ax.scatter(named[x], named[y], s=44, marker="s", color=PALETTE[0], label="named reading")
    for r in named.itertuples():
        ax.annotate(r.point, (getattr(r, x), getattr(r, y)), fontsize=8, xytext=(4, 3), textcoords="offset points")
    stated = done[done.point == "stated"]
    ax.scatter(stated[x], stated[y], s=90, marker="*", color=PALETTE[5], label="stated reading", zorder=3)
    front = done[done.pareto].sort_values(x)
    ax.plot(front[x], front[y], color=PALETTE[2], lw=1.2, zorder=1, label="Pareto front")
    trial = outcome["calibrated"].get("trial")
    cal = done[done.trial == trial] if trial is not None and not (isinstance(trial, float) and math.isnan(trial)) \
        else done.iloc[0:0]
    ax.scatter(cal[x], cal[y], s=160, facecolors="none", edgecolors="black", lw=1.5, label="calibrated reading",
               zorder=4)
    t, floor = outcome["targets"], outcome.get("floor") or {}
    ax.axhline(t["accuracy"], color=PALETTE[2], lw=0.8, ls="--")
    ax.axvline(t["K_star"], color=PALETTE[2], lw=0.8, ls="--", label="targets")
    if floor.get("K_star", 0) > 0:
        ax.axvline(floor["K_star"], color=PALETTE[3], lw=0.8, ls=":", label="the paper's own floor")
    if floor.get("accuracy", 0) > 0:
        ax.axhline(floor["accuracy"], color=PALETTE[3], lw=0.8, ls=":")
    ax.set_xlabel("K* distance over every row: mean |K* - K*paper| (rounds)")
    ax.set_ylabel("accuracy distance over every row (points)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return fig


def importance_figure(importances: pd.DataFrame, title: str):  # noqa: ANN201 - Figure
    """Each setting's share of each distance's variance (fANOVA) as bars, each distance's control (the
    share shuffled distances get) as a dashed line in its colour."""
    import matplotlib.pyplot as plt
    import numpy as np

    settings = sorted(importances.setting.unique())
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    width = 0.38
    x = np.arange(len(settings))
    colours = {"K_star_distance": PALETTE[0], "accuracy_distance": PALETTE[1]}
    for i, (obj, part) in enumerate(importances.groupby("objective", sort=False)):
        values = part.set_index("setting").importance.reindex(settings).fillna(0)
        ax.bar(x + (i - 0.5) * width, 100 * values, width, color=colours.get(obj),
               label=f"{LABELS.get(obj, obj)} distance")
        ax.axhline(100 * float(part.control.iloc[0]), color=colours.get(obj), lw=1.0, ls="--",
                   label=f"{LABELS.get(obj, obj)}: control (shuffled)")
    ax.set_xticks(x, settings, rotation=20)
    ax.set_ylabel("share of the variance (%)")
    ax.set_title(title)
    ax.legend(fontsize=7.5, ncol=2)
    fig.tight_layout()
    return fig
