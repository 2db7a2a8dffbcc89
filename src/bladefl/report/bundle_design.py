"""What a report's runs are, said from the files behind it (never a constant about results): the
design (run seeds, partition draws, independent units) a config names, the engine's reading of what
the paper leaves unsaid, the code versions that made the runs, derived the verdicts and rendered the
page, and the kept bundle that holds the headline verdicts."""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from bladefl.data.datasets import SPECS, TITLES
from bladefl.data.partition import PartitionSpec, config_fields
from bladefl.data.schemes import SCHEME_REGISTRY
from bladefl.experiments.plan import workflow_config as wc
from bladefl.experiments.runs import provenance
from bladefl.report.tables import run_span

# The kept bundle whose verdicts are the headline (README, `make reference-report`'s default REF).
HEADLINE_BUNDLE = "reference/paper-10draws"
MANIFEST = "MANIFEST.json"


def design(config: Mapping[str, Any]) -> str:
    """A config's design in words: how many run seeds on how many partition draws, and what the
    independent units are ("10 run seeds, each on its own partition draw: 10 independent units")."""
    seeds = [int(s) for s in config.get("seeds", [0])]
    return _design(seeds, {wc.partition_draw(config, s) for s in seeds})


def design_of_runs(summaries: Mapping[str, pd.DataFrame]) -> str:
    """:func:`design` of the runs a report's tidy tables hold (the seeds and draws that ran), the
    datasets' designs joined where they differ."""
    said = []
    for frame in summaries.values():
        ok = frame[frame.status == "ok"] if "status" in frame else frame
        if "seed" not in ok or ok.empty:
            continue
        draws = set(ok.partition.dropna()) if "partition" in ok else {0}
        said.append(_design(sorted({int(s) for s in ok.seed}), draws or {0}))
    return "; ".join(dict.fromkeys(said))


def _design(seeds: Sequence[int], draws: set) -> str:
    if len(draws) == len(seeds):
        if len(seeds) == 1:
            return "1 run seed on 1 partition draw: one run per point"
        return f"{len(seeds)} run seeds, each on its own partition draw: {len(seeds)} independent units"
    if len(draws) == 1:
        return f"{len(seeds)} run seeds on 1 partition draw: the runs are the units, for that one split"
    return (f"{len(seeds)} run seeds on {len(draws)} partition draws ({len(seeds) // len(draws)} seeds each): "
            f"{len(draws)} independent units, the draws")


def _iteration(train: Mapping[str, Any]) -> str:
    """What one local iteration of an engine's ``train`` settings is, in words, with its step size's scale."""
    iteration, batch = str(train.get("iteration", "?")), train.get("batch_size", "?")
    steps = train.get("steps", 1)
    said = {"epoch": f"an epoch of minibatch SGD at batch {batch}",
            "steps": f"{steps} minibatch step{'' if steps == 1 else 's'} at batch {batch}",
            "full_batch": "one full-batch gradient step"}.get(iteration, iteration.replace("_", " "))
    scale = train.get("eta_scale", 1)
    return said if scale == 1 else f"{said}, step size eta x {scale:g}"


def reading(engine: Mapping[str, Any], name: str, datasets: Sequence[str] = ()) -> str:
    """The engine's settings of what the paper leaves unsaid, in one line (the reading every verdict
    of the report holds under); the model's inputs are the pixels of ``datasets`` (the engine's own
    dataset where none are given)."""
    part, model, train = engine.get("partition", {}), engine.get("model", {}), engine.get("train", {})
    fields = config_fields()
    spec = PartitionSpec.of(**{k: v for k, v in part.items() if k in fields})
    split = SCHEME_REGISTRY[spec.scheme].describe(spec.value)
    hidden = model.get("hidden", "?")
    activation = {"relu": "ReLU", "none": "no activation", None: "no activation"}.get(
        model.get("activation"), str(model.get("activation")))
    step = f"one local iteration = {_iteration(train)}"
    pixels = "standardised pixels" if engine.get("normalize", False) else "raw pixels in [0, 1]"
    kind = "" if spec.scheme == "iid" else "non-IID "
    sizes = sorted({SPECS[d].pixels for d in datasets or [engine.get("dataset", "mnist")] if d in SPECS})
    inputs = "/".join(map(str, sizes)) or "?"
    return (f"engine {name} (config/engines/{name}.yaml): {kind}{split}, {spec.n} samples per "
            f"client; MLP {inputs}-{hidden}-10, {activation}; {step}; {pixels}")


