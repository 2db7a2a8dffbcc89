"""The report's figures (matplotlib and, for curves over runs or units, seaborn; headless:
``bladefl.core.figures`` selects Agg). Functions return a Figure; ``show`` writes it and displays
the saved PNG inline in a notebook (independent of the kernel's matplotlib backend, so a rendered
page holds exactly the figures that were saved).

seaborn is imported by the figures that draw with it, not here: it imports ``scipy.stats``, about 1 CPU-s
of every page kernel that imports this module, and most pages draw no seaborn plot."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from bladefl.core.figures import save_png_svg

# The swept parameters as a reader names them.
PARAM_NAMES = {"alpha": "α", "beta": "β", "eta": "η", "lazy_ratio": "M/N", "sigma2": "σ²", "epsilon": "ε", "N": "N",
               "delta": "δ"}
# seaborn's colorblind palette, its two oranges never both among the first five lines; a marker and a dash per line
PALETTE = ["#0173b2", "#de8f05", "#029e73", "#cc78bc", "#56b4e9", "#d55e00", "#ca9161", "#949494"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
LEGEND_SIZE = 8


def colours(n: int = len(PALETTE)) -> list[tuple[float, float, float]]:
    """The first ``n`` colours of :data:`PALETTE` as RGB, cycling past its end (as ``seaborn.color_palette``
    gives a list of colours)."""
    return [to_rgb(PALETTE[i % len(PALETTE)]) for i in range(n)]


def param_name(vary: str) -> str:
    return PARAM_NAMES.get(vary, vary)


def value_label(vary: str, value: float) -> str:
    """``sigma2``, 0.1 -> "σ² = 0.1"; epsilon inf -> "no DP"."""
    if vary == "epsilon" and not np.isfinite(value):
        return "no DP"
    return f"{param_name(vary)} = {value:g}"


def plain_log_axis(ax, axis: str = "y") -> None:  # noqa: ANN001 - Axes
    """A log axis with plain numbers at its ticks (0.5, 1, 2, 5, ...), not 2x10^0."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_formatter(NullFormatter())


def show(fig: Figure, name: str, folder: str | Path) -> list[Path]:
    """Save ``fig`` as ``<folder>/<name>.png`` and ``.svg``, then display the saved PNG as the cell's
    output (an ``image/png`` output that nbconvert embeds in the page)."""
    from IPython.display import Image, display

    paths = save_png_svg(fig, name, folder)
    display(Image(data=paths[0].read_bytes(), format="png"))
    return paths


def _by_unit(ax, data, x: str, y: str, vary: str, legend: bool) -> dict[str, object]:  # noqa: ANN001 - Axes, DataFrame
    """Seaborn's line per swept value over the units of ``data`` (:func:`bladefl.report.views.sweep_units`):
    the mean, a band of +-1 sd over the units; returns each value's colour by label."""
    labelled = data.assign(label=[value_label(vary, v) for v in data.value]).sort_values(["value", x])
    order = list(dict.fromkeys(labelled.label))
    import seaborn as sns

    palette = dict(zip(order, colours(len(order)), strict=True))
    markers = {label: MARKERS[i % len(MARKERS)] for i, label in enumerate(order)}
    sns.lineplot(data=labelled, x=x, y=y, hue="label", hue_order=order, palette=palette, style="label",
                 style_order=order, markers=markers, dashes=True, errorbar="sd", markersize=5, ax=ax, legend=legend)
    if legend:
        ax.legend(title=None, fontsize=LEGEND_SIZE)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    return palette


def _paper_marks(acc_ax, loss_ax, paper, colours: dict, vary: str) -> bool:  # noqa: ANN001 - Axes, rows
    """The paper's optimum of each swept value in its colour: a star at (its K*, its best accuracy),
    a dashed line at its K* on the loss; a dotted level where its K* is not an integer. Whether any
    mark was drawn."""
    drawn = False
    for ref in paper or []:
        colour = colours.get(value_label(vary, float(ref["value"])))
        accuracy, k = float(ref.get("paper_max_accuracy", np.nan)), float(ref.get("paper_K_star", np.nan))
        if colour is None or not np.isfinite(accuracy):
            continue
        drawn = True
        if not np.isfinite(k):
            acc_ax.axhline(accuracy, color=colour, ls=":", lw=1.2)
            continue
        loss_ax.axvline(k, color=colour, ls="--", lw=1)
        acc_ax.plot([k], [accuracy], marker="*", ms=13, ls="none", color=colour, markeredgecolor="black")
    return drawn


