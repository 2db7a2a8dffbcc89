"""Reference optima packed beside a bundle's runs and installed where the workflow reads them
(bladefl.experiments.bundles.optima_archive): every member checked before any file is written."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
import torch

from bladefl.experiments.bundles import optima_archive as oa
from bladefl.experiments.bundles import run_import as ri
from bladefl.experiments.plan import workflow_config as wc
from bladefl.theory import reference

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def made(tmp_path) -> dict:
    """A two-draw config whose partition manifests and optima are written under tmp_path."""
    base = ri.read_config([REPO / "config/config.yaml", REPO / "config/smoke.yaml"])
    config = {**base, "seeds": [0, 1], "partition": {**base["partition"], "seeds": [0, 1]},
              "data_dir": str(tmp_path / "data"), "results_dir": str(tmp_path / "results")}
    keys = wc.reference_keys(config)
    assert len(keys) == 2  # one bound N, two draws
    model = wc.engine(config, "mnist").to_dict()["model"]
    for i, (dataset, key) in enumerate(keys):
        manifest = tmp_path / "data/partitions" / dataset / f"{key}.json"
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps({"indices_sha256": f"{i:064x}"}))
        ref = reference.Reference(w_star=torch.full((wc.model_size(config, dataset),), 0.1 * (i + 1)),
                                  f_star=0.01 * (i + 1), epochs=3, history=[0.3, 0.2, 0.01 * (i + 1)])
        reference.save(ref, oa.references_root(config) / dataset / f"{key}.npz", {"dataset": dataset, "model": model})
    return config


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]


def repack(path: Path, files: dict[str, bytes], links: tuple[str, ...] = ()) -> Path:
    with tarfile.open(path, "w:xz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name in links:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            tar.addfile(info)
    return path


def installed(config: dict, results: Path) -> dict[str, bytes]:
    root = oa.references_root(config, results)
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()} \
        if root.exists() else {}


def refused(archive: Path, config: dict, results: Path, said: str) -> None:
    """Installing ``archive`` is refused with a message matching ``said``, and nothing is written."""
    with pytest.raises(oa.ArchiveError, match=said):
        oa.install(archive, config, results)
    assert installed(config, results) == {}


def test_packed_optima_install_byte_for_byte_and_a_second_install_writes_nothing(made, tmp_path):
    out = tmp_path / "optima.tar.xz"
    assert oa.pack(made, out, code_version="abc1234") == 2
    first = out.read_bytes()
    assert oa.pack(made, out, code_version="abc1234") == 2 and out.read_bytes() == first  # same optima, same bytes
    here = installed(made, Path(made["results_dir"]))
    done = oa.install(out, made, tmp_path / "elsewhere")
    assert (done.written, done.present, done.skipped) == (2, 0, 0)
    assert installed(made, tmp_path / "elsewhere") == here and len(here) == 4
    again = oa.install(out, made, tmp_path / "elsewhere")
    assert (again.written, again.present) == (0, 2)


def test_a_part_installs_only_its_own_seeds_optima(made, tmp_path):
    out = tmp_path / "optima.tar.xz"
    oa.pack(made, out)
    done = oa.install(out, {**made, "run_seeds": [1]}, tmp_path / "part")
    assert (done.written, done.skipped) == (1, 1)
    (key,) = [k for _, k in wc.reference_keys({**made, "run_seeds": [1]})]
    assert sorted(installed(made, tmp_path / "part")) == [f"mnist/{key}.json", f"mnist/{key}.npz"]


def _edit_json(data: bytes, **changes: object) -> bytes:
    return json.dumps({**json.loads(data), **changes}).encode()


@pytest.mark.parametrize("forge, said", [
    (lambda f, k: {**f, oa.ABOUT: _edit_json(f[oa.ABOUT], partition_sha256={f"mnist/{k[0]}": "f" * 64})},
     "trained on another draw"),
    (lambda f, k: {n: d for n, d in f.items() if n != f"optima/mnist/{k[1]}.json"}, "half an optimum"),
    (lambda f, k: {n: d for n, d in f.items() if f"/{k[1]}." not in n}, r"missing \(the runs of this config read it\)"),
    (lambda f, k: {**f, "optima/mnist/other.npz": b"x", "optima/mnist/other.json": b"{}"}, "of no draw of this"),
    (lambda f, k: {**f, "optima/notes.txt": b"hi"}, "not an optimum's file"),
    (lambda f, k: {n: d for n, d in f.items() if n != oa.ABOUT}, "no optima/ABOUT\\.json"),
    (lambda f, k: {**f, f"optima/mnist/{k[0]}.npz": b"PK not a zip"}, r"not an \.npz"),
    (lambda f, k: {**f, f"optima/mnist/{k[0]}.json": _edit_json(f[f"optima/mnist/{k[0]}.json"], f_star="NaN")},
     "'f_star' must be a finite number"),
    (lambda f, k: {**f, f"optima/mnist/{k[0]}.json": _edit_json(f[f"optima/mnist/{k[0]}.json"],
                                                                 model={"hidden": 7, "activation": "relu"})},
     "this config's is of"),
])
def test_a_forged_archive_is_refused_naming_why_and_nothing_is_written(made, tmp_path, forge, said):
    out = tmp_path / "optima.tar.xz"
    oa.pack(made, out)
    keys = [k for _, k in wc.reference_keys(made)]
    refused(repack(tmp_path / "forged.tar.xz", forge(members(out), keys)), made, tmp_path / "elsewhere", said)


def _flipped(data: bytes) -> bytes:
    """One byte of the xz stream changed: its check fails."""
    return data[:len(data) // 2] + bytes([data[len(data) // 2] ^ 0xFF]) + data[len(data) // 2 + 1:]


@pytest.mark.parametrize("corrupt", [lambda d: d[:len(d) // 2], lambda d: d[:int(len(d) * 0.9)], _flipped],
                         ids=["half", "nine-tenths", "a-byte-flipped"])
def test_a_truncated_or_corrupt_archive_is_refused_in_one_message(made, tmp_path, corrupt):
    out = tmp_path / "optima.tar.xz"
    oa.pack(made, out)
    out.write_bytes(corrupt(out.read_bytes()))
    refused(out, made, tmp_path / "e", "truncated or corrupt|not a readable tar archive")  # (where it breaks)


def test_links_and_optima_of_another_model_are_refused(made, tmp_path):
    out = tmp_path / "optima.tar.xz"
    oa.pack(made, out)
    refused(repack(tmp_path / "l.tar.xz", members(out), links=("optima/mnist/x.npz",)), made, tmp_path / "e",
            "not a regular file")
    small = tmp_path / "small.npz"  # an optimum of a 5-parameter model in the place of the config's
    reference.save(reference.Reference(torch.zeros(5), 0.1, 1, [0.1]), small, {})
    key = wc.reference_keys(made)[0][1]
    forged = repack(tmp_path / "m.tar.xz", {**members(out), f"optima/mnist/{key}.npz": small.read_bytes()})
    refused(forged, made, tmp_path / "e", "has 5 parameters")


def test_another_optimum_in_place_is_kept_unless_replaced_and_without_partitions_nothing_is_checked(made, tmp_path):
    out = tmp_path / "optima.tar.xz"
    oa.pack(made, out)
    results = Path(made["results_dir"])
    (dataset, key) = wc.reference_keys(made)[0]
    trained_here = oa.references_root(made) / dataset / f"{key}.json"
    trained_here.write_text(_edit_json(trained_here.read_bytes(), epochs=4).decode())
    before = installed(made, results)
    with pytest.raises(oa.ArchiveError, match="another optimum is there"):
        oa.install(out, made)
    assert installed(made, results) == before
    done = oa.install(out, made, replace=True)
    assert (done.written, done.present) == (1, 1)
    bare = {**made, "data_dir": str(tmp_path / "nothing")}
    with pytest.raises(oa.ArchiveError, match="make the partitions first"):
        oa.install(out, bare, tmp_path / "e")
