"""The one guard of destructive steps (bladefl.core.owned), and a walk of the code that finds every
step that deletes and holds it to the guard or to a short list of steps that delete only what they
just made."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bladefl.core import owned
from conftest import HANG_S

REPO = Path(__file__).resolve().parents[1]


def git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})


def test_a_folder_is_emptied_only_by_its_owner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine = owned.fresh(tmp_path / "out", "report")
    (mine / "page.html").write_text("x")
    owned.fresh(mine, "report")  # its own: emptied and marked again
    assert sorted(p.name for p in mine.iterdir()) == [owned.MARK]
    (mine / "page.html").write_text("x")
    with pytest.raises(owned.OwnedError, match="its mark names report"):
        owned.remove(mine, "rehearsal")
    other = tmp_path / "data"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(owned.OwnedError, match=r"no \.bladefl-owner mark"):
        owned.fresh(other, "report")
    assert (other / "keep.txt").read_text() == "mine" and (mine / "page.html").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    owned.remove(empty, "report")  # an empty folder holds nothing to lose
    assert not empty.exists()


def test_links_the_current_folder_and_those_above_are_never_removed(tmp_path, monkeypatch):
    work = tmp_path / "a/b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    for folder in (work, tmp_path / "a", tmp_path, Path("."), Path("..")):
        owned.mark(folder, "x") if folder.resolve() != Path("/") else None
        assert "current folder or one above" in owned.removal_problem(folder, "x")
    assert "root or the home folder" in owned.removal_problem("/", None)
    (tmp_path / "link").symlink_to(work, target_is_directory=True)
    assert "symbolic link" in owned.removal_problem(tmp_path / "link", None)
    (tmp_path / "file").write_text("x")
    assert "not a folder" in owned.removal_problem(tmp_path / "file", None)


def test_tracked_files_are_removed_only_when_git_holds_them_as_they_are(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "bundle").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "bundle" / "MANIFEST.json").write_text("{}")
    (repo / "bundle" / "table.csv").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "x")
    monkeypatch.chdir(tmp_path)
    owned.mark(repo / "bundle", "report")
    assert "tracked by git" in owned.removal_problem(repo / "bundle", "report")
    (repo / "bundle" / owned.MARK).unlink()
    (repo / "bundle" / "table.csv").write_text("b\n")
    assert "has not committed" in owned.removal_problem(repo / "bundle", None, tracked_ok=True)
    git(repo, "checkout", "--", "bundle/table.csv")
    (repo / "bundle" / "MANIFEST.json").unlink()  # Snakemake deletes a rule's output before it runs again
    assert owned.removal_problem(repo / "bundle", None, tracked_ok=True) is None


def test_the_command_line_refuses_in_one_line_and_deletes_nothing(tmp_path):
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "MANIFEST.json").write_text("{}")
    proc = subprocess.run([sys.executable, "-m", "bladefl.core.owned", "fresh", "reference-report",
                           str(tmp_path / "kept")], capture_output=True, text=True, cwd=tmp_path, timeout=HANG_S)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "not removed" in proc.stderr
    assert (tmp_path / "kept" / "MANIFEST.json").exists()
    proc = subprocess.run([sys.executable, "-m", "bladefl.core.owned", "fresh", "a;b", str(tmp_path / "x")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=HANG_S)
    assert proc.returncode == 2 and "owner: a word" in proc.stderr and not (tmp_path / "x").exists()


# Steps that delete without the guard, each deleting only what the same step has just made.
UNGUARDED = {
    "src/bladefl/core/atomic.py": ["tmp_path.unlink()"],  # its own temporary sibling, after a failed write
    "src/bladefl/cli/report.py": ["executed.unlink(missing_ok=True)"] * 2,  # the notebook this call wrote
    "src/bladefl/experiments/runs/run_source.py": ["os.rmdir(path)"],  # empty folders only
    "scripts/grid_part.sh": ["trap 'rm -rf \"$stage\"' EXIT", 'rm -rf "$stage"'],  # its own mktemp stage
    "scripts/calibration_part.sh": ["trap 'rm -rf \"$stage\"' EXIT", 'rm -rf "$stage"',  # its own mktemp stage
                                    # a restore's own staging folder $cal/.restore (a link or file there refused)
                                    "shutil.rmtree(stage, ignore_errors=True)", "shutil.rmtree(stage)"],
    "scripts/gpu/run.sh": ['&& rm "$out/grid-tables.tar.xz"',  # the archive it just split into parts
                           'then rm -rf "$grid_dir"; fi'],  # only $out/grid, which it made
    "scripts/gpu/prepare.sh": ['rm -rf "$out/wheels" "$out/site" "$out/site.tar.xz"',  # its own scratch
                               'rm -rf "$out/site" "$out/wheels"', 'rm "$out/carried-requirements.txt.new"'],
    "Makefile": ["trap 'rm -rf \"$$tmp\"' EXIT", "rm -rf results/* logs benchmarks .snakemake"],
}
DELETES = re.compile(r"rmtree\(|\.unlink\(|os\.(remove|unlink|rmdir)\(|\.rmdir\(|(^|[\s;&|'\"])rm\s")


def deleting_lines() -> dict[str, list[str]]:
    files = [*REPO.glob("src/**/*.py"), *REPO.glob("scripts/**/*.sh"), *REPO.glob("scripts/**/*.py"),
             *REPO.glob("Makefile"), *REPO.glob("workflow/**/*.smk"), *REPO.glob("workflow/Snakefile")]
    found: dict[str, list[str]] = {}
    for path in files:
        rel = path.relative_to(REPO).as_posix()
        if rel == "src/bladefl/core/owned.py":
            continue
        for line in path.read_text().splitlines():
            code = line.split("#", 1)[0] if path.suffix in (".py", ".smk") else line
            if not line.lstrip().startswith("#") and DELETES.search(code):
                found.setdefault(rel, []).append(line.strip())
    return found


def test_every_step_that_deletes_goes_through_the_guard():
    """Found by walking the code: a new rmtree, unlink or `rm` outside the guard fails here until it goes
    through bladefl.core.owned (or is shown to delete only what the same step made, and listed above)."""
    found = deleting_lines()
    stray = {f: [ln for ln in lines if not any(ok in ln for ok in UNGUARDED.get(f, []))] for f, lines in found.items()}
    assert {f: v for f, v in stray.items() if v} == {}
    listed = {f: len(v) for f, v in UNGUARDED.items()}
    assert {f: len(found.get(f, [])) for f in UNGUARDED} == listed  # no stale entry either


def test_the_walk_finds_a_deletion_added_outside_the_guard(tmp_path, monkeypatch):
    """The walk can fail: a module given an rmtree of its own is reported."""
    fake = tmp_path / "repo"
    (fake / "src/bladefl").mkdir(parents=True)
    (fake / "src/bladefl/new.py").write_text("import shutil\n\ndef clear(p):\n    shutil.rmtree(p)\n")
    monkeypatch.setattr(sys.modules[__name__], "REPO", fake)
    assert deleting_lines() == {"src/bladefl/new.py": ["shutil.rmtree(p)"]}


def _checkout_with_a_marked_folder(tmp_path: Path) -> Path:
    """A git checkout whose folder ``out`` carries its owner's mark and holds a tracked file."""
    repo = tmp_path / "repo"
    (repo / "out").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "out/tracked.txt").write_text("history")
    git(repo, "add", "out/tracked.txt")
    git(repo, "commit", "-qm", "x")
    owned.mark(repo / "out", "report")
    return repo


