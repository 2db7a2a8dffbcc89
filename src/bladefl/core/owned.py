"""The one guard every destructive step goes through: a command deletes or replaces only a folder it
made itself, inside its own output, never a tracked file, never a folder above or holding the current
one, never through a link.

A folder a command makes to own (a report copy, a rehearsal, a benchmark's results) carries a mark,
``.bladefl-owner``, naming its owner; emptying it again needs that mark and that owner. A caller that
proves ownership another way (a kept bundle by its manifest, a staging folder it just made) passes
``owner=None``: the structural checks (no link, not the file system's root or the home folder, not the
current folder or one above it, no tracked file of a git checkout inside) still hold. Shell recipes
call the same checks: ``python -m bladefl.core.owned fresh OWNER FOLDER`` (exit 2 and one line when
refused, nothing deleted).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from bladefl.core.errors import BladeflError

MARK = ".bladefl-owner"


class OwnedError(BladeflError):
    """A destructive step refused: the message names the folder and why."""


def owner_of(folder: str | os.PathLike[str], legacy: tuple[tuple[str, str], ...] = ()) -> str | None:
    """The owner a folder's mark names (None: no mark, or a mark that is not a small plain file);
    ``legacy``: (file name, owner) pairs, an older mark of its owner's that counts as its mark."""
    def plain(path: Path) -> bool:
        return not path.is_symlink() and path.is_file() and path.stat().st_size <= 4096

    mark = Path(folder) / MARK
    if plain(mark):
        return mark.read_text(errors="replace").strip() or None
    return next((owner for name, owner in legacy if plain(Path(folder) / name)), None)


# What would point git at another repository than the folder's own: never inherited by the guard's git.
GIT_ENVIRONMENT = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
                   "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_CONFIG_PARAMETERS")


def repositories_holding(folder: Path) -> list[Path]:
    """Every git work tree ``folder`` lies in (the folders above it holding ``.git``, nearest first): the
    outer checkout too, whatever a ``git init`` nearer or inside the folder hides."""
    return [parent for parent in folder.parents if (parent / ".git").exists()]


