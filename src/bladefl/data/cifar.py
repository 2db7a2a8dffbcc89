"""Cifar-10's python batches (``cifar-10-batches-py/data_batch_1`` .. ``_5``, ``test_batch``: what
torchvision downloads): each a pickled dict of ``data`` (uint8, [10000, 3072], the red, green and blue
planes of a 32 x 32 image in turn) and ``labels`` (10000 ints in 0..9). Read through the restricted
unpickler (:mod:`bladefl.data.safe_pickle`), held to that shape, never trusted as code."""

from __future__ import annotations

import pickle

import numpy as np

from bladefl.data.safe_pickle import restricted_unpickle

TRAIN_FILES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_FILES = ("test_batch",)
IMAGE_SHAPE, CHANNELS = (32, 32), 3
PIXELS = CHANNELS * IMAGE_SHAPE[0] * IMAGE_SHAPE[1]  # the format's row: every plane of an image in turn


def decode(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """One batch's images (uint8, [n, 3072], channel planes first) and labels (uint8, [n]); a file that
    is not such a batch is a ValueError saying what is wrong."""
    try:
        batch = restricted_unpickle(data)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as exc:
        raise ValueError(f"not a Cifar-10 python batch ({type(exc).__name__}: {exc})") from None
    if not isinstance(batch, dict):
        raise ValueError(f"not a Cifar-10 python batch (a pickled {type(batch).__name__}, not a dict)")
    batch = {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in batch.items()}
    missing = [k for k in ("data", "labels") if k not in batch]
    if missing:
        raise ValueError(f"a Cifar-10 batch holds 'data' and 'labels'; this one lacks {missing}")
    images, labels = batch["data"], batch["labels"]
    if not isinstance(images, np.ndarray) or images.dtype != np.uint8 or images.ndim != 2 \
            or images.shape[1] != PIXELS:
        shape = getattr(images, "shape", type(images).__name__)
        raise ValueError(f"'data' must be uint8 images of {PIXELS} values each (got {shape})")
    if not isinstance(labels, list) or not all(type(v) is int for v in labels):
        raise ValueError("'labels' must be a list of integers")
    if len(labels) != len(images):
        raise ValueError(f"{len(images)} images and {len(labels)} labels")
    y = np.asarray(labels, dtype=np.int64)
    if y.size and (y.min() < 0 or y.max() > 9):
        raise ValueError(f"label {int(y.min() if y.min() < 0 else y.max())} is outside 0..9")
    return images, y.astype(np.uint8)


def encode(images: np.ndarray, labels: np.ndarray) -> bytes:
    """A batch in Cifar-10's own format (what the tests make and :func:`decode` reads)."""
    return pickle.dumps({b"batch_label": b"bladefl", b"labels": [int(v) for v in labels],
                         b"data": np.ascontiguousarray(images, dtype=np.uint8),
                         b"filenames": [b"%d.png" % i for i in range(len(labels))]}, protocol=3)
