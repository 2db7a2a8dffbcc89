"""A command line whose ``--set-resources`` would silently discard a profile's: Snakemake keeps one
``set-resources`` (the command line's replaces a profile's whole, it does not merge them), so
``snakemake --workflow-profile profiles/measured --set-resources run_cell:mem_mb=4000`` would send
every other rule back to its declared size. The workflow refuses that mix in one line, before any
job, naming the profile and the rules it sizes; docs/hpc.md says how to combine them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

PROFILE_OPTIONS = ("--profile", "--workflow-profile")
PROFILE_LIMIT = 1 << 20  # a profile's config.yaml: far below a megabyte


def _values(argv: Sequence[str], option: str) -> list[str]:
    """The values given to ``option`` (``--option a b``, ``--option=a``) up to the next option."""
    out: list[str] = []
    for i, word in enumerate(argv):
        if word.startswith(option + "="):
            out.append(word.split("=", 1)[1])
        elif word == option:
            for value in argv[i + 1:]:
                if value.startswith("-"):
                    break
                out.append(value)
    return out


def _profile_file(name: str, workdir: Path) -> Path | None:
    """A profile's config.yaml as Snakemake finds it: the path itself, or profiles/<name>."""
    for folder in (Path(name), workdir / name, workdir / "profiles" / name):
        if (folder / "config.yaml").is_file():
            return folder / "config.yaml"
    return None


def sized_rules(profile: Path) -> list[str]:
    """The rules a profile's ``set-resources`` sizes ([] where it sets none, or cannot be read: its
    reader, Snakemake, says so)."""
    import yaml

    from bladefl.core import strict_yaml
    from bladefl.core.bounded_read import read_regular

    try:
        data = strict_yaml.load(read_regular(profile, PROFILE_LIMIT, "profile").decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, yaml.YAMLError):
        return []
    sizes = data.get("set-resources") if isinstance(data, dict) else None
    if isinstance(sizes, dict):
        return sorted(map(str, sizes))
    if isinstance(sizes, list):  # the command-line form, RULE:RESOURCE=VALUE
        return sorted({str(s).split(":", 1)[0] for s in sizes})
    return []


def mixed_resources(argv: Sequence[str], workdir: str | Path = ".") -> str | None:
    """Why ``argv`` (Snakemake's command line) may not run: ``--set-resources`` beside a profile that
    sets resources too; None where there is no such mix."""
    if not _values(argv, "--set-resources") and "--set-resources" not in argv:
        return None
    for option in PROFILE_OPTIONS:
        for name in _values(argv, option):
            profile = _profile_file(name, Path(workdir))
            rules = sized_rules(profile) if profile is not None else []
            if rules:
                return (f"--set-resources on the command line replaces every size {option} {name} sets (for "
                        f"{', '.join(rules)}): Snakemake keeps one set-resources, it does not merge them; add yours "
                        f"to {profile}'s set-resources, or give every size on the command line (docs/hpc.md)")
    return None


__all__ = ["mixed_resources", "sized_rules"]
