"""Figures (matplotlib, headless). Functions return a Figure; ``save_figure`` writes it atomically."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from .atomic import atomic_path  # noqa: E402


def label_heatmap(hist: np.ndarray, title: str = "") -> Figure:
    """Clients (rows) by label (columns) sample counts."""
    fig, ax = plt.subplots(figsize=(6, max(2.5, 0.22 * hist.shape[0] + 1)))
    im = ax.imshow(hist, aspect="auto", cmap="viridis", interpolation="nearest")
    ax.set_xlabel("label")
    ax.set_ylabel("client")
    ax.set_xticks(range(hist.shape[1]))
    ax.set_title(title)
    fig.colorbar(im, ax=ax, label="samples")
    fig.tight_layout()
    return fig


def save_figure(fig: Figure, path: str | Path) -> None:
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", dpi=110)
    plt.close(fig)
