"""Dataset registry (names, files, pinned checksums) and loading through torchvision."""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bladefl.data import cifar, idx

IDX_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
HASH_TITLES = {"sha256": "SHA-256", "md5": "MD5"}  # the pins' algorithms, as messages name them
FORMATS = ("idx", "cifar-python")  # how a dataset's raw files are read: MNIST's IDX, Cifar-10's python batches


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset, the single source of what the project knows of it: its config name, its title on the
    pages, torchvision's class, the folder and files of its raw data and their format, their pinned
    checksums (SHA-256, or the MD5 values torchvision publishes where no SHA-256 is pinned), the image
    shape and channels (the model's input size), the split sizes and the pixel statistics. Every list of
    dataset names (the CLI's, the schemas', the statements', the pages') is derived from :data:`SPECS`."""

    name: str
    title: str
    torchvision_name: str
    folder: str  # the raw files' folder under the data root, torchvision's layout
    train_files: tuple[str, ...]
    test_files: tuple[str, ...]
    mean: float  # pixel mean and std of the training set in [0, 1] units (for normalisation)
    std: float
    sha256: dict[str, str] = field(default_factory=dict)
    md5: dict[str, str] = field(default_factory=dict)
    file_format: str = "idx"
    num_classes: int = 10
    image_shape: tuple[int, int] = (28, 28)
    channels: int = 1
    train_size: int = 60_000
    test_size: int = 10_000

    @property
    def files(self) -> tuple[str, ...]:
        return self.train_files + self.test_files

    @property
    def pixels(self) -> int:
        """The model's input size: every value of one image, flattened."""
        return self.image_shape[0] * self.image_shape[1] * self.channels

    def pin(self, file: str) -> tuple[str, str]:
        """The file's pinned checksum as (algorithm, hex digest)."""
        return ("sha256", self.sha256[file]) if file in self.sha256 else ("md5", self.md5[file])

    def raw_dir(self, root: str | Path) -> Path:
        """torchvision's layout: ``<root>/<ClassName>/raw`` (MNIST's), ``<root>/cifar-10-batches-py``."""
        return Path(root) / self.folder


MNIST = DatasetSpec(
    name="mnist",
    title="MNIST",
    torchvision_name="MNIST",
    folder="MNIST/raw",
    train_files=IDX_FILES[:2],
    test_files=IDX_FILES[2:],
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
    folder="FashionMNIST/raw",
    train_files=IDX_FILES[:2],
    test_files=IDX_FILES[2:],
    mean=0.2860,
    std=0.3530,
    sha256={
        "train-images-idx3-ubyte": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
        "train-labels-idx1-ubyte": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
        "t10k-images-idx3-ubyte": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
        "t10k-labels-idx1-ubyte": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
    },
)

# Cifar-10 for Fig. 11's other half. The paper names no model for it: the paper engine's MLP reads the
# 3,072 values of an image flattened (a reading, docs/engine.md). The pins are torchvision's MD5 values
# (torchvision/datasets/cifar.py); mean and std are one value over all pixels and channels of the
# training set (the flattened model's standardisation), the commonly quoted figures, not yet recomputed here
# (no Cifar-10 data on the development machine: a test against the data belongs with the first real run).
CIFAR10 = DatasetSpec(
    name="cifar10",
    title="Cifar-10",
    torchvision_name="CIFAR10",
    folder="cifar-10-batches-py",
    train_files=cifar.TRAIN_FILES,
    test_files=cifar.TEST_FILES,
    mean=0.4734,
    std=0.2516,
    md5={
        "data_batch_1": "c99cafc152244af753f735de768cd75f",
        "data_batch_2": "d4bba439e000b95fd0a9bffe97cbabec",
        "data_batch_3": "54ebc095f3ab1f0389bbae665268c751",
        "data_batch_4": "634d18415352ddfa80567beed471001a",
        "data_batch_5": "482c414d41f54cd18b22e5b47cb7c3cb",
        "test_batch": "40351d587109b95175f43aff81a1287e",
    },
    file_format="cifar-python",
    image_shape=cifar.IMAGE_SHAPE,
    channels=cifar.CHANNELS,
    train_size=50_000,
)

SPECS: dict[str, DatasetSpec] = {s.name: s for s in (MNIST, FASHION_MNIST, CIFAR10)}
NAMES: tuple[str, ...] = tuple(SPECS)  # the registry's order: MNIST first, as the pages show them
TITLES: dict[str, str] = {s.name: s.title for s in SPECS.values()}


def registry_order(name: str) -> tuple[int, str]:
    """A sort key: the registry's datasets in its order (MNIST first), any other name after them."""
    return (NAMES.index(name) if name in NAMES else len(NAMES), name)


def get_spec(name: str) -> DatasetSpec:
    try:
        return SPECS[name]
    except KeyError:
        raise ValueError(f"dataset must be one of {sorted(SPECS)} (got {name!r})") from None


def root_of_raw_file(raw_file: str | Path) -> Path:
    """The data root a raw file lies under: ``<root>/<a registry dataset's folder>/<file>`` (ValueError where
    no dataset's folder holds it)."""
    parent = Path(raw_file).parent
    for spec in SPECS.values():
        parts = Path(spec.folder).parts
        if parent.parts[-len(parts):] == parts:
            return parent.parents[len(parts) - 1]
    raise ValueError(f"{raw_file}: not in any dataset's raw folder ({', '.join(s.folder for s in SPECS.values())})")


def train_size(names: object) -> int:
    """The training set size a partition of every dataset named must fit in: the smallest of theirs (a
    name outside the registry is checked elsewhere and counts as the largest here)."""
    known = [SPECS[n].train_size for n in (names if isinstance(names, (list, tuple)) else [names])
             if isinstance(n, str) and n in SPECS]
    return min(known, default=max(s.train_size for s in SPECS.values()))


def sha256_file(path: str | Path) -> str:
    return file_digest(path, "sha256")


def file_digest(path: str | Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def matches_pin(spec: DatasetSpec, file: str, path: str | Path) -> bool:
    """Whether the file at ``path`` has the checksum ``spec`` pins for ``file``."""
    algorithm, value = spec.pin(file)
    return file_digest(path, algorithm) == value


@dataclass(frozen=True)
class ArrayDataset:
    """Images as float32 in [0, 1], shape [n, pixels] (each image flattened); labels as int64, shape [n]."""

    x: np.ndarray
    y: np.ndarray


# Set to 1 to run on raw files whose checksum differs from the pinned value (they are still
# recorded as read): an explicit choice, never a default.
ALLOW_UNPINNED = "BLADEFL_ALLOW_UNPINNED_DATA"


@functools.lru_cache(maxsize=32)
def _file_digest(path: str, size: int, mtime_ns: int, algorithm: str) -> str:
    return file_digest(path, algorithm)


def read_checksums(name: str, root: str | Path) -> dict[str, str]:
    """The SHA-256 of the dataset's raw files as they are under ``root`` (each file hashed once per
    process unless it changes), each checked against its pin (SHA-256, or torchvision's MD5): a mismatch
    is refused with the file named, unless ``$BLADEFL_ALLOW_UNPINNED_DATA`` is 1."""
    spec = get_spec(name)
    out, wrong = {}, []
    for f in spec.files:
        path = spec.raw_dir(root) / f
        if not path.is_file():
            raise FileNotFoundError(f"{spec.raw_dir(root)} lacks {f}; run `bladefl fetch --dataset {name}` first")
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        out[f] = _file_digest(*key, "sha256")
        algorithm, pinned = spec.pin(f)
        found = out[f] if algorithm == "sha256" else _file_digest(*key, algorithm)
        if found != pinned:
            wrong.append(f"{path} has {HASH_TITLES[algorithm]} {found[:12]}..., the pinned value is {pinned[:12]}...")
    if wrong and os.environ.get(ALLOW_UNPINNED) != "1":
        raise ValueError("; ".join(wrong) + f" (a corrupt or different file; fetch it again with `bladefl fetch "
                         f"--dataset {name}`, or set {ALLOW_UNPINNED}=1 to run on it anyway)")
    return out


def load(name: str, root: str | Path, train: bool, normalize: bool = False) -> ArrayDataset:
    """Load a split from the raw files in torchvision's layout (``<root>/<Class>/raw`` for MNIST's IDX
    files, ``<root>/cifar-10-batches-py`` for Cifar-10's batches), each image flattened.

    Pixels are scaled to [0, 1]; with ``normalize`` they are standardised with the training
    set's mean and std (torchvision's usual ``Normalize`` constants). The files are decoded here
    (the arrays torchvision's dataset class would hold), so a machine without torchvision runs.
    """
    spec = get_spec(name)
    raw = spec.raw_dir(root)
    missing = [f for f in spec.files if not (raw / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{raw} lacks {missing}; run `bladefl fetch --dataset {name}` first")
    read_checksums(name, root)  # the files read are the pinned ones (or explicitly allowed)
    images, labels, what = (_idx_split if spec.file_format == "idx" else _cifar_split)(spec, raw, train)
    if labels.size and labels.max() >= spec.num_classes:
        raise ValueError(f"{what}: label {int(labels.max())} is outside 0..{spec.num_classes - 1}")
    x = images.reshape(len(images), -1).astype(np.float32) / np.float32(255.0)
    if normalize:
        x = (x - np.float32(spec.mean)) / np.float32(spec.std)
    return ArrayDataset(x=x, y=labels.astype(np.int64))


def _idx_split(spec: DatasetSpec, raw: Path, train: bool) -> tuple[np.ndarray, np.ndarray, str]:
    prefix = "train" if train else "t10k"
    images = _decode(raw / f"{prefix}-images-idx3-ubyte", ndim=3)
    labels = _decode(raw / f"{prefix}-labels-idx1-ubyte", ndim=1)
    if len(images) != len(labels) or images.shape[1:] != spec.image_shape:
        raise ValueError(f"{raw}: {prefix} images {images.shape} and labels {labels.shape} do not match "
                         f"({spec.image_shape[0]} x {spec.image_shape[1]} images, one label each)")
    return images, labels, str(raw / f"{prefix}-labels-idx1-ubyte")


def _cifar_split(spec: DatasetSpec, raw: Path, train: bool) -> tuple[np.ndarray, np.ndarray, str]:
    parts = []
    for f in spec.train_files if train else spec.test_files:
        try:
            parts.append(cifar.decode((raw / f).read_bytes()))
        except ValueError as exc:
            raise ValueError(f"{raw / f}: {exc}") from None
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), str(raw)


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
    """The pinned checksums of a dataset's raw files: SHA-256 values, or ``md5:<hex>`` where torchvision's
    MD5 is the pin (see :func:`read_checksums` for the SHA-256 of the files actually read)."""
    spec = get_spec(name)
    return {f: value if algorithm == "sha256" else f"{algorithm}:{value}"
            for f in spec.files for algorithm, value in [spec.pin(f)]}
