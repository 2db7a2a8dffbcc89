"""Host buffers for the round ends' copies to the chain, kept across round ends.

On a GPU the uploads of every run ending a round (and their new global models) go to the host for
the chain's hashing and signing. Allocating pinned memory for each round end costs more than the
copy itself (``cudaHostAlloc`` of hundreds of MB); so a group keeps ``depth`` buffers, sized once
for its largest round end and allocated at its first: a round end takes a free one, and gives it
back when every chain job of that round end has read its uploads (:class:`Lease`). When every
buffer is still being read the round end waits for one (the chain's backpressure); no buffer is
allocated after the first round end, which :attr:`HostBuffers.allocations` lets a test count.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import torch

DEPTH = 3  # round ends whose uploads the chain may still be reading while the training goes on


class HostBuffers:
    """``depth`` flat host buffers of ``numel`` float32 each (pinned with ``pin``), made at the first
    :meth:`take`."""

    def __init__(self, numel: int, pin: bool, depth: int = DEPTH) -> None:
        self.numel, self.pin, self.depth = numel, pin, depth
        self.allocations = 0
        self._free: list[torch.Tensor] = []
        self._made = False
        self._cond = threading.Condition()

    def _make(self) -> None:
        for _ in range(self.depth):
            self._free.append(torch.empty(self.numel, dtype=torch.float32, pin_memory=self.pin))
            self.allocations += 1
        self._made = True

    def take(self, numel: int) -> torch.Tensor:
        """A free flat buffer of at least ``numel`` entries (waits while every buffer is in use)."""
        if numel > self.numel:
            raise ValueError(f"a round end needs {numel} host entries, the buffers hold {self.numel}")
        with self._cond:
            if not self._made:
                self._make()
            while not self._free:
                self._cond.wait()
            return self._free.pop()

    def give(self, buffer: torch.Tensor) -> None:
        with self._cond:
            self._free.append(buffer)
            self._cond.notify()


@dataclass
class Lease:
    """A taken buffer given back when its ``users`` (the chain jobs reading it) are all done."""

    pool: HostBuffers
    buffer: torch.Tensor
    users: int
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def done(self) -> None:
        with self._lock:
            self.users -= 1
            last = self.users == 0
        if last:
            self.pool.give(self.buffer)


__all__ = ["DEPTH", "HostBuffers", "Lease"]
