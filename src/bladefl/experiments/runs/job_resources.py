"""Each rule's resources sized from what its jobs used: the workflow's own benchmark files.

Every rule writes a Snakemake benchmark file per job under ``benchmarks/<rule>/...`` (or
``benchmarks/<rule>.tsv``; a test holds the workflow to it): the job's wall seconds (``s``) and
its peak resident memory in MB (``max_rss``, ``NA`` where the job ended before a sample). The
overlay asks for the largest measured need of each rule times a margin, as a Snakemake workflow
profile (``set-resources``: ``runtime`` in minutes, ``mem_mb``), so that a cluster job asks for what
it needs rather than the rule's declared guess: ``snakemake --profile profiles/slurm
--workflow-profile <folder>`` (docs/hpc.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bladefl.core.bounded_read import read_regular
from bladefl.core.errors import BladeflError

# Read from each benchmark file; the rest (I/O, load, CPU time) does not size a job.
COLUMNS = ("s", "max_rss")
# A rule's name as Snakemake spells one (a Python identifier, ASCII): anything else in a folder's name
# is not a rule, and must not reach the profile (a name with a newline would add keys of its own).
RULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
# A measured number as Snakemake writes it: plain ASCII decimal ("1_000" and other scripts' digits,
# which Python's float() takes, are not).
NUMBER = re.compile(r"[0-9]{1,15}(\.[0-9]{1,15})?([eE][+-]?[0-9]{1,3})?")
MAX_SECONDS = 1e7  # about 116 days: no job of this workflow's runs that long
MAX_MB = 1e8  # 100 TB
MAX_MARGIN = 100.0
MAX_FILE = 1 << 20  # a benchmark file is a header and a line per repeat


@dataclass(frozen=True)
class Need:
    """A rule's largest measured need over its jobs."""

    rule: str
    jobs: int
    seconds: float  # the longest wall
    mem_mb: float | None  # the largest peak resident memory (None: no job lived long enough to be sampled)

    def resources(self, margin: float, least_minutes: int, least_mb: int) -> dict[str, int]:
        """``runtime`` (minutes) and ``mem_mb`` asked for: the need times ``margin``, rounded up, at
        least ``least_minutes`` and ``least_mb``."""
        out = {"runtime": max(least_minutes, math.ceil(self.seconds * margin / 60))}
        if self.mem_mb is not None:
            out["mem_mb"] = max(least_mb, math.ceil(self.mem_mb * margin))
        return out


class BenchmarkError(BladeflError):
    """A benchmark folder or file that is not what Snakemake writes."""


def rule_of(path: Path, root: Path) -> str:
    """The rule a benchmark file belongs to: the first part of its path under ``root``, a Snakemake
    rule's name (BenchmarkError naming the path otherwise)."""
    parts = path.relative_to(root).parts
    rule = parts[0] if len(parts) > 1 else path.stem
    if not RULE.fullmatch(rule):
        raise BenchmarkError(f"{root}: {ascii(rule)[:80]} is not a rule's name (letters, digits and '_', not "
                             "starting with a digit): not a folder the workflow writes")
    return rule


def _number(text: str, path: Path, column: str, limit: float) -> float:
    if not NUMBER.fullmatch(text):
        raise BenchmarkError(f"{path}: {column} must be a plain decimal number or NA (got {ascii(text)[:40]})")
    value = float(text)
    if value > limit:
        raise BenchmarkError(f"{path}: {column} {text[:40]} is more than any job measures (at most {limit:g})")
    return value


def read_file(path: Path) -> tuple[float, float | None]:
    """(wall seconds, peak MB or None) of one benchmark file: the largest over its lines (repeats).
    Read as hostile: a regular file of at most 1 MiB, UTF-8, plain decimal numbers within bounds."""
    try:
        text = read_regular(path, MAX_FILE, "benchmark file").decode("utf-8")
    except OSError as exc:
        raise BenchmarkError(str(exc)) from None
    except UnicodeDecodeError:
        raise BenchmarkError(f"{path}: not UTF-8 text (not a Snakemake benchmark file)") from None
    lines = text.splitlines()
    if len(lines) < 2:
        raise BenchmarkError(f"{path}: no measurement (a header and a line per repeat expected)")
    head = lines[0].split("\t")
    missing = [c for c in COLUMNS if c not in head]
    if missing:
        raise BenchmarkError(f"{path}: columns {missing} missing (not a Snakemake benchmark file)")
    seconds, mem = [], []
    for line in lines[1:]:
        row = dict(zip(head, line.split("\t"), strict=False))
        if "s" not in row:
            raise BenchmarkError(f"{path}: a line without its s column (got {ascii(line)[:80]})")
        seconds.append(_number(row["s"], path, "s", MAX_SECONDS))
        if row.get("max_rss", "NA") not in ("NA", "-", ""):
            mem.append(_number(row["max_rss"], path, "max_rss", MAX_MB))
    return max(seconds), max(mem) if mem else None


