"""A partition's per-client label histogram as a heatmap (clients by labels)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure


def label_heatmap(hist: np.ndarray, title: str = "") -> Figure:
    """Clients (rows) by label (columns) sample counts."""
    fig = Figure(figsize=(6, max(2.5, 0.22 * hist.shape[0] + 1)))  # no pyplot: no backend, no global state
    ax = fig.subplots()
    im = ax.imshow(hist, aspect="auto", cmap="viridis", interpolation="nearest")
    ax.set_xlabel("label")
    ax.set_ylabel("client")
    ax.set_xticks(range(hist.shape[1]))
    ax.set_title(title)
    fig.colorbar(im, ax=ax, label="samples")
    fig.tight_layout()
    return fig
