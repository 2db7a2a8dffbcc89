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

from dataclasses import dataclass

import numpy as np
import torch

DETECTORS = ("near_duplicate", "gaussian_update", "gaussian_difference")


@dataclass(frozen=True)
class Detection:
    detector: str
    scores: np.ndarray  # [N], higher = more likely lazy
    flags: np.ndarray  # [N] bool


def excess_kurtosis(rows: torch.Tensor) -> torch.Tensor:
    """Excess kurtosis of each row's entries (0 for i.i.d. Gaussian), in float64."""
    x = rows.double()
    x = x - x.mean(dim=1, keepdim=True)
    var = (x * x).mean(dim=1)
    return (x**4).mean(dim=1) / var.clamp_min(1e-300) ** 2 - 3.0


def near_duplicate(updates: torch.Tensor, ratio: float = 0.02) -> Detection:
    N = updates.shape[0]
    u = updates.double()
    gram = u @ u.T  # squared distances from one product: |a|^2 + |b|^2 - 2 a.b (float64)
    sq = gram.diagonal()
    dist = (sq[:, None] + sq[None, :] - 2 * gram).clamp_min(0).sqrt()
    norms = sq.sqrt()
    off = dist[~torch.eye(N, dtype=torch.bool, device=u.device)]
    median = off.median().clamp_min(1e-300)
    dist.fill_diagonal_(float("inf"))
    nearest, j = dist.min(dim=1)
    relative = (nearest / median).cpu().numpy()
    larger = (norms > norms[j]).cpu().numpy()
    scores = np.where(larger, 1.0 / np.maximum(relative, 1e-12), 0.0)
    return Detection("near_duplicate", scores, larger & (relative < ratio))


def gaussian_update(updates: torch.Tensor, threshold: float = 0.5) -> Detection:
    k = excess_kurtosis(updates).abs().cpu().numpy()
    return Detection("gaussian_update", -k, k < threshold)


def pairwise_difference_kurtosis(rows: torch.Tensor) -> torch.Tensor:
    """Excess kurtosis of the entries of every pairwise difference rows_i - rows_j, [N, N] (float64),
    without forming the N^2 differences: with centred rows a, b (so a - b is centred),
    sum (a-b)^2 = A2 - 2 ab + B2 and sum (a-b)^4 = A4 - 4 a^3 b + 6 a^2 b^2 - 4 a b^3 + B4, whose
    cross terms are three [N, P] x [P, N] products. The diagonal is meaningless (0/0)."""
    c = rows.double()
    c = c - c.mean(dim=1, keepdim=True)
    c2, c3 = c * c, c * c * c
    gram, cube, square = c @ c.T, c3 @ c.T, c2 @ c2.T  # sum a b, sum a^3 b, sum a^2 b^2
    s2, s4 = gram.diagonal(), square.diagonal()  # sum a^2, sum a^4
    second = s2[:, None] - 2 * gram + s2[None, :]
    fourth = s4[:, None] - 4 * cube + 6 * square - 4 * cube.T + s4[None, :]
    P = rows.shape[1]
    return (fourth / P) / (second / P).clamp_min(1e-300) ** 2 - 3.0


def gaussian_difference(updates: torch.Tensor, threshold: float = 0.5) -> Detection:
    N = updates.shape[0]
    norms = updates.double().norm(dim=1).cpu().numpy()
    i, j = np.triu_indices(N, k=1)
    k = pairwise_difference_kurtosis(updates).abs().cpu().numpy()[i, j]
    big = np.where(norms[i] > norms[j], i, j)  # the larger update of each pair
    scores = np.full(N, -np.inf)
    np.maximum.at(scores, big, -k)
    flags = np.zeros(N, dtype=bool)
    np.logical_or.at(flags, big, k < threshold)
    scores[np.isinf(scores)] = -1e9  # never the larger of any pair: the smallest update
    return Detection("gaussian_difference", scores, flags)


def detect(uploads: torch.Tensor, previous: torch.Tensor, detectors: tuple[str, ...] = DETECTORS) -> list[Detection]:
    """Run the named detectors on a block's uploads [N, P] against the previous global model [P]."""
    updates = uploads - previous.unsqueeze(0)
    run = {"near_duplicate": near_duplicate, "gaussian_update": gaussian_update,
           "gaussian_difference": gaussian_difference}
    unknown = sorted(set(detectors) - set(run))
    if unknown:
        raise ValueError(f"unknown detector(s) {unknown}; allowed: {list(DETECTORS)}")
    return [run[name](updates) for name in detectors]


def roc_auc(scores: np.ndarray, truth: np.ndarray) -> float:
    """Area under the ROC curve (ties count half): the chance that a random lazy client scores
    above a random honest one. nan without both classes."""
    pos, neg = scores[truth.astype(bool)], scores[~truth.astype(bool)]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def precision_recall(flags: np.ndarray, truth: np.ndarray) -> tuple[float, float, float]:
    """(precision, recall, false-positive rate) of boolean flags against the truth."""
    truth = truth.astype(bool)
    tp, fp = int((flags & truth).sum()), int((flags & ~truth).sum())
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / truth.sum() if truth.sum() else float("nan")
    fpr = fp / (~truth).sum() if (~truth).sum() else float("nan")
    return precision, recall, fpr
