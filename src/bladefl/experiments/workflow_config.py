"""Checks and derived values for the Snakemake workflow's config (beyond its JSON schema).

The schema (``workflow/schemas/config.schema.yaml``) checks types and ranges field by field;
this module checks what a schema cannot express (the profile file, N*n against the training
set size, n against the shards or classes per client, feasible K in every cell) and derives
the jobs' parameters. Both run when the Snakefile is parsed, before any job starts.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bladefl.data.datasets import SPECS, TRAIN_SIZE
from bladefl.data.partition import PartitionSpec, partition_errors
from bladefl.experiments.grid import Cell, Member, cell_errors, expand, members_to_json, unique_cells
from bladefl.experiments.readings import Reading, reading_config, reading_errors, readings
from bladefl.fl.detection import DETECTORS
from bladefl.fl.run_config import ConfigError as RunConfigError
from bladefl.fl.run_config import RunConfig, load_config

PROFILE_DIR = Path("config/profiles")


class ConfigError(ValueError):
    """The workflow config is invalid; the message lists every problem found."""


def profile_path(config: Mapping[str, Any]) -> Path:
    return PROFILE_DIR / f"{config.get('profile', 'paper')}.yaml"


def available_profiles() -> list[str]:
    """The engine profiles there are: config/profiles/<name>.yaml."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))


def profile(config: Mapping[str, Any]) -> RunConfig:
    path = profile_path(config)
    if not path.is_file():
        raise ConfigError(f"profile must be one of {available_profiles()} (got {config.get('profile')!r}: no {path})")
    return load_config(path)


def partition_spec(config: Mapping[str, Any], N: int) -> PartitionSpec:
    """The profile's partition with the config's overrides and the cell's N."""
    values = {**dataclasses.asdict(profile(config).partition), **config.get("partition", {}), "N": N}
    errors = partition_errors(SimpleNamespace(**values), train_size=TRAIN_SIZE)
    if errors:
        raise ConfigError("; ".join(errors))
    return PartitionSpec(**values)


def members(config: Mapping[str, Any]) -> list[Member]:
    try:
        return expand(config)
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"sweeps: {exc}") from None


def cells(config: Mapping[str, Any]) -> list[Cell]:
    return unique_cells(members(config))


def bound_cells(config: Mapping[str, Any]) -> list[Cell]:
    """The cells the bound is drawn for (the config's ``bound_sweep``); none without measurement."""
    if not config.get("measure_constants", True):
        return []
    return unique_cells([m for m in members(config) if m.sweep == config.get("bound_sweep", "fig3")])


def detectors(config: Mapping[str, Any]) -> list[str]:
    """The lazy-client detectors the validators run in every cell with lazy clients (the config's
    ``detection.detectors``; none when absent)."""
    return list(config.get("detection", {}).get("detectors", []))


def lazy_members(config: Mapping[str, Any]) -> list[Member]:
    """The sweep points with lazy clients: where detection is measured."""
    return [m for m in members(config) if m.cell.lazy_ratio > 0]


def detection_cells(config: Mapping[str, Any]) -> list[Cell]:
    """Extra cells: every lazy cell of the ``detection.exclude_sweeps`` run again with the flagged
    uploads excluded from the block (the first detector decides)."""
    if not detectors(config):
        return []
    sweeps = set(config.get("detection", {}).get("exclude_sweeps", []))
    return unique_cells([Member(m.sweep, m.feeds, m.vary, m.value, dataclasses.replace(m.cell, exclude=True))
                         for m in lazy_members(config) if m.sweep in sweeps])


def all_cells(config: Mapping[str, Any]) -> list[Cell]:
    """Every cell the grid runs: the sweeps' cells and the detection cells."""
    return cells(config) + detection_cells(config)


def settings(config: Mapping[str, Any]) -> list[dict[str, str]]:
    """Per sweep: what it varies, its fixed settings and where each comes from (the config's
    ``source``: stated by the paper, with the section, or inferred, with the evidence)."""
    rows = []
    for sweep in config.get("sweeps", []):
        varied = f"{sweep['vary']} in {sweep['values']}" if "vary" in sweep else f"{len(sweep['cells'])} cells"
        fixed = ", ".join(f"{k}={v}" for k, v in sweep.get("with", {}).items()) or "the base cell"
        source = "; ".join(f"{k}: {v}" for k, v in sweep.get("source", {}).items()) or "not recorded"
        rows.append({"sweep": sweep["name"], "feeds": sweep.get("feeds", ""), "varies": varied, "fixed": fixed,
                     "source": source})
    return rows


