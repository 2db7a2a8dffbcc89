"""A partition's per-client label histogram as a heatmap (clients by labels)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure


def label_heatmap(hist: np.ndarray, title: str = "", vmax: float | None = None) -> Figure:
    """Clients (rows) by label (columns) sample counts; ``vmax``: the top of the colour scale (a
    page's heatmaps share one, so one colour means one count on all of them)."""
    fig = Figure(figsize=(6, max(2.5, 0.22 * hist.shape[0] + 1)))  # no pyplot: no backend, no global state
    ax = fig.subplots()
    im = ax.imshow(hist, aspect="auto", cmap="viridis", interpolation="nearest", vmin=0,
                   vmax=vmax if vmax is not None else float(np.max(hist)) if hist.size else 1.0)
    ax.set_xlabel("label")
    ax.set_ylabel("client")
    ax.set_xticks(range(hist.shape[1]))
    ax.set_title(title)
    fig.colorbar(im, ax=ax, label="samples")
    fig.tight_layout()
    return fig