def needs(root: str | Path) -> list[Need]:
    """Every rule's largest need over its jobs' benchmark files under ``root``, by rule name."""
    return needs_of(measurements(root))


def needs_of(measured: Mapping[str, Mapping[str, tuple[float, float | None]]]) -> list[Need]:
    """Every rule's largest need over its jobs' measurements (:func:`measurements`)."""
    out = []
    for rule, jobs in sorted(measured.items()):
        mems = [m for _, m in jobs.values() if m is not None]
        out.append(Need(rule, len(jobs), max(s for s, _ in jobs.values()), max(mems) if mems else None))
    return out


def profile(found: list[Need], margin: float = 1.5, least_minutes: int = 1, least_mb: int = 256) -> dict:
    """A Snakemake workflow profile asking each measured rule for its need times ``margin``."""
    if not (isinstance(margin, (int, float)) and math.isfinite(margin) and 1 <= margin <= MAX_MARGIN):
        raise BenchmarkError(f"--margin must be a number in 1..{MAX_MARGIN:g} (got {margin!r})")
    return {"set-resources": {n.rule: n.resources(margin, least_minutes, least_mb) for n in found}}


def measurements(root: str | Path) -> dict[str, dict[str, tuple[float, float | None]]]:
    """Per rule, each job's (wall seconds, peak MB) by its benchmark file's name under the rule's folder
    (every file under ``root`` read once, as :func:`read_file` reads it)."""
    root = Path(root)
    if not root.is_dir():
        raise BenchmarkError(f"{root}: no such folder (the workflow writes its benchmark files there: "
                             "config benchmarks_dir)")
    out: dict[str, dict[str, tuple[float, float | None]]] = {}
    for path in sorted(root.rglob("*.tsv")):
        rule = rule_of(path, root)
        name = path.relative_to(root / rule).with_suffix("").as_posix() if (root / rule).is_dir() else rule
        out.setdefault(rule, {})[name] = read_file(path)
    if not out:
        raise BenchmarkError(f"{root}: no benchmark files (*.tsv): run the workflow first")
    return out


@dataclass(frozen=True)
class Scaled:
    """A rule's jobs sized for another grid from the measured cost per unit of work (``seconds`` 0: not
    sized, the rule's declared resources stand; ``why`` says so)."""

    rule: str
    jobs: int  # measured jobs whose work is known
    fixed_seconds: float  # the smallest measured jobs' wall (their start, imports, data and work)
    seconds_per_sample: float
    fixed_mb: float  # a job's peak less its own numbers' share
    target_jobs: int
    seconds: float  # the largest target job's expected wall
    mem_mb: float  # and peak
    why: str = ""


def _rates(known: Sequence[tuple[Any, float, float | None]]) -> tuple[float, float, float, float]:
    """(fixed seconds, smallest samples, seconds per sample beyond it, fixed MB) of a rule's measured
    jobs: the smallest jobs' wall is the fixed part, the rate the steepest rise of the wall over the
    samples beyond theirs; where no rise shows (one size of job, or noise) the whole wall counts as
    work (fixed 0, rate the largest seconds per sample), the safe side. The fixed memory is the largest
    peak less the job's own numbers' share."""
    least = min(j.samples for j, _, _ in known)
    fixed = min(sec for j, sec, _ in known if j.samples == least)
    rises = [(sec - fixed) / (j.samples - least) for j, sec, _ in known if j.samples > least]
    if not rises or max(rises) <= 0:
        fixed, least, rises = 0.0, 0.0, [sec / max(j.samples, 1.0) for j, sec, _ in known]
    mems = [max(0.0, mem - j.held_mb) for j, _, mem in known if mem is not None]
    return fixed, least, max(rises), max(mems) if mems else 0.0