def sweep_figure(units, vary: str, title: str, paper=None) -> Figure:  # noqa: ANN001 - DataFrame, rows
    """Loss and accuracy (%) versus K (top) and versus the total local steps K tau (bottom: tau's
    floor explains the kinks against K), one line per swept value: the mean over the units (draws
    or runs), the band +-1 sd over them; ``paper``: the paper's optimum per swept value (rows with
    value, paper_K_star, paper_max_accuracy in %), marked on the top panels."""
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    colours: dict = {}
    for row, (x, xlabel) in enumerate((("K", "K (integrated rounds)"), ("steps", "K·τ (local steps in all)"))):
        for col, (y, ylabel) in enumerate((("loss", "training loss F(w)"), ("accuracy", "test accuracy (%)"))):
            colours = _by_unit(axes[row, col], units, x, y, vary, legend=(row, col) == (0, 1))
            axes[row, col].set(xlabel=xlabel, ylabel=ylabel)
    marked = _paper_marks(axes[0, 1], axes[0, 0], paper, colours, vary)
    if marked:
        marks = [Line2D([], [], marker="*", ms=12, ls="none", color="0.4", markeredgecolor="black",
                        label="the paper's K* and best accuracy"),
                 Line2D([], [], ls="--", color="0.4", label="the paper's K*"),
                 Line2D([], [], ls=":", color="0.4", label="the paper's best accuracy, its K* not an integer")]
        fig.legend(handles=marks, loc="lower center", ncol=3, fontsize=LEGEND_SIZE + 1, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.04 if marked else 0, 1, 1))
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
    missing = {label: reason for col, label, reason in (
        ("K_star_loss_std_seeds", "run seeds", "one run seed per draw"),
        ("K_star_loss_std_partitions", "partition draws", "one partition draw"))
        if not np.isfinite(spread[col].to_numpy(dtype=float)).any()}
    blind = colours()
    for ax, sweep in zip(axes, sweeps, strict=False):
        part = spread[spread.sweep == sweep].sort_values("value")
        x = np.arange(len(part))
        ax.plot(x, part.K_star, "o", color=blind[2], ms=5, label="K* (all runs)")
        for offset, col, color, label in ((-0.12, "K_star_loss_std_seeds", blind[0], "run seeds"),
                                          (0.12, "K_star_loss_std_partitions", blind[1], "partition draws")):
            err = part[col].to_numpy(dtype=float)
            shown = np.isfinite(err)
            if label not in missing:
                ax.errorbar(x[shown] + offset, part.K_star.to_numpy()[shown], yerr=err[shown], fmt="none",
                            ecolor=color, capsize=3, lw=1.5, label=f"+-1 std over {label}")
        ax.set_xticks(x, ["no DP" if not np.isfinite(v) else f"{v:g}" for v in part.value])
        ax.set_xlabel(param_name(str(part.vary.iloc[0])))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    for row in grid:
        row[0].set_ylabel("K* (by training loss)")
    axes[0].legend(fontsize=LEGEND_SIZE)
    if missing:  # say why an interval is not drawn instead of drawing nothing
        fig.text(0.5, 0.005, "; ".join(f"no spread over {label}: {reason}" for label, reason in missing.items()),
                 ha="center", va="bottom", fontsize=8, color="0.3")
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.04 if missing else 0, 1, 1))
    return fig


