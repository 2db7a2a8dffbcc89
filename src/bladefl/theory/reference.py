"""The reference optimum w* for the bound: one model trained on the union of the clients'
data until the full-batch loss stops improving, and F* = F(w*) (the mean over clients of
each client's loss on its own data, the paper's global loss)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bladefl.fl import mlp, trainer


@dataclass
class Reference:
    w_star: torch.Tensor
    f_star: float
    epochs: int
    history: list[float]  # full-batch training loss after each epoch


def train_reference(x: torch.Tensor, y: torch.Tensor, shape: mlp.Shape, w0: torch.Tensor, *, eta: float = 0.05,
                    batch_size: int = 64, max_epochs: int = 300, tol: float = 1e-4, patience: int = 5,
                    generator: torch.Generator) -> Reference:
    """x [N, n, d], y [N, n]: the clients' data, pooled into one training set."""
    N, n, d = x.shape
    pooled_x, pooled_y = x.reshape(1, N * n, d), y.reshape(1, N * n)
    flat = w0.unsqueeze(0).clone()
    history: list[float] = []
    best, best_w, stale = float("inf"), flat[0].clone(), 0
    for _ in range(max_epochs):
        trainer.train_local(flat, pooled_x, pooled_y, 1, eta=eta, iteration="epoch", batch_size=batch_size,
                            shape=shape, generator=generator)
        loss = mlp.losses(mlp.views(flat.expand(N, -1), shape), x, y, shape).mean().item()
        history.append(loss)
        stale = 0 if loss < best - tol else stale + 1
        if loss < best:
            best, best_w = loss, flat[0].clone()
        if stale >= patience:
            break
    return Reference(w_star=best_w, f_star=best, epochs=len(history), history=history)


def save(ref: Reference, path, meta: dict) -> None:  # noqa: ANN001 - str | Path
    """``<path>`` (.npz: w_star, history) and ``<path>.json`` beside it (F*, epochs, meta)."""
    import io
    from pathlib import Path

    import numpy as np

    from bladefl.core import atomic

    buf = io.BytesIO()
    np.savez(buf, w_star=ref.w_star.cpu().numpy(), history=np.asarray(ref.history))
    atomic.write_bytes(path, buf.getvalue())
    atomic.write_json(Path(path).with_suffix(".json"), {"f_star": ref.f_star, "epochs": ref.epochs, **meta})


def load(path) -> Reference:  # noqa: ANN001 - str | Path
    import json
    from pathlib import Path

    import numpy as np

    with np.load(path) as z:
        w_star, history = torch.from_numpy(z["w_star"]), z["history"].tolist()
    info = json.loads(Path(path).with_suffix(".json").read_text())
    return Reference(w_star=w_star, f_star=float(info["f_star"]), epochs=int(info["epochs"]), history=history)
