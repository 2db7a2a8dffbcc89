"""Atomic file writes: write to a temporary sibling, flush it to disk, then rename.

A reader (or a restarted workflow) never sees a half-written file under the final name, and a
renamed file survives a power loss (the data and the directory entry are fsynced). Files get the
mode an ordinary ``open`` would give them (0666 less the umask: 0644 under umask 022), so
colleagues on a shared file system can read the results.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bladefl.core.errors import BladeflError


def current_umask() -> int:
    """The process's umask, read without changing it where the kernel reports it."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)  # no /proc: read by setting and restoring
    os.umask(mask)
    return mask


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class NotAFileError(BladeflError):
    """An atomic write's target that is neither absent nor a regular file (a device, a FIFO, a socket, a
    folder): replacing it would destroy what is there (as root, ``/dev/full`` became a JSON file)."""


def refuse_special(path: Path) -> None:
    """Raise :class:`NotAFileError` when ``path`` exists and is not a regular file (a link to one is
    followed: its target is what a write replaces)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise NotAFileError(f"{path}: cannot be written ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise NotAFileError(f"{path}: exists and is not a regular file (a device, FIFO, socket or folder is "
                            "never replaced); give a file's path")


def check_writable(path: str | os.PathLike[str], folder: bool = False) -> Path:
    """``path`` (a file, or a ``folder``) checked before any work as a write will take it: a name, not a
    special file (:func:`refuse_special`) nor the other kind, and no file on its way (its nearest existing
    parent a folder); :class:`NotAFileError` otherwise. Nothing is created."""
    final = Path(path)
    if not str(path) or not final.name:
        raise NotAFileError(f"{str(path)!r}: names no {'folder' if folder else 'file'} to write")
    if folder:
        if final.exists() and not final.is_dir():
            raise NotAFileError(f"{final}: exists and is not a folder; nothing written")
    else:
        refuse_special(final)
    parent = final.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise NotAFileError(f"{final}: cannot be written ({parent} is not a folder)")
    return final


def plain_folder(folder: str | os.PathLike[str]) -> Path:
    """``folder`` when no link lies on its way (its real path is its absolute path), checked at the
    moment of a write; NotAFileError otherwise (a link made after a page's folders were checked would
    send its files elsewhere)."""
    folder = Path(folder)
    if os.path.realpath(folder) != os.path.abspath(folder):
        raise NotAFileError(f"{folder}: a link lies on its way (its real path is {os.path.realpath(folder)}); "
                            "nothing written")
    return folder


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success give it the umask's mode, fsync it,
    rename it onto ``path`` and fsync the directory. On failure remove it."""
    final = Path(path)
    refuse_special(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~current_umask())
        _fsync(tmp_path)
        os.replace(tmp_path, final)
        _fsync(final.parent)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_bytes(path: str | os.PathLike[str], data: bytes | memoryview) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_csv(path: str | os.PathLike[str], frame: Any, float_format: str | None = None) -> None:
    """A pandas DataFrame as CSV (no index; floats at ``float_format``, e.g. ``"%.10g"``, else in full)."""
    write_text(path, frame.to_csv(index=False, float_format=float_format))


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def write_logged(path: str | os.PathLike[str], text: str, log: str | os.PathLike[str]) -> None:
    """Write ``path`` (atomically) and say so in ``log`` (a workflow rule's log file)."""
    write_text(path, text)
    write_text(log, f"wrote {os.fspath(path)} ({len(text.encode())} bytes)\n")


def write_yaml_logged(path: str | os.PathLike[str], values: Any, log: str | os.PathLike[str]) -> None:
    """``values`` as YAML (keys in their order) to ``path``, said in ``log``."""
    import yaml

    write_logged(path, yaml.safe_dump(values, sort_keys=False), log)
