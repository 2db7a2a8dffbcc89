"""The calibration study's journal file kept whole across a torn write: Optuna's journal is one JSON
record a line, appended under a lock, so a worker killed mid-write (or a full disk) can leave a last line
cut before its newline, or padding; a new record appended onto it would make the whole journal unreadable.
Before a worker opens the study, :func:`set_aside_torn_tail` moves such an end beside the journal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import BinaryIO

from optuna.storages.journal import JournalFileOpenLock

from bladefl.core import atomic


def _last_line_start(handle: BinaryIO, end: int) -> int:
    """Where the journal's last line (the bytes after its last newline before ``end``) starts."""
    chunk, pos = 1 << 16, end
    while pos > 0:
        start = max(0, pos - chunk)
        handle.seek(start)
        cut = handle.read(pos - start).rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        pos = start
    return 0


def set_aside_torn_tail(storage: str | Path) -> Path | None:
    """A journal's torn end set aside, under the journal's own lock (no worker is writing then): a last
    line cut before its newline (a worker killed mid-write, a full disk) or one that is not a JSON record
    (padding) is moved to ``<journal>.torn-<n>`` beside it and the journal truncated to its last whole
    record, so that a new record is never appended onto a cut one; returns the file set aside (None: the
    journal ends with a whole record, or is missing)."""
    path = Path(storage)
    if not path.is_file():
        return None
    lock = JournalFileOpenLock(str(path))
    lock.acquire()
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            keep = size
            while keep > 0:
                handle.seek(keep - 1)
                whole = handle.read(1) == b"\n"
                start = _last_line_start(handle, keep - 1 if whole else keep)
                handle.seek(start)
                line = handle.read(keep - start)
                try:
                    if whole and isinstance(json.loads(line), dict):
                        break  # the journal ends with a whole record
                except ValueError:
                    pass
                keep = start
            if keep == size:
                return None
            handle.seek(keep)
            tail = handle.read()
        aside = next(path.with_name(f"{path.name}.torn-{i}") for i in range(1, 10_000)
                     if not path.with_name(f"{path.name}.torn-{i}").exists())
        atomic.write_bytes(aside, tail)
        with path.open("r+b") as handle:
            handle.truncate(keep)
        return aside
    finally:
        lock.release()


__all__ = ["set_aside_torn_tail"]
