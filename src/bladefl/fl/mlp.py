"""A stack of N two-layer perceptrons (784-h-10) held in one flat tensor [N, P].

Layout of a row (the model's canonical form; its little-endian float32 bytes are what a
transaction's digest covers): W1 [d, h] row-major, b1 [h], W2 [h, c], b2 [c]. The views
``W1, b1, W2, b2`` share storage with the flat tensor, so aggregation, noise, clipping and
hashing act on whole models at once while training uses batched matmuls on the views.

Forward and backward are written out (no autograd): softmax cross-entropy,
a1 = act(x W1 + b1), z2 = a1 W2 + b2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from bladefl.fl.shape import Shape


@dataclass(frozen=True)
class Views:
    W1: torch.Tensor  # [N, d, h]
    b1: torch.Tensor  # [N, h]
    W2: torch.Tensor  # [N, h, c]
    b2: torch.Tensor  # [N, c]


def views(flat: torch.Tensor, shape: Shape) -> Views:
    N = flat.shape[0]
    d, h, c = shape.d, shape.h, shape.c
    o1, o2, o3 = d * h, d * h + h, d * h + h + h * c
    return Views(
        W1=flat[:, :o1].view(N, d, h),
        b1=flat[:, o1:o2],
        W2=flat[:, o2:o3].view(N, h, c),
        b2=flat[:, o3:],
    )


def init(shape: Shape, generator: torch.Generator) -> torch.Tensor:
    """One model [P] with PyTorch's nn.Linear default init: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    flat = torch.empty(1, shape.size)
    v = views(flat, shape)
    for tensor, fan_in in ((v.W1, shape.d), (v.b1, shape.d), (v.W2, shape.h), (v.b2, shape.h)):
        bound = 1.0 / math.sqrt(fan_in)
        tensor.copy_(torch.rand(tensor.shape, generator=generator) * (2 * bound) - bound)
    return flat[0]


def forward(v: Views, x: torch.Tensor, shape: Shape) -> tuple[torch.Tensor, torch.Tensor]:
    """x [N, B, d] -> (a1 [N, B, h], z2 [N, B, c]); a1 = act(x W1 + b1)."""
    a1 = torch.baddbmm(v.b1.unsqueeze(1), x, v.W1)
    if shape.activation == "relu":
        a1.relu_()
    return a1, torch.baddbmm(v.b2.unsqueeze(1), a1, v.W2)


def shared_logits(models: torch.Tensor, x: torch.Tensor, shape: Shape) -> torch.Tensor:
    """Logits [R, T, c] of R flat models [R, P] on the same samples x [T, d]: the first layer is
    one GEMM of x with every model's W1 side by side, so x is read once and never copied per
    model (evaluating many runs' global models on the test set in one computation)."""
    R, d, h = models.shape[0], shape.d, shape.h
    v = views(models, shape)
    a1 = (x @ v.W1.permute(1, 0, 2).reshape(d, R * h)).view(-1, R, h)  # [T, R, h]
    a1.add_(v.b1.unsqueeze(0))  # in place, and the second layer reads it strided: no copy of [R, T, h]
    if shape.activation == "relu":
        a1.relu_()
    return torch.baddbmm(v.b2.unsqueeze(1), a1.transpose(0, 1), v.W2)


def losses(v: Views, x: torch.Tensor, y: torch.Tensor, shape: Shape) -> torch.Tensor:
    """Mean cross-entropy per model on its own batch: [N]."""
    _, z2 = forward(v, x, shape)
    return torch.nn.functional.cross_entropy(z2.transpose(1, 2), y, reduction="none").mean(dim=1)


