"""Inputs read as hostile (issue "Nothing executed, nothing lost, nothing silent"): group marks and
anchors through the bounded reader and the duplicate-key hook, atomic writes that never replace what is
not a regular file, and YAML nested past any config's depth refused at once."""

from __future__ import annotations

import json
import os
import stat
import time

import pytest

from bladefl.chain import anchors
from bladefl.cli import main
from bladefl.core import atomic, strict_yaml
from bladefl.experiments.runs.run_source import group_computed, write_group_mark
from conftest import HANG_S


def test_a_group_mark_is_read_bounded_and_strict(tmp_path):
    twice = tmp_path / "twice.done"
    twice.write_text('{"runs": 0, "runs": 1}')  # plain JSON would take the last: 1
    with pytest.raises(ValueError, match="given twice"):
        group_computed(twice)
    fifo = tmp_path / "fifo.done"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(ValueError, match="not a regular file"):
        group_computed(fifo)  # no hang
    with pytest.raises(ValueError, match="not a regular file"):
        group_computed("/dev/zero")  # no memory exhausted
    assert time.monotonic() - start < 5
    assert group_computed(write_group_mark(tmp_path / "ok.done", 3)) is True


def test_an_anchor_naming_a_chain_twice_is_refused(tmp_path):
    cid, tip = "a" * 64, "b" * 64
    good = {"tip": tip, "blocks": 3}
    path = tmp_path / "anchor.json"
    path.write_text(f'{{"format": "{anchors.FORMAT}", "chains": {{"{cid}": {{"tip": "{"c" * 64}", "blocks": 3}}, '
                    f'"{cid}": {json.dumps(good)}}}}}')  # the wrong tip first, the right one last
    with pytest.raises(anchors.AnchorError, match="given twice"):
        anchors.read(path)


def test_an_atomic_write_never_replaces_what_is_not_a_regular_file(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    targets = [fifo, folder]
    if os.geteuid() == 0:  # a device node of our own, as /dev/full is (root only)
        device = tmp_path / "full"
        os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 7))
        targets.append(device)
    for target in targets:
        kind = stat.S_IFMT(target.lstat().st_mode)
        with pytest.raises(atomic.NotAFileError, match="not a regular file"):
            atomic.write_json(target, {"runs": 1})
        assert stat.S_IFMT(target.lstat().st_mode) == kind  # still what it was
    assert main(["run-group", "--config", "config/engines/authors-code.yaml", "--plan",
                 json.dumps([{"out": str(tmp_path / "g/mnist/c/seed~0"), "set": ["seed=0"]}]), "--partition",
                 "x.npy", "--compute", "0", "--done", str(fifo)]) == 2
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    atomic.write_text(tmp_path / "plain.txt", "ok")  # an absent or regular target is written as before
    atomic.write_text(tmp_path / "plain.txt", "again")
    assert (tmp_path / "plain.txt").read_text() == "again"


