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
from dataclasses import dataclass
from pathlib import Path

# Read from each benchmark file; the rest (I/O, load, CPU time) does not size a job.
COLUMNS = ("s", "max_rss")


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


class BenchmarkError(ValueError):
    """A benchmark folder or file that is not what Snakemake writes."""


def rule_of(path: Path, root: Path) -> str:
    """The rule a benchmark file belongs to: the first part of its path under ``root``."""
    parts = path.relative_to(root).parts
    return parts[0] if len(parts) > 1 else path.stem


def read_file(path: Path) -> tuple[float, float | None]:
    """(wall seconds, peak MB or None) of one benchmark file: the largest over its lines (repeats)."""
    lines = path.read_text(errors="replace").splitlines()
    if len(lines) < 2:
        raise BenchmarkError(f"{path}: no measurement (a header and a line per repeat expected)")
    head = lines[0].split("\t")
    missing = [c for c in COLUMNS if c not in head]
    if missing:
        raise BenchmarkError(f"{path}: columns {missing} missing (not a Snakemake benchmark file)")
    seconds, mem = [], []
    for line in lines[1:]:
        row = dict(zip(head, line.split("\t"), strict=False))
        try:
            seconds.append(float(row["s"]))
            if row.get("max_rss", "NA") not in ("NA", "-", ""):
                mem.append(float(row["max_rss"]))
        except ValueError:
            raise BenchmarkError(f"{path}: s and max_rss must be numbers or NA (got {line[:80]!r})") from None
    values = [v for v in seconds + mem if not math.isfinite(v) or v < 0]
    if values:
        raise BenchmarkError(f"{path}: s and max_rss must be finite and >= 0 (got {values[0]})")
    return max(seconds), max(mem) if mem else None


def needs(root: str | Path) -> list[Need]:
    """Every rule's largest need over its jobs' benchmark files under ``root``, by rule name."""
    root = Path(root)
    if not root.is_dir():
        raise BenchmarkError(f"{root}: no such folder (the workflow writes its benchmark files there: "
                             "config benchmarks_dir)")
    by_rule: dict[str, list[tuple[float, float | None]]] = {}
    for path in sorted(root.rglob("*.tsv")):
        by_rule.setdefault(rule_of(path, root), []).append(read_file(path))
    if not by_rule:
        raise BenchmarkError(f"{root}: no benchmark files (*.tsv): run the workflow first")
    out = []
    for rule, measured in sorted(by_rule.items()):
        mems = [m for _, m in measured if m is not None]
        out.append(Need(rule, len(measured), max(s for s, _ in measured), max(mems) if mems else None))
    return out


def profile(found: list[Need], margin: float = 1.5, least_minutes: int = 1, least_mb: int = 256) -> dict:
    """A Snakemake workflow profile asking each measured rule for its need times ``margin``."""
    if not (isinstance(margin, (int, float)) and math.isfinite(margin) and margin >= 1):
        raise BenchmarkError(f"margin must be a number >= 1 (got {margin!r})")
    return {"set-resources": {n.rule: n.resources(margin, least_minutes, least_mb) for n in found}}


def profile_text(found: list[Need], margin: float = 1.5) -> str:
    """The profile as YAML, each rule's jobs and measured need beside it as a comment."""
    import yaml

    lines = ["# Resources from measured needs (bladefl resources): the longest wall and the largest peak",
             f"# memory of each rule's jobs, times {margin:g}. Use with --workflow-profile <this folder>.",
             "set-resources:"]
    sized = profile(found, margin)["set-resources"]
    for n in found:
        mem = "no memory sample" if n.mem_mb is None else f"{n.mem_mb:.0f} MB"
        lines.append(f"  # {n.rule}: {n.jobs} job{'' if n.jobs == 1 else 's'}, at most {n.seconds:.1f} s and {mem}")
        lines.append(f"  {n.rule}: {yaml.safe_dump(sized[n.rule], default_flow_style=True).strip()}")
    return "\n".join(lines) + "\n"


__all__ = ["COLUMNS", "BenchmarkError", "Need", "needs", "profile", "profile_text", "read_file", "rule_of"]
