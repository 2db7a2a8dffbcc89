"""scripts/gpu/run.sh, as the GPU machine runs it, here on the CPU: the documented Snakemake command
(MODE=snakemake) and the engine without Snakemake, each packing the finished run folders' tables
and an ABOUT.json, also when the time budget stops the grid; what it packs imports.

Every call runs under the import guard (scripts/gpu/import_guard): this Python then imports only what
the GPU machine's does (its packages and the carried ones, scripts/gpu/closure.py), so a step of the
script, or the workflow's parse, that needs anything else fails here, in CI, not on the GPU machine."""

from __future__ import annotations

import json
import lzma
import os
import re
import runpy
import shutil
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from bladefl.data.datasets import IDX_FILES as FILES
from bladefl.experiments.bundles import run_import
from bladefl.experiments.runs import device_check
from conftest import HANG_S, checkout_files, copy_workflow, venv_env

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def machine(tmp_path_factory, data_root) -> Path:
    """A copy of the checkout with a carry folder holding the xz-compressed data, as prepare.sh writes
    it (no packages: this environment has them), and a code version."""
    work = copy_workflow(tmp_path_factory.mktemp("gpu"), extra=("scripts", "src"))
    for tv in ("MNIST", "FashionMNIST"):
        (work / "gpu_carry/data" / tv / "raw").mkdir(parents=True)
        for f in FILES:
            data = (data_root / tv / "raw" / f).read_bytes()
            (work / "gpu_carry/data" / tv / "raw" / f"{f}.xz").write_bytes(lzma.compress(data, preset=0))
    (work / "gpu_carry/wheels").mkdir()
    (work / "gpu_carry/CODE_VERSION").write_text("abc1234\n")
    write_source_digest(work)
    return work


def write_source_digest(work: Path) -> None:
    """gpu_carry/SOURCE.sha256 of the copy's code, as prepare.sh writes it (scripts/gpu/source_digest.py,
    which picks the code's files out of every file named)."""
    files = [str(p.relative_to(work)) for p in work.rglob("*")]
    digest = subprocess.run([sys.executable, str(REPO / "scripts/gpu/source_digest.py")], cwd=work,
                            input="\0".join(files).encode(), capture_output=True, check=True).stdout
    (work / "gpu_carry/SOURCE.sha256").write_bytes(digest)


@pytest.fixture(scope="module")
def guard(tmp_path_factory) -> dict[str, str]:
    """The environment of the import guard: the GPU machine's import names (closure.py --modules)."""
    folder = tmp_path_factory.mktemp("guard")
    names = subprocess.run([sys.executable, str(REPO / "scripts/gpu/closure.py"), "--modules"], capture_output=True,
                           text=True, check=True).stdout
    (folder / "modules.txt").write_text(names)
    return {"PYTHONPATH": str(REPO / "scripts/gpu/import_guard"), "BLADEFL_IMPORT_GUARD": str(folder / "modules.txt")}


