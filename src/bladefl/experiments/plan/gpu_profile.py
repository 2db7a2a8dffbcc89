"""What ``profiles/gpu`` promises, kept where a user's ``--config`` cannot erase it.

Snakemake replaces a profile's ``config:`` list with the command line's ``--config``, so a promise
kept there (``grouping: partition``) is lost to ``--config results_dir=x``. The profile declares a
``gpu`` resource instead (``resources: [gpu=1]``), and the workflow reads its grouping from that:
``grouping: partition`` wherever a ``gpu`` resource is declared, unless the config names a grouping.
On a machine without a GPU the profile's grouped jobs would run the whole grid on the CPU with
every core, without a word: that is refused, unless ``gpu_profile_on_cpu: true`` asks for it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

FLAG = "gpu_profile_on_cpu"


def grouping(config: Mapping[str, Any], gpu_resource: bool) -> str:
    """The config's ``grouping``; without one, ``partition`` under a declared ``gpu`` resource, else ``cell``."""
    return str(config.get("grouping") or ("partition" if gpu_resource else "cell"))


def cuda_visible() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def refusal(config: Mapping[str, Any], gpu_resource: bool,
            gpu_visible: Callable[[], bool] = cuda_visible) -> str | None:
    """One line when the GPU profile would run its grouped jobs on a machine without a GPU; None
    when it may run (the workflow asks before a real run's first job: a dry run plans anywhere)."""
    if not gpu_resource or config.get(FLAG) or grouping(config, gpu_resource) != "partition":
        return None
    if gpu_visible():
        return None
    return (f"profiles/gpu: this machine has no GPU (torch finds no CUDA device), so its grouped jobs would run "
            f"the whole grid on the CPU with every core; run without --profile profiles/gpu, or give --config "
            f"{FLAG}=True to run them on the CPU anyway")
