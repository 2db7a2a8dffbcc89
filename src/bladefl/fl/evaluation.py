"""The global models' training loss F(w), test loss and test accuracy, and their loss and accuracy on
the authors' client test subsets (:mod:`bladefl.fl.client_test`), many models at once (the runs
ending a round): one pass over the clients' samples and the test set together."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from bladefl.fl import mlp
from bladefl.fl.client_data import ClientData

# Bytes of hidden activations one pass may hold (models x samples x hidden x 4): bounds how many
# models are evaluated together.
EVAL_BYTES = 512 * 2**20


@dataclass(frozen=True)
class EvalSet:
    """Every client's samples, then the test set, as one sample set [S, d] (``train`` of them the
    clients')."""

    x: torch.Tensor
    y: torch.Tensor
    train: int
    subsets: torch.Tensor | None = None  # the client test subsets' samples, flat: positions among the test set's


def eval_set(data: ClientData, draw: int = 0, subsets: np.ndarray | None = None) -> EvalSet:
    """Draw ``draw``'s clients' samples and the test set (and the draw's client test subsets, [N, m]
    indices into the test set, where given)."""
    x = torch.cat([data.draw_x(draw).reshape(data.N * data.n, -1), data.x_test])
    flat = None if subsets is None else torch.as_tensor(subsets.reshape(-1), device=x.device)
    return EvalSet(x, torch.cat([data.draw_y(draw).reshape(-1), data.y_test]), data.N * data.n, flat)


class EvalSets:
    """Each partition draw's evaluation set (:func:`eval_set`), made when first needed; ``subsets``
    gives a draw's client test subsets (None: none)."""

    def __init__(self, data: ClientData, subsets: Callable[[int], np.ndarray | None] | None = None) -> None:
        self.data = data
        self.subsets = subsets
        self._sets: dict[int, EvalSet] = {}

    def get(self, draw: int) -> EvalSet:
        if draw not in self._sets:
            self._sets[draw] = eval_set(self.data, draw, None if self.subsets is None else self.subsets(draw))
        return self._sets[draw]


def evaluate_draws(models: torch.Tensor, groups: list[tuple[int, torch.Tensor]], sets: EvalSets, shape: mlp.Shape
                   ) -> tuple[torch.Tensor, ...]:
    """:func:`evaluate` of R models [R, P] whose runs train on several partition draws: ``groups``
    lists each draw with the positions of its models; each group is evaluated on its own draw's
    clients (and the shared test set), the results put back in the models' order."""
    if len(groups) == 1:
        return evaluate(models, sets.get(groups[0][0]), shape)
    out = [torch.empty(models.shape[0], device=models.device) for _ in range(len(METRICS))]
    for draw, where in groups:
        for target, part in zip(out, evaluate(models.index_select(0, where), sets.get(draw), shape), strict=True):
            target.index_copy_(0, where, part)
    return tuple(out)


# What :func:`evaluate` returns, in order (the round's record fields of the same names).
METRICS = ("train_loss", "test_loss", "test_accuracy", "client_test_loss", "client_test_accuracy")


def evaluate(models: torch.Tensor, samples: EvalSet, shape: mlp.Shape) -> tuple[torch.Tensor, ...]:
    """The :data:`METRICS` of R flat models [R, P], each [R]: F(w) is the mean over clients of each
    client's loss on its own data (every client holds n samples, so the mean over all its samples);
    the client test subsets' loss and accuracy are the means over clients of each client's on its
    subset (all the same size: the means over their samples), NaN without subsets. Computed together
    (:func:`bladefl.fl.mlp.shared_logits`, as many models at a time as :data:`EVAL_BYTES` allows);
    tensors on the models' device (no synchronisation)."""
    chunk = max(1, EVAL_BYTES // (samples.x.shape[0] * shape.h * 4))
    out: list[list[torch.Tensor]] = [[] for _ in METRICS]
    for part in models.split(chunk):
        logits = mlp.shared_logits(part, samples.x, shape)
        target = samples.y.unsqueeze(0).expand(part.shape[0], -1)
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target, reduction="none")
        test_loss = loss[:, samples.train :]
        hits = (logits[:, samples.train :].argmax(dim=2) == target[:, samples.train :]).float()
        values = [loss[:, : samples.train].mean(dim=1), test_loss.mean(dim=1), hits.mean(dim=1)]
        if samples.subsets is None:
            values += [torch.full_like(values[0], float("nan"))] * 2
        else:
            values += [test_loss.index_select(1, samples.subsets).mean(dim=1),
                       hits.index_select(1, samples.subsets).mean(dim=1)]
        for target_list, value in zip(out, values, strict=True):
            target_list.append(value)
    return tuple(torch.cat(v) for v in out)