def _backprop(v: Views, x: torch.Tensor, y: torch.Tensor, shape: Shape,
              loss_sum: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
    """Forward pass and the output/hidden error signals: (a1, g2 = dL/dz2, da1 = dL/dz1); with
    ``loss_sum`` [N], each model's minibatch loss (before the step) is added to it."""
    a1, z2 = forward(v, x, shape)
    if loss_sum is not None:
        loss_sum.add_((torch.logsumexp(z2, dim=-1) - z2.gather(-1, y.unsqueeze(-1)).squeeze(-1)).mean(dim=1))
    return (a1, *_errors(v, a1, z2, y, shape))


def _errors(v: Views, a1: torch.Tensor, z2: torch.Tensor, y: torch.Tensor, shape: Shape
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """The error signals (g2 = dL/dz2, da1 = dL/dz1) of a forward pass (a1, z2) on labels y [N, B]."""
    g2 = torch.softmax(z2, dim=-1)
    g2.scatter_add_(-1, y.unsqueeze(-1), torch.full_like(g2[..., :1], -1.0))
    g2.div_(y.shape[1])
    da1 = torch.bmm(g2, v.W2.transpose(1, 2))
    if shape.activation == "relu":
        # relu'(z1) = 1 where a1 = relu(z1) > 0; the fused kernel is ~40x faster than
        # multiplying by a boolean mask on the CPU
        da1 = torch.ops.aten.threshold_backward(da1, a1, 0.0)
    return g2, da1


def sgd_step(v: Views, x: torch.Tensor, y: torch.Tensor, eta: float | torch.Tensor, shape: Shape,
             loss_sum: torch.Tensor | None = None) -> None:
    """One in-place gradient step of every model on its own batch x [N, B, d], y [N, B];
    each weight update is fused into its gradient's matmul (baddbmm_). ``eta`` is one step size
    for all models or a tensor [N] of one per model (runs of different eta stacked together: the
    error signals are scaled per model before the fused update). ``loss_sum``: see :func:`_backprop`."""
    a1, g2, da1 = _backprop(v, x, y, shape, loss_sum)
    if isinstance(eta, torch.Tensor):
        per_model = eta.view(-1, 1, 1)
        g2, da1, eta = g2 * per_model, da1 * per_model, 1.0
    v.W2.baddbmm_(a1.transpose(1, 2), g2, alpha=-eta)
    v.b2.sub_(g2.sum(dim=1), alpha=eta)
    v.W1.baddbmm_(x.transpose(1, 2), da1, alpha=-eta)
    v.b1.sub_(da1.sum(dim=1), alpha=eta)


def contiguous_views(flat: torch.Tensor, shape: Shape) -> Views:
    """Contiguous copies of the four parameter blocks of ``flat`` [N, P] (matmuls on the strided
    views of a flat tensor are ~10% slower): what stacked training steps on."""
    v = views(flat, shape)
    return Views(v.W1.contiguous(), v.b1.contiguous(), v.W2.contiguous(), v.b2.contiguous())


def gather(v: Views, rows: torch.Tensor) -> torch.Tensor:
    """The flat models [len(rows), P] of the stacked parameter blocks' ``rows`` (an index tensor; a copy)."""
    r = rows.shape[0]
    return torch.cat([v.W1.index_select(0, rows).reshape(r, -1), v.b1.index_select(0, rows),
                      v.W2.index_select(0, rows).reshape(r, -1), v.b2.index_select(0, rows)], dim=1)


def scatter(v: Views, rows: torch.Tensor, models: torch.Tensor, which: torch.Tensor, shape: Shape) -> None:
    """Set row ``rows[i]`` of the stacked parameter blocks to flat model ``models[which[i]]``
    (``models`` [R, P]; every row of many runs reset to its run's new global model at once)."""
    m = views(models, shape)
    for dst, src in ((v.W1, m.W1), (v.b1, m.b1), (v.W2, m.W2), (v.b2, m.b2)):
        dst.index_copy_(0, rows, src.index_select(0, which))


def gradient(flat: torch.Tensor, x: torch.Tensor, y: torch.Tensor, shape: Shape) -> torch.Tensor:
    """Gradient [N, P] of each model's mean cross-entropy on its own samples x [N, B, d]."""
    return _gradient(flat, x, shape, *_backprop(views(flat, shape), x, y, shape))


def loss_and_gradient(flat: torch.Tensor, x: torch.Tensor, y: torch.Tensor, shape: Shape
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`losses` and :func:`gradient` of each model [N, P] on its own samples x [N, B, d] from one
    forward pass (each equal to what those give: the same operations on the same values)."""
    v = views(flat, shape)
    a1, z2 = forward(v, x, shape)
    loss = torch.nn.functional.cross_entropy(z2.transpose(1, 2), y, reduction="none").mean(dim=1)
    return loss, _gradient(flat, x, shape, a1, *_errors(v, a1, z2, y, shape))


def _gradient(flat: torch.Tensor, x: torch.Tensor, shape: Shape, a1: torch.Tensor, g2: torch.Tensor,
              da1: torch.Tensor) -> torch.Tensor:
    """The gradient [N, P] from a forward pass's activations a1 and error signals (g2, da1)."""
    grad = torch.empty_like(flat)
    gv = views(grad, shape)
    gv.W2.copy_(torch.bmm(a1.transpose(1, 2), g2))
    gv.b2.copy_(g2.sum(dim=1))
    gv.W1.copy_(torch.bmm(x.transpose(1, 2), da1))
    gv.b1.copy_(da1.sum(dim=1))
    return grad


def model_buffer(row: torch.Tensor) -> memoryview:
    """Canonical bytes of one model (little-endian float32 of the flat layout) as a buffer: no copy
    of a contiguous float32 CPU row on a little-endian machine."""
    array = row.detach().to("cpu", torch.float32).contiguous().numpy().astype("<f4", copy=False)
    return array.data.cast("B")


def model_bytes(row: torch.Tensor) -> bytes:
    """Canonical bytes of one model: little-endian float32 of the flat layout."""
    return bytes(model_buffer(row))
