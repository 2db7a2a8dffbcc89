"""``bladefl bench --workflow``'s parts (:mod:`bladefl.experiments.runs.workflow_cpu`): the Snakemake calls it
makes, the CPU it counts (every process a command started, grandchildren included), and what it prints from the
runs' own clocks; its options refused where they cannot be read."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bladefl.experiments.runs import workflow_cpu as wcpu


def test_the_snakemake_calls_are_the_parts_run_targets_into_the_benchs_folder(tmp_path):
    inside = wcpu.snakemake_command("run_folders", ["config/paper.yaml"], tmp_path / "w/out", 2, [0, 3], tmp_path / "w",
                                    wcpu.overrides_of("partition"))
    assert inside[1:5] == ["-m", "snakemake", "run_folders", "--cores"] and inside[5] == "2"
    config = inside[inside.index("--config") + 1:]
    assert f"results_dir={tmp_path / 'w/out'}" in config and "run_seeds=0,3" in config
    assert "grouping=partition" in config and "threads_per_group=1" in config
    assert "paths_outside_workdir=True" not in config  # the folder lies inside the working folder
    outside = wcpu.snakemake_command("run_inputs", ["c.yaml"], tmp_path / "out", 1, [0], tmp_path / "w")
    assert "paths_outside_workdir=True" in outside and outside[3] == "run_inputs"
    assert wcpu.overrides_of(None) == [] and wcpu.overrides_of("cell") == ["grouping=cell"]
    with pytest.raises(ValueError, match="target: 'all' is not one of run_inputs, run_folders"):
        wcpu.snakemake_command("all", ["c.yaml"], tmp_path, 1, [0], tmp_path)
    with pytest.raises(ValueError, match="--grouping: 'none' is not one of cell, partition"):
        wcpu.overrides_of("none")


def test_the_cpu_counted_is_every_process_the_command_started_its_grandchildren_included(tmp_path):
    """A shell that starts a CPU burner and waits for it: the burner's CPU is counted (getrusage of the waited
    children, exact), and a command that fails is an error with its output, never a cost."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4:\n    pass\n"
    cost, _ = wcpu.measured(["bash", "-c", f'"{sys.executable}" -c "$0"; echo done', burn], tmp_path)
    assert cost.cpu >= 0.4 and cost.wall > 0, cost
    with pytest.raises(RuntimeError, match="failed \\(3\\): no such thing"):
        wcpu.measured(["bash", "-c", "echo no such thing >&2; exit 3"], tmp_path)


def _run(out: Path, name: str, engine: float) -> None:
    folder = out / "runs/paper/mnist" / name / "seed~0"
    folder.mkdir(parents=True)
    parts = {"wall": engine, "train": engine * 0.5, "evaluation": engine * 0.25, "detection": 0.0, "constants": 1.0}
    (folder / "summary.json").write_text(json.dumps({"seconds": {"total": engine + 0.5, "engine": parts}}))


def test_the_report_gives_the_cpu_per_run_and_the_engines_share_of_it_by_part(tmp_path):
    _run(tmp_path, "c1", 10.0)
    _run(tmp_path, "c2", 30.0)
    runs = wcpu.engine_seconds(tmp_path)
    assert sorted(runs.run) == ["paper/mnist/c1/seed~0", "paper/mnist/c2/seed~0"] and runs.engine.sum() == 40.0
    costs = {"run_inputs": wcpu.Cost(5.0, 4.0), "run_folders": wcpu.Cost(30.0, 50.0)}
    text = "\n".join(wcpu.report(costs, runs, 2, baseline_cpu=100.0))
    assert "run_folders: 30.0 s wall, 50.0 CPU-s on 2 cores" in text
    assert "2 runs: 25.0 CPU-s a run" in text and "40.0 s (80.0% of run_folders' CPU: train 40.0%" in text
    assert "constants 4.0%" in text and "over the baseline's 100.0 CPU-s: 0.500" in text
    assert wcpu.report(costs, wcpu.engine_seconds(tmp_path / "none"), 2)[-1] == "  no run computed"


@pytest.mark.parametrize("argv, says", [
    (["--grouping", "partition"], "--grouping: the CPU bench does not read it"),
    (["--workflow", "config/smoke.yaml", "--baseline-cpu", "nan"], "--baseline-cpu: nan is not a positive number"),
    (["--workflow", "config/smoke.yaml", "--threads", "2"], "--threads: --workflow does not read it"),
    (["--workflow", "config/smoke.yaml", "--grid-seeds", "7-9"], "run_seeds"),
])
def test_bench_workflow_refuses_what_it_cannot_read_before_any_work(tmp_path, monkeypatch, capsys, argv, says):
    from bladefl.cli import main

    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    assert main(["bench", *argv, "--out", str(tmp_path / "out")]) == 2
    said = capsys.readouterr().err.strip()
    assert len(said.splitlines()) == 1 and says in said, said
    assert not (tmp_path / "out").exists()
