"""`make release VERSION=x.y.z` (scripts/release.sh) in a throw-away clone: every place bumped, the changelog's
section opened, one commit and an annotated tag; refusals before any change."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture()
def clone(tmp_path):
    """A clone of this checkout's HEAD with the files the release touches as they are in the work tree."""
    target = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-local", "--depth", "1", f"file://{ROOT}", str(target)], check=True)
    for name in ("scripts/release.sh", "CHANGELOG.md", "CITATION.cff", "pyproject.toml", "src/bladefl/__init__.py"):
        (target / name).write_bytes((ROOT / name).read_bytes())
    _git(target, "add", "-A")
    _git(target, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "the work tree", "--allow-empty")
    return target


def _release(clone: Path, version: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "VERSION": version, "HOME": str(clone), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["bash", "scripts/release.sh"], cwd=clone, env=env, capture_output=True, text=True)


def test_a_release_bumps_every_place_opens_the_changelog_and_tags(clone):
    before = tomllib.loads((clone / "pyproject.toml").read_text())["project"]["version"]
    major, minor, patch = map(int, before.split("."))
    version = f"{major}.{minor}.{patch + 1}"
    (clone / "CHANGELOG.md").write_text((clone / "CHANGELOG.md").read_text().replace(
        "## [Unreleased]\n", "## [Unreleased]\n\n### Fixed\n- a test's fix\n", 1))
    _git(clone, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "notes")
    done = _release(clone, version)
    assert done.returncode == 0, done.stderr
    assert tomllib.loads((clone / "pyproject.toml").read_text())["project"]["version"] == version
    assert f'__version__ = "{version}"' in (clone / "src/bladefl/__init__.py").read_text()
    citation = yaml.safe_load((clone / "CITATION.cff").read_text())
    assert str(citation["version"]) == version and re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(citation["date-released"]))
    log = (clone / "CHANGELOG.md").read_text()
    section = log.split(f"## [{version}] - ")[1].split("\n## [")[0]
    assert "a test's fix" in section and log.index("## [Unreleased]") < log.index(f"## [{version}]")
    assert _git(clone, "cat-file", "-t", f"v{version}").strip() == "tag"  # annotated
    assert _git(clone, "log", "-1", "--format=%s").strip() == f"Release {version}"
    assert _git(clone, "status", "--porcelain") == ""
    again = _release(clone, version)  # the same version again: refused, nothing changed
    assert again.returncode == 2 and "not above" in again.stderr


@pytest.mark.parametrize("version, says", [("1.2", "x.y.z"), ("0.0.1", "not above"), ("9.9.9;x", "x.y.z")])
def test_a_release_is_refused_before_any_change(clone, version, says):
    head = _git(clone, "rev-parse", "HEAD")
    done = _release(clone, version)
    assert done.returncode == 2 and says in done.stderr and _git(clone, "rev-parse", "HEAD") == head


def test_an_empty_unreleased_section_or_a_dirty_tree_is_refused(clone):
    (clone / "stray.txt").write_text("a file not committed\n")
    assert "the work tree is not clean" in _release(clone, "99.0.0").stderr
    (clone / "stray.txt").unlink()
    text = (clone / "CHANGELOG.md").read_text()
    head, rest = text.split("## [Unreleased]\n", 1)
    (clone / "CHANGELOG.md").write_text(head + "## [Unreleased]\n\n" + rest[rest.index("## ["):])
    _git(clone, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "empty notes", "--allow-empty")
    assert "Unreleased section is empty" in _release(clone, "99.0.0").stderr


def _notes(clone: Path) -> None:
    (clone / "CHANGELOG.md").write_text((clone / "CHANGELOG.md").read_text().replace(
        "## [Unreleased]\n", "## [Unreleased]\n\n### Fixed\n- a test's fix\n", 1))
    _git(clone, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "notes")


@pytest.mark.parametrize("hook", ["refuses every commit", "refuses the version's files", "no identity"])
def test_a_release_whose_commit_fails_changes_nothing(clone, hook):
    """`git commit` failing (no identity, a hook that refuses) leaves no file changed or staged and no commit
    or tag, so the next call starts from the same clean tree (once: the version written and staged in four
    files, no commit, and a misleading message next time)."""
    _notes(clone)
    head = _git(clone, "rev-parse", "HEAD")
    hooks = clone / ".git/hooks"
    if hook == "refuses every commit":
        (hooks / "pre-commit").write_text("#!/bin/sh\necho 'refused by policy' >&2\nexit 1\n")
    elif hook == "refuses the version's files":
        (hooks / "pre-commit").write_text("#!/bin/sh\ngit diff --cached --name-only | grep -q pyproject && exit 1\n"
                                          "exit 0\n")
    for script in hooks.glob("pre-commit"):
        script.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "VERSION": "99.0.0", "HOME": str(clone), "GIT_CONFIG_NOSYSTEM": "1"}
    if hook != "no identity":
        env |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                "GIT_COMMITTER_EMAIL": "t@t"}
    else:
        _git(clone, "config", "user.useConfigOnly", "true")
    done = subprocess.run(["bash", "scripts/release.sh"], cwd=clone, env=env, capture_output=True, text=True)
    assert done.returncode != 0, done.stdout
    assert _git(clone, "rev-parse", "HEAD") == head and _git(clone, "status", "--porcelain") == ""
    assert _git(clone, "tag", "--list", "v99.0.0") == ""