def _git(repository: Path, folder: Path, *args: str) -> list[str]:
    """``git args -z -- <folder>`` asked of ``repository``, in an environment that names no other repository;
    OwnedError where git cannot answer (not installed, a refusal such as "dubious ownership", a time-out):
    a guard that cannot decide refuses."""
    env = {k: v for k, v in os.environ.items() if k not in GIT_ENVIRONMENT}
    try:
        out = subprocess.run(["git", "-C", str(repository), *args, "-z", "--", str(folder.relative_to(repository))],
                             capture_output=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OwnedError(f"{folder}: lies in the git checkout {repository}, and git cannot say which of its files "
                         f"are tracked ({exc}); not removed") from None
    if out.returncode != 0:
        said = out.stderr.decode(errors="replace").strip().splitlines()
        raise OwnedError(f"{folder}: lies in the git checkout {repository}, and git cannot say which of its files "
                         f"are tracked ({said[0][:200] if said else f'exit {out.returncode}'}); not removed")
    return [n for n in out.stdout.decode(errors="replace").split("\0") if n]


def tracked_inside(folder: Path) -> list[str]:
    """Files tracked under ``folder`` by any git checkout it lies in (OwnedError where git cannot answer), and
    any repository inside it (its ``.git``, as a tracked file of its own)."""
    inner = sorted(str(p.relative_to(folder)) for p in folder.rglob(".git"))
    return inner + [f for repo in repositories_holding(folder) for f in _git(repo, folder, "ls-files")]


def changed_inside(folder: Path) -> list[str]:
    """Files under ``folder`` whose changes git has not committed and would lose (modified, added,
    untracked; a tracked file deleted is still in the history: Snakemake deletes a rule's output
    before the rule runs again)."""
    return [e for repo in repositories_holding(folder) for e in _git(repo, folder, "status", "--porcelain")
            if e[:2] not in (" D", "D ", "DD")]


def linked_on_the_way(folder: str | os.PathLike[str]) -> str | None:
    """The first symbolic link on the way to ``folder`` below the current folder's own path (None: none):
    a folder is never removed through a link, its own name or a parent's."""
    path = Path(os.path.abspath(folder))
    here = Path(os.path.abspath(Path.cwd()))
    for part in [path, *path.parents]:
        if part == here or part in here.parents:
            break
        if part.is_symlink():
            return str(part)
    return None


def removal_problem(folder: str | os.PathLike[str], owner: str | None, tracked_ok: bool = False,
                    legacy: tuple[tuple[str, str], ...] = ()) -> str | None:
    """Why ``folder`` may not be removed by ``owner`` (None: it may, or it does not exist).
    ``tracked_ok``: a folder of tracked files may be replaced (a kept bundle kept again) when git holds
    every one of them as it is (no uncommitted change inside): what it held stays in the history."""
    path = Path(folder)
    if path.is_symlink():
        return f"{folder}: a symbolic link; nothing removed through it"
    if (link := linked_on_the_way(path)) is not None:
        return f"{folder}: reached through the symbolic link {link}; nothing removed through it"
    if not path.exists():
        return None
    real = path.resolve()
    here = Path.cwd().resolve()
    if real == Path(real.anchor) or real == Path.home().resolve():
        return f"{folder}: the file system's root or the home folder; not removed"
    if real == here or real in here.parents:
        return f"{folder}: the current folder or one above it; not removed"
    if not real.is_dir():
        return f"{folder}: not a folder; not removed"
    try:
        tracked = tracked_inside(real)
        changed = changed_inside(real) if tracked else []
    except OwnedError as exc:
        return str(exc)
    if tracked and not tracked_ok:
        return f"{folder}: holds {len(tracked)} file(s) tracked by git (e.g. {tracked[0]}); not removed"
    if changed:
        return (f"{folder}: holds changes git has not committed ({changed[0].strip()}); not replaced: "
                "commit or move them first")
    if owner is not None and any(real.iterdir()) and owner_of(real, legacy) != owner:
        found = owner_of(real, legacy)
        return (f"{folder}: holds files {owner} did not make (" + (f"its mark names {found}" if found else
                f"no {MARK} mark") + "); not removed: remove it yourself, or name another folder")
    return None


def remove(folder: str | os.PathLike[str], owner: str | None, tracked_ok: bool = False,
           legacy: tuple[tuple[str, str], ...] = ()) -> None:
    """Delete ``folder`` (and all it holds) when :func:`removal_problem` allows it; OwnedError otherwise.
    The folder checked is the folder removed: its parent opened once without following a link, the folder
    held to the one checked (device and inode), then removed relative to that descriptor (a parent swapped
    for a link between the check and the removal redirects nothing)."""
    if not Path(folder).exists() and not Path(folder).is_symlink():
        problem = removal_problem(folder, owner, tracked_ok, legacy)
        if problem:
            raise OwnedError(problem)
        return
    real = Path(folder).resolve()
    checked = os.lstat(real)
    problem = removal_problem(folder, owner, tracked_ok, legacy)
    if problem:
        raise OwnedError(problem)
    parent = _open_no_links(real.parent)
    try:
        now = os.stat(real.name, dir_fd=parent, follow_symlinks=False)
        if (now.st_dev, now.st_ino) != (checked.st_dev, checked.st_ino):
            raise OwnedError(f"{folder}: changed between the check and the removal; not removed")
        shutil.rmtree(real.name, dir_fd=parent)
    finally:
        os.close(parent)


def _open_no_links(folder: Path) -> int:
    """A descriptor of ``folder`` (absolute, resolved), each of its parts opened relative to the one above
    without following a link (OwnedError where one has become a link)."""
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in folder.parts[1:]:
            try:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                raise OwnedError(f"{folder}: {part} is no longer a plain folder ({exc.strerror}); "
                                 "not removed") from None
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def fresh(folder: str | os.PathLike[str], owner: str, legacy: tuple[tuple[str, str], ...] = ()) -> Path:
    """``folder`` emptied (when ``owner`` may) and made again, marked as ``owner``'s."""
    remove(folder, owner, legacy=legacy)
    path = Path(folder)
    path.mkdir(parents=True)
    (path / MARK).write_text(owner + "\n")
    return path


def mark(folder: str | os.PathLike[str], owner: str) -> None:
    """Mark an existing folder as ``owner``'s (one its owner just made)."""
    (Path(folder) / MARK).write_text(owner + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bladefl.core.owned", description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=["check", "remove", "fresh", "mark"])
    p.add_argument("owner", help="who owns the folder (a word: reference-report, rehearsal, ...)")
    p.add_argument("folder")
    p.add_argument("--legacy-mark", default="", help="an older mark file of this owner's that counts as its mark")
    args = p.parse_args(argv)
    if not args.owner.replace("-", "").isalnum():
        print(f"owner: a word of letters, digits and '-', got {args.owner!r}", file=sys.stderr)
        return 2
    legacy = ((args.legacy_mark, args.owner),) if args.legacy_mark else ()
    if args.legacy_mark and (not args.legacy_mark.startswith(".") or "/" in args.legacy_mark):
        print(f"--legacy-mark: a hidden file's name (.name), got {args.legacy_mark!r}", file=sys.stderr)
        return 2
    try:
        if args.action == "check":
            problem = removal_problem(args.folder, args.owner, legacy=legacy)
            if problem:
                raise OwnedError(problem)
        elif args.action == "remove":
            remove(args.folder, args.owner, legacy=legacy)
        elif args.action == "fresh":
            fresh(args.folder, args.owner, legacy)
        else:
            mark(args.folder, args.owner)
    except (OwnedError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
