"""The SHA-256 of each file of the code among those named on standard input (NUL-separated paths, relative
to the checkout's root), one ``<digest>  <path>`` line each, sorted by path: the format ``sha256sum
--check`` reads. The code is what decides a run's results: the files under ``CODE`` (Python's caches left
out). A name that is not a regular file, or that holds a newline or a backslash (which sha256sum would
escape), is left out.

prepare.sh writes the code's files so (gpu_carry/SOURCE.sha256), and run.sh checks them on the GPU machine."""
import hashlib
import os
import sys

CODE = ("Snakefile", "src", "workflow", "config", "profiles", "notebooks", "scripts")


def is_code(path: str) -> bool:
    parts = path.split("/")
    return parts[0] in CODE and "__pycache__" not in parts


for path in sorted(set(sys.stdin.buffer.read().decode("utf-8", "surrogateescape").split("\0")) - {""}):
    if is_code(path) and os.path.isfile(path) and not os.path.islink(path) and "\n" not in path and "\\" not in path:
        with open(path, "rb") as f:
            print(f"{hashlib.sha256(f.read()).hexdigest()}  {path}")
