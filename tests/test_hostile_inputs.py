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
