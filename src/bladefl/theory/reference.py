"""The reference optimum w* for the bound: one model trained on the union of the clients'
data until the full-batch loss stops improving, and F* = F(w*) (the mean over clients of
each client's loss on its own data, the paper's global loss)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


MAX_BYTES = 64 * 2**20  # a reference optimum of the largest model the configs allow is a few MB


def load(path, size: int | None = None) -> Reference:  # noqa: ANN001 - str | Path
    """A reference optimum written by ``save``, checked as a file from elsewhere: a regular .npz of
    at most ``MAX_BYTES`` with the arrays ``w_star`` (finite floats, ``size`` of them when given: the
    model's parameter count) and ``history``, no pickled objects, and its ``.json`` beside it with a
    finite ``f_star`` and a whole ``epochs``; ValueError naming the field otherwise."""
    from pathlib import Path

    from bladefl.core.bounded_read import read_regular

    arrays = _arrays(read_regular(path, MAX_BYTES, "reference optimum"), size, str(path))
    side = Path(path).with_suffix(".json")
    return _reference(arrays, read_regular(side, 2**20, "reference optimum's record"), str(side))


def parse(raw: bytes, record_raw: bytes, size: int | None = None, where: str = "reference optimum",
          side: str = "its record") -> Reference:
    """A reference optimum from the bytes of its .npz (``raw``) and of its .json record, checked as
    :func:`load` checks the files (``where`` and ``side`` name them in the messages)."""
    return _reference(_arrays(raw, size, where), record_raw, side)


def _arrays(raw: bytes, size: int | None, where: str) -> dict:
    import io
    import zipfile

    import numpy as np

    if not raw.startswith(b"PK"):  # an .npz is a zip archive; anything else is no reference optimum
        raise ValueError(f"reference optimum {where}: not an .npz (a zip archive) of `bladefl reference`")
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            arrays = {k: z[k] for k in ("w_star", "history") if k in z.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"reference optimum {where}: not an .npz of `bladefl reference` ({str(exc)[:80]})") from None
    for key in ("w_star", "history"):
        a = arrays.get(key)
        if a is None or a.ndim != 1 or a.dtype.kind not in "fi" or not np.isfinite(a).all():
            raise ValueError(f"reference optimum {where}: field {key!r} must be a 1-D array of finite numbers")
    if size is not None and arrays["w_star"].size != size:
        raise ValueError(f"reference optimum {where}: field 'w_star' has {arrays['w_star'].size} parameters, "
                         f"the run's model {size} (a reference of another model or hidden width)")
    return arrays


def _reference(arrays: dict, record_raw: bytes, side: str) -> Reference:
    import json

    import numpy as np

    from bladefl.core.run_files import no_key_twice
    from bladefl.core.values import is_finite, is_int

    try:
        info = json.loads(record_raw.decode("utf-8"), object_pairs_hook=no_key_twice)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"{side}: not valid JSON ({str(exc)[:80]})") from None
    record: dict[str, Any] = info if isinstance(info, dict) else {}
    f_star: Any = record.get("f_star")
    epochs: Any = record.get("epochs")
    if not is_finite(f_star):
        raise ValueError(f"{side}: field 'f_star' must be a finite number")
    if not is_int(epochs) or epochs < 0:
        raise ValueError(f"{side}: field 'epochs' must be a whole number >= 0")
    w_star = torch.from_numpy(arrays["w_star"].astype(np.float32))
    return Reference(w_star=w_star, f_star=float(f_star), epochs=epochs, history=arrays["history"].tolist())
