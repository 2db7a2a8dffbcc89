"""scripts/calibration_part.sh: the calibration study's progress packed into the repository and restored
on another machine. In a repository of one commit with a stand-in study folder: a pack holds the finished
trial runs' tables alone, the next pack only the runs finished since; a restore into a fresh folder brings
back the journal and every table; other code, a dirty tree or a hostile archive is refused in one line."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import venv_env

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts/calibration_part.sh"
CAL = "results/cal/calibration/mnist"


def finished(repo: Path, key: str, seed: int = 0) -> Path:
    run = repo / CAL / "trials" / key / "mnist/alpha~1_beta~6/" / f"seed~{seed}"
    run.mkdir(parents=True)
    (run / "rounds.csv").write_text("K,round\n")
    (run / "summary.json").write_text("{}")
    (run / "model.pt").write_text("not packed")
    return run


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    (tmp_path / "config").mkdir()
    (tmp_path / "config/config.yaml").write_text((ROOT / "config/config.yaml").read_text())
    (tmp_path / "config/cal.yaml").write_text("results_dir: results/cal\n")
    (tmp_path / ".gitignore").write_text("results/\n")
    env = {**venv_env(), "CONFIG": "config/cal.yaml", "OUT": "kept", "PYTHONPATH": str(ROOT / "src"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["init", "-q"], ["add", "."], ["commit", "-qm", "study"]):
        subprocess.run(["git", *cmd], cwd=tmp_path, env=env, check=True)
    (tmp_path / CAL).mkdir(parents=True)
    (tmp_path / CAL / "study.journal").write_text('{"op_code": 0}\n')
    return tmp_path, env


def script(repo: tuple[Path, dict[str, str]], command: str) -> subprocess.CompletedProcess:
    folder, env = repo
    return subprocess.run(["bash", str(SCRIPT), command], cwd=folder, env=env, capture_output=True, text=True)


def members(archive: Path) -> list[str]:
    with tarfile.open(archive) as tar:
        return sorted(m.name for m in tar.getmembers() if m.isfile())


def test_packs_hold_each_finished_run_once_and_a_restore_brings_the_study_back(repo):
    folder, _ = repo
    (folder / "results/cal/calibration/fashion_mnist").mkdir()  # a study that has finished no run yet
    (folder / "results/cal/calibration/fashion_mnist/study.journal").write_text("{}\n")
    finished(folder, "k1")
    (folder / CAL / "trials/k1/mnist/alpha~1_beta~6/seed~1").mkdir(parents=True)  # a run still training
    (folder / CAL / "trials/k1/mnist/alpha~1_beta~6/seed~1/rounds.csv").write_text("K,round\n")
    first = script(repo, "pack")
    assert first.returncode == 0 and "mnist: 1 runs packed, 1 in all" in first.stdout, first.stderr
    assert "fashion_mnist: 0 runs packed, 0 in all" in first.stdout
    kept = folder / "kept/mnist"
    assert members(kept / "trials-001.tar.xz") == ["trials/k1/mnist/alpha~1_beta~6/seed~0/rounds.csv",
                                                   "trials/k1/mnist/alpha~1_beta~6/seed~0/summary.json"]
    finished(folder, "k2")
    assert script(repo, "pack").returncode == 0
    assert [m.split("/")[1] for m in members(kept / "trials-002.tar.xz")] == ["k2", "k2"]
    again = script(repo, "pack")
    assert "0 runs packed, 2 in all" in again.stdout and not (kept / "trials-003.tar.xz").exists()
    assert (kept / "study.journal").read_text() == '{"op_code": 0}\n'

    subprocess.run(["rm", "-rf", "results"], cwd=folder, check=True)  # another machine: a fresh clone
    restored = script(repo, "restore")
    assert restored.returncode == 0 and "4 trial run tables restored" in restored.stdout, restored.stderr
    assert (folder / CAL / "study.journal").read_text() == '{"op_code": 0}\n'
    assert (folder / CAL / "trials/k2/mnist/alpha~1_beta~6/seed~0/summary.json").is_file()
    twice = script(repo, "restore")
    assert twice.returncode == 2 and "exists: not replaced" in twice.stderr


def test_other_code_a_dirty_tree_or_a_hostile_archive_is_refused(repo):
    folder, env = repo
    finished(folder, "k1")
    assert script(repo, "pack").returncode == 0
    (folder / "config/cal.yaml").write_text("results_dir: results/cal\nseeds: [0]\n")  # uncommitted
    dirty = script(repo, "pack")
    assert dirty.returncode == 2 and "one clean commit" in dirty.stderr
    subprocess.run(["git", "commit", "-qam", "other"], cwd=folder, env=env, check=True)
    other = script(repo, "pack")
    assert other.returncode == 2 and "check out" in other.stderr
    subprocess.run(["git", "reset", "-q", "--hard", "HEAD~1"], cwd=folder, env=env, check=True)
    with tarfile.open(folder / "kept/mnist/trials-002.tar.xz", "w:xz") as tar:  # a member outside the trials
        data = b"x"
        info = tarfile.TarInfo("trials/../../../outside/summary.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    subprocess.run(["rm", "-rf", "results"], cwd=folder, check=True)
    hostile = script(repo, "restore")
    assert hostile.returncode != 0 and "nothing restored" in hostile.stderr
    assert not (folder / CAL / "trials").exists() and not (folder.parent / "outside").exists()
    assert os.listdir(folder / CAL) == []


def test_the_kept_progress_is_one_clean_commits_and_each_packed_run_once():
    """reference/runs/calibration-cpu, as the study's packs left it: one clean code version, and per
    dataset the archives' run folders exactly its packed.txt, each once, trial run tables only."""
    import json

    kept = ROOT / "reference/runs/calibration-cpu"
    if not (kept / "ABOUT.json").is_file():
        pytest.skip("no calibration progress is kept")
    about = json.loads((kept / "ABOUT.json").read_text())
    assert "dirty" not in about["code_version"] and about["code_version"] != "unknown"
    for dataset in sorted(p for p in kept.iterdir() if p.is_dir()):
        listed = (dataset / "packed.txt").read_text().splitlines()
        assert listed == sorted(set(listed)), dataset.name
        folders = [m.rsplit("/", 1)[0] for archive in sorted(dataset.glob("trials-*.tar.xz"))
                   for m in members(archive) if m.endswith("/summary.json")]
        assert sorted(folders) == listed, dataset.name
        assert all(m.startswith("trials/") and m.rsplit("/", 1)[1] in ("rounds.csv", "summary.json", "detections.csv")
                   for archive in dataset.glob("trials-*.tar.xz") for m in members(archive)), dataset.name
        assert (dataset / "study.journal").is_file()
