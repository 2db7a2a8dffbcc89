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


def eval_set(data: ClientData) -> EvalSet:
    x = torch.cat([data.x.reshape(data.N * data.n, -1), data.x_test])
    return EvalSet(x, torch.cat([data.y.reshape(-1), data.y_test]), data.N * data.n)


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
