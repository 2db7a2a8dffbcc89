"""Dataset registry (names, files, pinned checksums) and loading through torchvision."""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bladefl.data import idx

FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset, the single source of what the project knows of it: its config name, its title on the
    pages, torchvision's class/folder name, its files' pinned SHA-256 values, the image shape and
    channels (the model's input size), the split sizes and the pixel statistics. Every list of dataset
    names (the CLI's, the schemas', the statements', the pages') is derived from :data:`SPECS`."""

    name: str
    title: str
    torchvision_name: str
    sha256: dict[str, str]
    mean: float  # pixel mean and std of the training set in [0, 1] units (for normalisation)
    std: float
    num_classes: int = 10
    image_shape: tuple[int, int] = (28, 28)
    channels: int = 1
    train_size: int = 60_000
    test_size: int = 10_000

    @property
    def pixels(self) -> int:
        """The model's input size: every value of one image, flattened."""
        return self.image_shape[0] * self.image_shape[1] * self.channels

    def raw_dir(self, root: str | Path) -> Path:
        """torchvision's layout: ``<root>/<ClassName>/raw``."""
        return Path(root) / self.torchvision_name / "raw"


MNIST = DatasetSpec(
    name="mnist",
    title="MNIST",
    torchvision_name="MNIST",
    mean=0.1307,
    std=0.3081,
    sha256={
        "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
        "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
        "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
        "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
    },
)

FASHION_MNIST = DatasetSpec(
    name="fashion_mnist",
    title="Fashion-MNIST",
    torchvision_name="FashionMNIST",
    mean=0.2860,
    std=0.3530,
    sha256={
        "train-images-idx3-ubyte": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
        "train-labels-idx1-ubyte": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
        "t10k-images-idx3-ubyte": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
        "t10k-labels-idx1-ubyte": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
    },
)

SPECS: dict[str, DatasetSpec] = {s.name: s for s in (MNIST, FASHION_MNIST)}
NAMES: tuple[str, ...] = tuple(SPECS)  # the registry's order: MNIST first, as the pages show them
TITLES: dict[str, str] = {s.name: s.title for s in SPECS.values()}
# The split sizes and input size the partition checks and the model assume: every dataset's (a test holds
# each spec to them; a dataset of other sizes needs them per dataset).
def registry_order(name: str) -> tuple[int, str]:
    """A sort key: the registry's datasets in its order (MNIST first), any other name after them."""
    return (NAMES.index(name) if name in NAMES else len(NAMES), name)


TRAIN_SIZE = MNIST.train_size
TEST_SIZE = MNIST.test_size
PIXELS = MNIST.pixels


def get_spec(name: str) -> DatasetSpec:
    try:
        return SPECS[name]
    except KeyError:
        raise ValueError(f"dataset must be one of {sorted(SPECS)} (got {name!r})") from None


def sha256_file(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class ArrayDataset:
    """Images as float32 in [0, 1], shape [n, 784]; labels as int64, shape [n]."""

    x: np.ndarray
    y: np.ndarray


# Set to 1 to run on raw files whose SHA-256 differs from the pinned value (they are still
# recorded as read): an explicit choice, never a default.
ALLOW_UNPINNED = "BLADEFL_ALLOW_UNPINNED_DATA"


@functools.lru_cache(maxsize=16)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(path)


def read_checksums(name: str, root: str | Path) -> dict[str, str]:
    """The SHA-256 of the dataset's four raw files as they are under ``root`` (each file hashed
    once per process unless it changes), checked against the pinned values: a mismatch is refused
    with the file named, unless ``$BLADEFL_ALLOW_UNPINNED_DATA`` is 1."""
    spec = get_spec(name)
    out, wrong = {}, []
    for f in FILES:
        path = spec.raw_dir(root) / f
        if not path.is_file():
            raise FileNotFoundError(f"{spec.raw_dir(root)} lacks {f}; run `bladefl fetch --dataset {name}` first")
        stat = path.stat()
        out[f] = _file_digest(str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        if out[f] != spec.sha256[f]:
            wrong.append(f"{path} has SHA-256 {out[f][:12]}..., the pinned value is {spec.sha256[f][:12]}...")
    if wrong and os.environ.get(ALLOW_UNPINNED) != "1":
        raise ValueError("; ".join(wrong) + f" (a corrupt or different file; fetch it again with `bladefl fetch "
                         f"--dataset {name}`, or set {ALLOW_UNPINNED}=1 to run on it anyway)")
    return out


def load(name: str, root: str | Path, train: bool, normalize: bool = False) -> ArrayDataset:
    """Load a split from the raw IDX files in torchvision's layout (``<root>/<Class>/raw``).

    Pixels are scaled to [0, 1]; with ``normalize`` they are standardised with the training
    set's mean and std (torchvision's usual ``Normalize`` constants). The files are decoded here
    (the arrays torchvision's dataset class would hold), so a machine without torchvision runs.
    """
    spec = get_spec(name)
    missing = [f for f in FILES if not (spec.raw_dir(root) / f).is_file()]
    if missing:
        raise FileNotFoundError(
            f"{spec.raw_dir(root)} lacks {missing}; run `bladefl fetch --dataset {name}` first"
        )
    read_checksums(name, root)  # the files read are the pinned ones (or explicitly allowed)
    prefix = "train" if train else "t10k"
    images = _decode(spec.raw_dir(root) / f"{prefix}-images-idx3-ubyte", ndim=3)
    labels = _decode(spec.raw_dir(root) / f"{prefix}-labels-idx1-ubyte", ndim=1)
    if len(images) != len(labels) or images.shape[1:] != (28, 28):
        raise ValueError(f"{spec.raw_dir(root)}: {prefix} images {images.shape} and labels {labels.shape} do not "
                         f"match (28 x 28 images, one label each)")
    if labels.size and labels.max() >= spec.num_classes:
        raise ValueError(f"{spec.raw_dir(root) / f'{prefix}-labels-idx1-ubyte'}: label {int(labels.max())} is "
                         f"outside 0..{spec.num_classes - 1}")
    x = images.reshape(len(images), -1).astype(np.float32) / np.float32(255.0)
    if normalize:
        x = (x - np.float32(spec.mean)) / np.float32(spec.std)
    return ArrayDataset(x=x, y=labels.astype(np.int64))


def _decode(path: Path, ndim: int) -> np.ndarray:
    """One IDX file, its problems reported with its name."""
    try:
        array = idx.decode(path.read_bytes())
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    if array.ndim != ndim:
        raise ValueError(f"{path}: {array.ndim} dimensions, expected {ndim}")
    return array


def checksums(name: str) -> dict[str, str]:
    """The pinned SHA-256 values of a dataset's four raw files (see :func:`read_checksums` for the
    files actually read)."""
    return dict(get_spec(name).sha256)
