"""The code's record that a run's code version rests on, written by prepare.sh and checked by run.sh.

With no argument: the SHA-256 of each file of the code among those named on standard input (NUL-separated
paths, relative to the checkout's root), one ``<digest>  <path>`` line each, sorted by path: the format
``sha256sum --check`` reads (gpu_carry/SOURCE.sha256). The code is what decides a run's results: the
files under ``CODE``, less what git ignores there (``IGNORED``: Python's caches, a job's logs and
benchmarks, the measured profiles). A name that is not a regular file, or that holds a newline or a
backslash (which sha256sum would escape), is left out.

With ``--added RECORD``: each file of the code found under the current folder that ``RECORD`` does not
list, a line ``<path> (added)`` each (no git there: the folders are walked, ``IGNORED`` left out), so
that run.sh refuses code added since the record as it refuses code changed."""
import fnmatch
import hashlib
import os
import sys

CODE = ("Snakefile", "src", "workflow", "config", "profiles", "notebooks", "scripts")
# What .gitignore ignores inside the code's folders, as the names of a path's parts (a folder or a file)
# and as whole paths (tests/test_gpu_script.py holds the walk to git's own listing).
IGNORED = ("__pycache__", "*.pyc", "*.egg-info", ".pytest_cache", ".snakemake", "logs", "benchmarks", "*.tmp")
IGNORED_PATHS = ("profiles/measured",)


def is_code(path: str) -> bool:
    parts = path.split("/")
    if parts[0] not in CODE or any(path == p or path.startswith(p + "/") for p in IGNORED_PATHS):
        return False
    return not any(fnmatch.fnmatchcase(part, pattern) for part in parts for pattern in IGNORED)


def recordable(path: str) -> bool:
    return (is_code(path) and os.path.isfile(path) and not os.path.islink(path) and "\n" not in path
            and "\\" not in path)


def walked() -> list[str]:
    """The code's files under the current folder, found by walking it."""
    found = []
    for top in CODE:
        if os.path.isfile(top):
            found.append(top)
        for root, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if is_code(f"{root}/{d}"))
            found.extend(f"{root}/{f}" for f in files)
    return sorted(p for p in found if recordable(p))


def record(names: list[str]) -> list[str]:
    lines = []
    for path in sorted(set(names) - {""}):
        if recordable(path):
            with open(path, "rb") as f:
                lines.append(f"{hashlib.sha256(f.read()).hexdigest()}  {path}")
    return lines


if __name__ == "__main__":
    if sys.argv[1:2] == ["--added"]:
        with open(sys.argv[2], encoding="utf-8", errors="surrogateescape") as f:
            listed = {line.rstrip("\n").split("  ", 1)[-1] for line in f}
        lines = [f"{p} (added)" for p in walked() if p not in listed]
    else:
        lines = record(sys.stdin.buffer.read().decode("utf-8", "surrogateescape").split("\0"))
    sys.stdout.write("".join(line + "\n" for line in lines))
