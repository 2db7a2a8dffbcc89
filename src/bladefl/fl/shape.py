"""The shape of a client's model (784-h-10 perceptron) and its parameter count, without torch: what
a table, a verdict or a report page needs to know of the model (the noise norm sigma sqrt(P) of
a lazy upload over its P parameters)."""

from __future__ import annotations

from dataclasses import dataclass

from bladefl.data.datasets import PIXELS


@dataclass(frozen=True)
class Shape:
    d: int = PIXELS  # the registry's input size (bladefl.data.datasets)
    h: int = 256
    c: int = 10
    activation: str = "relu"

    @property
    def size(self) -> int:
        return self.d * self.h + self.h + self.h * self.c + self.c
