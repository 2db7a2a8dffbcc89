"""The smoke workflow on a real one-node SLURM cluster through profiles/slurm.

Installs Debian's slurmctld, slurmd, slurm-client and munge when missing (root and apt
needed: elsewhere it skips, and under CI=true a skip fails the suite), starts the cluster
with its state in a temp folder, runs the workflow through the executor plugin, checks that
every grid job ran under SLURM and that a failing job is reported as failed, then stops
every daemon it started, by PID, whether the test passes or not.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HANG_S, bare_env, copy_workflow
from slurm_cluster import install, local_cluster, missing_tools

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slurm

# What a one-node cluster without accounting needs on top of profiles/slurm.
OVERRIDES = [
    "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "1",
    "--slurm-no-account", "--jobs", "4", "--retries", "0",
    "--default-resources", "mem_mb=1000", "runtime=10",  # no partition: the cluster's default
    "--set-resources", "run_cell:cpus_per_task=1", "run_cell:mem_mb=2000", "reference:cpus_per_task=1",
    "reference:mem_mb=2000",
    "--set-threads", "run_cell=1", "reference=1",
    # the profile's job grouping, in batches this node's 2 CPUs can hold
    "--group-components", "grid=2",
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("a local SLURM cluster needs root and apt-get")
    install()
    if missing_tools():
        pytest.skip(f"SLURM tools missing after install: {missing_tools()}")
    with local_cluster(tmp_path_factory.mktemp("slurm")) as c:
        yield c


def run_profile(cluster, workdir: Path, *args: str, timeout: int = HANG_S, targets: tuple[str, ...] = ()
                ) -> subprocess.CompletedProcess:
    """`.venv/bin/snakemake` called by its path with no `bladefl` on PATH (as docs/hpc.md says): every
    job finds the tools through the workflow's own PATH prefix."""
    bare = bare_env()
    env = {**bare, "SLURM_CONF": cluster.env["SLURM_CONF"], "PATH": f"{cluster.bin}{os.pathsep}{bare['PATH']}"}
    snakemake = str(Path(sys.executable).parent / "snakemake")
    cmd = ["timeout", "-k", "30", str(timeout), snakemake, *targets, "--profile", str(REPO / "profiles/slurm"),
           *OVERRIDES, *args]
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)


def test_smoke_workflow_runs_under_slurm(cluster, smoke, data_root, tmp_path, capsys):
    work = copy_workflow(tmp_path)
    (work / "data").mkdir()
    (work / "data" / "raw").symlink_to(data_root.resolve(), target_is_directory=True)
    # the smoke's partitions and reference optima (made by the local smoke): the grid's jobs go to SLURM
    # without waiting on three jobs before them
    shutil.copytree(smoke / "data/partitions", work / "data/partitions", symlinks=True)
    shutil.copytree(smoke / "results/smoke/reference", work / "results/smoke/reference", symlinks=True)
    # the workflow's cluster jobs, through the verdicts (the report's pages are localrules: they run on
    # the submit host as in the local smoke tests, and would only lengthen this one)
    proc = run_profile(cluster, work, "--configfile", "config/smoke.yaml",
                       targets=("results/smoke/verdicts/mnist.csv",))
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-5000:])
    job_ids = {}
    for summary in (work / "results/smoke/runs/authors-code/mnist").glob("*/seed~0/summary.json"):
        job_ids[summary.parent.parent.name] = json.loads(summary.read_text())["provenance"]["slurm_job_id"]
    # 5 sweep cells and the lazy_ratio sweep's lazy cell with exclusion
    assert len(job_ids) == 6 and all(j and j.isdigit() for j in job_ids.values()), job_ids
    # the profile's job grouping: the 6 grid jobs went to SLURM as 3 batches of 2 (one wildcard rule)
    batches = {}
    for cell, job in job_ids.items():
        batches.setdefault(job, []).append(cell)
    assert sorted(map(len, batches.values())) == [2, 2, 2], batches
    ctld = (cluster.root / "slurmctld.log").read_text()
    allocated = set(re.findall(r"JobId=(\d+)", ctld))
    assert set(job_ids.values()) <= allocated
    results = work / "results/smoke"
    assert (results / "verdicts/mnist.csv").is_file() and (results / "bound/mnist/fit.csv").is_file()
    with capsys.disabled():
        print("\nSLURM job ids of the smoke grid jobs (batches of 2):")
        for cell, job in sorted(job_ids.items(), key=lambda kv: int(kv[1])):
            print(f"  SLURM_JOB_ID={job}  {cell}")


def test_failing_job_is_reported_as_failed(cluster, tmp_path):
    (tmp_path / "Snakefile").write_text('''
rule all:
    input: "ok.txt", "fail.txt"

rule ok:
    output: "ok.txt"
    log: "logs/ok.log"
    shell: "echo $SLURM_JOB_ID > {output} 2> {log}"

rule fail:
    output: "fail.txt"
    log: "logs/fail.log"
    shell: "echo about to fail > {log}; exit 3"
''')
    proc = run_profile(cluster, tmp_path, "--keep-going", timeout=HANG_S)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Error in rule fail" in out, out[-3000:]
    assert (tmp_path / "ok.txt").read_text().strip().isdigit()  # the other job ran under SLURM
    assert not (tmp_path / "fail.txt").exists()
