"""A kept bundle's provenance as a Process Run RO-Crate (``ro-crate-metadata.json`` beside its manifest,
written by the ``rocrate`` package): every file the manifest lists, with its SHA-256 and size, as the
inputs (the config, the partitions, the runs' archive) or the results of one action, the workflow's run
that made the bundle; the software (bladefl at the code versions that made the runs, kept the bundle and
derived its verdicts); the engine configs the runs read; and a runs' archive the bundle names but does not
hold, by its SHA-256. Written at ``keep`` and again at ``rejudge``; other tools read it
(``rocrate.rocrate.ROCrate(bundle)``)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CRATE = "ro-crate-metadata.json"
PROCESS_RUN = "https://w3id.org/ro/wfrun/process/0.5"
INPUT_PREFIXES = ("config.yaml", "data/", "runs/")
FORMATS = {".csv": "text/csv", ".json": "application/json", ".yaml": "application/yaml", ".md": "text/markdown",
           ".npy": "application/octet-stream", ".xz": "application/x-xz", ".png": "image/png"}


def _iso(kept: str) -> str:
    """The manifest's date ("YYYY-MM-DD HH:MM UTC") as ISO 8601."""
    day, _, clock = kept.partition(" ")
    return f"{day}T{clock.split(' ')[0] or '00:00'}:00Z" if day else ""


def _code_versions(about: Mapping[str, Any]) -> list[str]:
    found = [*about.get("code_versions", []), about.get("kept_by", "")]
    found += [r.get("code_version", "") for r in about.get("rejudged", []) if isinstance(r, Mapping)]
    return [v for v in dict.fromkeys(found) if isinstance(v, str) and v]


def engine_digests(config_file: str | Path) -> dict[str, str]:
    """The engine configs a bundle's config names (its ``engine``, default ``paper``, and its readings'),
    each with the SHA-256 of ``config/engines/<name>.yaml`` in this code, where it holds one."""
    from bladefl.core import strict_yaml
    from bladefl.data.datasets import sha256_file
    from bladefl.experiments.plan import workflow_config as wc

    try:
        config = strict_yaml.read_file(config_file)
    except (OSError, ValueError):
        return {}
    config = config if isinstance(config, Mapping) else {}
    given = config.get("readings")
    readings: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    names = {str(config.get("engine", "paper"))} | {str(r.get("engine", "paper")) for r in readings.values()
                                                     if isinstance(r, Mapping)}
    known = set(wc.available_engines())  # a name, never a path: only config/engines/<name>.yaml is read
    datasets = [d for d in config.get("datasets", []) if isinstance(d, str)]
    files = {wc.engine_name({"engine": n}, d)
             for n in names & known for d in (datasets if wc.per_dataset(n) else [None])}
    return {f: sha256_file(wc.engine_path({"engine": f})) for f in sorted(files)
            if wc.engine_path({"engine": f}).is_file()}


def write_crate(bundle: str | Path, manifest: Mapping[str, Any], engines: Mapping[str, str] | None = None,
                name: str | None = None) -> Path:
    """Write ``bundle``'s crate from its ``manifest`` (:func:`kept_results.read_manifest`), atomically;
    ``engines``: each engine config's name and SHA-256 (the configs the runs read); ``name``: the bundle's
    (default: its folder's). Returns the crate's path."""
    from rocrate.model.contextentity import ContextEntity
    from rocrate.rocrate import ROCrate

    bundle = Path(bundle)
    name = name or bundle.name
    about = manifest.get("about", {})
    crate = ROCrate()
    crate.name = f"BLADE-FL reproduction bundle {name}"
    crate.description = ("The report's inputs of one run of the BLADE-FL reproduction workflow, kept with a "
                         "manifest: the runs' tables, the verdicts, the paper's tables beside ours.")
    crate.license = "MIT"
    if _iso(str(manifest.get("kept", ""))):  # the bundle's own date: the same manifest writes the same crate
        crate.root_dataset["datePublished"] = _iso(str(manifest["kept"]))
    crate.root_dataset["conformsTo"] = {"@id": PROCESS_RUN}
    crate.add(ContextEntity(crate, PROCESS_RUN, properties={"@type": "CreativeWork", "name": "Process Run Crate",
                                                            "version": "0.5"}))
    inputs: list[Any] = []
    results: list[Any] = []
    for rel, entry in sorted(manifest["files"].items()):
        props = {"sha256": entry["sha256"], "contentSize": str(entry.get("bytes", "")),
                 "encodingFormat": FORMATS.get(Path(rel).suffix, "application/octet-stream")}
        added = crate.add_file(source=bundle / rel, dest_path=rel, properties=props)
        (inputs if rel.startswith(INPUT_PREFIXES) else results).append(added)
    imported = about.get("imported") if isinstance(about.get("imported"), Mapping) else {}
    if imported.get("sha256") and not any(e.id == imported.get("archive") for e in inputs):
        inputs.append(crate.add(ContextEntity(crate, f"#runs-archive-{imported['sha256'][:12]}", properties={
            "@type": "CreativeWork", "name": f"the runs' archive {imported.get('archive', '')} (not in this bundle)",
            "sha256": imported["sha256"], "encodingFormat": FORMATS[".xz"]})))
    for name, digest in sorted((engines or {}).items()):
        inputs.append(crate.add(ContextEntity(crate, f"#engine-{name}", properties={
            "@type": "CreativeWork", "name": f"config/engines/{name}.yaml", "sha256": digest,
            "description": "the engine config as the code that wrote this crate holds it"})))
    versions = _code_versions(about)
    software = crate.add(ContextEntity(crate, "#bladefl", properties={
        "@type": "SoftwareApplication", "name": "bladefl (library and Snakemake workflow)",
        "softwareVersion": versions[-1] if versions else "", "description": "code versions: " + ", ".join(versions)}))
    crate.add_action(software, identifier="#keep", object=inputs, result=results, properties={
        "@type": "CreateAction", "name": f"the workflow's run kept as {name}",
        "endTime": _iso(str(manifest.get("kept", ""))), "actionStatus": {"@id": "http://schema.org/CompletedActionStatus"}})
    with tempfile.TemporaryDirectory(dir=bundle, prefix=".crate.") as staging:
        crate.metadata.write(staging)
        Path(staging, CRATE).chmod(0o644)
        os.replace(Path(staging, CRATE), bundle / CRATE)
    return bundle / CRATE
