"""The before/after comparison of a grid's outputs (tests/compare_outputs.py) ignores what measures
the machine and catches one changed number, a changed column and a missing file."""

from __future__ import annotations

import json

from tests.compare_outputs import main


def results(root, accuracy=0.5, seconds=1.0, host="a", extra_row=False):
    run = root / "runs/paper/mnist/cell/seed~0"
    run.mkdir(parents=True)
    summary = {"config": {"seed": 0}, "per_K": [{"K": 1, "test_accuracy": accuracy, "train_seconds": seconds}],
               "provenance": {"host": host, "code_version": host}, "seconds": {"total": seconds}}
    (run / "summary.json").write_text(json.dumps(summary))
    rows = f"K,train_loss,eval_seconds\n1,0.25,{seconds}\n" + ("2,0.5,1\n" if extra_row else "")
    (run / "rounds.csv").write_text(rows)
    (root / "logs").mkdir()
    (root / "logs/x.json").write_text(str(seconds))  # logs are not outputs
    return root


def test_timings_and_provenance_are_ignored(tmp_path, capsys):
    before = results(tmp_path / "a")
    after = results(tmp_path / "b", seconds=9.0, host="b")
    assert main([str(before), str(after)]) == 0
    assert "2 of 2 files identical" in capsys.readouterr().out


def test_one_number_a_row_or_a_missing_file_is_a_difference(tmp_path, capsys):
    before = results(tmp_path / "a")
    assert main([str(before), str(results(tmp_path / "b", accuracy=0.51))]) == 1
    assert "differs: runs/paper/mnist/cell/seed~0/summary.json" in capsys.readouterr().out
    assert main([str(before), str(results(tmp_path / "c", extra_row=True))]) == 1
    gone = results(tmp_path / "d")
    (gone / "runs/paper/mnist/cell/seed~0/rounds.csv").unlink()
    assert main([str(before), str(gone)]) == 1
    assert "missing after" in capsys.readouterr().out
