"""Measured constants of the bound (Wang et al. 2019, "Adaptive federated learning in resource
constrained edge computing systems"), estimated at every aggregation from true full-batch
gradients of each client's loss on its own data:

    L_i     = ||grad F_i(w_i) - grad F_i(w)|| / ||w_i - w||     (smoothness)
    xi_i    = |F_i(w_i) - F_i(w)| / ||w_i - w||                 (Lipschitz constant of F_i)
    delta_i = ||grad F_i(w) - grad F(w)||                        (gradient divergence)

where w_i is an honest client's last local iterate and w the aggregate of the honest clients'
iterates (Definition 1's w-bar without the lazy clients' noisy copies, the privacy noise or the
validators' exclusions: the theorems carry those as their own terms, theta and the noise term);
grad F is the sample-weighted mean of every client's gradient at w. Assumption 1 makes L and xi
properties of each F_i over all pairs of points, so every pair gives a lower estimate; the pair
taken is the one the convergence proof applies them to. Measured against the block's aggregate
instead, a lazy cell divides by a distance inflated by the lazy noise (about sigma sqrt(P)) and
reads L about ten times smaller (runs written before this choice say so: ``summary.json`` has
no ``constants_against``; see :mod:`bladefl.fl.constants_against`). Each round records
sample-weighted means and maxima. phi = (1 - eta L / 2) / ||w0 - w*|| needs the reference optimum w* (see
:mod:`bladefl.reference`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from bladefl.fl import mlp


@dataclass(frozen=True)
class Measured:
    L_mean: float
    L_max: float
    xi_mean: float
    xi_max: float
    delta_mean: float
    delta_max: float


def _wmean(values: torch.Tensor, weights: torch.Tensor) -> float:
    ok = torch.isfinite(values)
    if not ok.any():
        return math.nan
    return float((values[ok] * weights[ok]).sum() / weights[ok].sum())


def _max(values: torch.Tensor) -> float:
    ok = torch.isfinite(values)
    return float(values[ok].max()) if ok.any() else math.nan


def estimate(loss_w: torch.Tensor, loss_i: torch.Tensor, grad_w: torch.Tensor, grad_i: torch.Tensor,
             dist: torch.Tensor, grad_all: torch.Tensor, sizes_local: torch.Tensor,
             sizes_all: torch.Tensor) -> Measured:
    """The estimators, for any model: losses [M] and gradients [M, P] of the M trained clients
    at w and at their iterates w_i, the distances ||w_i - w|| [M], and every client's gradient
    at w [N, P] with the sample counts."""
    dist = torch.where(dist > 0, dist, torch.full_like(dist, math.nan))
    L = (grad_i - grad_w).norm(dim=1) / dist
    xi = (loss_i - loss_w).abs() / dist
    grad_F = (sizes_all[:, None] * grad_all).sum(dim=0) / sizes_all.sum()
    delta = (grad_all - grad_F).norm(dim=1)
    return Measured(_wmean(L, sizes_local), _max(L), _wmean(xi, sizes_local), _max(xi),
                    _wmean(delta, sizes_all), _max(delta))


def measure(w: torch.Tensor, local: torch.Tensor, clients: torch.Tensor, x_all: torch.Tensor, y_all: torch.Tensor,
            shape: mlp.Shape) -> Measured:
    """For the MLP: w [P] the aggregate; local [M, P] the last local iterates of the trained clients
    ``clients`` [M] (positions among every client's data x_all [N, n, d], y_all [N, n]). Two passes: each
    client's loss and gradient at w on its own data (the trained clients' among them), and each trained
    client's at its iterate (:func:`bladefl.fl.mlp.loss_and_gradient`; five passes before, the same values)."""
    M, N = local.shape[0], x_all.shape[0]
    loss_all, grad_all = mlp.loss_and_gradient(w.expand(N, -1).contiguous(), x_all, y_all, shape)
    loss_i, grad_i = mlp.loss_and_gradient(local, x_all.index_select(0, clients), y_all.index_select(0, clients),
                                           shape)
    return estimate(
        loss_w=loss_all.index_select(0, clients),
        loss_i=loss_i,
        grad_w=grad_all.index_select(0, clients),
        grad_i=grad_i,
        dist=(local - w.expand(M, -1)).norm(dim=1),
        grad_all=grad_all,
        sizes_local=torch.full((M,), float(x_all.shape[1]), device=w.device),
        sizes_all=torch.full((N,), float(x_all.shape[1]), device=w.device),
    )


def phi(eta: float, L: float, w0: torch.Tensor, w_star: torch.Tensor) -> float:
    return (1.0 - eta * L / 2.0) / float((w0 - w_star).norm())