def privacy_figure(table, title: str, units=None) -> Figure:  # noqa: ANN001 - DataFrames
    """Optimal K, minimal loss and maximal accuracy (%) versus the privacy budget epsilon, each epsilon
    at its own place on the axis and "no DP" at the right (so epsilon = 1000 is not hidden under it);
    with ``units`` (:func:`bladefl.report.views.privacy_units`), each unit's value as a faint line and a
    band of +-1 sd over the units."""
    ordered = table.sort_values("epsilon")
    labels = ["no DP" if not np.isfinite(e) else f"{e:g}" for e in ordered.epsilon]
    x = np.arange(len(ordered))
    position = {float(e): i for i, e in enumerate(ordered.epsilon)}
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for ax, col, label in ((axes[0], "K_star_loss", "optimal K (by loss)"),
                           (axes[1], "min_train_loss", "minimal training loss"),
                           (axes[2], "max_accuracy", "maximal test accuracy (%)")):
        if units is not None and len(units):
            stats = units.groupby("epsilon")[col].agg(["mean", "std"]).reindex(ordered.epsilon)
            xs = [position[float(e)] for e in stats.index]
            ax.fill_between(xs, stats["mean"] - stats["std"].fillna(0), stats["mean"] + stats["std"].fillna(0),
                            color="C0", alpha=0.2, label="±1 sd over the units")
        ax.plot(x, ordered[col], "o-", color="C0", label="mean curve's optimum")
        ax.set_xticks(x, labels)
        ax.set_xlabel("ε (privacy budget)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].yaxis.set_major_locator(MaxNLocator(integer=True))
    ks = np.asarray(ordered.K_star_loss, dtype=float)
    if np.isfinite(ks).any():  # whole rounds from 0 up: one K* alone would get ticks like 0.995, 1.005
        axes[0].set_ylim(0, float(np.nanmax(ks)) + 1)
    handles, names = axes[2].get_legend_handles_labels()  # below the panels: never over a curve
    fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=LEGEND_SIZE + 1, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig


def headline_figure(panels, title: str = "") -> Figure:  # noqa: ANN001 - list of dicts, see below
    """Test accuracy and training loss versus K for the main sweeps: per dataset an accuracy row and a loss row,
    one column per sweep, each line the mean over the units with a band of +-1 sd. The paper's optimum of each
    swept value in the line's colour: a star at (its K*, its maximal accuracy), a dashed line at its K* on the
    loss; a dotted level where only its accuracy is known. ``panels``: dicts with ``dataset``, ``sweep``, ``vary``,
    ``units`` (``views.sweep_units``) and ``paper`` (rows with ``value``, ``paper_K_star``, ``paper_max_accuracy``
    in %; none in any panel: no key for the paper's marks)."""
    datasets = list(dict.fromkeys(p["dataset"] for p in panels))
    cols = max(sum(p["dataset"] == d for p in panels) for d in datasets)
    fig, axes = plt.subplots(2 * len(datasets), cols, figsize=(4.2 * cols, 2.5 * 2 * len(datasets) + 0.4),
                             squeeze=False)
    for ax in axes.flat:
        ax.set_visible(False)
    column = dict.fromkeys(datasets, 0)
    for panel in panels:
        row, col = 2 * datasets.index(panel["dataset"]), column[panel["dataset"]]
        column[panel["dataset"]] += 1
        acc_ax, loss_ax = axes[row, col], axes[row + 1, col]
        colours = _by_unit(acc_ax, panel["units"], "K", "accuracy", panel["vary"], legend=True)
        _by_unit(loss_ax, panel["units"], "K", "loss", panel["vary"], legend=False)
        for ref in panel["paper"]:
            colour = colours.get(value_label(panel["vary"], float(ref["value"])))
            if colour is None or not np.isfinite(ref["paper_max_accuracy"]):
                continue
            if not np.isfinite(ref["paper_K_star"]):  # its K* is inconsistent, its accuracy is not
                acc_ax.axhline(ref["paper_max_accuracy"], color=colour, ls=":", lw=1.2)
                continue
            loss_ax.axvline(ref["paper_K_star"], color=colour, ls="--", lw=1)
            acc_ax.plot([ref["paper_K_star"]], [ref["paper_max_accuracy"]], marker="*", ms=13, ls="none",
                        color=colour, markeredgecolor="black")
        figure = f" (Fig. {panel['figure']})" if panel.get("figure") else ""
        acc_ax.set_title(f"{panel['dataset']}: {param_name(panel['vary'])}{figure}", fontsize=10)
        acc_ax.set(ylabel="test accuracy (%)", xlabel="K (integrated rounds)")
        acc_ax.legend(fontsize=LEGEND_SIZE, loc="lower right")
        loss_ax.set(ylabel="training loss F(w)", xlabel="K (integrated rounds)")
        acc_ax.set_visible(True)
        loss_ax.set_visible(True)
    marks = [Line2D([], [], marker="*", ms=12, ls="none", color="0.4", markeredgecolor="black",
                    label="the paper's K* and best accuracy"),
             Line2D([], [], ls="--", color="0.4", label="the paper's K* (loss panels)"),
             Line2D([], [], ls=":", color="0.4", label="the paper's best accuracy, its K* not an integer")]
    if keyed := any(p["paper"] for p in panels):
        fig.legend(handles=marks, loc="lower center", ncol=3, fontsize=LEGEND_SIZE + 1, frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.04 if keyed else 0, 1, 1))
    return fig


