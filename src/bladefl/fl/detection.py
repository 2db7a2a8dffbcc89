"""Lazy-client detectors that see only what a validator sees: the models in a block and the
previous global model (the paper leaves detection as future work).

BLADE-FL's lazy client uploads a peer's model of the same round plus i.i.d. N(0, sigma2) noise
on every parameter. On the updates u_i = upload_i - w_prev:

- at small sigma2 a lazy update is a near duplicate of its source's;
- at large sigma2 (the noise norm is about sqrt(P sigma2): 45 at sigma2 = 0.01 for the paper's
  P = 203,530, against an honest update of a few units) a lazy update is mostly noise.

Three detectors, each giving a score per client (higher: more likely lazy) and a flag:

``near_duplicate`` (pairwise): the distance to the nearest other update, relative to the median
    pairwise distance; of a near-duplicate pair the larger update is the copy (noise adds
    energy: E||u + n||^2 = ||u||^2 + P sigma2). Flags a nearest distance below ``ratio`` (0.02)
    of the median. Assumes honest updates differ: with the shards partition two honest clients
    with the same two classes sit at about 0.06 of the median, so only near-exact copies can be
    told apart. Measured on MNIST with the paper model (tests/test_detection.py): it fails at
    every sigma2 in {1e-6, 1e-4, 1e-2, 0.3}, because the noise norm sqrt(P sigma2) is already 0.45
    at sigma2 = 1e-6, as large as the honest updates' differences after a few epochs; it catches
    copies with sigma2 <= 1e-10.
``gaussian_update`` (no pair): the excess kurtosis of the update's entries. Gradient-trained
    updates are heavy-tailed (sparse inputs, inactive ReLUs: many near-zero entries, a few large
    ones); i.i.d. Gaussian noise has excess kurtosis 0. Flags updates whose |excess kurtosis| is
    below ``threshold``. Fails at small sigma2, where the copy inherits its source's shape.
``gaussian_difference`` (pairwise, both regimes): the difference between a copy and its source
    is exactly the added noise, i.i.d. Gaussian (excess kurtosis 0), while the difference of two
    trained updates is heavy-tailed; at large sigma2 the difference between a copy and anyone is
    noise-dominated, also Gaussian. In every pair whose difference looks Gaussian the larger
    update is flagged.

All three assume no local DP: with DP every upload carries Gaussian noise and the Gaussian tests
flag honest clients too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch

from bladefl.fl.ranges import DETECTORS  # the names, kept where reading a config needs no torch


@dataclass(frozen=True)
class Detection:
    detector: str
    scores: np.ndarray  # [N], higher = more likely lazy
    flags: np.ndarray  # [N] bool


class Moments:
    """The passes over R runs' updates u [R, N, P] (float64) that the detectors share, each made once
    per round end and only where a detector reads it: the rows' means, the centred rows c = u - mean
    and their squares, the updates' norms, the centred rows' Gram matrix (sum a b, [R, N, N]) and
    their higher cross sums (sum a^3 b, sum a^2 b^2). The near-duplicate distances come from the
    centred rows (their cancellation is 10-100x smaller than the raw rows' Gram matrix's), the
    fourth powers from the squares (``pow`` in float64 was a third of the old cost): in a
    paper-engine lazy run the three detectors take 1/1.7 of the time they took computing their
    passes each on their own (docs/measurements.md)."""

    def __init__(self, updates: torch.Tensor) -> None:
        self.u = updates
        self.P = updates.shape[-1]

    @cached_property
    def mean(self) -> torch.Tensor:
        return self.u.mean(dim=-1, keepdim=True)

    @cached_property
    def centred(self) -> torch.Tensor:
        return self.u - self.mean

    @cached_property
    def squared(self) -> torch.Tensor:
        c = self.centred
        return c * c

    @cached_property
    def norms(self) -> torch.Tensor:
        return self.u.norm(dim=-1)

    @cached_property
    def gram(self) -> torch.Tensor:
        c = self.centred
        return c @ c.mT

    @cached_property
    def cross(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(sum a^3 b, sum a^2 b^2) of every pair of centred rows, [R, N, N] each."""
        c, c2 = self.centred, self.squared
        return (c2 * c) @ c.mT, c2 @ c2.mT

    def kurtosis(self) -> torch.Tensor:
        """Each row's excess kurtosis, [R, N]."""
        c2 = self.squared
        return (c2 * c2).mean(dim=-1) / c2.mean(dim=-1).clamp_min(1e-300) ** 2 - 3.0

    def difference_kurtosis(self) -> torch.Tensor:
        """The excess kurtosis of every pairwise difference of rows, [R, N, N], without forming the
        N^2 differences: with centred rows a, b (so a - b is centred), sum (a-b)^2 = A2 - 2 ab + B2 and
        sum (a-b)^4 = A4 - 4 a^3 b + 6 a^2 b^2 - 4 a b^3 + B4, whose cross terms are three [N, P] x
        [P, N] products. The diagonal is meaningless (0/0)."""
        gram, (cube, square) = self.gram, self.cross
        s2, s4 = gram.diagonal(dim1=-2, dim2=-1), square.diagonal(dim1=-2, dim2=-1)  # sum a^2, sum a^4
        second = s2.unsqueeze(-1) - 2 * gram + s2.unsqueeze(-2)
        fourth = s4.unsqueeze(-1) - 4 * cube + 6 * square - 4 * cube.mT + s4.unsqueeze(-2)
        return (fourth / self.P) / (second / self.P).clamp_min(1e-300) ** 2 - 3.0

    def distances(self) -> torch.Tensor:
        """Every pairwise distance ||u_a - u_b||, [R, N, N]: the centred rows' squared distance
        (A2 - 2 ab + B2) plus P (m_a - m_b)^2, the means' part (the centred rows sum to 0)."""
        gram, m = self.gram, self.mean
        s2 = gram.diagonal(dim1=-2, dim2=-1)
        means = self.P * (m - m.mT) ** 2
        return (s2.unsqueeze(-1) + s2.unsqueeze(-2) - 2 * gram + means).clamp_min(0).sqrt()


