"""The global models' training loss F(w), test loss and test accuracy, many models at once (the
runs ending a round): one pass over the clients' samples and the test set together."""

from __future__ import annotations

from dataclasses import dataclass

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


def eval_set(data: ClientData, draw: int = 0) -> EvalSet:
    """Draw ``draw``'s clients' samples and the test set."""
    x = torch.cat([data.draw_x(draw).reshape(data.N * data.n, -1), data.x_test])
    return EvalSet(x, torch.cat([data.draw_y(draw).reshape(-1), data.y_test]), data.N * data.n)


class EvalSets:
    """Each partition draw's evaluation set (:func:`eval_set`), made when first needed."""

    def __init__(self, data: ClientData) -> None:
        self.data = data
        self._sets: dict[int, EvalSet] = {}

    def get(self, draw: int) -> EvalSet:
        if draw not in self._sets:
            self._sets[draw] = eval_set(self.data, draw)
        return self._sets[draw]


def evaluate_draws(models: torch.Tensor, groups: list[tuple[int, torch.Tensor]], sets: EvalSets, shape: mlp.Shape
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`evaluate` of R models [R, P] whose runs train on several partition draws: ``groups``
    lists each draw with the positions of its models; each group is evaluated on its own draw's
    clients (and the shared test set), the results put back in the models' order."""
    if len(groups) == 1:
        return evaluate(models, sets.get(groups[0][0]), shape)
    out = [torch.empty(models.shape[0], device=models.device) for _ in range(3)]
    for draw, where in groups:
        for target, part in zip(out, evaluate(models.index_select(0, where), sets.get(draw), shape), strict=True):
            target.index_copy_(0, where, part)
    return out[0], out[1], out[2]


def evaluate(models: torch.Tensor, samples: EvalSet, shape: mlp.Shape
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(F(w) [R], test loss [R], test accuracy [R]) of R flat models [R, P]: F(w) is the mean
    over clients of each client's loss on its own data (every client holds n samples, so the mean
    over all its samples). Computed together (:func:`bladefl.fl.mlp.shared_logits`, as many
    models at a time as :data:`EVAL_BYTES` allows); tensors on the models' device (no
    synchronisation)."""
    chunk = max(1, EVAL_BYTES // (samples.x.shape[0] * shape.h * 4))
    train, test, accuracy = [], [], []
    for part in models.split(chunk):
        logits = mlp.shared_logits(part, samples.x, shape)
        target = samples.y.unsqueeze(0).expand(part.shape[0], -1)
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target, reduction="none")
        train.append(loss[:, : samples.train].mean(dim=1))
        test.append(loss[:, samples.train :].mean(dim=1))
        hits = logits[:, samples.train :].argmax(dim=2) == target[:, samples.train :]
        accuracy.append(hits.float().mean(dim=1))
    return torch.cat(train), torch.cat(test), torch.cat(accuracy)