def engine_reading(name: str, datasets: Sequence[str] = ()) -> str:
    """:func:`reading` of the engine ``name`` (a workflow config's ``engine``), as this checkout holds it;
    an engine given per dataset (``calibrated``) as each of ``datasets``' readings in turn."""
    try:
        if name not in wc.available_engines():  # a name, never a path: read only config/engines/<name>.yaml
            raise ValueError(name)
        if wc.per_dataset(name):
            return "; ".join(f"on {SPECS[d].title if d in SPECS else d}, "
                             + reading(yaml.safe_load(wc.engine_path({"engine": name}, d).read_text()) or {},
                                       wc.engine_name({"engine": name}, d), [d]) for d in datasets)
        engine = yaml.safe_load(wc.engine_path({"engine": name}).read_text()) or {}
        return reading(engine, name, datasets)
    except (OSError, yaml.YAMLError, ValueError, TypeError, KeyError):
        return f"engine {name} (its settings cannot be read from this checkout's config/engines/{name}.yaml)"


def bundle_of(config_files: Sequence[str | Path]) -> Path | None:
    """The kept bundle a report renders (a config file that lies in a folder holding a manifest:
    `make reference-report` renders from the bundle's own config.yaml), else None."""
    for path in config_files:
        folder = Path(path).parent
        if (folder / MANIFEST).is_file():
            return folder
    return None


