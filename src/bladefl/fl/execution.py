"""How a computation is carried out, decided once: the device, whether runs are stacked, how many
rows a computation and a step hold, and the threads and processes beside it. None of it changes a
result (tests: stacked, in blocks, with worker processes or not, a run gives the same numbers).

The CLI resolves one :class:`Execution` from the device and its options
(:func:`resolve`) and passes it to the runner, which passes it to the engine."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

import torch

# Training rows per stacked computation (a batch of whole cells): bounds the device memory.
MAX_ROWS = 4096

# On the CPU, rows step in blocks of this many: measured on the 2-core machine (paper model,
# epoch at batch 64, one thread), ms per row-iteration at 144 stacked rows: blocks of 8: 3.9,
# 16: 4.0, 32: 4.6, 144 (all): 5.2; 16 rows of one run alone: 4.2.
CPU_BLOCK_ROWS = 16

# Threads drawing epoch orders and round-end noise beside a GPU's training (on the CPU the
# training uses the cores).
DRAW_THREADS = 4


def default_chain_processes(stacked: bool) -> int:
    """Worker processes for the chain: half the cores when many runs are stacked (a GPU, where the
    thread driving the training must not wait for the GIL), none for one run at a time."""
    return max(1, (os.cpu_count() or 2) // 2) if stacked else 0


@dataclass(frozen=True)
class Execution:
    """``block_rows`` 0: every active row steps at once. ``torch_threads`` None: torch's default."""

    device: str = "cpu"
    stack: bool = False
    max_rows: int = MAX_ROWS
    block_rows: int = CPU_BLOCK_ROWS
    torch_threads: int | None = None
    chain_threads: int = 2
    chain_processes: int = 0
    draw_threads: int = 0
    host_buffers: bool = False  # the round ends' host copies into buffers kept across round ends (an option)

    @property
    def cuda(self) -> bool:
        return torch.device(self.device).type == "cuda"

    def rows_per_step(self, active: int) -> int:
        return self.block_rows or active

    def with_(self, **changes: Any) -> Execution:
        return replace(self, **changes)

    def apply(self) -> None:
        """Set what is process-wide (torch's threads)."""
        if self.torch_threads:
            torch.set_num_threads(self.torch_threads)


def resolve(device: str | torch.device = "cpu", *, threads: int | None = None, stack: bool | None = None,
            max_rows: int | None = None, block_rows: int | None = None, chain_processes: int | None = None,
            draw_threads: int | None = None, host_buffers: bool | None = None) -> Execution:
    """The settings for ``device`` (``"auto"``: a GPU when there is one): by default runs are
    stacked on a GPU (one launch for many models) and computed one at a time on the CPU (where
    more rows no longer fit the cache); on a GPU every row steps at once, on the CPU in blocks of
    :data:`CPU_BLOCK_ROWS`; ``threads`` sets torch's threads and the chain's threads; the chain's
    GIL-bound part runs in :func:`default_chain_processes` worker processes when stacked; orders
    and noise are drawn by :data:`DRAW_THREADS` threads on a GPU; the round ends copy into pinned
    memory taken for each (torch's host allocator keeps it) unless ``host_buffers`` asks for buffers
    kept across round ends (slower on an H200: docs/gpu.md). Any option given wins."""
    name = str(device)
    if name == "auto":
        from bladefl.fl.client_data import resolve_device  # the one place "auto" is resolved

        name = resolve_device(name).type
    cuda = torch.device(name).type == "cuda"
    stacked = cuda if stack is None else stack
    return Execution(
        device=name, stack=stacked, max_rows=MAX_ROWS if max_rows is None else max_rows,
        block_rows=(0 if cuda else CPU_BLOCK_ROWS) if block_rows is None else block_rows,
        torch_threads=threads, chain_threads=max(1, threads or 2),
        chain_processes=default_chain_processes(stacked) if chain_processes is None else chain_processes,
        draw_threads=(DRAW_THREADS if cuda else 0) if draw_threads is None else draw_threads,
        host_buffers=bool(host_buffers))
