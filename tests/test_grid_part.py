"""scripts/grid_part.sh: a part of the grid per run seed, packed at once. With a stand-in for
Snakemake that writes run folders of two seeds, the part's archive holds its own seed's tables alone,
in run.sh's layout with an ABOUT.json; a part whose archive exists is skipped (the script resumes);
bad values stop it with one line before any work."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import HANG_S, venv_env

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts/grid_part.sh"
FAKE = """#!/usr/bin/env bash
# A stand-in for Snakemake: records its arguments, writes a finished run of seeds 0 and 1 and a cut one.
echo "$@" >> calls.txt
for seed in 0 1; do
  run=results/part/runs/paper/mnist/cellA/seed~$seed
  mkdir -p "$run/chains" && echo "K,loss" > "$run/rounds.csv" && echo '{}' > "$run/summary.json"
  echo '{}' > "$run/chains/K1.json" && echo x > "$run/model.pt"
done
"""


@pytest.fixture
def work(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "snakemake").write_text(FAKE)
    (bin_dir / "snakemake").chmod(0o755)
    (tmp_path / "config").mkdir()
    (tmp_path / "config/config.yaml").write_text((ROOT / "config/config.yaml").read_text())
    (tmp_path / "config/part.yaml").write_text("results_dir: results/part\nseeds: [0, 1]\n")
    env = venv_env()
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["CONFIG"] = "config/part.yaml"
    env["CORES"] = "2"  # `make test` exports its own CORES (all), which the script also takes
    env["OUT"] = "parts"
    env["PYTHONPATH"] = str(ROOT / "src")
    return tmp_path, env


def run(work: tuple[Path, dict[str, str]], *args: str, **env: str) -> subprocess.CompletedProcess:
    folder, base = work
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=folder, env={**base, **env}, capture_output=True,
                          text=True, timeout=HANG_S)


def test_a_part_packs_its_own_seeds_tables_and_about_and_is_skipped_once_packed(work):
    folder, _ = work
    proc = run(work, "1")
    assert proc.returncode == 0, proc.stderr
    archive = folder / "parts/part-seed1.tar.xz"
    with tarfile.open(archive) as tar:
        files = sorted(m.name for m in tar.getmembers() if m.isfile())
        about = json.loads(tar.extractfile("grid/ABOUT.json").read())  # type: ignore[union-attr]
    assert files == ["grid/ABOUT.json", "grid/mnist/cellA/seed~1/rounds.csv", "grid/mnist/cellA/seed~1/summary.json"]
    assert about["grid_seeds"] == "1" and about["runs"] == 1 and about["device"] == "cpu" and about["finished"]
    assert about["cores_used"] == 2
    assert "run_seeds=[1]" in (folder / "calls.txt").read_text()
    assert not list((folder / "parts").glob(".stage*"))  # nothing half-written left beside it
    again = run(work, "1")
    assert again.returncode == 0 and "exists, skipped" in again.stdout
    assert (folder / "calls.txt").read_text().count("run_folders") == 1  # no second Snakemake call
    with_ledgers = run(work, "0", LEDGERS="1", CORES="all")
    assert with_ledgers.returncode == 0, with_ledgers.stderr
    with tarfile.open(folder / "parts/part-seed0.tar.xz") as tar:
        assert "grid/mnist/cellA/seed~0/chains/K1.json" in tar.getnames()


@pytest.mark.parametrize(("args", "env", "says"), [
    ((), {}, "usage:"), (("1;touch PWNED",), {}, "SEED: a run seed"), (("x",), {}, "SEED: a run seed"),
    (("1",), {"CORES": "0"}, "CORES: a count"), (("1",), {"CORES": "$(touch PWNED)"}, "CORES: a count"),
    (("1",), {"CORES": "all2"}, "CORES: a count"),
    (("1",), {"CONFIG": "config/missing.yaml"}, "CONFIG: ")])
def test_bad_values_stop_with_one_line_before_any_work(work, args, env, says):
    folder, _ = work
    proc = run(work, *args, **env)
    assert proc.returncode == 2 and says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (folder / "calls.txt").exists() and not (folder / "PWNED").exists() and not (folder / "parts").exists()
