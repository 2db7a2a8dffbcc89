"""profiles/gpu keeps its promises: grouping follows from its `gpu` resource (a `--config` on the
command line cannot erase it), and on a machine without a GPU it stops before any job unless asked."""

from __future__ import annotations

import re

import pytest

from bladefl.experiments.plan import gpu_profile
from conftest import HANG_S, copy_workflow, snakemake


def test_grouping_follows_the_gpu_resource_unless_the_config_names_one():
    assert gpu_profile.grouping({}, gpu_resource=True) == "partition"
    assert gpu_profile.grouping({}, gpu_resource=False) == "cell"
    assert gpu_profile.grouping({"grouping": "cell"}, gpu_resource=True) == "cell"
    assert gpu_profile.grouping({"grouping": "partition"}, gpu_resource=False) == "partition"


def test_the_gpu_profile_without_a_gpu_is_refused_unless_asked():
    def no_gpu() -> bool:
        return False

    line = gpu_profile.refusal({}, True, gpu_visible=no_gpu)
    assert line and "no GPU" in line and "gpu_profile_on_cpu=True" in line and "\n" not in line
    assert gpu_profile.refusal({}, True, gpu_visible=lambda: True) is None
    assert gpu_profile.refusal({"gpu_profile_on_cpu": True}, True, gpu_visible=no_gpu) is None
    assert gpu_profile.refusal({}, False, gpu_visible=no_gpu) is None  # not the GPU profile
    assert gpu_profile.refusal({"grouping": "cell"}, True, gpu_visible=no_gpu) is None


@pytest.mark.snakemake
def test_a_config_on_the_command_line_keeps_the_gpu_profiles_grouping(tmp_path):
    work = copy_workflow(tmp_path)
    proc = snakemake(work, "-n", "--profile", "profiles/gpu", "--configfile", "config/smoke.yaml",
                     "--config", "seeds_per_job=1", "results_dir=elsewhere", timeout=HANG_S)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert re.search(r"^run_group\s+1$", out, re.M), out[-3000:]  # the smoke's six runs: one group


@pytest.mark.snakemake
def test_the_gpu_profile_on_a_machine_without_a_gpu_stops_with_one_line(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the profile may run")  # not a required test: it needs no GPU
    work = copy_workflow(tmp_path)
    proc = snakemake(work, "--profile", "profiles/gpu", "--configfile", "config/smoke.yaml", timeout=HANG_S)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if "profiles/gpu: this machine has no GPU" in line]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert not (work / "data").exists() and not (work / "logs").exists() and not (work / "results").exists()
    assert not list((work / ".snakemake/locks").glob("*"))  # the next run is not locked out
    dry = snakemake(work, "-n", "--profile", "profiles/gpu", "--configfile", "config/smoke.yaml", timeout=HANG_S)
    assert dry.returncode == 0 and "run_group" in dry.stdout + dry.stderr  # a dry run plans it anywhere


@pytest.mark.snakemake
def test_a_part_under_the_gpu_profile_plans_one_group_of_its_own_seeds_runs(tmp_path):
    """A 2-seed copy of the smoke grid, part run_seeds=1: its one group job reads seed 1's draw alone
    and the part moves seed 1's six runs (not seed 0's); the whole design's runs outside the part are
    refused with one line naming run_seeds."""
    import yaml

    work = copy_workflow(tmp_path)
    smoke = yaml.safe_load((work / "config/smoke.yaml").read_text())
    two = {**smoke, "seeds": [0, 1], "partition": {**smoke["partition"], "seeds": [0, 1]}}
    (work / "config/two.yaml").write_text(yaml.safe_dump(two))
    args = ("-n", "-p", "--profile", "profiles/gpu", "--configfile", "config/two.yaml", "--config",
            "gpu_profile_on_cpu=True", "run_seeds=1")
    proc = snakemake(work, "run_folders", *args, timeout=HANG_S)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert re.search(r"^run_group\s+1$", out, re.M) and re.search(r"^run_cell\s+6$", out, re.M), out[-3000:]
    group = [line for line in out.splitlines() if line.startswith("Shell command: bladefl run-group")]
    assert len(group) == 1 and "_seed1.npy" in group[0] and "_seed0.npy" not in group[0], group
    moved = re.findall(r"^Shell command: bladefl run .*--out '?(\S+/seed~\d+)", out, re.M)
    assert len(moved) == 6 and all(m.endswith("seed~1") for m in moved), moved
    whole = snakemake(work, *args, timeout=HANG_S)  # the default target needs seed 0's runs too
    assert whole.returncode != 0 and "outside run_seeds" in whole.stdout + whole.stderr
