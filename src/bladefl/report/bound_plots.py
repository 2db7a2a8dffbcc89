"""The bound's figures on the report's bound page: per condition the experiment's gap beside the
bound (fitted and with measured constants) and its relative error, and the shapes alone (each curve
over its minimum) so a reader sees where each K* sits."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from bladefl.report.plots import LEGEND_SIZE, plain_log_axis


def _k_axes(ax, title: str, ylabel: str) -> None:  # noqa: ANN001 - Axes
    """A panel against K: its title, integer K ticks, the legend and a light grid."""
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("K (integrated rounds)")
    ax.set_ylabel(ylabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=LEGEND_SIZE)
    ax.grid(alpha=0.3)


def bound_figure(gaps, labels: dict[str, str], title: str) -> Figure:  # noqa: ANN001 - DataFrame
    """Per condition: the experimental gap F(w^K) - F* and the bound (fitted and measured)."""
    cells = list(labels)
    fig, axes = plt.subplots(2, len(cells), figsize=(5 * len(cells), 6.5), squeeze=False)
    for j, cell in enumerate(cells):
        part = gaps[gaps.cell == cell].groupby("K", as_index=False).mean(numeric_only=True)
        ax = axes[0, j]
        ax.plot(part.K, part.gap, "o-", label="experiment F(w^K) - F*")
        ax.plot(part.K, part.G_fit, "s--", label="bound, each run's mean fit (phi, eps2)")
        finite = np.isfinite(part.G_measured)
        if finite.any():
            ax.plot(part.K[finite], part.G_measured[finite], "^:", label="bound, measured constants")
        ax.set_yscale("log")
        plain_log_axis(ax)
        for column, marker in (("gap", "o"), ("G_fit", "s")):
            values = part[column].where(np.isfinite(part[column]))
            if values.notna().any():  # each curve's minimum, the K* Fig. 3's claim is about
                best = values.idxmin()
                ax.plot([part.K[best]], [values[best]], marker=marker, ms=11, mfc="none", mec="black", mew=1.5,
                        ls="none")
        ax.plot([], [], marker="o", ms=9, mfc="none", mec="black", ls="none", label="minimum (K*)")
        _k_axes(ax, labels[cell], "loss gap F(w^K) - F* (log scale)")
        axes[1, j].bar(part.K, 100 * part.rel_gap_fit)
        axes[1, j].axhline(5, color="r", lw=0.8, ls="--", label="the paper's 5%")
        axes[1, j].axhline(-5, color="r", lw=0.8, ls="--")
        axes[1, j].set_xlabel("K (integrated rounds)")
        axes[1, j].set_ylabel("(G of each run's mean fit − gap) / gap, %")
        axes[1, j].legend(fontsize=LEGEND_SIZE)
        axes[1, j].xaxis.set_major_locator(MaxNLocator(integer=True))
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
        plain_log_axis(ax)
        _k_axes(ax, labels[cell], "value / its minimum (log scale; line: where)")
    fig.suptitle(title)
    fig.tight_layout()
    return fig