def run_script(work: Path, out: Path, guard: dict[str, str], **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(["bash", "scripts/gpu/run.sh"], cwd=work, capture_output=True, text=True, timeout=HANG_S,
                          env={**venv_env(), **guard, "OUT": str(out), "DEVICE": "cpu", "GRID": "config/smoke.yaml",
                               **env})
    refused = Path(guard["BLADEFL_IMPORT_GUARD"] + ".refused")
    if proc.returncode and refused.exists():  # what the guard refused, for the failure's message
        proc.stderr += f"\nmodules the import guard refused: {sorted(set(refused.read_text().split()))}"
    return proc


def test_the_import_guard_refuses_what_the_gpu_machine_lacks_and_allows_what_it_has(guard):
    allowed = set(Path(guard["BLADEFL_IMPORT_GUARD"]).read_text().split())
    assert {"torch", "numpy", "pandas", "yaml", "snakemake", "cryptography", "bladefl"} <= allowed
    assert not {"optuna", "sklearn", "papermill", "pulp", "seaborn"} & allowed  # not carried: not there
    code = ("import bladefl.cli, snakemake, torch, pandas\n"
            "try:\n    import optuna\nexcept ModuleNotFoundError as exc:\n    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG_S,
                          env={**venv_env(), **guard})
    assert proc.returncode == 0 and "No module named 'optuna' (not on the GPU machine" in proc.stdout, proc.stderr


def test_the_replica_holds_the_machines_packages_pinned_where_seen_and_the_scripts_parse():
    """scripts/gpu/rehearse.sh installs closure.py --replica into a Python 3.12: every package of the
    machine once, each version seen there pinned; every script of the GPU path is valid bash."""
    closure = runpy.run_path(str(REPO / "scripts/gpu/closure.py"))
    lines = subprocess.run([sys.executable, str(REPO / "scripts/gpu/closure.py"), "--replica"], capture_output=True,
                           text=True, check=True).stdout.split()
    assert [line.split("==")[0] for line in lines] == closure["MACHINE"]
    assert {line for line in lines if "==" in line} == {f"{n}=={v}" for n, v in closure["SEEN"].items()}
    assert "torch" in closure["SEEN"]
    for script in sorted((REPO / "scripts/gpu").glob("*.sh")):
        proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
        assert proc.returncode == 0, (script.name, proc.stderr)


def test_a_checkout_changed_since_the_carry_was_prepared_is_refused_before_any_work(tmp_path):
    """Results record the code version prepare.sh wrote: a checkout whose code differs from the code the
    carry was prepared for (its SOURCE.sha256) is refused at once, naming the file, and writes nothing."""
    work = tmp_path / "work"
    (work / "scripts/gpu").mkdir(parents=True)
    for script in ("run.sh", "source_digest.py"):
        shutil.copy(REPO / "scripts/gpu" / script, work / "scripts/gpu" / script)
    (work / "src").mkdir()
    (work / "src/engine.py").write_text("x = 1\n")
    (work / "gpu_carry").mkdir()
    (work / "gpu_carry/CODE_VERSION").write_text("abc1234\n")
    write_source_digest(work)
    assert "src/engine.py" in (work / "gpu_carry/SOURCE.sha256").read_text()

    def call() -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "scripts/gpu/run.sh"], cwd=work, capture_output=True, text=True, timeout=HANG_S,
                              env={**os.environ, "OUT": str(tmp_path / "out")})

    (work / "src/engine.py").write_text("x = 2\n")  # changed after prepare.sh
    (work / "config").mkdir()
    (work / "config/later.yaml").write_text("seeds: [0]\n")  # and a file added after it
    proc = call()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "src/engine.py (changed)" in proc.stderr and "config/later.yaml (added)" in proc.stderr
    assert "abc1234" in proc.stderr and "prepare.sh again" in proc.stderr
    assert not (tmp_path / "out").exists() and not (work / "data").exists()
    # What git ignores there (Python's caches, a job's logs) is not code: not refused.
    (work / "src/engine.py").write_text("x = 1\n")
    (work / "config/later.yaml").unlink()
    for ignored in ("src/__pycache__/engine.cpython-312.pyc", "workflow/logs/a.log", "profiles/measured/x.yaml"):
        (work / ignored).parent.mkdir(parents=True, exist_ok=True)
        (work / ignored).write_text("")
    proc = call()  # fails later: no data here
    assert "differs from the code" not in proc.stderr, proc.stderr
    assert packed(tmp_path / "out")[0]["code_version"] == "abc1234"
    shutil.rmtree(tmp_path / "out")
    # A carry without the code's record (an older prepare.sh): its CODE_VERSION is not taken on trust.
    (work / "gpu_carry/SOURCE.sha256").unlink()
    proc = call()  # fails later: no data here
    assert "its CODE_VERSION is not recorded" in proc.stderr
    about, _ = packed(tmp_path / "out")
    assert about["code_version"] == "unknown" and (work / "gpu_carry/CODE_VERSION").exists()


