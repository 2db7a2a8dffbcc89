"""Report notebooks executed by papermill, each on a kernel of its own that talks over Unix sockets
in a private temporary folder rather than TCP ports.

Why not papermill's default: a kernel's five TCP ports are picked by binding port 0 and closing it
again before the kernel binds them, so two kernels started at once on one machine (two report jobs,
``--cores 2``) can be handed the same port; one then dies before it answers ("Kernel died before
replying to kernel_info") and its page fails at random. Sockets in a folder no other kernel uses
cannot collide.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# A Unix socket's path must fit in sun_path (108 bytes with its NUL); a kernel's sockets are named
# "<folder>/kernel-<n>", so the folder's path is kept well below that.
_MAX_SOCKET_FOLDER = 80


def socket_parent() -> str:
    """The folder to make the kernel's socket folder in: the system's temporary folder, or ``/tmp``
    where that path is too long for a socket (some clusters set ``TMPDIR`` deep in a job folder)."""
    base = tempfile.gettempdir()
    return base if len(base) <= _MAX_SOCKET_FOLDER - 24 else "/tmp"


def page_outputs(executed: str | os.PathLike[str], page: str | os.PathLike[str]) -> tuple[Path, Path]:
    """A page's two outputs checked before its kernel starts: the executed notebook an ``.ipynb`` path and
    the page an ``.html`` path, each writable (:func:`bladefl.core.atomic.check_writable`); ValueError
    naming the option otherwise."""
    from bladefl.core import atomic

    for option, path, suffix in (("--executed", executed, ".ipynb"), ("--out", page, ".html")):
        if Path(path).suffix != suffix:
            raise ValueError(f"{option} must be a {suffix} path (got {str(path)[:80]!r})")
    return atomic.check_writable(executed), atomic.check_writable(page)


def execute_notebook(notebook: str | os.PathLike[str], executed: str | os.PathLike[str],
                     parameters: Mapping[str, Any], *, progress_bar: bool = True,
                     start_timeout: int = 60) -> Path:
    """Run ``notebook`` with ``parameters`` injected (papermill) into ``executed``, on a fresh
    ``python3`` kernel with IPC transport in a private folder removed afterwards. A failing cell
    raises papermill's ``PapermillExecutionError`` (the executed notebook shows where)."""
    import papermill
    from traitlets.config import Config

    with tempfile.TemporaryDirectory(prefix="bladefl-kernel-", dir=socket_parent()) as folder:
        config = Config({"KernelManager": {"transport": "ipc", "ip": str(Path(folder) / "kernel")}})
        papermill.execute_notebook(str(notebook), str(executed), parameters=dict(parameters), kernel_name="python3",
                                   progress_bar=progress_bar, start_timeout=start_timeout, config=config)
    return Path(executed)


__all__ = ["execute_notebook", "page_outputs", "socket_parent"]
