"""Seeded random streams. Every draw in a run comes from a generator derived here from the
run's seed and a purpose key, so streams are independent and runs are reproducible."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # loaded by torch_generator alone: a numpy stream needs no torch
    import torch


def _words(seed: int, keys: tuple[object, ...]) -> list[int]:
    text = "/".join(str(k) for k in keys).encode()
    return [seed, *np.frombuffer(hashlib.sha256(text).digest()[:16], dtype=np.uint32).tolist()]


def numpy_rng(seed: int, *keys: object) -> np.random.Generator:
    return np.random.default_rng(_words(seed, keys))


def torch_generator(seed: int, *keys: object) -> torch.Generator:
    """A CPU torch generator (draws are made on the CPU, then moved, so any device agrees)."""
    import torch

    value = int(numpy_rng(seed, *keys).integers(0, 2**63 - 1))
    return torch.Generator(device="cpu").manual_seed(value)
