"""Lazy clients (paper, section "Model of Lazy Clients"): M = round(ratio * N) clients skip
training, copy a random honest client's model of the same round and add i.i.d. Gaussian noise
to every parameter: N(0, sigma2) (``lazy.noise: parameter``, the paper's text read per parameter)
or, reading the paper's "noise vector with variance sigma^2" as the whole vector's, N(0, sigma2 / P)
over the P parameters (``lazy.noise: model``: E||n||^2 = sigma2).

``lazy.noise: authors`` draws it as the authors' deleted lazy script does (``ElvisShaoYumeng/BLADE-FL``
at 7771f85^, ``main_FL&BL_lazy.py`` lines 201-239, ``Noise_add.py`` lines 14-28): in the client order
(the honest clients, then the lazy ones), lazy client j copies a uniformly drawn earlier position (an
honest client, or an earlier lazy client as it is at that moment: ``random.randint(0, idx - 1)``), and
after each copy every lazy client copied so far gets noise again, ``np.random.normal(0, noise_scale)``:
sigma2 is used as the standard deviation, and the first lazy client is noised M times, the last once
(:func:`authors_copies`)."""

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
    if lazy.noise == "authors":
        return float(lazy.sigma2)  # the authors' noise_scale is the standard deviation
    variance = lazy.sigma2 / parameters if lazy.noise == "model" else lazy.sigma2
    return math.sqrt(variance)


def noise_draws(lazy: LazyConfig, M: int) -> int:
    """How many noise vectors the M lazy clients of one round draw: one each, or the authors' M(M+1)/2."""
    return M * (M + 1) // 2 if lazy.noise == "authors" else M


def authors_copies(rng: np.random.Generator, honest: int, M: int) -> tuple[np.ndarray, list[list[int]]]:
    """The authors' copying of one round (module text) for ``honest`` honest and M lazy clients: the
    honest row each lazy client's upload descends from [M], and per lazy client which of the M(M+1)/2
    noise draws its upload holds (draw j * M - j(j-1)/2 + (t - j): lazy j's noise of step t >= j, 0-based).
    A copy of an earlier lazy client holds the noise that one had at that step, then its own."""
    picks = rng.integers(0, honest + np.arange(M))  # position in 0 .. honest + j - 1, for lazy j
    root = np.empty(M, dtype=np.int64)
    inherited: list[list[int]] = []
    held: list[list[int]] = []
    for j, k in enumerate(picks.tolist()):  # the host's bookkeeping of M <= N small integers
        own = j * M - j * (j - 1) // 2  # the first of lazy j's own draws
        if k < honest:
            root[j], carry = k, []
        else:
            parent = k - honest
            first = parent * M - parent * (parent - 1) // 2
            root[j], carry = root[parent], inherited[parent] + list(range(first, first + j - parent))
        inherited.append(carry)
        held.append(carry + list(range(own, own + M - j)))
    return root, held


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
