"""The shape of a client's model (a d-h-10 perceptron, d the dataset's pixels) and its parameter count,
without torch: what a table, a verdict or a report page needs to know of the model (the noise norm sigma sqrt(P) of
a lazy upload over its P parameters)."""

from __future__ import annotations

from dataclasses import dataclass

from bladefl.data.datasets import get_spec


@dataclass(frozen=True)
class Shape:
    d: int  # the input size: the dataset's pixels (bladefl.data.datasets.DatasetSpec.pixels)
    h: int = 256
    c: int = 10
    activation: str = "relu"

    @property
    def size(self) -> int:
        return self.d * self.h + self.h + self.h * self.c + self.c


def parameters_on(dataset: str, hidden: int) -> int:
    """P, the parameters of the pixels-hidden-10 model on ``dataset``: what a lazy upload's noise norm
    sigma sqrt(P) is over."""
    return Shape(d=get_spec(dataset).pixels, h=hidden).size
