"""Writing matplotlib figures (headless): atomically, as PNG and SVG."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend is chosen before pyplot loads
from matplotlib.figure import Figure  # noqa: E402

from bladefl.core.atomic import atomic_path, plain_folder  # noqa: E402

DPI = 150  # every PNG the report embeds

def _write(fig: Figure, path: Path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", dpi=DPI)


def save_figure(fig: Figure, path: str | Path) -> None:
    """``fig`` at ``path`` (format from the suffix), written atomically; closes the figure."""
    _write(fig, Path(path))
    plt.close(fig)


def save_png_svg(fig: Figure, name: str, folder: str | Path) -> list[Path]:
    """``<folder>/<name>.png`` and ``.svg`` (each written atomically, the folder re-checked for links at
    each write); closes the figure."""
    folder = Path(folder)
    paths = [folder / f"{name}.png", folder / f"{name}.svg"]
    for path in paths:
        plain_folder(folder)
        _write(fig, path)
    plt.close(fig)
    return paths
