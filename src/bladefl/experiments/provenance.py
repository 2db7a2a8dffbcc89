"""What produced a result: code version, library versions, data checksums, host."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

from bladefl import __version__
from bladefl.data import datasets


def code_version() -> str:
    """``git describe`` of the source tree when it is a checkout, else the package version."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--tags"], cwd=here,
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return f"{__version__}+{out.stdout.strip()}"
    except (OSError, subprocess.TimeoutExpired):
        pass
    return __version__


def record(dataset: str) -> dict:
    import torch

    return {
        "code_version": code_version(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "host": platform.node(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "data_sha256": datasets.checksums(dataset),
    }
