"""Partition artifacts on disk: the index file, its JSON manifest and a heatmap figure."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np

from bladefl.core import atomic
from bladefl.core.figures import save_figure
from bladefl.data import datasets
from bladefl.data.label_heatmap import label_heatmap
from bladefl.data.partition import PartitionSpec, indices_digest, label_histogram, make_partition


@dataclasses.dataclass(frozen=True)
class PartitionPaths:
    indices: Path
    manifest: Path
    figure: Path

    @classmethod
    def under(cls, folder: str | Path, dataset: str, spec: PartitionSpec) -> PartitionPaths:
        folder = Path(folder) / dataset  # the key may hold a dot (dirichlet0.5_...): append, never replace a suffix
        return cls(folder / f"{spec.key}.npy", folder / f"{spec.key}.json", folder / f"{spec.key}.png")


def manifest(dataset: str, spec: PartitionSpec, labels: np.ndarray, indices: np.ndarray) -> dict:
    hist = label_histogram(labels, indices)
    return {
        "dataset": dataset,
        "spec": dataclasses.asdict(spec),
        "key": spec.key,
        "shape": list(indices.shape),
        "indices_sha256": indices_digest(indices),
        "label_histogram": hist.tolist(),
        "source_sha256": datasets.checksums(dataset),
    }


def write_partition(dataset: str, spec: PartitionSpec, data_root: str | Path, paths: PartitionPaths) -> dict:
    """Build the partition from the raw data and write the three artifacts atomically."""
    labels = datasets.load(dataset, data_root, train=True).y
    indices = make_partition(labels, spec)
    buf = io.BytesIO()
    np.save(buf, indices)
    atomic.write_bytes(paths.indices, buf.getvalue())
    info = manifest(dataset, spec, labels, indices)
    atomic.write_json(paths.manifest, info)
    save_figure(
        label_heatmap(np.asarray(info["label_histogram"]), title=f"{dataset}: {spec.key}"),
        paths.figure,
    )
    return info


def read_partition(path: str | Path, expected_sha256: str | None = None) -> np.ndarray:
    indices = np.load(path)
    if expected_sha256 is not None and indices_digest(indices) != expected_sha256:
        raise ValueError(f"{path}: index digest does not match its manifest")
    return indices
