"""The data a group of runs trains on: every client's samples and the test set, on the device.

Runs of several partition draws of one dataset and N train as one group: their draws' clients are
stacked, draw after draw ([D N, n, d], client c of draw j at row j N + c), the test set shared;
each run gathers its own draw's clients (:attr:`bladefl.fl.records.RunSpec.draw`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from bladefl.data import datasets
from bladefl.data.partition import PartitionSpec, indices_digest, make_partition
from bladefl.fl.run_config import RunConfig


@dataclass(frozen=True)
class ClientData:
    x: torch.Tensor  # [D N, n, d] float32: the clients of D partition draws, draw after draw
    y: torch.Tensor  # [D N, n] int64
    x_test: torch.Tensor  # [T, d]
    y_test: torch.Tensor  # [T]
    partition_sha256: str | None = None  # the digest of the (first) draw's indices (None: made in memory)
    clients: int = 0  # N, the clients of one draw (0: every row of x, one draw)
    draw_sha256: tuple[str | None, ...] = ()  # each draw's digest (empty: the one of partition_sha256)

    @property
    def N(self) -> int:
        """The clients of one partition draw (a run's clients)."""
        return self.clients or self.x.shape[0]

    @property
    def n(self) -> int:
        return self.x.shape[1]

    @property
    def draws(self) -> int:
        return self.x.shape[0] // self.N

    def sha256(self, draw: int) -> str | None:
        """The digest of draw ``draw``'s indices."""
        return self.draw_sha256[draw] if self.draw_sha256 else self.partition_sha256

    def draw_x(self, draw: int) -> torch.Tensor:
        """Draw ``draw``'s clients' samples [N, n, d] (a view)."""
        return self.x[draw * self.N:(draw + 1) * self.N]

    def draw_y(self, draw: int) -> torch.Tensor:
        return self.y[draw * self.N:(draw + 1) * self.N]


def stack_draws(parts: list[ClientData]) -> ClientData:
    """Several draws' data (each one draw of the same dataset, N and n, the same test set) as one
    :class:`ClientData`, draw after draw in the order given."""
    if not parts:
        raise ValueError("no partition draws to stack")
    first = parts[0]
    bad = [i for i, p in enumerate(parts) if p.x.shape[1:] != first.x.shape[1:] or p.N != first.N or p.draws != 1]
    if bad:
        raise ValueError(f"draws {bad} do not share N, n and the sample shape with the first (or are stacked already)")
    if len(parts) == 1:
        return first
    return ClientData(torch.cat([p.x for p in parts]), torch.cat([p.y for p in parts]), first.x_test, first.y_test,
                      first.partition_sha256, first.N, tuple(p.partition_sha256 for p in parts))


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
    return load_draws(cfg, [indices])


def load_draws(cfg: RunConfig, draws: Sequence[np.ndarray | PartitionSpec | None]) -> ClientData:
    """Load the dataset once and cut it by each draw's indices (a draw given as a partition spec is
    made from it, one given as None from ``cfg.partition``), stacked draw after draw (:func:`stack_draws`)."""
    train = datasets.load(cfg.dataset, cfg.data_dir, train=True, normalize=cfg.normalize)
    test = datasets.load(cfg.dataset, cfg.data_dir, train=False, normalize=cfg.normalize)
    device = resolve_device(cfg.device)

    def indices(draw: np.ndarray | PartitionSpec | None) -> np.ndarray:
        if draw is None or isinstance(draw, PartitionSpec):
            return make_partition(train.y, cfg.partition if draw is None else draw)
        return draw

    return stack_draws([client_data(train, test, indices(ix), device) for ix in draws])
