"""Lazy clients (paper, section "Model of Lazy Clients"): M = round(ratio * N) clients skip
training, copy a random honest client's model of the same round and add i.i.d. Gaussian noise
to every parameter: N(0, sigma2) (``lazy.noise: parameter``, the authors' code) or, reading the
paper's "noise vector with variance sigma^2" as the whole vector's, N(0, sigma2 / P) over the P
parameters (``lazy.noise: model``: E||n||^2 = sigma2)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from bladefl.fl.run_config import LazyConfig


def lazy_scale(lazy: LazyConfig, parameters: int) -> float:
    """The standard deviation of the noise on one parameter: sqrt(sigma2) per parameter, or
    sqrt(sigma2 / P) when sigma2 is the variance over the whole model of P ``parameters``."""
    variance = lazy.sigma2 / parameters if lazy.noise == "model" else lazy.sigma2
    return math.sqrt(variance)


@dataclass(frozen=True)
class Roles:
    honest: np.ndarray  # sorted client ids
    lazy: np.ndarray  # sorted client ids


def choose_lazy(rng: np.random.Generator, N: int, M: int) -> Roles:
    if not 0 <= M < N:
        raise ValueError(f"the number of lazy clients must be in 0..N-1 (got M={M}, N={N})")
    lazy = np.sort(rng.choice(N, size=M, replace=False)) if M else np.array([], dtype=np.int64)
    honest = np.setdiff1d(np.arange(N), lazy)
    return Roles(honest=honest.astype(np.int64), lazy=lazy.astype(np.int64))


@dataclass(frozen=True)
class Plagiarism:
    uploads: torch.Tensor  # [M, P] what the lazy clients upload: copy + noise
    copies: torch.Tensor  # [M, P] the copied honest models, before noise
    victims: np.ndarray  # [M] row (among the honest models) each lazy client copied


def victims(rng: np.random.Generator, honest: int, M: int) -> np.ndarray:
    """Which of the ``honest`` models (rows) each of the M lazy clients copies."""
    return rng.integers(0, honest, size=M)


def plagiarize(honest_models: torch.Tensor, M: int, sigma2: float, rng: np.random.Generator,
               generator: torch.Generator) -> Plagiarism:
    """The lazy clients' uploads: each copies a random honest model and adds N(0, sigma2) noise."""
    chosen = victims(rng, honest_models.shape[0], M)
    copies = honest_models[torch.as_tensor(chosen, device=honest_models.device)]
    uploads = copies
    if sigma2 > 0:
        noise = torch.empty(copies.shape).normal_(generator=generator).to(copies.device)
        uploads = copies + noise * float(np.sqrt(sigma2))
    return Plagiarism(uploads=uploads, copies=copies, victims=chosen)
