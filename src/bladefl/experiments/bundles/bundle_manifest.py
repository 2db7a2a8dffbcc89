"""A kept bundle's manifest: read as hostile (bounded, strict JSON, plain paths of a bundle, a record per file),
and a bundle held to it (files missing, changed, not listed, linked), or, where Snakemake removed the manifest
before its job ran again, to its RO-Crate: what proves a folder is a kept bundle, never the names it holds."""

from __future__ import annotations

import json
from pathlib import Path

from bladefl.core import run_files
from bladefl.core.bounded_read import read_regular
from bladefl.data.datasets import sha256_file
from bladefl.experiments.bundles import ro_crate

MANIFEST = "MANIFEST.json"
CONFIG = "config.yaml"
BUNDLE_ENTRIES = {MANIFEST, CONFIG, ro_crate.CRATE, "results", "data", "runs"}
FOLDERS = BUNDLE_ENTRIES - {MANIFEST, CONFIG, ro_crate.CRATE}  # what a listed file lies under



MANIFEST_LIMIT = 16 << 20  # a bundle's manifest lists a few hundred files


def read_manifest(bundle: str | Path) -> dict:
    path = Path(bundle) / MANIFEST
    try:
        manifest = json.loads(read_regular(path, MANIFEST_LIMIT, "manifest").decode("utf-8"),
                              object_pairs_hook=run_files.no_key_twice)
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable manifest ({exc})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise ValueError(f"{path}: no 'files' table")
    strange = [ascii(rel) for rel in manifest["files"] if not _plain_name(rel)]
    if strange:
        raise ValueError(f"{path}: entries {', '.join(strange[:3])} of 'files' are not plain paths of a bundle "
                         f"({CONFIG}, or under {', '.join(sorted(FOLDERS))}/)")
    bad = [rel for rel, entry in manifest["files"].items()
           if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str)]
    if bad:
        raise ValueError(f"{path}: entries {bad[:3]} of 'files' are not {{'bytes': ..., 'sha256': ...}} records")
    return manifest


def _shown(rel: str) -> str:
    """A file name as a message shows it: on one line, whatever the name holds."""
    return rel if rel.isprintable() else ascii(rel)


def _plain_name(rel: str) -> bool:
    """A file a bundle may list: config.yaml, or a path under results/, data/ or runs/ without empty,
    '.' or '..' parts and without control characters."""
    parts = rel.split("/")
    return rel.isprintable() and (rel == CONFIG or (parts[0] in FOLDERS and len(parts) > 1
                                                    and all(p not in ("", ".", "..") for p in parts)))


def problems(bundle: str | Path) -> list[str]:
    """Why a bundle is not what its manifest says (empty: it is): files missing, changed or not listed."""
    bundle = Path(bundle)
    try:
        listed = read_manifest(bundle)["files"]
    except ValueError as exc:
        return [str(exc)]
    links = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_symlink())
    if links:  # a listed file replaced by a link would lay out whatever it points to
        return [f"{_shown(rel)}: a symbolic link (a bundle holds plain files only)" for rel in links]
    found = {p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file()} - {MANIFEST, ro_crate.CRATE}
    out = [f"{rel}: listed in the manifest, missing" for rel in sorted(set(listed) - found)]
    out += [f"{_shown(rel)}: not listed in the manifest" for rel in sorted(found - set(listed))]
    out += [f"{rel}: changed since it was kept (SHA-256 differs)" for rel in sorted(found & set(listed))
            if sha256_file(bundle / rel) != listed[rel].get("sha256")]
    return out


def not_provably_kept(folder: Path) -> str:
    """Why ``folder`` is not provably a kept bundle ("" where it is): its manifest parses and every file matches
    it; or, where the manifest is gone (Snakemake deletes a job's output, the manifest, before the job runs
    again), its RO-Crate parses and every file matches the SHA-256 the crate lists. Never judged by names."""
    if (folder / MANIFEST).exists() or (folder / MANIFEST).is_symlink():
        found = problems(folder)
        return found[0] if found else ""
    try:
        crate = json.loads(read_regular(folder / ro_crate.CRATE, MANIFEST_LIMIT, "crate").decode("utf-8"),
                           object_pairs_hook=run_files.no_key_twice)
        listed = {e["@id"]: e["sha256"] for e in crate["@graph"]
                  if isinstance(e, dict) and e.get("@type") == "File" and isinstance(e.get("sha256"), str)}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"no {MANIFEST}, and no readable {ro_crate.CRATE} ({str(exc)[:120]})"
    entries = list(folder.rglob("*"))
    if any(p.is_symlink() for p in entries):
        return "it holds a symbolic link"
    present = {p.relative_to(folder).as_posix() for p in entries if p.is_file()} - {ro_crate.CRATE}
    if not listed or present != set(listed) or not all(_plain_name(rel) for rel in listed):
        extra = sorted(present - set(listed)) or sorted(set(listed) - present)
        return f"its files are not those its {ro_crate.CRATE} lists ({_shown(extra[0]) if extra else 'none listed'})"
    changed = [rel for rel in sorted(present) if sha256_file(folder / rel) != listed[rel]]
    return f"{changed[0]}: changed since it was kept" if changed else ""


__all__ = ["BUNDLE_ENTRIES", "CONFIG", "FOLDERS", "MANIFEST", "MANIFEST_LIMIT", "not_provably_kept", "problems",
           "read_manifest"]
