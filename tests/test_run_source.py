"""Where a grid run comes from: a group job's mark says whether it computed its runs, and a run it
computed is moved to its place only when it is a finished run of exactly the run's config."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bladefl.cli import main
from bladefl.experiments.runs.run_source import finished_run, group_computed, take_run, write_group_mark
from test_engine import small_cfg, synthetic

REPO = Path(__file__).resolve().parents[1]

CELL = "alpha~1_beta~10_N~4_eta~0.05_lazy~0_sigma2~0_eps~inf"


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    """A real run (4 clients, K = 2), written where a group job writes it: <group>/<dataset>/<cell>/seed~5."""
    from bladefl.experiments.runs.runner import run_cell

    root = tmp_path_factory.mktemp("computed")
    run = root / "groups/mnist_N4_block0/mnist" / CELL / "seed~5"
    run_cell(small_cfg(time={"K": [2]}, seed=5), run, data=synthetic(), progress=False)
    return run


def test_a_group_mark_says_whether_the_group_computed_its_runs(tmp_path):
    assert group_computed(write_group_mark(tmp_path / "a.done", 6)) is True
    assert group_computed(write_group_mark(tmp_path / "b.done", 0)) is False
    timed = write_group_mark(tmp_path / "c.done", 6, (1.0e9, 1.0e9 + 90))  # its computation's start and end
    assert group_computed(timed) is True and json.loads(timed.read_text())["seconds"] == [1.0e9, 1.0e9 + 90]
    for text in ("", "[]", '{"runs": -1}', '{"runs": true}', '{"runs": 1.5}', '{"runs": 1, "x": 2}', "{",
                 '{"runs": 1, "seconds": [1, NaN]}', '{"runs": 1, "seconds": [1, 2, 3]}', '{"runs": 1, "seconds": 5}'):
        (tmp_path / "bad.done").write_text(text)
        with pytest.raises(ValueError, match="--group"):
            group_computed(tmp_path / "bad.done")


def test_a_computed_run_is_moved_to_its_place_and_the_emptied_group_folder_removed(computed, tmp_path):
    group = tmp_path / "groups/mnist_N4_block0"
    shutil.copytree(computed.parents[2], group)
    other = group / "mnist" / CELL / "seed~6"  # another run of the group, not yet moved
    shutil.copytree(group / "mnist" / CELL / "seed~5", other)
    files = sorted(p.relative_to(computed).as_posix() for p in computed.rglob("*"))
    out = tmp_path / "runs/mnist" / CELL / "seed~5"
    take_run(group / "mnist" / CELL / "seed~5", small_cfg(time={"K": [2]}, seed=5), out)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == files
    assert finished_run(out, small_cfg(time={"K": [2]}, seed=5))
    assert not (group / "mnist" / CELL / "seed~5").exists() and other.is_dir()  # the group still holds seed~6
    take_run(other, small_cfg(time={"K": [2]}, seed=5), tmp_path / "runs/mnist" / CELL / "seed~6")
    assert not group.exists() and (tmp_path / "groups").is_dir()  # emptied up to the group's folder, not above


def test_a_run_of_another_config_or_an_unfinished_one_is_not_taken(computed, tmp_path):
    group = tmp_path / "groups/mnist_N4_block0"
    shutil.copytree(computed.parents[2], group)
    run = group / "mnist" / CELL / "seed~5"
    before = sorted(p.name for p in run.iterdir())
    with pytest.raises(ValueError, match="not a finished run of this config"):
        take_run(run, small_cfg(time={"K": [2]}, seed=6), tmp_path / "out")
    (run / "summary.json").write_text(json.dumps({"config": {}}))
    with pytest.raises(ValueError, match="not a finished run of this config"):
        take_run(run, small_cfg(time={"K": [2]}, seed=5), tmp_path / "out")
    assert sorted(p.name for p in run.iterdir()) == before and not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="--computed-in"):
        take_run(tmp_path / "seed~5", small_cfg(), tmp_path / "out")  # no group folder above it


def test_run_group_without_computing_writes_a_mark_of_none_and_loads_no_data(tmp_path, capsys):
    """The workflow's group job under grouping: cell: the plan is checked, nothing is computed (its
    partition files are not even read), and the mark says so."""
    plan = json.dumps([{"out": str(tmp_path / "g/mnist/c/seed~0"), "set": ["seed=0"]}])
    mark = tmp_path / "g.done"
    assert main(["run-group", "--config", "config/engines/authors-code.yaml", "--plan", plan, "--partition",
                 str(tmp_path / "missing.npy"), "--compute", "0", "--done", str(mark)]) == 0
    assert json.loads(mark.read_text()) == {"runs": 0} and not (tmp_path / "g").exists()
    assert "none of the 1 runs computed here" in capsys.readouterr().out
    assert main(["run-group", "--config", "config/engines/authors-code.yaml", "--plan", "[{\"out\": 1}]",
                 "--partition", "x.npy", "--compute", "0", "--done", str(tmp_path / "h.done")]) == 2
    assert not (tmp_path / "h.done").exists()  # a bad plan is refused before any mark


def _group_copy(computed, tmp_path):
    """A copy of the computed run where the workflow's group job leaves it, its config file and a mark."""
    import yaml

    group = tmp_path / "results/groups/paper/mnist_N4_block0"
    shutil.copytree(computed.parents[2], group)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump(small_cfg(time={"K": [2]}, seed=5).to_dict()))
    mark = write_group_mark(tmp_path / "group.done", 1)
    return group / "mnist" / CELL / "seed~5", cfg, mark


