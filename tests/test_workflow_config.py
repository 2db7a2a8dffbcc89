"""Bad workflow configs are rejected at parse time (before any job), naming the field."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from bladefl.workflow_config import ConfigError, check
from conftest import copy_workflow, snakemake

REPO = Path(__file__).resolve().parents[1]


def dry_run(workdir: Path, config: dict) -> subprocess.CompletedProcess:
    (workdir / "bad.yaml").write_text(yaml.safe_dump(config))
    return snakemake(workdir, "-n", "--cores", "1", "--configfile", "bad.yaml", timeout=120)


BASE = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


@pytest.mark.parametrize(
    "change, message",
    [
        ({"datasets": ["cifar10"]}, "cifar10"),
        ({"partition": {"scheme": "random"}}, "random"),
        ({"partition": {"N": -3}}, "-3"),
        ({"partition": {"N": 200, "n": 512}}, "partition.N * partition.n must be at most the training set size 60000"),
        ({"partition": {"n": 513}}, "partition.n must be divisible by partition.shards_per_client=2"),
        ({"partition": {"scheme": "classes", "classes_per_client": 3, "n": 512}},
         "partition.n must be divisible by partition.classes_per_client=3"),
    ],
)
def test_snakemake_rejects_bad_config_before_any_job(tmp_path, change, message):
    config = {**BASE, **change}
    if "partition" in change:
        config["partition"] = {**BASE["partition"], **change["partition"]}
    proc = dry_run(copy_workflow(tmp_path), config)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert message in out, out[-2000:]
    assert not (tmp_path / "data").exists() and not (tmp_path / "logs").exists()


def test_library_check_lists_every_problem():
    with pytest.raises(ConfigError) as info:
        check({"datasets": ["mnist", "svhn"], "partition": {"N": 0, "n": -2}})
    msg = str(info.value)
    assert "svhn" in msg and "partition.N must be an integer >= 1" in msg and "partition.n must be" in msg


def test_default_config_is_valid():
    check(BASE)
