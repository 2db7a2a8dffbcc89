"""Malformed command-line inputs get one line naming the option and exit 2, before any work and
with nothing written: no traceback (part of "nothing malformed crashes")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bladefl.cli import main
from bladefl.data.datasets import SPECS

REPO = Path(__file__).resolve().parents[1]
PAPER = str(REPO / "config" / "engines" / "paper.yaml")


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--config", "{tmp}/missing.yaml"], "--config {tmp}/missing.yaml: cannot read it (FileNotFoundError"),
        (["run", "--config", "{tmp}"], "is not a regular file"),
        (["run", "--config", "{tmp}/list.yaml"], "must hold a mapping of fields (got a list)"),
        (["run", "--config", "{tmp}/broken.yaml"], "--config {tmp}/broken.yaml: not YAML"),
        (["run", "--config", PAPER, "--set", "time.beta=[1"], "time.beta: '[1' is not a YAML value"),
        (["run", "--config", PAPER, "--out", "{tmp}/a_file"], "--out {tmp}/a_file: exists and is not a folder"),
        (["run", "--config", PAPER, "--out", ""], "--out: an empty value"),
        (["run", "--config", PAPER, "--reference", "{tmp}/none.npz"], "--reference {tmp}/none.npz: no such file"),
        (["run", "--config", PAPER, "--set", "data_dir={tmp}/nodata", "--set", "time.K=[1]"], "run `bladefl fetch"),
        (["run-group", "--plan", json.dumps([{"out": "x"}]), "--partition", "p.npy"], "--plan: a list of"),
        (["run-group", "--plan", json.dumps({"out": "x"}), "--partition", "p.npy"], "--plan: a list of"),
        # integers in plain decimal only: YAML 1.1 read 017 as 15, 0x10 as 16, 1_000 as 1000
        (["run", "--config", PAPER, "--set", "seed=017"], "seed must be an integer >= 0 (got '017')"),
        (["run", "--config", PAPER, "--set", "seed=0x10"], "seed must be an integer >= 0 (got '0x10')"),
        (["run", "--config", PAPER, "--set", "seed=1_000"], "seed must be an integer >= 0 (got '1_000')"),
        (["run", "--config", PAPER, "--set", "time.K=[1, 0o7]"], "time.K must be a non-empty list of distinct"),
        # 20,000 values of K once ran, each a round loop
        (["run", "--config", PAPER, "--set", "time.K=[" + ",".join(map(str, range(1, 20_001))) + "]"],
         "time.K must be a non-empty list of distinct integers >= 1 (at most 1000) (got 'a list of 20000')"),
        # a folder option naming a file: once NotADirectoryError midway
        (["lay-out", str(REPO / "reference/default-2seeds"), "--results-dir", "{tmp}/a_file", "--data-dir",
          "{tmp}/d"], "--results-dir {tmp}/a_file: not a folder ({tmp}/a_file is a file)"),
        (["lay-out", str(REPO / "reference/default-2seeds"), "--results-dir", "{tmp}/r", "--data-dir",
          "{tmp}/a_file/d"], "--data-dir {tmp}/a_file/d: not a folder ({tmp}/a_file is a file)"),
        (["import-runs", "--archive", "{tmp}/a_file", "--configfile", str(REPO / "config/smoke.yaml"),
          "--results-dir", "{tmp}/a_file"], "--results-dir {tmp}/a_file: not a folder"),
        # a config file of invalid YAML: once the parser's caret drawing over several lines
        (["import-runs", "--archive", "{tmp}/a_file", "--configfile", "{tmp}/broken.yaml", "--results-dir",
          "{tmp}/r"], "{tmp}/broken.yaml: not valid YAML (line 2, column 1)"),
    ],
)
def test_bad_inputs_say_what_is_wrong_and_write_nothing(tmp_path, capsys, args, message):
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    (tmp_path / "broken.yaml").write_text("seed: [1\n")
    (tmp_path / "a_file").write_text("")
    before = sorted(p.name for p in tmp_path.iterdir())
    out = tmp_path / "out"
    full = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if full[0] == "run" and "--out" not in full:
        full += ["--out", str(out), "--quiet"]
    code = main(full)
    err = capsys.readouterr().err
    assert code == 2 and message.replace("{tmp}", str(tmp_path)) in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_a_truncated_archive_and_a_malformed_manifest_are_named_not_tracebacks(tmp_path, capsys):
    """import-runs on an archive cut short, lay-out of a bundle whose manifest lists a file as a
    plain string: one line each, a failing exit, nothing written."""
    import io
    import lzma
    import random
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:  # incompressible members: a cut lands inside one
        for seed in (0, 1):
            data = random.Random(seed).randbytes(200_000)
            info = tarfile.TarInfo(f"grid/mnist/alpha~1_beta~10_N~20_eta~0.01_lazy~0_sigma2~0_eps~inf/seed~{seed}/"
                                   f"rounds.csv")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    packed = lzma.compress(buffer.getvalue())
    (tmp_path / "cut.tar.xz").write_bytes(packed[: len(packed) * 3 // 4])
    code = main(["import-runs", "--archive", str(tmp_path / "cut.tar.xz"), "--configfile",
                 str(REPO / "config" / "config.yaml"), "--results-dir", str(tmp_path / "results")])
    err = capsys.readouterr().err
    assert code != 0 and "nothing imported: truncated or corrupt (EOFError" in err and "Traceback" not in err, err
    assert not (tmp_path / "results").exists()

    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "MANIFEST.json").write_text(json.dumps({"files": {"results/x.csv": "just a string"}}))
    code = main(["lay-out", str(bundle), "--results-dir", str(tmp_path / "laid"), "--data-dir", str(tmp_path / "d")])
    err = capsys.readouterr().err
    assert code != 0 and "entries ['results/x.csv'] of 'files' are not" in err and "Traceback" not in err, err
    assert not (tmp_path / "laid").exists()


def test_a_partition_file_of_another_draw_or_dataset_is_refused_by_its_manifest(tmp_path):
    """The manifest `bladefl partition` writes beside the indices names their dataset, key and
    digest: a run asking for draw 0 refuses draw 1's file, another dataset's, or edited indices."""
    import numpy as np

    from bladefl.data.partition import PartitionSpec
    from bladefl.data.partition_store import indices_digest, manifest_problems

    spec = PartitionSpec(scheme="shards", N=2, n=4, seed=0)
    indices = np.arange(8).reshape(2, 4)
    path = tmp_path / f"{spec.key}.npy"
    np.save(path, indices)

    def manifest(**changes: object) -> None:
        info = {"dataset": "mnist", "key": spec.key, "indices_sha256": indices_digest(indices), **changes}
        path.with_suffix(".json").write_text(json.dumps(info))

    manifest()
    assert manifest_problems(path, indices, "mnist", spec) == []
    other = PartitionSpec(scheme="shards", N=2, n=4, seed=1)
    assert "the run's config asks for" in manifest_problems(path, indices, "mnist", other)[0]
    assert "is a partition of 'mnist', the run is on 'fashion_mnist'" in manifest_problems(
        path, indices, "fashion_mnist", spec)[0]
    manifest(indices_sha256="0" * 64)
    assert "not the ones its manifest" in manifest_problems(path, indices, "mnist", spec)[0]
    path.with_suffix(".json").unlink()
    assert manifest_problems(path, indices, "mnist", spec) == []  # a bare index file: nothing to hold it to


@pytest.mark.parametrize("args, said", [
    (["paper-comparison", "--dataset", "mnist", "--summary", "s", "--optimum", "o", "--paper-values", "p",
      "--t-sum", "nan", "--out", "{tmp}/c.csv"], "argument --t-sum: a time budget above 0"),
    (["paper-comparison", "--dataset", "mnist", "--summary", "s", "--optimum", "o", "--paper-values", "p",
      "--t-sum", "-5", "--out", "{tmp}/c.csv"], "argument --t-sum: a time budget above 0"),
    (["paper-comparison", "--dataset", "cifar", "--summary", "s", "--optimum", "o", "--paper-values", "p",
      "--t-sum", "100", "--out", "{tmp}/c.csv"],
     f"argument --dataset: one of {', '.join(sorted(SPECS))}, got 'cifar'"),  # the registry's names
    (["verdicts", "--dataset", "mnist", "--summary", "s", "--members", "[]", "--t-sum", "1e308", "--out",
      "{tmp}/v.csv"], "argument --t-sum: a time budget above 0 and at most"),
    (["verdicts", "--dataset", "mnist", "--summary", "s", "--members", "[]", "--t-sum", "1e30", "--out",
      "{tmp}/v.csv"], "argument --t-sum: a time budget above 0 and at most"),
])
def test_values_no_command_can_mean_are_refused_by_argparse(tmp_path, capsys, args, said):
    """A time budget that is not a finite positive number, or a dataset the registry does not hold, is
    argparse's refusal (was: accepted, and the command went on with it)."""
    with pytest.raises(SystemExit) as stop:
        main([a.replace("{tmp}", str(tmp_path)) for a in args])
    assert stop.value.code == 2 and said in capsys.readouterr().err and not list(tmp_path.iterdir())


def test_lay_out_into_an_empty_folder_name_is_refused(tmp_path, monkeypatch, capsys):
    """`--results-dir ''` named the current folder: the bundle was laid out into it."""
    monkeypatch.chdir(tmp_path)
    rc = main(["lay-out", str(REPO / "reference/default-2seeds"), "--results-dir", "", "--data-dir", "d"])
    assert rc == 2 and "--results-dir: an empty value" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text", ['{"cells": 5, "nbformat": 4, "nbformat_minor": 5, "metadata": {}}',
                                  '{"nbformat": 4}', "[1, 2]", "not json"])
def test_render_page_refuses_a_notebook_nbformat_cannot_read_in_one_line(tmp_path, capsys, text):
    """Was: a traceback (jsonschema's ValidationError, a TypeError inside nbformat)."""
    (tmp_path / "nb.ipynb").write_text(text)
    rc = main(["render-page", str(tmp_path / "nb.ipynb"), "--out", str(tmp_path / "p.html"), "--index",
               str(tmp_path / "i.html")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "not a notebook nbformat reads" in err
    assert not (tmp_path / "p.html").exists()