def _take(src, cfg, mark, out) -> int:
    return main(["run", "--config", str(cfg), "--out", str(out), "--group", str(mark), "--computed-in", str(src)])


def _forge_accuracy(run):
    """The final accuracy raised in the summary and in rounds.csv alike (the two agree): only the blocks,
    which commit each round's metrics, disagree."""
    import pandas as pd

    record = json.loads((run / "summary.json").read_text())
    record["per_K"][0]["test_accuracy"] = 0.99
    (run / "summary.json").write_text(json.dumps(record))
    rounds = pd.read_csv(run / "rounds.csv")
    rounds.loc[rounds.index[-1], "test_accuracy"] = 0.99
    rounds.to_csv(run / "rounds.csv", index=False)


def _swap_ledger(run):
    """Another run's ledger (the same cell, seed 6) in place of its own."""
    from bladefl.experiments.runs.runner import run_cell

    other = run.parent / "seed~6"
    run_cell(small_cfg(time={"K": [2]}, seed=6), other, data=synthetic(), progress=False)
    shutil.copy(other / "chains" / "K2.json", run / "chains" / "K2.json")
    shutil.rmtree(other)


@pytest.mark.parametrize("forge, said", [
    (_forge_accuracy, "not a finished run of this config"),
    (lambda run: shutil.rmtree(run / "chains"), "ledgers are not one per K"),
    (_swap_ledger, "chains/K2.json"),
    (lambda run: (run / "detections.csv").write_text("garbage\n1,2\n"), "detections.csv"),
    (lambda run: (run / "notes.txt").write_text("hello"), "notes.txt: not a run file"),
    (lambda run: (run / "rounds.csv").unlink() or (run / "rounds.csv").symlink_to("/etc/passwd"),
     "rounds.csv: not a regular file"),
])
def test_a_group_move_takes_only_what_an_import_would_take(computed, tmp_path, capsys, forge, said):
    """`bladefl run --group --computed-in` once moved forged numbers, deleted or foreign ledgers, a
    garbage detections.csv and links into results, exit 0: now what the import checks, nothing moved."""
    src, cfg, mark = _group_copy(computed, tmp_path)
    forge(src)
    before = sorted(p.relative_to(src).as_posix() for p in src.rglob("*"))
    out = tmp_path / "results/runs/paper/mnist" / CELL / "seed~5"
    assert _take(src, cfg, mark, out) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and sorted(p.relative_to(src).as_posix() for p in src.rglob("*")) == before
    clean, cfg2, mark2 = _group_copy(computed, tmp_path / "clean")  # the same run, untouched, is taken
    assert _take(clean, cfg2, mark2, tmp_path / "clean/out") == 0 and finished_run(
        tmp_path / "clean/out", small_cfg(time={"K": [2]}, seed=5))


@pytest.mark.parametrize("where", ["same", "inside", "parent", "in the group", "from runs"])
def test_overlapping_folders_are_refused_before_anything_moves(computed, tmp_path, capsys, where):
    src, cfg, mark = _group_copy(computed, tmp_path)
    out = {"same": src, "inside": src / "moved", "parent": src.parent, "in the group": src.parents[2] / "x",
           "from runs": tmp_path / "elsewhere"}[where]
    if where == "from runs":  # a finished run under results/runs/ is no group's to give away
        runs = tmp_path / "results/runs/paper/mnist" / CELL / "seed~5"
        shutil.copytree(src, runs)
        src = runs
    before = sorted(p.relative_to(src.parents[2]).as_posix() for p in src.parents[2].rglob("*"))
    assert _take(src, cfg, mark, out) == 2
    err = capsys.readouterr().err
    assert ("overlap" in err or "inside the group's folder" in err or "not in a group's folder" in err), err
    assert sorted(p.relative_to(src.parents[2]).as_posix() for p in src.parents[2].rglob("*")) == before


def test_the_bookkeeping_is_measured_from_the_groups_mark_to_its_last_run_in_place(tmp_path):
    """`bladefl bench --bookkeeping`'s reading: a group computed from t = 1000 to 1100 s, its runs in place
    at 1102 and 1104 s: 4 s of bookkeeping, 0.04 of its computation; a group without a mark is not read."""
    import os

    import yaml

    from bladefl.experiments.plan import workflow_config as wc
    from bladefl.experiments.runs.bookkeeping import bookkeeping

    config = {**yaml.safe_load((REPO / "config/config.yaml").read_text()),
              **yaml.safe_load((REPO / "config/smoke.yaml").read_text())}
    group = wc.partition_jobs(config)[0]
    engine = config["engine"]
    write_group_mark(tmp_path / "groups" / engine / f"{group.name}.done", 6, (1000.0, 1100.0))
    folders = group.run_dirs(str(tmp_path / "runs" / engine))
    for i, folder in enumerate(folders):
        Path(folder).mkdir(parents=True)
        (Path(folder) / "summary.json").write_text("{}")
        os.utime(folder, (1102.0 + 2 * (i == len(folders) - 1), 1102.0 + 2 * (i == len(folders) - 1)))
    table = bookkeeping(config, tmp_path)
    assert table.to_dict("records") == [{"group": group.name, "runs": len(folders), "in_place": len(folders),
                                         "computation_s": 100.0, "bookkeeping_s": 4.0, "ratio": 0.04}]
