"""Step 5 of a round: FedAvg over the models whose digests are in the appended block."""

from __future__ import annotations

import torch


def fedavg(models: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Weighted mean of rows of ``models`` [M, P] with ``weights`` [M] (e.g. sample counts)."""
    if models.shape[0] == 0:
        raise ValueError("cannot aggregate an empty block")
    w = weights.to(models.dtype).to(models.device)
    return (w @ models) / w.sum()
