"""Step 5 of a round: FedAvg over the models whose digests are in the appended block."""

from __future__ import annotations

import torch


def fedavg_many(models: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Weighted means [R, P] of R runs' uploads ``models`` [R, N, P] with ``weights`` [R, N] (a
    client's sample count where its model is in the block, 0 where it is not).

    The sum is accumulated client by client, the same additions in the same order for every run
    whatever is stacked beside it (a reduction kernel could split the client axis differently
    for another number of runs), so a run's model does not depend on its company."""
    if models.shape[1] == 0:
        raise ValueError("cannot aggregate an empty block")
    w = weights.to(device=models.device, dtype=models.dtype)
    total = models[:, 0] * w[:, :1]
    for j in range(1, models.shape[1]):
        total.addcmul_(models[:, j], w[:, j : j + 1])
    return total / w.sum(dim=1, keepdim=True)


def fedavg(models: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Weighted mean of rows of ``models`` [M, P] with ``weights`` [M] (e.g. sample counts)."""
    if models.shape[0] == 0:
        raise ValueError("cannot aggregate an empty block")
    return fedavg_many(models.unsqueeze(0), weights.unsqueeze(0))[0]