def scale(measured: Mapping[str, Mapping[str, tuple[float, float | None]]], done: Sequence[Any],
          target: Sequence[Any]) -> list[Scaled]:
    """Each work-scaled rule (:mod:`job_work`) measured on the jobs ``done`` (JobWork), sized for the
    largest of the jobs ``target`` (never below what was measured: :func:`scaled_needs`). A group job
    measured where it computed nothing (one job per run: a local no-op) says nothing of a stacked
    group's cost, so it is not sized: its declared resources stand."""
    from bladefl.experiments.runs.job_work import SCALED_RULES

    work = {(j.rule, j.name): j for j in done}
    measured_scaled = {(rule, n) for rule in SCALED_RULES for n in measured.get(rule, {})}
    if measured_scaled and not measured_scaled & set(work):
        rule, name = sorted(measured_scaled)[0]
        raise BenchmarkError(f"--measured: none of the measured {', '.join(sorted({r for r, _ in measured_scaled}))} "
                             f"jobs (e.g. {rule} {name[:60]!r}) is a job of that config's grid: the benchmarks were "
                             "measured on another config (give the one they ran)")
    out = []
    for rule in SCALED_RULES:
        known = [(work[(rule, n)], sec, mem) for n, (sec, mem) in measured.get(rule, {}).items() if (rule, n) in work]
        jobs = [j for j in target if j.rule == rule]
        if not known or not jobs:
            continue
        fixed, least, rate, fixed_mb = _rates(known)
        noop = rule == "run_group" and max(sec for _, sec, _ in known) < 1.0
        out.append(Scaled(rule, len(known), fixed, rate, fixed_mb, len(jobs),
                          0.0 if noop else max(fixed + rate * max(0.0, j.samples - least) for j in jobs),
                          0.0 if noop else max(fixed_mb + j.held_mb for j in jobs),
                          "measured as a local no-op (its runs ran one job each): its declared resources stand"
                          if noop else ""))
    return out


def scaled_needs(found: list[Need], scaled: Sequence[Scaled]) -> list[Need]:
    """The measured needs with each sized rule's need raised to its largest target job's; a rule
    scaling leaves unsized is left out (its declared resources apply)."""
    by_rule = {s.rule: s for s in scaled}
    out = []
    for n in found:
        x = by_rule.get(n.rule)
        if x is not None and x.why:
            continue
        out.append(n if x is None else Need(n.rule, n.jobs, max(n.seconds, x.seconds), max(n.mem_mb or 0.0, x.mem_mb)))
    return out


def comment_line(text: str) -> str:
    """``text`` as one YAML comment line: every character outside printable ASCII written as an escape
    (a newline, U+2028 or any other line break in a file's name cannot end the comment and add keys)."""
    return "# " + re.sub(r"[^\x20-\x7e]", lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def profile_text(found: list[Need], margin: float = 1.5, scaled: Sequence[Scaled] = (), target: str = "") -> str:
    """The profile as YAML (written by the YAML dumper, the rules' names checked), each rule's jobs and
    measured need listed in the comment above it, every comment line escaped (:func:`comment_line`: a
    config file's name is user text); with ``scaled``, the work-scaled rules' sizes for the largest job
    of ``target`` and the cost per unit of work they come from."""
    import yaml

    sized = profile(scaled_needs(found, scaled), margin)
    lines = ["Resources from measured needs (bladefl resources): the longest wall and the largest peak",
             f"memory of each rule's jobs, times {margin:g}. Use with --workflow-profile <this folder>."]
    for n in found:
        mem = "no memory sample" if n.mem_mb is None else f"{n.mem_mb:.0f} MB"
        lines.append(f"  {n.rule}: {n.jobs} job{'' if n.jobs == 1 else 's'}, at most {n.seconds:.1f} s and {mem}")
    for x in scaled:
        lines.append(f"  {x.rule} for {target}: {x.why}" if x.why else
                     f"  {x.rule} sized for {target}'s largest of {x.target_jobs} jobs: {x.seconds:.0f} s and "
                     f"{x.mem_mb:.0f} MB ({x.fixed_seconds:.1f} s + {1e6 * x.seconds_per_sample:.3g} s per million "
                     f"samples more than the smallest job's, {x.fixed_mb:.0f} MB + its numbers, measured over "
                     f"{x.jobs} jobs)")
    return ("\n".join(comment_line(line) for line in lines) + "\n"
            + yaml.safe_dump(sized, default_flow_style=None, sort_keys=False))


__all__ = ["COLUMNS", "BenchmarkError", "Need", "Scaled", "comment_line", "measurements", "needs", "needs_of",
           "profile",
           "profile_text", "read_file", "rule_of", "scale", "scaled_needs"]
