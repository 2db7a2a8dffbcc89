"""The data a group of runs trains on: every client's samples and the test set, on the device."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from bladefl.data import datasets
from bladefl.data.partition import indices_digest, make_partition
from bladefl.fl.run_config import RunConfig


@dataclass(frozen=True)
class ClientData:
    x: torch.Tensor  # [N, n, d] float32
    y: torch.Tensor  # [N, n] int64
    x_test: torch.Tensor  # [T, d]
    y_test: torch.Tensor  # [T]
    partition_sha256: str | None = None  # the digest of the partition's indices (None: made in memory)

    @property
    def N(self) -> int:
        return self.x.shape[0]

    @property
    def n(self) -> int:
        return self.x.shape[1]


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ValueError("device is 'cuda' but no CUDA device is available (use 'auto' or 'cpu')")
    return torch.device(name)


def client_data(train: datasets.ArrayDataset, test: datasets.ArrayDataset, indices: np.ndarray,
                device: torch.device) -> ClientData:
    return ClientData(
        x=torch.from_numpy(train.x[indices]).to(device),
        y=torch.from_numpy(train.y[indices]).to(device),
        x_test=torch.from_numpy(test.x).to(device),
        y_test=torch.from_numpy(test.y).to(device),
        partition_sha256=indices_digest(indices),
    )


def load_client_data(cfg: RunConfig, indices: np.ndarray | None = None) -> ClientData:
    """Load the dataset and cut it by the run's partition (computed here unless given)."""
    train = datasets.load(cfg.dataset, cfg.data_dir, train=True, normalize=cfg.normalize)
    test = datasets.load(cfg.dataset, cfg.data_dir, train=False, normalize=cfg.normalize)
    if indices is None:
        indices = make_partition(train.y, cfg.partition)
    return client_data(train, test, indices, resolve_device(cfg.device))
