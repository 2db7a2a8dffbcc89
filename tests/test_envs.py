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


def test_every_pin_is_exact_and_present():
    pins = pip_pins()
    for required in ("torch", "torchvision", "snakemake", "snakemake-executor-plugin-slurm", "papermill",
                     "nbconvert", "ipykernel", "numpy", "pandas", "seaborn", "matplotlib", "cryptography",
                     "tqdm", "pytest"):
        assert required in pins, required
    assert pins["torch"] == "2.14.1" and pins["torchvision"] == "0.29.1"
    assert pins["snakemake"].startswith("9.")


def test_conda_environment_mirrors_requirements():
    assert conda_pins() == pip_pins()


def test_installed_versions_match_pins():
    from importlib.metadata import version

    for name, pinned in pip_pins().items():
        assert version(name) == pinned, name
