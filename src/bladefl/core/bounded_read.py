"""Reading a file that may be hostile: only a regular file (a FIFO would block the reader forever,
``/dev/zero`` would fill memory), and at most a given size, checked before reading."""

from __future__ import annotations

import stat
from pathlib import Path


def read_regular(path: str | Path, limit: int, what: str) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes; else OSError naming
    ``what`` and the reason (missing, not a regular file, too large)."""
    info = Path(path).stat()  # FileNotFoundError as is
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"{what} {path} is not a regular file (a FIFO, device or folder is refused)")
    if info.st_size > limit:
        raise OSError(f"{what} {path} is {info.st_size} bytes, more than the {limit} any such file needs")
    with Path(path).open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:  # grew while being read
        raise OSError(f"{what} {path} is more than {limit} bytes")
    return data


__all__ = ["read_regular"]
