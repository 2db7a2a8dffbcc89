"""What the command groups share: JSON given inline or as ``@file``, the ledgers' key secret, the
grid members' help text, and the shape of a command's entry."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

MEMBERS_HELP = "the grid's sweep members: a JSON list of {sweep, feeds, vary, value, cell}, or @file holding it"

# (command, help, its arguments, its handler)
Command = tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]


def json_text(arg: str) -> str:
    """A JSON argument given inline, or as ``@path`` to a file holding it (what the workflow passes)."""
    return Path(arg[1:]).read_text() if arg.startswith("@") else arg


def key_secret(path: str | None) -> bytes | None:
    """The verifier's own copy of a key secret (``--key-secret``; None when not given): a regular,
    non-empty file of at most 1 MiB, else a one-line error naming it."""
    if path is None:
        return None
    from bladefl.chain.round import read_secret

    if not path.strip():
        raise ValueError("--key-secret: give the secret's file (an empty path gives no secret)")
    try:
        return read_secret(path)
    except OSError as exc:
        raise ValueError(f"--key-secret {path}: {exc.strerror or exc}") from None


def names_in(values: object, allowed: object, option: str) -> None:
    """``option``'s names each one of ``allowed`` (a sweep, an axis, a reading of the data at hand), else
    ValueError naming the first that is not: a typo is refused, never a name silently matching nothing."""
    given = [values] if isinstance(values, str) else list(values)  # type: ignore[call-overload]
    known = sorted(str(a) for a in allowed)  # type: ignore[attr-defined]
    unknown = [v for v in given if v not in known]
    if unknown:
        raise ValueError(f"{option} must each be one of {known} (got {str(unknown[0])[:80]!r})")


def refuse_unread(given: dict[str, object], why: str) -> None:
    """Options a call does not read (those of ``given`` set, not None) refused with one line saying ``why``:
    an option accepted and never read is a guard failing open."""
    unread = [k for k, v in given.items() if v is not None]
    if unread:
        raise ValueError(f"{', '.join(unread)}: not read {why}")


def folder_option(path: str | Path, option: str) -> Path:
    """``path`` as a folder to write into, or ValueError naming ``option`` when it (or a folder above
    it) is an existing file: one line, before any work, not a NotADirectoryError midway."""
    if not str(path).strip():
        raise ValueError(f"{option}: a folder's path is needed, got {str(path)!r} (it would name the current folder)")
    path = Path(path)
    for part in [path, *path.parents]:
        if part.exists() and not part.is_dir():
            raise ValueError(f"{option} {path}: not a folder ({part} is a file)")
    return path


def t_sum(text: str) -> float:
    """``--t-sum``: the time budget, a finite number above 0 and at most the workflow config's bound
    (:data:`bladefl.experiments.plan.config_checks.MAX_T_SUM`; argparse's type)."""
    from bladefl.experiments.plan.config_checks import MAX_T_SUM

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number, got {text!r}") from None
    if not (0 < value <= MAX_T_SUM):  # NaN fails both
        raise argparse.ArgumentTypeError(f"a time budget above 0 and at most {MAX_T_SUM:g}, got {text!r}")
    return value


def whole(low: int, high: int) -> Callable[[str], int]:
    """argparse's type for a whole number in [low, high]: anything else (NaN, 1e308, 0x10, a number past
    ``high``) is refused in one line naming the range, before any work."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"a whole number in [{low}, {high}], got {one_line(text)[:40]!r}")
        return value

    return parse


def positive(high: float) -> Callable[[str], float]:
    """argparse's type for a finite number in (0, high]: NaN, infinities, 0 and negatives refused."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 < value <= high:  # NaN fails both
            raise argparse.ArgumentTypeError(f"a number in (0, {high:g}], got {one_line(text)[:40]!r}")
        return value

    return parse


def dataset_name(text: str) -> str:
    """``--dataset``: a name of the dataset registry (argparse's type)."""
    from bladefl.data.datasets import SPECS

    if text not in SPECS:
        raise argparse.ArgumentTypeError(f"one of {', '.join(sorted(SPECS))}, got {one_line(text)[:80]!r}")
    return text


def error_text(exc: BaseException) -> str:
    """What the CLI prints for a refusal: one line whatever it quotes; an error whose message is instructions
    (its class's ``lines``, FetchError's: where to place the files by hand) keeps its lines, each escaped."""
    if getattr(exc, "lines", False):
        return "\n".join(one_line(line) for line in str(exc).splitlines()) or one_line(exc)
    return one_line(exc)


def one_line(text: object) -> str:
    """A message on one line whatever it quotes: every character that is not printable (a newline, a
    carriage return, U+2028, a control character in a file's name) written as its escape."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text))