def run_sets(config: Mapping[str, Any], cell: Cell, dataset: str, seed: int) -> list[str]:
    """The ``--set`` overrides of one grid run: dataset, seed, the cell's settings, the partition,
    and measurement: the bound's cells measure its constants (and theta, a counterfactual, where
    they have lazy clients); no other cell pays for measurement."""
    sets = [f"dataset={dataset}", f"seed={seed}", *cell.overrides(float(config.get("t_sum", 100)))]
    if cell.lazy_ratio > 0 and detectors(config):
        sets.append(f"lazy.detectors=[{','.join(detectors(config))}]")
    if cell.key in {c.key for c in bound_cells(config)}:
        sets += ["measure.constants=true", f"lazy.counterfactual={'true' if cell.lazy_ratio > 0 else 'false'}"]
    return sets + [f"partition.{k}={v}" for k, v in config.get("partition", {}).items()]


@dataclass(frozen=True)
class RunGroup:
    """One grid job under ``grouping: partition``: every cell with this N, for a block of seeds,
    computed as one stacked group (they share the data: dataset and partition)."""

    dataset: str
    N: int
    block: int
    seeds: tuple[int, ...]
    cells: tuple[str, ...]  # cell keys

    @property
    def name(self) -> str:
        return f"{self.dataset}_N{self.N}_block{self.block}"

    def run_dirs(self, runs_root: str) -> list[str]:
        return [f"{runs_root}/{self.dataset}/{c}/seed~{s}" for c in self.cells for s in self.seeds]


def run_groups(config: Mapping[str, Any]) -> list[RunGroup]:
    """The grid's jobs under ``grouping: partition``: per dataset and N, blocks of
    ``seeds_per_job`` seeds."""
    seeds = list(config.get("seeds", [0]))
    per = int(config.get("seeds_per_job", len(seeds)))
    by_n: dict[int, list[str]] = {}
    for cell in all_cells(config):
        by_n.setdefault(cell.N, []).append(cell.key)
    return [RunGroup(d, N, b, tuple(seeds[i : i + per]), tuple(keys))
            for d in config.get("datasets", []) for N, keys in sorted(by_n.items())
            for b, i in enumerate(range(0, len(seeds), per))]


def group_plan(config: Mapping[str, Any], group: RunGroup, runs_root: str) -> str:
    """The plan of a group job (JSON for ``bladefl run-group --plan``): per run folder, its
    overrides and whether it records the distance to the reference optimum (the bound's cells)."""
    bound = {c.key for c in bound_cells(config)}
    plan = [{"out": f"{runs_root}/{group.dataset}/{c}/seed~{s}",
             "set": run_sets(config, Cell.from_key(c), group.dataset, s), "reference": c in bound}
            for c in group.cells for s in group.seeds]
    return json.dumps(plan, separators=(",", ":"))


def reading_plan(config: Mapping[str, Any], reading: Reading, dataset: str, seed: int, runs_root: str) -> str:
    """The plan of one sensitivity job (``bladefl run-group --plan``): every cell of the grid under
    one reading, for one dataset and seed; no measurement, no reference."""
    seen = reading_config(config, reading)
    plan = [{"out": f"{runs_root}/{reading.name}/{dataset}/{c.key}/seed~{seed}",
             "set": [*run_sets({**seen, "measure_constants": False}, c, dataset, seed), *reading.run_sets(),
                     *reading.cell_sets(c)],
             "reference": False}
            for c in cells(config)]
    return json.dumps(plan, separators=(",", ":"))


def members_json(config: Mapping[str, Any]) -> str:
    return members_to_json(members(config))


