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


def clip_rows(models: torch.Tensor, clip: float) -> torch.Tensor:
    norms = models.norm(dim=1, keepdim=True)
    return models / torch.clamp(norms / clip, min=1.0)


def privatize(models: torch.Tensor, std: float, clip: float, generator: torch.Generator) -> torch.Tensor:
    if std == 0.0:
        return models
    noise = torch.randn(models.shape, generator=generator).to(models.device)
    return clip_rows(models, clip) + noise * std