def roc_figure(roc, title: str) -> Figure:  # noqa: ANN001 - DataFrame from detection_analysis.roc_table
    """One panel per detector: the ROC curve of every cell with lazy clients (pooled over seeds, K
    and rounds), the chance diagonal dashed."""
    data = roc.assign(cell=[f"M/N = {r:g}, σ² = {s:g}" for r, s in zip(roc.lazy_ratio, roc.sigma2, strict=True)])
    cells = list(dict.fromkeys(data.cell))
    import seaborn as sns

    g = sns.relplot(data=data, x="fpr", y="tpr", hue="cell", style="cell", col="detector", kind="line", sort=False,
                    estimator=None, height=4, aspect=1.05, palette=colours(len(cells)),
                    hue_order=cells, style_order=cells, facet_kws={"xlim": (-0.02, 1.02), "ylim": (-0.02, 1.02)})
    for ax in g.axes.flat:
        ax.plot([0, 1], [0, 1], "k--", lw=0.8, alpha=0.5)
        ax.grid(alpha=0.3)
    g.set_axis_labels("false-positive rate", "true-positive rate (recall)")
    g.figure.suptitle(title)
    g.tight_layout()
    return g.figure


def exclusion_figure(curves, title: str) -> Figure:  # noqa: ANN001 - DataFrame from exclusion_curves
    """Test accuracy versus K per lazy ratio: with lazy clients, with their flagged uploads excluded,
    and without lazy clients (the same dashed line in every panel); band = +-1 std over seeds."""
    ratios = sorted(v for v in curves.value.unique() if v > 0)
    fig, axes = plt.subplots(1, len(ratios), figsize=(4.2 * len(ratios), 3.8), squeeze=False, sharey=True)
    blind = colours()
    styles = {"lazy clients": ("o-", blind[3]), "lazy, flagged excluded": ("s-", blind[2]),
              "no lazy clients": ("--", "k")}
    for ax, ratio in zip(axes[0], ratios, strict=True):
        for condition, (style, color) in styles.items():
            value = 0 if condition == "no lazy clients" else ratio
            part = curves[(curves.condition == condition) & (curves.value == value)].sort_values("K")
            if part.empty:
                continue
            acc, std = 100 * part.test_accuracy, 100 * part.test_accuracy_std.fillna(0)
            ax.plot(part.K, acc, style, color=color, ms=3, label=condition)
            ax.fill_between(part.K, acc - std, acc + std, color=color, alpha=0.12)
        ax.set_title(f"M/N = {ratio:g}", fontsize=10)
        ax.set_xlabel("K (integrated rounds)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("test accuracy (%)")
    axes[0, -1].legend(fontsize=LEGEND_SIZE)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def heatmap_grid(hists, titles, title: str, cols: int = 5) -> Figure:  # noqa: ANN001 - arrays, labels
    """Partitions' label histograms (clients by labels) side by side on one colour scale, so one colour
    means one sample count on every panel."""
    n = len(hists)
    cols = max(1, min(cols, n))
    rows = -(-n // cols)
    height = max(max(h.shape[0] for h in hists) * 0.12 + 1.0, 2.2)
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols + 1.2, height * rows + 0.6), squeeze=False)
    vmax = max(float(np.max(h)) for h in hists)
    image = None
    for ax, hist, label in zip(axes.flat, hists, titles, strict=False):
        image = ax.imshow(hist, aspect="auto", cmap="viridis", interpolation="nearest", vmin=0, vmax=vmax)
        ax.set_title(label, fontsize=9)
        ax.set_xticks(range(hist.shape[1]))
        ax.tick_params(labelsize=7)
        ax.set_xlabel("label", fontsize=8)
        ax.set_ylabel("client", fontsize=8)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    if image is not None:
        fig.colorbar(image, ax=axes.ravel().tolist(), label="samples", shrink=0.8)
    fig.suptitle(title)
    return fig
