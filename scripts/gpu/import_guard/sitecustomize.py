"""An import guard that makes this Python import only what the GPU machine's Python can: the standard
library and the top-level modules listed in the file named by ``BLADEFL_IMPORT_GUARD`` (written by
``scripts/gpu/closure.py --modules``: the machine's packages, the carried ones, bladefl). Any other
import fails as it would there (ModuleNotFoundError, which code that probes optional packages expects),
and the refusal is logged to ``$BLADEFL_IMPORT_GUARD.refused``, one name a line, so that a test can
tell a module probed and absent from one a step needed.

Put this folder on PYTHONPATH with the variable set (tests/test_gpu_script.py runs scripts/gpu/run.sh so):
every Python the script starts (Snakemake, its jobs, the bladefl commands) inherits both."""
import importlib.abc
import os
import sys

_LIST = os.environ.get("BLADEFL_IMPORT_GUARD", "")


class _Guard(importlib.abc.MetaPathFinder):
    def __init__(self, allowed: set[str], log: str) -> None:
        self.allowed = allowed
        self.log = log

    def find_spec(self, fullname, path=None, target=None):  # noqa: ANN001, ANN202 - the finder protocol
        top = fullname.partition(".")[0]
        if path is not None or top in self.allowed or top in sys.stdlib_module_names or top.startswith("_"):
            return None  # a submodule, or an allowed top-level module: the other finders find it
        try:
            with open(self.log, "a") as out:
                out.write(f"{top}\n")
        except OSError:
            pass
        raise ModuleNotFoundError(f"No module named {top!r} (not on the GPU machine: scripts/gpu/closure.py)",
                                  name=top)


def _hide_from_listings(guard: _Guard) -> None:
    """``pkgutil.iter_modules()`` (how Snakemake finds its plugins) lists only the modules the machine has."""
    import pkgutil

    listed = pkgutil.iter_modules

    def iter_modules(path=None, prefix=""):  # noqa: ANN001, ANN202 - pkgutil's signature
        for info in listed(path, prefix):
            top = info.name.partition(".")[0]
            if path is not None or top in guard.allowed or top in sys.stdlib_module_names or top.startswith("_"):
                yield info

    pkgutil.iter_modules = iter_modules


if _LIST:
    with open(_LIST) as names:
        _allowed = {line.strip() for line in names if line.strip()}
    _guard = _Guard(_allowed, _LIST + ".refused")
    sys.meta_path.insert(0, _guard)
    _hide_from_listings(_guard)
