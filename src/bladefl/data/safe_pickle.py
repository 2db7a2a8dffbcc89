"""Pickles from elsewhere read as data: an unpickler that admits only what pickled numpy arrays need
(the registry's ``mnist.pkl.gz``, Cifar-10's python batches), so a file that names any other class or
function is refused before anything of it runs."""

from __future__ import annotations

import io
import pickle

import numpy as np


class _NumpyOnlyUnpickler(pickle.Unpickler):
    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
    }

    def find_class(self, module: str, name: str) -> object:
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(f"refusing to unpickle {module}.{name}")
        if name == "_reconstruct":
            from numpy._core.multiarray import _reconstruct

            return _reconstruct
        return getattr(np, name)


def restricted_unpickle(data: bytes):  # noqa: ANN201 - returns whatever the pickle holds
    """The pickle's value (Python 2 pickles read as latin-1); a pickle naming anything but numpy's
    array reconstruction is an ``UnpicklingError``."""
    return _NumpyOnlyUnpickler(io.BytesIO(data), encoding="latin1").load()