def test_yaml_nested_past_any_configs_depth_is_refused_at_once(tmp_path, capsys):
    deep = "[" * 200_000 + "]" * 200_000  # 400 KB: PyYAML did not finish it in 300 s
    config = tmp_path / "deep.yaml"
    config.write_text(f"dataset: mnist\nseed: {deep}\n")
    start = time.monotonic()
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "out")]) == 2
    assert "nested deeper than 50 levels" in capsys.readouterr().err
    assert main(["run", "--set", f"seed={deep}", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "nested deeper than 50 levels" in err and len(err) < 400  # the value is not echoed whole
    block = "a:\n" + "".join(" " * (2 * i) + f"k{i}:\n" for i in range(1, 120)) + " " * 240 + "v: 1\n"
    with pytest.raises(strict_yaml.TooDeepError):
        strict_yaml.load(block)
    with pytest.raises(strict_yaml.TooDeepError):
        strict_yaml.load("- " * 1000 + "x")
    assert time.monotonic() - start < 10 and not (tmp_path / "out").exists()
    for name in ("config/config.yaml", "config/calibration.yaml", "workflow/schemas/config.schema.yaml"):
        assert strict_yaml.nesting_depth(open(name).read()) <= 10  # every file of the project loads


def test_a_huge_dirichlet_concentration_and_an_unnamed_plan_folder_are_refused(tmp_path, capsys):
    """Dirichlet(1e308) once gave NaN proportions without a word, and a run-group plan entry with
    `out: ""` wrote into the current folder: both are one line, exit 2, nothing written."""
    assert main(["run", "--set", "partition.scheme=dirichlet", "--set", "partition.dirichlet_alpha=1e308",
                 "--out", str(tmp_path / "run")]) == 2
    assert "partition.dirichlet_alpha must be a number in (0, 1e+06]" in capsys.readouterr().err
    plan = json.dumps([{"out": "", "set": ["seed=0"]}])
    assert main(["run-group", "--config", "config/engines/authors-code.yaml", "--plan", plan, "--partition",
                 "x.npy", "--compute", "0", "--done", str(tmp_path / "g.done")]) == 2
    assert "each folder named" in capsys.readouterr().err
    assert not (tmp_path / "run").exists() and not (tmp_path / "g.done").exists()


@pytest.mark.parametrize("args, said", [
    (["--set", "time.alpha=1e-300"], "time.t_sum / time.alpha must be at most 1e+06 local iterations"),
    (["--set", "time.t_sum=1e308"], "time.t_sum / time.alpha must be at most 1e+06 local iterations"),
])
def test_a_time_budget_no_run_can_train_is_one_line(tmp_path, capsys, args, said):
    """alpha = 1e-300 once asked torch for 1e302 iterations (a C++ stack trace): refused by the config."""
    assert main(["run", *args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


@pytest.mark.parametrize("text", ["dataset: mnist\n? [a, b]\n: 1\n", "dataset: !!set {mnist}\n"])
def test_a_config_with_a_set_or_an_unhashable_key_is_one_line(tmp_path, capsys, text):
    (tmp_path / "c.yaml").write_text(text)
    assert main(["run", "--config", str(tmp_path / "c.yaml"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "a set, or a list or mapping as a key" in err and "Traceback" not in err


@pytest.mark.parametrize("size", [0, 2 * 1024 * 1024])
def test_a_key_secret_that_is_empty_or_too_large_is_one_line(tmp_path, capsys, data_root, size):
    secret = tmp_path / "secret"
    secret.write_bytes(b"k" * size)
    code = main(["run", "--config", "config/engines/paper.yaml", "--set", f"chain.key_secret_file={secret}",
                 "--set", f"data_dir={data_root}", "--set", "partition.N=2", "--set", "partition.n=16",
                 "--set", "time.K=[1]", "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "chain.key_secret_file" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "summary.json").exists()


def laughs(levels: int = 9) -> str:
    """Aliases of aliases in flow style: ten values, then ``levels`` lists of ten aliases of the one
    before (10^(levels+1) values when walked; the parser reads it in microseconds as shared lists)."""
    parts = ["&a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    parts += [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


def test_aliases_that_expand_past_any_config_are_refused_at_once(tmp_path, capsys):
    """Nested alias lists (ten levels of ten) read as shared lists in microseconds, then hung every
    command that walked them: `run --set`, `run --config` and `snakemake -n` (in the schema's error
    message). Each is one line naming the expansion, at once; a few aliases stay readable."""
    import subprocess
    import sys

    start = time.monotonic()
    with pytest.raises(strict_yaml.TooLargeError):
        strict_yaml.load(laughs())
    assert strict_yaml.load("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]}
    assert main(["run", "--set", f"time.K={laughs()}", "--out", str(tmp_path / "out")]) == 2
    assert "aliases expand to more than 100000 values" in capsys.readouterr().err
    config = tmp_path / "laughs.yaml"
    config.write_text(f"base:\n  time:\n    K: {laughs()}\n")
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "out")]) == 2
    assert "aliases expand" in capsys.readouterr().err
    done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--configfile", str(config)],
                          capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 1 and "aliases expand to more than 100000 values" in done.stdout + done.stderr
    assert time.monotonic() - start < 60 and not (tmp_path / "out").exists()


def test_a_reference_optimum_from_elsewhere_is_checked_before_any_work(tmp_path, capsys):
    """`run --reference` once took a KeyError traceback from an .npz without `history`; a file of
    another model size, with NaN, pickled objects, no record beside it or no zip at all are each one
    line naming the field, exit 2, before the data are read (no data folder exists here)."""
    import numpy as np

    from bladefl.fl.run_config import load_config
    from bladefl.fl.stacked import model_shape

    size = model_shape(load_config(None, [])).size
    record = json.dumps({"f_star": 0.1, "epochs": 3})
    cases = {
        "no history": ({"w_star": np.zeros(size, np.float32)}, record, "field 'history'"),
        "another model": ({"w_star": np.zeros(size - 1, np.float32), "history": np.ones(3)}, record,
                          f"the run's model {size}"),
        "NaN": ({"w_star": np.full(size, np.nan, np.float32), "history": np.ones(3)}, record, "field 'w_star'"),
        "objects": ({"w_star": np.array([{}] * 3, dtype=object), "history": np.ones(3)}, record, "not an .npz"),
        "no record": ({"w_star": np.zeros(size, np.float32), "history": np.ones(3)}, None, "No such file"),
        "f_star text": ({"w_star": np.zeros(size, np.float32), "history": np.ones(3)},
                        json.dumps({"f_star": "x", "epochs": 3}), "field 'f_star'"),
    }
    for name, (arrays, side, said) in cases.items():
        path = tmp_path / f"{name.replace(' ', '_')}.npz"
        np.savez(path, **arrays)
        if side is not None:
            path.with_suffix(".json").write_text(side)
        code = main(["run", "--reference", str(path), "--set", f"data_dir={tmp_path / 'nodata'}",
                     "--out", str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert code == 2 and said in err and len(err.splitlines()) == 1 and "Traceback" not in err, (name, err)
    (tmp_path / "text.npz").write_text("seed: 3\n")  # no zip at all: never handed to a pickle check
    assert main(["run", "--reference", str(tmp_path / "text.npz"), "--out", str(tmp_path / "out")]) == 2
    assert "not an .npz (a zip archive)" in capsys.readouterr().err
    (tmp_path / "zip.npz").write_bytes(b"PK\x03\x04 not a zip")
    assert main(["run", "--reference", str(tmp_path / "zip.npz"), "--out", str(tmp_path / "out")]) == 2
    assert "not an .npz" in capsys.readouterr().err and not (tmp_path / "out").exists()
