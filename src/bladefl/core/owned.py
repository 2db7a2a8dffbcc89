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


def _git(folder: Path, *args: str) -> list[str]:
    try:
        out = subprocess.run(["git", "-C", str(folder), *args, "-z", "--", "."], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [n for n in out.stdout.decode(errors="replace").split("\0") if n] if out.returncode == 0 else []


def tracked_inside(folder: Path) -> list[str]:
    """Files of a git checkout tracked under ``folder`` (empty outside a checkout, or without git)."""
    return _git(folder, "ls-files")


def changed_inside(folder: Path) -> list[str]:
    """Files under ``folder`` whose changes git has not committed and would lose (modified, added,
    untracked; a tracked file deleted is still in the history: Snakemake deletes a rule's output
    before the rule runs again)."""
    return [e for e in _git(folder, "status", "--porcelain") if e[:2] not in (" D", "D ", "DD")]


def removal_problem(folder: str | os.PathLike[str], owner: str | None, tracked_ok: bool = False,
                    legacy: tuple[tuple[str, str], ...] = ()) -> str | None:
    """Why ``folder`` may not be removed by ``owner`` (None: it may, or it does not exist).
    ``tracked_ok``: a folder of tracked files may be replaced (a kept bundle kept again) when git holds
    every one of them as it is (no uncommitted change inside): what it held stays in the history."""
    path = Path(folder)
    if path.is_symlink():
        return f"{folder}: a symbolic link; nothing removed through it"
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
    tracked = tracked_inside(real)
    if tracked and not tracked_ok:
        return f"{folder}: holds {len(tracked)} file(s) tracked by git (e.g. {tracked[0]}); not removed"
    changed = changed_inside(real) if tracked else []
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
    """Delete ``folder`` (and all it holds) when :func:`removal_problem` allows it; OwnedError otherwise."""
    problem = removal_problem(folder, owner, tracked_ok, legacy)
    if problem:
        raise OwnedError(problem)
    if Path(folder).exists():
        shutil.rmtree(folder)


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