def test_a_file_added_at_the_root_or_a_link_anywhere_is_refused_as_added_code(tmp_path):
    """The check walks the whole tree the call runs: a `glob.py` beside the Snakefile (it would shadow
    Python's own module) and a link (to code elsewhere) are refused (were: not looked at, and run)."""
    work = tmp_path / "work"
    (work / "scripts/gpu").mkdir(parents=True)
    for script in ("run.sh", "source_digest.py"):
        shutil.copy(REPO / "scripts/gpu" / script, work / "scripts/gpu" / script)
    (work / "Snakefile").write_text("rule all:\n    input: []\n")
    (work / "gpu_carry").mkdir()
    (work / "gpu_carry/CODE_VERSION").write_text("abc1234\n")
    write_source_digest(work)
    (work / "glob.py").write_text("raise SystemExit('ran')\n")
    (work / "scripts/elsewhere.py").symlink_to(tmp_path / "outside.py")
    (work / "scripts/lib").symlink_to(tmp_path, target_is_directory=True)
    proc = subprocess.run(["bash", "scripts/gpu/run.sh"], cwd=work, capture_output=True, text=True, timeout=HANG_S,
                          env={**os.environ, "OUT": str(tmp_path / "out")})
    assert proc.returncode == 2 and "glob.py (added)" in proc.stderr, proc.stderr
    assert "scripts/elsewhere.py (a link)" in proc.stderr and "scripts/lib (a link)" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_the_code_found_by_walking_the_folders_is_the_code_git_lists():
    """run.sh looks for added code by walking the folders (no git there), leaving out what .gitignore
    ignores there: on this checkout (caches and all) the walk finds exactly the files git lists."""
    digest = runpy.run_path(str(REPO / "scripts/gpu/source_digest.py"))
    listed = checkout_files(REPO)
    here = os.getcwd()
    try:
        os.chdir(REPO)
        (walked, links), recorded = digest["walked"](), [line.split("  ", 1)[1] for line in digest["record"](listed)]
    finally:
        os.chdir(here)
    assert len(recorded) > 100 and "src/bladefl/fl/engine.py" in recorded and "Makefile" in recorded
    assert walked == recorded and links == []


def test_the_workflow_parses_on_the_gpu_machine_whatever_the_config(guard, tmp_path):
    """Every config's parse (the calibration's imports its study's spec) under the guard: a dry run, on
    the GPU machine's 16 cores; the paper grid's small groups ask for a share of them, the largest for all."""
    work = copy_workflow(tmp_path)
    for config in ("config/paper.yaml", "config/calibration.yaml", "config/sensitivity.yaml"):
        proc = subprocess.run(["snakemake", "-n", "--configfile", config, "--config", "gpu_profile_on_cpu=True",
                               "--profile", "profiles/gpu", "--cores", "16"], cwd=work, capture_output=True,
                              text=True, timeout=HANG_S, env={**venv_env(), **guard})
        assert proc.returncode == 0, (config, (proc.stdout + proc.stderr)[-3000:])
        if config == "config/paper.yaml":
            threads = dict(re.findall(r"wildcards: group=(\w+)\n\s+threads: (\d+)", proc.stdout + proc.stderr))
            assert threads["mnist_N10_block0"] == "4" and threads["fashion_mnist_N20_block3"] == "16", threads
            assert len(threads) == 14


def packed(out: Path) -> tuple[dict, list[str]]:
    with tarfile.open(out / "grid-tables.tar.xz") as tar:
        names = tar.getnames()
        about = json.loads(tar.extractfile("grid/ABOUT.json").read())
    return about, names


@pytest.mark.slow
def test_a_grid_stopped_by_its_budget_still_packs_what_finished(machine, tmp_path, guard):
    proc = run_script(machine, tmp_path / "out", guard, BENCH="0", CHECK="0", BUDGET_S="2")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "finished: false (rc 124" in proc.stdout
    about, names = packed(tmp_path / "out")
    assert about["finished"] is False and about["mode"] == "bench" and about["budget_s"] == 2
    assert not (tmp_path / "out/grid").exists()  # packed, then removed


@pytest.mark.slow
def test_a_grid_continued_in_a_kept_folder_skips_finished_runs_and_the_device_check_is_packed(machine, tmp_path,
                                                                                             guard):
    keep = tmp_path / "kept/grid"
    first = run_script(machine, tmp_path / "out1", guard, BENCH_S="15", SEEDS="1", GRID_DIR=str(keep))
    assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
    bench = (tmp_path / "out1/bench.txt").read_text()
    assert "Error" not in bench.split("grid:")[0], bench[-2000:]  # the benchmark started under the guard
    check = (tmp_path / "out1/check.txt").read_text()
    runs = 2 * len(device_check.MIXED)  # the mixed group in both iteration modes
    assert f"mixed group, cpu vs cpu: {runs} of {runs} runs within tolerance" in check
    assert "detect+exclude" in check and "counterfactual" in check and "DP eps 50" in check
    assert "(12 runs" in (tmp_path / "out1/bench.txt").read_text()
    second = run_script(machine, tmp_path / "out2", guard, BENCH="0", CHECK="0", GRID_DIR=str(keep))
    assert second.returncode == 0, (second.stdout + second.stderr)[-3000:]
    assert "(0 runs" in (tmp_path / "out2/bench.txt").read_text()  # every run folder was finished
    assert not (tmp_path / "out2/check.txt").exists()
    about, names = packed(tmp_path / "out2")
    assert sum(n.endswith("summary.json") for n in names) == 6 and all(n.startswith("grid/") for n in names)
    assert about["finished"] and len(about["earlier_calls"]) == 1 and about["earlier_calls"][0]["finished"]
    assert keep.is_dir()  # a kept folder is not removed


