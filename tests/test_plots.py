"""The report's figures on small synthetic tables: axes that count rounds show whole rounds."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from bladefl.report.plots import privacy_figure


def test_the_privacy_figures_optimal_k_axis_shows_whole_rounds_from_zero():
    table = pd.DataFrame({"epsilon": [1000.0, math.inf], "K_star_loss": [1, 1], "K_star_accuracy": [1, 2],
                          "min_train_loss": [1.025, 1.024], "max_accuracy": [36.5, 37.6]})
    fig = privacy_figure(table, "one epsilon")
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    assert (lo, hi) == (0.0, 2.0)
    ticks = [t for t in ax.get_yticks() if lo <= t <= hi]
    assert ticks and all(float(t).is_integer() for t in ticks)
    assert np.allclose(ax.lines[0].get_ydata(), [1.0])  # the point itself is drawn


def test_the_privacy_figure_leaves_the_k_axis_alone_when_no_optimum_is_known():
    table = pd.DataFrame({"epsilon": [10.0, 100.0], "K_star_loss": [np.nan, np.nan],
                          "min_train_loss": [np.nan, np.nan], "max_accuracy": [np.nan, np.nan]})
    fig = privacy_figure(table, "all diverged")  # drawn, with finite limits, rather than an error
    assert len(fig.axes) == 3 and np.isfinite(fig.axes[0].get_ylim()).all()


def test_the_palettes_colours_are_seaborns_and_importing_the_figures_loads_neither_seaborn_nor_scipy():
    """Most pages draw no seaborn plot, and seaborn imports ``scipy.stats`` (about 1 CPU-s a page): the figures'
    module imports neither, and its colours are the ones ``seaborn.color_palette`` gives (cycled past eight)."""
    import subprocess
    import sys

    import seaborn as sns

    from bladefl.report.plots import PALETTE, colours

    for n in (1, 5, 8, 11):
        assert colours(n) == [tuple(c) for c in sns.color_palette(PALETTE, n)], n
    code = ("import sys; import bladefl.report.plots, bladefl.report.pages, bladefl.report.bound_plots, "
            "bladefl.report.views, bladefl.report.front_page; "
            "print(sorted(m for m in ('seaborn', 'scipy.stats') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]", loaded