def excess_kurtosis(rows: torch.Tensor) -> torch.Tensor:
    """Excess kurtosis of each row's entries along the last axis (0 for i.i.d. Gaussian), in float64."""
    return Moments(rows.double()).kurtosis()


def pairwise_difference_kurtosis(rows: torch.Tensor) -> torch.Tensor:
    """Excess kurtosis of the entries of every pairwise difference rows_i - rows_j, [..., N, N]
    (float64) of rows [..., N, P] (:meth:`Moments.difference_kurtosis`)."""
    return Moments(rows.double()).difference_kurtosis()


# Each detector in two parts: the statistics of every run's updates [R, N, P] computed together
# on the device (float64, from the passes they share: :class:`Moments`), and the decision per run
# from their host copies (small: [N] or [N, N]).

def _near_duplicate_statistics(m: Moments) -> tuple[torch.Tensor, ...]:
    return m.distances(), m.norms


def _near_duplicate_decision(dist: np.ndarray, norms: np.ndarray, ratio: float = 0.02) -> Detection:
    N = dist.shape[0]
    off = np.sort(dist[~np.eye(N, dtype=bool)])
    median = max(off[(off.size - 1) // 2], 1e-300)  # the lower middle value, as torch.median
    dist = dist.copy()
    np.fill_diagonal(dist, np.inf)
    j = dist.argmin(axis=1)
    relative = dist[np.arange(N), j] / median
    larger = norms > norms[j]
    scores = np.where(larger, 1.0 / np.maximum(relative, 1e-12), 0.0)
    return Detection("near_duplicate", scores, larger & (relative < ratio))


def _gaussian_update_statistics(m: Moments) -> tuple[torch.Tensor, ...]:
    return (m.kurtosis().abs(),)


def _gaussian_update_decision(k: np.ndarray, threshold: float = 0.5) -> Detection:
    return Detection("gaussian_update", -k, k < threshold)


def _gaussian_difference_statistics(m: Moments) -> tuple[torch.Tensor, ...]:
    return m.difference_kurtosis().abs(), m.norms


def _gaussian_difference_decision(kurtosis: np.ndarray, norms: np.ndarray, threshold: float = 0.5) -> Detection:
    N = norms.shape[0]
    i, j = np.triu_indices(N, k=1)
    k = kurtosis[i, j]
    big = np.where(norms[i] > norms[j], i, j)  # the larger update of each pair
    scores = np.full(N, -np.inf)
    np.maximum.at(scores, big, -k)
    flags = np.zeros(N, dtype=bool)
    np.logical_or.at(flags, big, k < threshold)
    scores[np.isinf(scores)] = -1e9  # never the larger of any pair: the smallest update
    return Detection("gaussian_difference", scores, flags)


# per detector: its statistics (batched over runs) and its decision from one run's statistics
_PARTS: dict[str, tuple[Callable[..., tuple[torch.Tensor, ...]], Callable[..., Detection]]] = {
    "near_duplicate": (_near_duplicate_statistics, _near_duplicate_decision),
    "gaussian_update": (_gaussian_update_statistics, _gaussian_update_decision),
    "gaussian_difference": (_gaussian_difference_statistics, _gaussian_difference_decision)}


def _one(name: str, updates: torch.Tensor) -> Detection:
    statistics, decision = _PARTS[name]
    return decision(*(t[0].cpu().numpy() for t in statistics(Moments(updates.double().unsqueeze(0)))))


def near_duplicate(updates: torch.Tensor) -> Detection:
    """``near_duplicate`` on one run's updates [N, P]."""
    return _one("near_duplicate", updates)


def gaussian_update(updates: torch.Tensor) -> Detection:
    """``gaussian_update`` on one run's updates [N, P]."""
    return _one("gaussian_update", updates)


def gaussian_difference(updates: torch.Tensor) -> Detection:
    """``gaussian_difference`` on one run's updates [N, P]."""
    return _one("gaussian_difference", updates)


def detect_many(uploads: torch.Tensor, previous: torch.Tensor, detectors: tuple[str, ...] = DETECTORS
                ) -> list[list[Detection]]:
    """The named detectors on R runs' uploads [R, N, P] against each run's previous global model
    [R, P]: the statistics of all runs computed together, then one host copy of each and the
    decisions per run. Returns, per run, one :class:`Detection` per detector."""
    unknown = sorted(set(detectors) - set(_PARTS))
    if unknown:
        raise ValueError(f"unknown detector(s) {unknown}; allowed: {list(DETECTORS)}")
    shared = Moments((uploads - previous.unsqueeze(-2)).double())
    statistics = {name: [t.cpu().numpy() for t in _PARTS[name][0](shared)] for name in detectors}
    return [[_PARTS[name][1](*(t[r] for t in statistics[name])) for name in detectors]
            for r in range(uploads.shape[0])]


def detect(uploads: torch.Tensor, previous: torch.Tensor, detectors: tuple[str, ...] = DETECTORS) -> list[Detection]:
    """Run the named detectors on a block's uploads [N, P] against the previous global model [P]."""
    return detect_many(uploads.unsqueeze(0), previous.unsqueeze(0), detectors)[0]
