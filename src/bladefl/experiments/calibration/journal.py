"""The calibration study's journal file kept whole across a torn write: Optuna's journal is one JSON
record a line, appended under a lock, so a worker killed mid-write (or a full disk) can leave a last line
cut before its newline, or padding; a new record appended onto it would make the whole journal unreadable.
Before a worker opens the study, :func:`set_aside_torn_tail` moves such an end beside the journal.

A journal is a journal: :func:`check_records` refuses, before anything reads or writes it, a file whose
first line is not a study's creation record (a config file given as ``--storage`` is never taken for a
torn journal and truncated), and any whole line before the last that is not one of Optuna's records
naming studies and trials recorded before it, with one line naming the file and the line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import BinaryIO

from optuna.storages.journal import JournalFileOpenLock

from bladefl.core import atomic
from bladefl.core.errors import BladeflError

CREATE_STUDY, CREATE_TRIAL, LAST_OP = 0, 4, 10  # Optuna's JournalOperation codes (5.0: 0-10)
STUDY_OPS = {1, 2, 3, 4}  # the records that name a study by its id
HEAD = b'{"op_code":'  # how Optuna writes a record's first bytes


class JournalError(BladeflError):
    """A file given as a study's journal that is not one (names the file and the line)."""


def _record_problem(line: bytes, studies: int, trials: int) -> tuple[str, int | None]:
    """Why ``line`` is not a record of a journal that has created ``studies`` studies and ``trials``
    trials before it ("" where it is one), with its op code (None where it has none)."""
    try:
        record = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return "not a JSON record", None
    if not isinstance(record, dict):
        return "not a JSON object", None
    op = record.get("op_code")
    if isinstance(op, bool) or not isinstance(op, int) or not 0 <= op <= LAST_OP:
        return f"op_code must be an integer 0-{LAST_OP} (got {str(op)[:40]!r})", None
    if not isinstance(record.get("worker_id"), str):
        return "no worker_id", op
    if op == CREATE_STUDY:
        return ("" if isinstance(record.get("study_name"), str) else "a study created without a name"), op
    if op in STUDY_OPS:
        sid = record.get("study_id")
        return ("" if isinstance(sid, int) and not isinstance(sid, bool) and 0 <= sid < studies else
                f"names study {str(sid)[:20]!r}, not one created before it"), op
    if op != 10:  # a trial's record names a trial created before it (discard names its study's trials)
        tid = record.get("trial_id")
        return ("" if isinstance(tid, int) and not isinstance(tid, bool) and 0 <= tid < trials else
                f"names trial {str(tid)[:20]!r}, not one created before it"), op
    return "", op


def _line_problem(line: bytes, number: int, studies: int, trials: int) -> tuple[str, int | None]:
    """:func:`_record_problem` of the journal's line ``number``, whose first must create a study."""
    problem, op = _record_problem(line, studies, trials)
    if not problem and number == 1 and op != CREATE_STUDY:
        problem = "the first record must create a study"
    return problem, op


def check_records(storage: str | Path, option: str = "--storage") -> None:
    """Raise :class:`JournalError` unless ``storage`` (missing or empty: a new journal) is a journal: its
    first line a study's creation record, every whole line before its last one a record naming studies and
    trials created before it (its last line may be torn: :func:`set_aside_torn_tail`). A first line that is
    its last too may be cut only where it begins as a record does, so a file that is not a journal is never
    taken for a torn one and truncated."""
    path = Path(storage)
    if not path.is_file() or path.stat().st_size == 0:
        return
    studies = trials = 0
    with path.open("rb") as handle:
        lines = iter(handle)
        line, number = next(lines), 1
        for following in lines:
            problem, op = _line_problem(line, number, studies, trials)
            if problem:
                raise JournalError(f"{option} {path}, line {number}: {problem}; not an Optuna journal of this "
                                   "study (a journal's every line is one of Optuna's records)")
            studies, trials = studies + (op == CREATE_STUDY), trials + (op == CREATE_TRIAL)
            line, number = following, number + 1
    torn = not line.endswith(b"\n") and line[:len(HEAD)] == HEAD[:len(line)]  # a first write cut short
    if number == 1 and not torn and (problem := _line_problem(line, 1, 0, 0)[0]):
        raise JournalError(f"{option} {path}, line 1: {problem}; not an Optuna journal (a journal's every line "
                           "is one of Optuna's records)")


def _last_line_start(handle: BinaryIO, end: int) -> int:
    """Where the journal's last line (the bytes after its last newline before ``end``) starts."""
    chunk, pos = 1 << 16, end
    while pos > 0:
        start = max(0, pos - chunk)
        handle.seek(start)
        cut = handle.read(pos - start).rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        pos = start
    return 0


def set_aside_torn_tail(storage: str | Path) -> Path | None:
    """A journal's torn end set aside, under the journal's own lock (no worker is writing then): a last
    line cut before its newline (a worker killed mid-write, a full disk) or one that is not a JSON record
    (padding) is moved to ``<journal>.torn-<n>`` beside it and the journal truncated to its last whole
    record, so that a new record is never appended onto a cut one; returns the file set aside (None: the
    journal ends with a whole record, or is missing)."""
    path = Path(storage)
    if not path.is_file():
        return None
    check_records(path)
    lock = JournalFileOpenLock(str(path))
    lock.acquire()
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            keep = size
            while keep > 0:
                handle.seek(keep - 1)
                whole = handle.read(1) == b"\n"
                start = _last_line_start(handle, keep - 1 if whole else keep)
                handle.seek(start)
                line = handle.read(keep - start)
                try:
                    if whole and isinstance(json.loads(line), dict):
                        break  # the journal ends with a whole record
                except ValueError:
                    pass
                keep = start
            if keep == size:
                return None
            handle.seek(keep)
            tail = handle.read()
        aside = next(path.with_name(f"{path.name}.torn-{i}") for i in range(1, 10_000)
                     if not path.with_name(f"{path.name}.torn-{i}").exists())
        atomic.write_bytes(aside, tail)
        with path.open("r+b") as handle:
            handle.truncate(keep)
        return aside
    finally:
        lock.release()


__all__ = ["set_aside_torn_tail", "check_records", "JournalError"]