@pytest.mark.parametrize("blind", ["no git on PATH", "GIT_DIR elsewhere", "a repository inside", "dubious owner"])
def test_a_guard_that_cannot_ask_git_refuses(tmp_path, monkeypatch, blind):
    """The tracked-file check fails closed: where git is missing, pointed elsewhere, refuses the checkout, or a
    `git init` inside the folder would hide the outer repository's files, nothing is removed (each case once
    deleted tracked files with the owner's mark present)."""
    repo = _checkout_with_a_marked_folder(tmp_path)
    monkeypatch.chdir(tmp_path)
    if blind == "no git on PATH":
        monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    elif blind == "GIT_DIR elsewhere":
        other = tmp_path / "other"
        other.mkdir()
        git(other, "init", "-q")
        monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    elif blind == "a repository inside":
        git(repo / "out", "init", "-q")
    else:  # git's answer to a checkout owned by another user: an error, not an empty list
        fake = tmp_path / "bin"
        fake.mkdir()
        (fake / "git").write_text("#!/bin/sh\necho 'fatal: detected dubious ownership in repository' >&2\nexit 128\n")
        (fake / "git").chmod(0o755)
        monkeypatch.setenv("PATH", f"{fake}:/usr/bin:/bin")
    with pytest.raises(owned.OwnedError, match="tracked|git cannot say"):
        owned.remove(repo / "out", "report")
    assert (repo / "out/tracked.txt").read_text() == "history"


def test_a_marked_folder_reached_through_a_linked_parent_is_not_removed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    real = owned.fresh(tmp_path / "real/out", "report")
    (real / "page.html").write_text("x")
    (tmp_path / "via").symlink_to(tmp_path / "real")
    with pytest.raises(owned.OwnedError, match="through the symbolic link"):
        owned.remove(tmp_path / "via/out", "report")
    assert (real / "page.html").exists()


def test_the_folder_checked_is_the_folder_removed(tmp_path, monkeypatch):
    """A parent swapped for a link between the check and the removal (a race once won 13 times in 60) removes
    nothing: the removal works from a descriptor of the checked folder's parent, held to its inode."""
    monkeypatch.chdir(tmp_path)
    mine = owned.fresh(tmp_path / "a/out", "report")
    victim = tmp_path / "victim/out"
    victim.mkdir(parents=True)
    (victim / "precious.txt").write_text("keep")
    checked = owned.removal_problem

    def swap_after_the_check(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - the guard's own signature
        answer = checked(*args, **kwargs)
        (tmp_path / "a").rename(tmp_path / "a-moved")
        (tmp_path / "a").symlink_to(tmp_path / "victim")
        return answer

    monkeypatch.setattr(owned, "removal_problem", swap_after_the_check)
    with pytest.raises(owned.OwnedError):
        owned.remove(mine, "report")
    assert (victim / "precious.txt").read_text() == "keep"