@pytest.mark.slow
def test_an_archive_above_the_machines_file_limit_comes_back_in_parts_that_join(machine, tmp_path, guard):
    proc = run_script(machine, tmp_path / "out", guard, BENCH="0", CHECK="0", SPLIT_BYTES="4000")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    parts = sorted((tmp_path / "out").glob("grid-tables.tar.xz.part-*"))
    assert parts and not (tmp_path / "out/grid-tables.tar.xz").exists()
    (tmp_path / "out/grid-tables.tar.xz").write_bytes(b"".join(p.read_bytes() for p in parts))
    about, names = packed(tmp_path / "out")
    assert about["finished"] and sum(n.endswith("summary.json") for n in names) == 6


@pytest.mark.slow
def test_a_stopped_workflow_packs_the_runs_of_finished_groups_not_yet_copied(machine, tmp_path, guard):
    """Snakemake stopped between a group job and its runs' copies: the runs are packed from the
    group's folder; a run folder without its summary (written last) is not."""
    group = machine / "results/smoke/groups/authors-code/mnist_N9_block0/mnist/cell~x"  # smoke: engine authors-code
    (group / "seed~0").mkdir(parents=True)
    (group / "seed~0/summary.json").write_text("{}")
    (group / "seed~0/rounds.csv").write_text("K\n")
    (group / "seed~1").mkdir()
    (group / "seed~1/rounds.csv").write_text("K\n")
    try:
        proc = run_script(machine, tmp_path / "out", guard, MODE="snakemake", CHECK="0", BENCH="0", BUDGET_S="2")
    finally:
        subprocess.run(["rm", "-rf", str(machine / "results/smoke/groups/authors-code/mnist_N9_block0")], check=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    about, names = packed(tmp_path / "out")
    assert about["finished"] is False
    assert "grid/mnist/cell~x/seed~0/summary.json" in names and "grid/mnist/cell~x/seed~0/rounds.csv" in names
    assert not any("seed~1" in n for n in names if "cell~x" in n)


def _grid_of_two_draws(machine: Path, name: str) -> str:
    """The smoke grid with two seeds, each on its own draw and in its own group block (as the paper
    grid's 20), written into the machine's copy, with folders of its own (``results/<name>``)."""
    smoke = yaml.safe_load((machine / "config/smoke.yaml").read_text())
    two = {**smoke, "results_dir": f"results/{name}", "logs_dir": f"logs/{name}",
           "benchmarks_dir": f"benchmarks/{name}",
           "seeds": [0, 1], "seeds_per_job": 1, "partition": {**smoke["partition"], "seeds": [0, 1]}}
    (machine / f"config/{name}.yaml").write_text(yaml.safe_dump(two))
    write_source_digest(machine)  # code added: prepare.sh again, or run.sh refuses it
    return f"config/{name}.yaml"


@pytest.mark.slow
def test_parts_of_the_grid_from_two_calls_pack_import_and_merge_into_the_whole_grid(machine, tmp_path, guard):
    """Call 1 runs seed 0's part (GRID_SEEDS=0-0: config run_seeds, each run a run of the whole grid),
    call 2 on the same machine seed 1's: the second continues in the machine's ignored results folder and
    packs both. The parts import one after the other into one results folder: the whole grid, every
    part's record kept."""
    grid = _grid_of_two_draws(machine, "parts")
    first = run_script(machine, tmp_path / "out1", guard, MODE="snakemake", CHECK="0", BENCH="0", GRID=grid,
                       GRID_SEEDS="0-0", BUDGET_S="500", LEDGERS="1")
    assert first.returncode == 0, (first.stdout + first.stderr)[-3000:]
    assert "rule run_group:" in first.stdout + first.stderr  # the documented command: profiles/gpu, stacked jobs
    about, names = packed(tmp_path / "out1")
    assert about["finished"] and about["grid_seeds"] == "0-0" and about["mode"] == "snakemake"
    assert about["code_version"] == "abc1234" and about["grid_wall_s"] > 0
    assert {n.split("/")[3] for n in names if n.endswith("summary.json")} == {"seed~0"}
    assert not any(n.endswith((".npz", ".bin")) for n in names)  # no models
    assert sum(n.endswith("summary.json") for n in names) == 6
    assert sum("/chains/K" in n for n in names) == 12  # LEDGERS=1: 6 runs x K 1..2
    second = run_script(machine, tmp_path / "out2", guard, MODE="snakemake", CHECK="0", BENCH="0", GRID=grid,
                        GRID_SEEDS="1-1", BUDGET_S="500")
    assert second.returncode == 0, (second.stdout + second.stderr)[-3000:]
    _, names = packed(tmp_path / "out2")
    assert sum(n.endswith("summary.json") for n in names) == 12  # both calls' runs
    config = run_import.read_config([REPO / "config/config.yaml", machine / grid])
    config["data_dir"] = str(machine / "data")
    results = tmp_path / "results"
    cli = [str(Path(sys.executable).parent / "bladefl"), "import-runs", "--configfile",
           str(REPO / "config/config.yaml"), str(machine / grid), "--results-dir", str(results)]
    for out, seed in (("out1", "0"), ("out2", "1")):
        proc = subprocess.run([*cli, "--archive", str(tmp_path / out / "grid-tables.tar.xz"), "--seeds", seed],
                              cwd=machine, capture_output=True, text=True, timeout=HANG_S, env=venv_env())
        assert proc.returncode == 0, proc.stdout + proc.stderr
        if seed == "0":  # the first call's runs carry their ledgers: each run held to its blocks
            assert "ledgers verified for 6" in proc.stdout, proc.stdout
    whole = run_import.expected_configs(config, str(results / "runs/authors-code"))
    assert all((Path(folder) / "summary.json").is_file() for folder in whole) and len(whole) == 12
    record = json.loads((results / "imported.json").read_text())
    assert record["seeds"] == [1] and [r["seeds"] for r in record["earlier_imports"]] == [[0]]
    summary = json.loads(next((results / "runs").rglob("summary.json")).read_text())
    assert summary["provenance"]["code_version"].endswith("+abc1234") and summary["provenance"]["device"]
    # The first part alone is a smaller design of its own: the config cut to its seeds and their draws
    # (an overlay, docs/gpu.md) takes the part's runs as every run it has, and nothing else.
    cut = tmp_path / "first-part.yaml"
    cut.write_text(yaml.safe_dump({"seeds": [0], "partition": {"seeds": [0]}}))
    proc = subprocess.run([*cli[:-2], str(cut), "--results-dir", str(tmp_path / "part"), "--archive",
                           str(tmp_path / "out1/grid-tables.tar.xz")], cwd=machine, capture_output=True, text=True,
                          timeout=HANG_S, env=venv_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(list((tmp_path / "part").rglob("summary.json"))) == 6


# Every Python the script starts runs this first (PYTHONPATH): the import guard, and in the group job
# (`bladefl run-group`), once it has computed its runs and is about to exit, SIGINT and SIGTERM ignored
# and a sleep that only SIGKILL ends.
HANGING_GROUP = """
exec(open({guard!r}).read())
import atexit, os, signal, sys, time
if "run-group" in sys.argv:
    def hang():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with open({marker!r}, "w") as out:
            out.write(str(os.getpid()))
        while True:
            time.sleep(1)
    atexit.register(hang)
"""


def _descendant(root: int, needle: str) -> int | None:
    """A process below ``root`` whose command line holds ``needle``, or None: the processes below it and
    their command lines as scripts/gpu/deadline.py reads them (``session_processes``, ``command_line``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("deadline", REPO / "scripts/gpu/deadline.py")
    assert spec is not None and spec.loader is not None
    deadline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(deadline)
    for pid in deadline.session_processes(root, root):
        if needle in (deadline.command_line(pid) or ""):
            return pid
    return None


@pytest.mark.slow
def test_a_stopped_grid_kills_a_job_that_ignores_sigint_and_packs_every_finished_run(machine, tmp_path, guard):
    """The group job computes its runs and then ignores SIGINT and SIGTERM. The grid's stop (asked once
    the job hangs, so the test waits on no clock a busy machine could beat) kills what is left, and the
    script packs every finished run (from the group's folder); the budget's own stop is the same code
    after its clock (the tests with BUDGET_S=2)."""
    import time

    hook, marker = tmp_path / "hook", tmp_path / "hung.pid"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HANGING_GROUP.format(
        guard=str(REPO / "scripts/gpu/import_guard/sitecustomize.py"), marker=str(marker)))
    env = {**venv_env(), **guard, "PYTHONPATH": str(hook)}
    log = tmp_path / "script.log"
    with log.open("w") as out:
        proc = subprocess.Popen(["bash", "scripts/gpu/run.sh"], cwd=machine, stdout=out, stderr=subprocess.STDOUT,
                                text=True, env={**env, "OUT": str(tmp_path / "out"), "DEVICE": "cpu",
                                                "MODE": "snakemake", "GRID": _grid_of_two_draws(machine, "stopped"),
                                                "GRID_SEEDS": "0-0", "CHECK": "0", "BENCH": "0", "BUDGET_S": "3000",
                                                "GRACE_S": "5"})
        try:
            waited = time.monotonic() + 900
            while not marker.exists() and proc.poll() is None and time.monotonic() < waited:
                time.sleep(0.5)
            assert marker.exists(), f"the group never reached its hang: {log.read_text()[-3000:]}"
            deadline = _descendant(proc.pid, "scripts/gpu/deadline.py")
            assert deadline is not None, log.read_text()[-3000:]
            os.kill(deadline, signal.SIGUSR1)
            proc.wait(timeout=HANG_S)
        finally:
            if proc.poll() is None:
                proc.kill()
    said = log.read_text()
    assert proc.returncode == 0, said[-3000:]
    assert "finished: false (rc 124" in said and "a stop asked (SIGUSR1)" in said, said[-3000:]
    assert "ignored SIGINT and SIGTERM: killed" in said, said[-3000:]  # the hung job's process was killed
    hung = int(marker.read_text())
    assert not Path(f"/proc/{hung}").exists() or "zombie" in Path(f"/proc/{hung}/status").read_text().lower()
    about, names = packed(tmp_path / "out")
    assert about["finished"] is False
    on_disk = {str(p.relative_to(p.parents[3])) for p in (machine / "results/stopped").rglob("summary.json")
               if "/seed~" in str(p)}
    in_archive = {n.removeprefix("grid/") for n in names if n.endswith("summary.json")}
    assert len(in_archive) == 6 and on_disk <= in_archive  # every finished run, the group's six included


@pytest.mark.parametrize("name, value", [
    ("BUDGET_S", "540s"), ("BUDGET_S", "0"), ("BUDGET_S", "-5"), ("BUDGET_S", "1e20"),
    ("BUDGET_S", "a[$(touch PWNED)]"),
    ("GRID_SEEDS", "3; touch PWNED"), ("GRID_SEEDS", "$(touch PWNED)"), ("GRID_SEEDS", "0"), ("GRID_SEEDS", "1-x"),
    ("GRID", 'config/x"; import os; os.system("touch PWNED"); "'), ("OUT", "out dir"), ("DEVICE", "tpu"),
    ("MODE", "all"), ("GRACE_S", "PWD[$(touch PWNED)]"), ("BENCH_S", "a[$(touch PWNED)]"),
    ("SPLIT_BYTES", "1e9"), ("SEEDS", "*"), ("CHECK", "yes"), ("BENCH_AT", "never"), ("LEDGERS", "2"),
])
def test_a_value_the_patterns_refuse_stops_the_call_in_one_line_before_any_work(tmp_path, name, value):
    """run.sh parses BUDGET_S, GRID_SEEDS, the paths, DEVICE and MODE by pattern before any use: anything else
    is refused in one line naming the value (exit 2), nothing runs and nothing is written."""
    work = tmp_path / "work"
    (work / "scripts/gpu").mkdir(parents=True)
    shutil.copy(REPO / "scripts/gpu/run.sh", work / "scripts/gpu/run.sh")
    proc = subprocess.run(["bash", "scripts/gpu/run.sh"], cwd=work, capture_output=True, text=True, timeout=HANG_S,
                          env={**os.environ, "OUT": str(tmp_path / "out"), name: value})
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"{name}: ") and not (tmp_path / "out").exists()
    assert not list(work.rglob("PWNED")) and sorted(p.name for p in work.iterdir()) == ["scripts"]
