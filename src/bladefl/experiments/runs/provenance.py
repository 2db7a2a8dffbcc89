"""What produced a result: code version, library versions, data checksums, host."""

from __future__ import annotations

import functools
import os
import platform
import subprocess
from pathlib import Path

from bladefl import __version__
from bladefl.data import datasets

# Set by whoever runs a copy of the source without its git history (the GPU script: the commit
# the copy was made from); recorded as the package version "+" this value.
VERSION_VARIABLE = "BLADEFL_CODE_VERSION"


def project_root() -> Path:
    """The folder this package's source lies in when it is a checkout of this project (src layout)."""
    import bladefl

    return Path(bladefl.__file__).resolve().parents[2]  # <root>/src/bladefl/__init__.py


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """The package version plus ``git describe`` of this project's own checkout (its root holds
    ``.git`` and this project's ``pyproject.toml``), else plus ``$BLADEFL_CODE_VERSION``, else the
    package version alone. Never the commit of another repository that happens to enclose a copy
    of the source. Computed once per process."""
    given = os.environ.get(VERSION_VARIABLE, "").strip()
    if given:
        return f"{__version__}+{given}"
    root = project_root()
    pyproject = root / "pyproject.toml"
    ours = (root / ".git").exists() and pyproject.is_file() and 'name = "bladefl"' in pyproject.read_text()
    if ours:
        try:
            out = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty", "--tags"],
                                 capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                return f"{__version__}+{out.stdout.strip()}"
        except (OSError, subprocess.TimeoutExpired):
            pass
    return __version__


def _read(dataset: str, data_dir: str) -> dict[str, str] | None:
    try:
        return datasets.read_checksums(dataset, data_dir)
    except FileNotFoundError:
        return None


@functools.lru_cache(maxsize=4)
def device_name(device: str = "auto") -> str:
    """The accelerator a run config's ``device`` (auto | cpu | cuda) computes on, by name: the GPU's
    name (``NVIDIA H100 80GB HBM3``), else ``cpu`` and the processor's architecture."""
    import torch

    from bladefl.fl.client_data import resolve_device  # the one place "auto" is resolved

    resolved = resolve_device(device)
    if resolved.type == "cuda":
        return torch.cuda.get_device_name(resolved.index if resolved.index is not None else torch.cuda.current_device())
    return f"cpu ({platform.machine()})"


def record(dataset: str, data_dir: str | None = None, device: str = "auto") -> dict:
    """What produced a run: code and library versions, host, the device (by name), SLURM job, and
    the SHA-256 of the data files actually read under ``data_dir`` (the pinned values when no
    folder is given; None where there are no files: data made in memory, as the tests do)."""
    import torch

    return {
        "code_version": code_version(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "host": platform.node(),
        "device": device_name(device),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "data_sha256": datasets.checksums(dataset) if data_dir is None else _read(dataset, data_dir),
    }
