"""Local training of all clients at once: one batched computation over the client axis.

``train_local`` runs tau iterations on every row of a stacked model tensor [N, P], each row
on its own client's data. An iteration is ``full_batch`` (one gradient-descent step on all n
samples), ``epoch`` (one pass of minibatch SGD in a fresh random order per client) or ``steps``
(s minibatch steps in a fresh random order per client, cycling through it when s x batch > n).
The only Python loops are over iterations and minibatches, never over clients.
"""

from __future__ import annotations

import torch

from bladefl.fl import mlp


def round_orders(generator: torch.Generator, tau: int, N: int, n: int) -> torch.Tensor:
    """The epoch orders of a whole round [tau, N, n]: an independent random permutation of 0..n-1
    per client and iteration (drawn on the CPU); the same draws as ``tau`` successive calls of
    :func:`epoch_order` on ``generator``."""
    return torch.argsort(torch.rand(tau, N, n, generator=generator), dim=2)


def epoch_order(generator: torch.Generator, N: int, n: int) -> torch.Tensor:
    """One epoch's orders [N, n]: a round of one iteration."""
    return round_orders(generator, 1, N, n)[0]


def span(n: int, batch_size: int, steps: int | None) -> int:
    """Samples one iteration reads from its order: n for an epoch, s x batch for s steps."""
    return n if steps is None else steps * batch_size


def stacked_iteration(v: mlp.Views, x_rows: torch.Tensor, y_rows: torch.Tensor, picked: torch.Tensor | None,
                      x_full: torch.Tensor | None, y_full: torch.Tensor | None, *, n: int,
                      eta: float | torch.Tensor, batch_size: int, shape: mlp.Shape, steps: int | None = None,
                      loss_sum: torch.Tensor | None = None) -> None:
    """One local iteration of every row of ``v`` (the active rows of a group of runs).

    ``epoch``: ``picked`` [rows, n] holds each row's shuffled sample indices into the samples
    ``x_rows`` [N * n, d] of all clients (its client's offset added), gathered once per epoch and
    cut into minibatches. ``steps`` (s): s minibatches of ``batch_size`` from the order, cycling
    through it when s x batch > n (else only its first s x batch samples are gathered).
    ``full_batch`` (``picked`` is None): one step on each row's own client data ``x_full`` [rows,
    n, d]. ``eta``: one step size, or [rows] of one per row. Each minibatch is one row gather
    (index_select is a plain row copy, far cheaper than take_along_dim) made just before its step, which
    reads it from the cache (one gather of the whole epoch made the step read it back from memory: 3-9%
    of the training at the calibrated MNIST reading's shapes, none at the paper's). ``loss_sum``
    [rows]: each row's minibatch losses are added to it (:func:`bladefl.fl.mlp.sgd_step`)."""
    if picked is None:
        assert x_full is not None and y_full is not None  # full batch: each row's own client data
        mlp.sgd_step(v, x_full, y_full, eta, shape, loss_sum)
        return
    rows, width = picked.shape[0], span(n, batch_size, steps)
    if width < n:
        picked = picked[:, :width]
    elif width > n:
        picked = picked[:, torch.arange(width, device=picked.device) % n]
    for start in range(0, width, batch_size):
        index = picked[:, start : start + batch_size].reshape(-1)
        xb = x_rows.index_select(0, index).view(rows, -1, x_rows.shape[1])
        mlp.sgd_step(v, xb, y_rows.index_select(0, index).view(rows, -1), eta, shape, loss_sum)


def train_local(
    flat: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    tau: int,
    *,
    eta: float,
    iteration: str,
    batch_size: int,
    shape: mlp.Shape,
    generator: torch.Generator,
    clients: torch.Tensor | None = None,
    population: int | None = None,
    steps: int | None = None,
) -> None:
    """Train every model row of ``flat`` [N, P] in place on x [N, n, d], y [N, n].

    With ``clients`` (ids of the rows among ``population`` clients), each epoch's order is drawn
    for the whole population and row i uses client ``clients[i]``'s order, so a client's
    minibatches do not depend on which other clients train beside it."""
    # Train on contiguous copies of the four parameter blocks, then write the result back once.
    params = mlp.views(flat, shape)
    v = mlp.contiguous_views(flat, shape)
    N, n, d = x.shape
    x_rows, y_rows = x.reshape(N * n, d), y.reshape(N * n)
    offsets = torch.arange(N, device=x.device).unsqueeze(1) * n
    for _ in range(tau):
        picked = None
        if iteration != "full_batch":
            order = epoch_order(generator, N if population is None else population, n)
            if clients is not None:
                order = order[clients.cpu()]
            picked = order.to(x.device) + offsets
        stacked_iteration(v, x_rows, y_rows, picked, x, y, n=n, eta=eta, batch_size=batch_size, shape=shape,
                          steps=steps if iteration == "steps" else None)
    for dst, src in ((params.W1, v.W1), (params.b1, v.b1), (params.W2, v.W2), (params.b2, v.b2)):
        if dst.data_ptr() != src.data_ptr():
            dst.copy_(src)
