"""Local differential privacy before upload (NbAFL: Wei et al., IEEE TIFS 2020, Theorem 1).

Each client clips its model to L2 norm C (w <- w / max(1, ||w|| / C)) and adds Gaussian noise
of standard deviation

    sigma_dp = c * K * dS / epsilon,   dS = 2 C / n,   c = sqrt(2 ln(1.25 / delta)),

to every parameter, where K is the number of uploads (integrated rounds), n the client's
sample count and (epsilon, delta) the privacy budget. ``epsilon = inf`` disables the mechanism.
Defaults: delta = 1e-5, C = 20 (above the norm of the 784-256-10 MLP at initialisation,
about 9.5, so clipping bounds the sensitivity without distorting early models).
"""

from __future__ import annotations

import math

import torch


def noise_std(epsilon: float, delta: float, clip: float, n: int, K: int) -> float:
    if math.isinf(epsilon):
        return 0.0
    c = math.sqrt(2.0 * math.log(1.25 / delta))
    return c * K * (2.0 * clip / n) / epsilon


def clip_rows(models: torch.Tensor, clip: float | torch.Tensor) -> torch.Tensor:
    """Each row (last axis) scaled to L2 norm at most ``clip`` (a number, or a tensor that
    broadcasts against the rows' norms [..., 1], one per run)."""
    norms = models.norm(dim=-1, keepdim=True)
    return models / torch.clamp(norms / clip, min=1.0)


def add_noise(models: torch.Tensor, noise: torch.Tensor, std: float | torch.Tensor,
              clip: float | torch.Tensor) -> torch.Tensor:
    """The mechanism on drawn noise: every row clipped to ``clip``, plus ``noise`` x ``std``
    (``std`` and ``clip`` numbers or per-run tensors that broadcast, e.g. [R, 1, 1])."""
    return clip_rows(models, clip) + noise * std


def draw(shape: tuple[int, ...], generator: torch.Generator, out: torch.Tensor | None = None) -> torch.Tensor:
    """The mechanism's standard normal draws (on the CPU; into ``out`` when given: the same values)."""
    target = torch.empty(shape) if out is None else out
    return target.normal_(generator=generator)


def privatize(models: torch.Tensor, std: float, clip: float, generator: torch.Generator) -> torch.Tensor:
    if std == 0.0:
        return models
    return add_noise(models, draw(tuple(models.shape), generator).to(models.device), std, clip)
