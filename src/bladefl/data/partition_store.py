"""Partition artifacts on disk: the index file, its JSON manifest and a heatmap figure."""

from __future__ import annotations

import dataclasses
import io
import json
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
        "spec": spec.record(),
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
    """The client index file at ``path`` (a NumPy .npy file of integers; never pickles), a regular file of
    at most 64 MiB (the largest partition, 60,000 int64 indices, is 480 kB)."""
    import stat

    info = Path(path).stat()
    if not stat.S_ISREG(info.st_mode) or info.st_size > 64 << 20:
        raise ValueError(f"{path}: not a partition index file (a regular .npy file of at most 64 MiB)")
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic != b"\x93NUMPY":
        raise ValueError(f"{path}: not a partition index file (a NumPy .npy array of sample indices, as "
                         f"`bladefl partition` writes)")
    try:
        indices = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"{path}: not a readable partition index file ({type(exc).__name__}: an object "
                         f"array or a truncated file)") from None
    if not isinstance(indices, np.ndarray) or not np.issubdtype(indices.dtype, np.integer):
        kind = getattr(indices, "dtype", type(indices).__name__)
        raise ValueError(f"{path}: the partition's indices must be integers (got {kind})")
    if expected_sha256 is not None and indices_digest(indices) != expected_sha256:
        raise ValueError(f"{path}: index digest does not match its manifest")
    return indices


def manifest_problems(path: str | Path, indices: np.ndarray, dataset: str, spec: PartitionSpec) -> list[str]:
    """Whether the index file at ``path`` is the partition a run asks for, by the manifest
    `bladefl partition` writes beside it (``<key>.json``; none beside it: nothing to check): its
    dataset, its key (scheme, N, n, draw) and the digest of these very indices."""
    beside = Path(path).with_suffix(".json")
    if not beside.is_file():
        return []
    try:
        info = json.loads(beside.read_text())
    except (OSError, ValueError) as exc:
        return [f"its manifest {beside} is unreadable ({exc})"]
    if not isinstance(info, dict):
        return [f"its manifest {beside} is not a manifest"]
    problems = []
    if info.get("dataset") != dataset:
        problems.append(f"it is a partition of {info.get('dataset')!r}, the run is on {dataset!r}")
    if info.get("key") != spec.key:
        problems.append(f"it is the partition {info.get('key')!r}, the run's config asks for {spec.key!r} "
                        f"(another draw or scheme)")
    if info.get("indices_sha256") != indices_digest(indices):
        problems.append(f"its indices are not the ones its manifest {beside.name} records (edited or swapped)")
    return problems


def index_problems(indices: np.ndarray, spec: PartitionSpec, train_size: int) -> list[str]:
    """Why ``indices`` cannot be ``spec``'s partition of a training set of ``train_size``
    samples: its shape N x n, every index in 0..train_size-1, no sample twice within a client,
    and no sample shared by two clients (every scheme gives disjoint clients). Empty when fine."""
    problems = []
    if indices.ndim != 2 or indices.shape != (spec.N, spec.n):
        return [f"shape {indices.shape}, the config needs partition.N={spec.N} x partition.n={spec.n}"]
    if indices.size and (indices.min() < 0 or indices.max() >= train_size):
        problems.append(f"indices must lie in 0..{train_size - 1} (found {int(indices.min())}..{int(indices.max())})")
        return problems
    repeated = [i for i, row in enumerate(indices) if len(np.unique(row)) != len(row)]
    if repeated:
        problems.append(f"clients {repeated[:5]} hold a sample more than once")
    values, counts = np.unique(indices, return_counts=True)
    if not repeated and (counts > 1).any():
        problems.append(f"{int((counts > 1).sum())} samples are held by more than one client (e.g. index "
                        f"{int(values[counts > 1][0])}); the clients must be disjoint")
    return problems


def checked_partition(path: str | Path, spec: PartitionSpec, dataset: str, option: str = "--partition") -> np.ndarray:
    """The client index file at ``path``, checked before any work: it exists, holds integers, is a
    partition of the training set with ``spec``'s N x n disjoint clients, and, where `bladefl
    partition`'s manifest lies beside it, is the very draw the run's config asks for (ValueError naming
    ``option`` otherwise)."""
    from bladefl.data.datasets import get_spec

    if not Path(path).is_file():
        raise ValueError(f"{option} {path}: no such file (write it with `bladefl partition`)")
    try:
        indices = read_partition(path)
    except ValueError as exc:
        raise ValueError(f"{option} {exc}") from None
    problems = (index_problems(indices, spec, get_spec(dataset).train_size)
                or manifest_problems(path, indices, dataset, spec))
    if problems:
        raise ValueError(f"{option} {path}: " + "; ".join(problems))
    return indices
