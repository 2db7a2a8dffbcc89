"""The code's record that a run's code version rests on, written by prepare.sh and checked by run.sh.

With no argument: the SHA-256 of each file of the code among those named on standard input (NUL-separated
paths, relative to the checkout's root), one ``<digest>  <path>`` line each, sorted by path: the format
``sha256sum --check`` reads (gpu_carry/SOURCE.sha256). The code is every file of the checkout the call
runs in, at its root too (a ``glob.py`` beside the Snakefile would shadow Python's own module), less what
is not code (``NOT_CODE``: the data, results, the carry and the builds, the virtual environment) and what
git ignores inside it (``IGNORED``: Python's and the linters' caches, a job's logs and benchmarks, the
measured profiles). A name that is not a regular file, or that holds a newline or a backslash (which
sha256sum would escape), is left out.

With ``--added RECORD``: each file of the code found under the current folder that ``RECORD`` does not
list, a line ``<path> (added)`` each, and each symbolic link there, ``<path> (a link)`` (no git there: the
tree is walked, ``NOT_CODE`` and ``IGNORED`` left out, and the record's own folder), so that run.sh
refuses code added since the record, or a link that would bring in code from elsewhere, as it refuses
code changed."""
import fnmatch
import hashlib
import os
import sys

# What is not code at the checkout's root (as .gitignore has it): data, results, carries, builds, environments.
NOT_CODE = (".git", ".venv", "data", "results", "results-*", "build", "gpu_carry", "out", "archives", "shots",
            ".hypothesis", ".test")
# What .gitignore (or a tool's own) ignores inside the code, as the names of a path's parts (a folder or a
# file) and as whole paths (tests/test_gpu_script.py holds the walk to git's own listing).
IGNORED = ("__pycache__", "*.pyc", "*.egg-info", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".snakemake",
           "logs", "benchmarks", "*.tmp")
IGNORED_PATHS = ("profiles/measured",)


def is_code(path: str) -> bool:
    parts = path.split("/")
    if any(fnmatch.fnmatchcase(parts[0], top) for top in NOT_CODE):
        return False
    if any(path == p or path.startswith(p + "/") for p in IGNORED_PATHS):
        return False
    return not any(fnmatch.fnmatchcase(part, pattern) for part in parts for pattern in IGNORED)


def recordable(path: str) -> bool:
    return (is_code(path) and os.path.isfile(path) and not os.path.islink(path) and "\n" not in path
            and "\\" not in path)


def walked(skip: str = "") -> tuple[list[str], list[str]]:
    """The code's files under the current folder, found by walking it, and the links found there
    (``skip``: a folder left out, the record's own)."""
    found, links = [], []
    for root, dirs, files in os.walk("."):
        rel = root[2:] if root.startswith("./") else ""
        where = [f"{rel}/{d}" if rel else d for d in dirs]
        links += [p for p in where if os.path.islink(p) and is_code(p)]
        kept = [d for d, p in zip(dirs, where, strict=True) if is_code(p) and p != skip and not os.path.islink(p)]
        dirs[:] = sorted(kept)
        for f in files:
            path = f"{rel}/{f}" if rel else f
            if is_code(path):
                (links if os.path.islink(path) else found).append(path)
    return sorted(p for p in found if recordable(p)), sorted(links)


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
        files, links = walked(os.path.relpath(os.path.dirname(os.path.abspath(sys.argv[2]))))
        lines = [f"{p} (added)" for p in files if p not in listed] + [f"{p} (a link)" for p in links]
    else:
        lines = record(sys.stdin.buffer.read().decode("utf-8", "surrogateescape").split("\0"))
    sys.stdout.write("".join(line + "\n" for line in lines))
