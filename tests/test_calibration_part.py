"""scripts/calibration_part.sh: the calibration study's progress packed into the repository and restored
on another machine. In a repository of one commit with a stand-in study folder: a pack holds the finished
trial runs' tables alone, the next pack only the runs finished since; a restore into a fresh folder brings
back the journal and every table; other code, a dirty tree or a hostile archive is refused in one line."""

from __future__ import annotations

import io
import json
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
    assert not (folder / CAL).exists() or os.listdir(folder / CAL) == []


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


def _packed_two(repo) -> Path:
    """Two datasets packed (mnist with two runs, fashion_mnist with one), the results folder gone: a
    fresh machine about to restore."""
    folder, _ = repo
    finished(folder, "k1")
    finished(folder, "k2")
    fashion = folder / "results/cal/calibration/fashion_mnist"
    fashion.mkdir()
    (fashion / "study.journal").write_text('{"op_code": 0}\n')
    run = fashion / "trials/k9/fashion_mnist/alpha~1_beta~6/seed~0"
    run.mkdir(parents=True)
    (run / "summary.json").write_text("{}")
    assert script(repo, "pack").returncode == 0
    subprocess.run(["rm", "-rf", "results"], cwd=folder, check=True)
    return folder


def _add(archive: Path, name: str, data: bytes = b"x", kind: bytes = tarfile.REGTYPE, size: int | None = None):
    with tarfile.open(archive, "w:xz") as tar:
        info = tarfile.TarInfo(name)
        info.type, info.size = kind, len(data) if size is None else size
        tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def test_a_hostile_restore_is_refused_whole_before_a_file_is_written_and_a_fixed_one_then_restores(repo):
    """A directory member outside the target, a second dataset's bad archive, a FIFO for an archive, a member
    expanding past the bound, a linked journal, a linked staging folder: each refuses the whole restore (exit
    2, one line, no hang) before a file is written, for every dataset; once the archive is put right the
    same restore succeeds (a refusal never leaves a restore refused for good)."""
    from conftest import HANG_S

    folder = _packed_two(repo)
    kept = folder / "kept"
    good = {p: p.read_bytes() for p in kept.rglob("*") if p.is_file()}
    zeros = 17 << 20
    cases = {
        "dir-outside": lambda: _add(kept / "fashion_mnist/trials-002.tar.xz", "trials/../../../outside",
                                    kind=tarfile.DIRTYPE),
        "second-dataset": lambda: _add(kept / "mnist/trials-002.tar.xz", "trials/k3/../../../x/seed~0/summary.json"),
        "fifo": lambda: os.mkfifo(kept / "mnist/trials-002.tar.xz"),
        "bomb": lambda: _add(kept / "mnist/trials-002.tar.xz", "trials/k3/m/seed~0/rounds.csv", bytes(zeros)),
        "linked-journal": lambda: (kept / "mnist/study.journal").unlink()
        or (kept / "mnist/study.journal").symlink_to(folder / "config/config.yaml"),
        "linked-stage": lambda: (folder / "results/cal/calibration").mkdir(parents=True)
        or (folder / "results/cal/calibration/.restore").symlink_to(folder / "config"),
    }
    for name, spoil in cases.items():
        spoil()
        try:
            said = subprocess.run(["bash", str(SCRIPT), "restore"], cwd=folder, env=repo[1], capture_output=True,
                                  text=True, timeout=HANG_S)
        finally:
            for path in [kept / "mnist/trials-002.tar.xz", kept / "fashion_mnist/trials-002.tar.xz"]:
                if path not in good and os.path.lexists(path):
                    path.unlink()
            for path, data in good.items():
                if path.is_symlink() or not path.is_file() or stat_is_fifo(path):
                    path.unlink()
                if not path.exists():
                    path.write_bytes(data)
        assert said.returncode == 2 and "nothing restored" in said.stderr, (name, said.stderr)
        assert len(said.stderr.strip().splitlines()) == 1, (name, said.stderr)
        tables = [p for p in (folder / "results").rglob("*") if p.is_file()] if (folder / "results").exists() else []
        assert tables == [], (name, tables)
        assert not (folder.parent / "outside").exists() and list((folder / "config").iterdir()) != []
        subprocess.run(["rm", "-rf", "results"], cwd=folder, check=True)
    restored = script(repo, "restore")
    assert restored.returncode == 0 and "5 trial run tables restored, 2 journals" in restored.stdout, restored.stderr


def stat_is_fifo(path: Path) -> bool:
    import stat

    return stat.S_ISFIFO(os.lstat(path).st_mode)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_restore_killed_at_any_point_is_finished_by_the_next_with_nothing_lost_or_stale(repo, seed):
    """SIGKILL at a random moment (several seeds), then the same restore again: every table and journal in
    place with its packed bytes, no staging folder left; a kill after staging is finished, not started again
    (the rerun says so), and one while staging starts again."""
    import random
    import signal
    import time

    folder = _packed_two(repo)
    rng = random.Random(seed)
    for _ in range(3):
        process = subprocess.Popen(["bash", str(SCRIPT), "restore"], cwd=folder, env=repo[1],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        time.sleep(rng.uniform(0.0, 0.6))
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        again = script(repo, "restore")
        assert again.returncode in (0, 2), again.stderr
        if again.returncode == 2:  # the kill came after the first restore finished: its journal is in place
            assert "exists: not replaced" in again.stderr
        cal = folder / "results/cal/calibration"
        assert not (cal / ".restore").exists()
        assert sorted(p.relative_to(cal).as_posix() for p in cal.rglob("*") if p.is_file()) == [
            "fashion_mnist/study.journal", "fashion_mnist/trials/k9/fashion_mnist/alpha~1_beta~6/seed~0/summary.json",
            "mnist/study.journal", *[f"mnist/trials/{k}/mnist/alpha~1_beta~6/seed~0/{f}" for k in ("k1", "k2")
                                     for f in ("rounds.csv", "summary.json")]]
        subprocess.run(["rm", "-rf", "results"], cwd=folder, check=True)
    staged = folder / "results/cal/calibration/.restore"  # a kill after staging, part moved: finished, said so
    script(repo, "restore")
    journal = folder / CAL / "study.journal"
    staged.mkdir()
    (staged / "mnist").mkdir()
    os.replace(journal, staged / "mnist/study.journal")
    (staged / "LIST.json").write_text(json.dumps(["mnist/study.journal"]))
    finished_cut = script(repo, "restore")
    assert finished_cut.returncode == 0 and "a restore cut short, finished" in finished_cut.stdout
    assert journal.read_text() == '{"op_code": 0}\n' and not staged.exists()