def _about(bundle: Path) -> dict | None:
    """A bundle's manifest ``about`` (None where it cannot be read)."""
    try:
        manifest = json.loads((bundle / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    about = manifest.get("about", {}) if isinstance(manifest, dict) else {}
    return about if isinstance(about, dict) else {}


def verdicts_code(bundle: Path | None) -> str:
    """The code version that derived the verdict tables: a kept bundle's last re-derivation
    (``make rejudge``), else the code that kept it, else "not recorded"; for a workflow's own results
    (no bundle) this code, which derives them."""
    if bundle is None:
        return provenance.code_version()
    about = _about(bundle)
    if about is None:
        return "not recorded"
    rejudged = about.get("rejudged") or []
    if isinstance(rejudged, list) and rejudged and isinstance(rejudged[-1], dict):
        return str(rejudged[-1].get("code_version", "not recorded"))
    return str(about.get("kept_by", "not recorded"))


def tables_code(bundle: Path | None) -> str:
    """The code version that made a kept bundle's tables from its runs (the summary, the paper comparison,
    the bound and detection tables: the manifest's ``kept_by``), and the code of each kind of table derived
    again since (a record of ``about.rejudged`` naming files other than verdicts: ``(bound: <code>)``); for a
    workflow's own results this code."""
    if bundle is None:
        return provenance.code_version()
    about = _about(bundle)
    if about is None:
        return "not recorded"
    since: dict[str, str] = {}
    for record in about.get("rejudged") or []:
        files = record.get("files") if isinstance(record, dict) else None
        for rel in files if isinstance(files, list) else []:
            kind = str(rel).split("/")[1] if str(rel).count("/") >= 2 else None
            if kind and kind != "verdicts":
                since[kind] = str(record.get("code_version", "not recorded"))
    again = "".join(f" ({kind}: {code})" for kind, code in sorted(since.items()))
    return str(about.get("kept_by", "not recorded")) + again


def code_line(run_versions: Sequence[str], verdicts: str, page: str | None = None, tables: str | None = None) -> str:
    """The code versions: the runs', the tables' (made from the runs), the verdicts' and this page's."""
    runs = ", ".join(sorted(set(run_versions))) or "unknown"
    made = f" · tables {tables}" if tables else ""
    return f"code: runs {runs}{made} · verdicts {verdicts} · this page {page or provenance.code_version()}"


def headline_design(root: Path | None = None) -> str:
    """The headline bundle's design, from its own config ("" where this checkout lacks it)."""
    path = (root or provenance.project_root()) / HEADLINE_BUNDLE / "config.yaml"
    try:
        config = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return ""
    return design(config) if isinstance(config, dict) else ""


def _first_file(dataset: str) -> str:
    """What the checksum on the provenance line is of: MNIST's training images, Cifar-10's first batch."""
    spec = SPECS.get(dataset)
    return "train images" if spec is None or spec.file_format == "idx" else spec.train_files[0]


PROVENANCE_COLUMNS = ("code_version", "train_images_sha256", "seconds")  # what the line reads of a runs' table


def provenance_line(provenance: Mapping[str, pd.DataFrame], config_files: Sequence[str], seeds: Sequence[int],
                    when: datetime | None = None, verdicts_by: str | None = None) -> str:
    """One line: the code versions (the runs', the verdicts', this page's), config file(s), seeds, data
    checksums, date, machine, run time. ``provenance``: per dataset, the runs' provenance table
    (``report.provenance``); ``verdicts_by``: the code that derived the verdict tables (default: the
    kept bundle's record where the config is a bundle's, else this code)."""
    frame = pd.concat([f.assign(dataset=d) for d, f in provenance.items()], ignore_index=True)
    when = when or datetime.now(UTC)
    if verdicts_by is None:
        verdicts_by = verdicts_code(bundle_of(config_files))
    versions = code_line(list(map(str, frame.code_version.dropna().unique())), verdicts_by,
                         tables=tables_code(bundle_of(config_files)))
    hosts = ", ".join(sorted(map(str, frame.host.dropna().unique()))) if "host" in frame else "unknown"
    devices = sorted(map(str, frame.device.dropna().unique())) if "device" in frame else []
    hosts += f" ({', '.join(devices)})" if devices else ""
    checksums = "; ".join(f"{TITLES.get(d, d)} {_first_file(d)} {str(sha)[:12]}"
                          for d, sha in frame.groupby("dataset").train_images_sha256.first().items())
    seconds = float(pd.to_numeric(frame.seconds, errors="coerce").sum())
    run_time = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
    configs = ", ".join(_relative(c) for c in config_files) or "default"
    return (f"{versions} · config {configs} · seeds {seed_span(seeds)}{_units(frame, seeds)} · "
            f"data SHA-256 {checksums} · "
            f"built {when:%Y-%m-%d %H:%M} UTC on {platform.node()} ({os.cpu_count()} CPUs) · "
            f"{len(frame)} runs on {hosts}, {run_time} of run time in all")


def seed_span(seeds: Sequence[int]) -> str:
    """The run seeds as a user would write them: ``0-19`` for a run of consecutive seeds, else the list."""
    values = [int(s) for s in seeds]
    span = run_span(values)
    return f"{span[0]}-{span[1]}" if span else str(values)


def _units(frame: pd.DataFrame, seeds: Sequence[int]) -> str:
    """What the seeds replicate: on how many partition draws they ran, so how many independent units."""
    draws = int(frame.partition.nunique()) if "partition" in frame else 0
    if draws <= 0 or not len(seeds):
        return ""
    if draws == 1:
        return " on one partition draw (the runs are the units)"
    if draws == len(seeds):
        return f", each on its own partition draw ({draws} independent units)"
    return f" on {draws} partition draws ({draws} independent units, the draws)"


def _relative(path: str) -> str:
    """A path relative to the working directory when it lies below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