def job_config_errors(config: Mapping[str, Any]) -> list[str]:
    """Every run config a job of this workflow will receive, built now with the job's own
    overrides and checked by the run config's own rules (:func:`bladefl.fl.run_config.from_dict`),
    so a value a job would refuse stops the workflow before any job: each grid and detection cell
    (with the first dataset and seed; each seed once), and each reading's cells."""
    errors: list[str] = []
    datasets = [d for d in config.get("datasets", []) if d in SPECS]
    if not datasets:
        return errors
    seeds = list(config.get("seeds", [0])) or [0]

    def build(where: str, path: Path, sets: list[str]) -> None:
        try:
            load_config(path, sets)
        except RunConfigError as exc:
            errors.append(f"{where}: {str(exc).removeprefix('invalid run config: ')}")

    grid = all_cells(config)
    for cell in grid:
        build(f"cell {cell.key}", profile_path(config), run_sets(config, cell, datasets[0], seeds[0]))
    for seed in seeds[1:]:
        if grid:
            build(f"seed {seed!r}", profile_path(config), run_sets(config, grid[0], datasets[0], seed))
    for reading in readings(config):
        seen = reading_config(config, reading)
        if not profile_path(seen).is_file():
            continue  # named by reading_errors
        found: dict[str, list[str]] = {}  # the reading's problems, and the cells they arise in
        for cell in cells(config):
            sets = [*run_sets({**seen, "measure_constants": False}, cell, datasets[0], seeds[0]),
                    *reading.run_sets(), *reading.cell_sets(cell)]
            try:
                load_config(profile_path(seen), sets)
            except RunConfigError as exc:
                for problem in str(exc).removeprefix("invalid run config: ").split("; "):
                    found.setdefault(problem, []).append(cell.key)
        total = len(cells(config))
        errors += [f"readings.{reading.name}: {problem}" + ("" if len(where) == total else f" (cells {where})")
                   for problem, where in found.items()]
    return errors


def check(config: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` naming the field and the allowed values, or return None."""
    errors = []
    for name in config.get("datasets", []):
        if name not in SPECS:
            errors.append(f"datasets: each entry must be one of {sorted(SPECS)} (got {name!r})")
    try:
        profile(config)
    except (ConfigError, RunConfigError) as exc:
        raise ConfigError(f"invalid config: {exc}") from None
    try:
        grid_cells = cells(config)
    except ConfigError as exc:
        errors.append(str(exc))
        grid_cells = []
    t_sum = float(config.get("t_sum", 100))
    for N in sorted({c.N for c in grid_cells} or {20}):
        try:
            partition_spec(config, N)
        except ConfigError as exc:
            errors.append(f"{exc} (for a cell with N={N})")
    if config.get("measure_constants", True):
        names = [s.get("name") for s in config.get("sweeps", [])]
        bound = config.get("bound_sweep", "fig3")
        if bound not in names:
            errors.append(f"bound_sweep: must name one of the sweeps {names} when measure_constants is true "
                          f"(got {bound!r})")
    detection = config.get("detection", {})
    names = [s.get("name") for s in config.get("sweeps", [])]
    unknown = sorted(set(detection.get("detectors", [])) - set(DETECTORS))
    if unknown:
        errors.append(f"detection.detectors: each must be one of {list(DETECTORS)} (got {unknown})")
    for sweep in detection.get("exclude_sweeps", []):
        if sweep not in names:
            errors.append(f"detection.exclude_sweeps: each must name one of the sweeps {names} (got {sweep!r})")
    if detection.get("exclude_sweeps") and not detection.get("detectors"):
        errors.append("detection.exclude_sweeps needs detection.detectors (the first one decides exclusion)")
    profiles = available_profiles()
    errors.extend(reading_errors(config, profiles))
    for reading in readings(config):
        if reading.profile in profiles:
            for N in sorted({c.N for c in grid_cells}):
                try:
                    partition_spec(reading_config(config, reading), N)
                except (ConfigError, TypeError) as exc:
                    errors.append(f"readings.{reading.name}: {exc}")
    n = int(config.get("partition", {}).get("n", 512))
    for cell in grid_cells:
        errors.extend(cell_errors(cell, n, t_sum))
    if not errors:  # every job's own config, once the grid itself is sound
        errors.extend(job_config_errors(config))
    if errors:
        raise ConfigError("invalid config: " + "; ".join(dict.fromkeys(errors)))
