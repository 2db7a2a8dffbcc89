"""The sensitivity study's figures on its page (notebooks/06_sensitivity.ipynb): each reading's distance to the
paper's Tables II-VII, and its accuracy-versus-K curves beside the paper's optima. The ranking and the curves
they draw are :mod:`bladefl.report.sensitivity`'s."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator


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
    data = curves.assign(panel=[f"{s} = {v:g}" for s, v in zip(curves.sweep, curves.value, strict=True)])
    import seaborn as sns

    g = sns.relplot(data=data.sort_values(["sweep", "value", "K"]), x="K", y="accuracy", hue="reading", col="panel",
                    col_wrap=min(4, data.panel.nunique()), kind="line", marker="o", markersize=4, height=3,
                    facet_kws={"sharey": True})
    for (sweep, value), part in points.groupby(["sweep", "value"]):
        ax = g.axes_dict.get(f"{sweep} = {value:g}")
        acc, k = part.paper_max_accuracy.iloc[0], part.paper_K_star.iloc[0]
        if ax is not None and np.isfinite(acc):
            ax.axhline(acc, color="k", ls="--", lw=1)
            if np.isfinite(k):
                ax.plot([k], [acc], marker="*", ms=12, color="k", ls="none")
    for ax in g.axes.flat:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    g.set_axis_labels("K (integrated rounds)", "test accuracy (%)")
    g.set_titles("{col_name}")
    g.figure.suptitle(f"{title} (dashed: the paper's max accuracy; star: at its K*)")
    g.tight_layout()
    return g.figure
