"""The report's figures (matplotlib, headless: ``bladefl.core.figures`` selects Agg). Functions
return a Figure; ``show`` writes it and displays the saved PNG inline in a notebook (independent of the kernel's
matplotlib backend, so a rendered page holds exactly the figures that were saved)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from bladefl.core.figures import save_png_svg


def show(fig: Figure, name: str, folder: str | Path) -> list[Path]:
    """Save ``fig`` as ``<folder>/<name>.png`` and ``.svg``, then display the saved PNG as the cell's
    output (an ``image/png`` output that nbconvert embeds in the page)."""
    from IPython.display import Image, display

    paths = save_png_svg(fig, name, folder)
    display(Image(data=paths[0].read_bytes(), format="png"))
    return paths


def sweep_figure(curves, vary: str, title: str) -> Figure:  # noqa: ANN001 - DataFrame from report.sweep_curves
    """Loss and accuracy versus K, one curve per swept value (mean over runs, band = +-1 std over runs:
    run seeds and, with replicates, partition draws)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for value, part in curves.groupby("value"):
        part = part.sort_values("K")
        label = f"{vary}={value:g}"
        for ax, col in ((axes[0], "loss"), (axes[1], "accuracy")):
            line, = ax.plot(part.K, part[col], marker="o", ms=3, label=label)
            ax.fill_between(part.K, part[col] - part[f"{col}_std"], part[col] + part[f"{col}_std"],
                            color=line.get_color(), alpha=0.15)
    axes[0].set_ylabel("training loss F(w)")
    axes[1].set_ylabel("test accuracy")
    for ax in axes:
        ax.set_xlabel("K (integrated rounds)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def k_star_spread_figure(spread, title: str) -> Figure:  # noqa: ANN001 - DataFrame from views.k_star_spread
    """K* per swept value, one panel per sweep, with two intervals side by side: +-1 std over run seeds
    on one partition draw (left) and +-1 std over partition draws (right); a missing interval is one
    that cannot be measured (one seed per draw, or one draw)."""
    sweeps = list(dict.fromkeys(spread.sweep))
    cols = min(4, len(sweeps))
    rows = -(-len(sweeps) // cols)
    fig, grid = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.0 * rows), squeeze=False)
    axes = grid.ravel()
    for ax in axes[len(sweeps):]:
        ax.set_visible(False)
    for ax, sweep in zip(axes, sweeps, strict=False):
        part = spread[spread.sweep == sweep].sort_values("value")
        x = np.arange(len(part))
        ax.plot(x, part.K_star, "ko", ms=4, label="K* (all runs)")
        for offset, col, color, label in ((-0.12, "K_star_loss_std_seeds", "tab:blue", "run seeds"),
                                          (0.12, "K_star_loss_std_partitions", "tab:orange", "partition draws")):
            err = part[col].to_numpy(dtype=float)
            shown = np.isfinite(err)
            ax.errorbar(x[shown] + offset, part.K_star.to_numpy()[shown], yerr=err[shown], fmt="none",
                        ecolor=color, capsize=3, lw=1.5, label=f"+-1 std over {label}")
        ax.set_xticks(x, [f"{v:g}" for v in part.value])
        ax.set_xlabel(str(part.vary.iloc[0]))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    for row in grid:
        row[0].set_ylabel("K* (by training loss)")
    axes[0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def bound_figure(gaps, labels: dict[str, str], title: str) -> Figure:  # noqa: ANN001 - DataFrame
    """Per condition: the experimental gap F(w^K) - F* and the bound (fitted and measured)."""
    cells = list(labels)
    fig, axes = plt.subplots(2, len(cells), figsize=(5 * len(cells), 6.5), squeeze=False)
    for j, cell in enumerate(cells):
        part = gaps[gaps.cell == cell].groupby("K", as_index=False).mean(numeric_only=True)
        ax = axes[0, j]
        ax.plot(part.K, part.gap, "o-", label="experiment F(w^K) - F*")
        ax.plot(part.K, part.G_fit, "s--", label="bound, fitted phi and eps2")
        finite = np.isfinite(part.G_measured)
        if finite.any():
            ax.plot(part.K[finite], part.G_measured[finite], "^:", label="bound, measured constants")
        ax.set_yscale("log")
        ax.set_title(labels[cell], fontsize=9)
        ax.set_xlabel("K")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        axes[1, j].bar(part.K, part.rel_gap_fit)
        axes[1, j].axhline(0.05, color="r", lw=0.8, ls="--")
        axes[1, j].axhline(-0.05, color="r", lw=0.8, ls="--")
        axes[1, j].set_xlabel("K")
        axes[1, j].set_ylabel("(G_fit - gap) / gap")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def normalised_bound_figure(gaps, labels: dict[str, str], title: str) -> Figure:  # noqa: ANN001 - DataFrame
    """Per condition, the shapes alone: G / min G and gap / min gap against K (seed means), so a
    reader sees at once where each minimum sits; the measured bound only where it is defined."""
    cells = list(labels)
    fig, axes = plt.subplots(1, len(cells), figsize=(5 * len(cells), 3.6), squeeze=False)
    for j, cell in enumerate(cells):
        part = gaps[gaps.cell == cell].groupby("K", as_index=False).mean(numeric_only=True)
        ax = axes[0, j]
        for column, style, label in (("gap", "o-", "experiment"), ("G_fit", "s--", "bound, fitted"),
                                     ("G_measured", "^:", "bound, measured")):
            values = part[column].where(np.isfinite(part[column]))
            if values.notna().any():
                ax.plot(part.K, values / values.min(), style, label=label)
                k_min = part.K[values.idxmin()]
                ax.axvline(k_min, color=ax.lines[-1].get_color(), lw=0.8, alpha=0.6)
        ax.set_yscale("log")
        ax.set_title(labels[cell], fontsize=9)
        ax.set_xlabel("K")
        ax.set_ylabel("value / its minimum (vertical line: where)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def privacy_figure(table, title: str) -> Figure:  # noqa: ANN001 - DataFrame from report.privacy_table
    """Optimal K, minimal loss and maximal accuracy versus the privacy budget epsilon."""
    finite = table[np.isfinite(table.epsilon)]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.5))
    for ax, col, label in ((axes[0], "K_star_loss", "optimal K (by loss)"), (axes[1], "min_train_loss", "minimal loss"),
                           (axes[2], "max_accuracy", "maximal accuracy")):
        ax.plot(finite.epsilon, finite[col], "o-")
        nodp = table[~np.isfinite(table.epsilon)]
        if not nodp.empty:
            ax.axhline(float(nodp[col].iloc[0]), color="gray", ls="--", label="no DP")
            ax.legend(fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("epsilon")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def headline_figure(panels, title: str = "") -> Figure:  # noqa: ANN001 - list of dicts, see below
    """Test accuracy and training loss versus K for the main sweeps: per dataset an accuracy row and
    a loss row, one column per sweep. The paper's optimum of each swept value is drawn in the
    curve's colour: a star at (its K*, its maximal accuracy), a dashed line at its K* on the loss.

    ``panels``: dicts with ``dataset``, ``sweep``, ``vary``, ``curves`` (from ``report.sweep_curves``)
    and ``paper`` (rows with ``value``, ``paper_K_star``, ``paper_max_accuracy`` in percent)."""
    datasets = list(dict.fromkeys(p["dataset"] for p in panels))
    cols = max(sum(p["dataset"] == d for p in panels) for d in datasets)
    fig, axes = plt.subplots(2 * len(datasets), cols, figsize=(4.2 * cols, 2.9 * 2 * len(datasets)),
                             squeeze=False)
    for ax in axes.flat:
        ax.set_visible(False)
    column = dict.fromkeys(datasets, 0)
    for panel in panels:
        row, col = 2 * datasets.index(panel["dataset"]), column[panel["dataset"]]
        column[panel["dataset"]] += 1
        acc_ax, loss_ax = axes[row, col], axes[row + 1, col]
        paper = {float(r["value"]): r for r in panel["paper"]}
        for value, part in panel["curves"].groupby("value"):
            part = part.sort_values("K")
            line, = acc_ax.plot(part.K, 100 * part.accuracy, marker="o", ms=3, label=f"{panel['vary']}={value:g}")
            loss_ax.plot(part.K, part.loss, marker="o", ms=3, color=line.get_color())
            ref = paper.get(float(value))
            if ref is None or not np.isfinite(ref["paper_K_star"]):
                continue
            loss_ax.axvline(ref["paper_K_star"], color=line.get_color(), ls="--", lw=1)
            if np.isfinite(ref["paper_max_accuracy"]):
                acc_ax.plot([ref["paper_K_star"]], [ref["paper_max_accuracy"]], marker="*", ms=13, ls="none",
                            color=line.get_color(), markeredgecolor="black")
        acc_ax.set_title(f"{panel['dataset']}: sweep {panel['sweep']}", fontsize=10)
        acc_ax.set_ylabel("test accuracy (%)")
        acc_ax.legend(fontsize=7, loc="lower right")
        loss_ax.set_ylabel("training loss F(w)")
        for ax in (acc_ax, loss_ax):
            ax.set_visible(True)
            ax.set_xlabel("K (integrated rounds)")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def roc_figure(roc, title: str) -> Figure:  # noqa: ANN001 - DataFrame from detection_analysis.roc_table
    """One panel per detector: the ROC curve of every cell with lazy clients (pooled over seeds, K
    and rounds), the chance diagonal dashed."""
    detectors = sorted(roc.detector.unique())
    fig, axes = plt.subplots(1, len(detectors), figsize=(4.2 * len(detectors), 4), squeeze=False)
    for ax, detector in zip(axes[0], detectors, strict=True):
        part = roc[roc.detector == detector]
        for (ratio, sigma2), curve in part.groupby(["lazy_ratio", "sigma2"], sort=True):
            ax.plot(curve.fpr, curve.tpr, lw=1.2, alpha=0.8, label=f"M/N={ratio:g}, sigma2={sigma2:g}")
        ax.plot([0, 1], [0, 1], "k--", lw=0.8, alpha=0.5)
        ax.set_title(detector, fontsize=10)
        ax.set_xlabel("false-positive rate")
        ax.set_ylabel("true-positive rate (recall)")
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0, -1].legend(fontsize=7, loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def exclusion_figure(curves, title: str) -> Figure:  # noqa: ANN001 - DataFrame from exclusion_curves
    """Test accuracy versus K per lazy ratio: with lazy clients, with their flagged uploads excluded,
    and without lazy clients (the same dashed line in every panel); band = +-1 std over seeds."""
    ratios = sorted(v for v in curves.value.unique() if v > 0)
    fig, axes = plt.subplots(1, len(ratios), figsize=(4.2 * len(ratios), 3.8), squeeze=False, sharey=True)
    styles = {"lazy clients": ("o-", "C3"), "lazy, flagged excluded": ("s-", "C2"), "no lazy clients": ("--", "k")}
    for ax, ratio in zip(axes[0], ratios, strict=True):
        for condition, (style, color) in styles.items():
            value = 0 if condition == "no lazy clients" else ratio
            part = curves[(curves.condition == condition) & (curves.value == value)].sort_values("K")
            if part.empty:
                continue
            ax.plot(part.K, part.test_accuracy, style, color=color, ms=3, label=condition)
            std = part.test_accuracy_std.fillna(0)
            ax.fill_between(part.K, part.test_accuracy - std, part.test_accuracy + std, color=color, alpha=0.12)
        ax.set_title(f"M/N = {ratio:g}", fontsize=10)
        ax.set_xlabel("K (integrated rounds)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("test accuracy")
    axes[0, -1].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def sensitivity_distance_figure(ranking, title: str) -> Figure:  # noqa: ANN001 - DataFrame from sensitivity.ranking
    """Per reading (in rank order): its K* distance and its accuracy distance to the paper, per
    seed (mean, error bar = sd over seeds) with the seed-mean curves' distance as a dot."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.45 * len(ranking) + 1.8), sharey=True)
    y = np.arange(len(ranking))
    for ax, col, label in ((axes[0], "K_star_distance", "sum of |K* - K*paper| over table rows"),
                           (axes[1], "accuracy_distance", "sum of |max acc. - paper's| (points)")):
        ax.barh(y, ranking[f"{col}_seeds"], xerr=ranking[f"{col}_sd"], color="C0", alpha=0.6, label="per seed")
        ax.plot(ranking[col], y, "ko", ms=4, label="seed-mean curves")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3, axis="x")
    axes[0].set_yticks(y, [f"{r} ({a})" for r, a in zip(ranking.reading, ranking.axis, strict=True)])
    axes[0].invert_yaxis()
    axes[1].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def sensitivity_curves_figure(curves, points, title: str) -> Figure:  # noqa: ANN001 - DataFrames
    """Test accuracy (%) versus K per reading, one panel per swept value; the paper's maximal
    accuracy for that value as a dashed line, with a star at the paper's K*."""
    panels = curves[["sweep", "value"]].drop_duplicates().sort_values(["sweep", "value"]).to_numpy()
    cols = min(4, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.0 * rows + 0.8), squeeze=False, sharey=True)
    readings = list(dict.fromkeys(curves.reading))
    for ax, (sweep, value) in zip(axes.flat, panels, strict=False):
        for i, reading in enumerate(readings):
            part = curves[(curves.sweep == sweep) & (curves.value == value) & (curves.reading == reading)]
            ax.plot(part.K, part.accuracy, marker="o", ms=2.5, lw=1.1, color=f"C{i % 10}", label=reading)
        paper = points[(points.sweep == sweep) & (points.value == value)]
        if len(paper) and np.isfinite(paper.paper_max_accuracy.iloc[0]):
            acc = paper.paper_max_accuracy.iloc[0]
            ax.axhline(acc, color="k", ls="--", lw=1, label="paper's max accuracy")
            if np.isfinite(paper.paper_K_star.iloc[0]):
                ax.plot([paper.paper_K_star.iloc[0]], [acc], marker="*", ms=12, color="k", ls="none",
                        label="paper's K* (at its max accuracy)")
        ax.set_title(f"{sweep} = {value:g}", fontsize=9)
        ax.set_xlabel("K")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("test accuracy %")
    legend = {}  # every panel's entries once (the paper's marks are not on every panel)
    for ax in axes.flat[:len(panels)]:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, handle)
    fig.legend(legend.values(), legend.keys(), loc="lower center", ncol=min(5, len(legend)), fontsize=8)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig
