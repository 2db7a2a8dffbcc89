"""Checks and derived values for the Snakemake workflow's config (beyond its JSON schema).

The schema (``workflow/schemas/config.schema.yaml``) checks types and ranges field by field;
this module checks what a schema cannot express (the engine file, N*n against the training
set size, n against the shards or classes per client, feasible K in every cell) and derives
the jobs' parameters. Both run when the Snakefile is parsed, before any job starts.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bladefl.data.datasets import SPECS, TRAIN_SIZE
from bladefl.data.partition import PartitionSpec, partition_errors
from bladefl.experiments.plan import grid as plan_grid
from bladefl.experiments.plan import run_id
from bladefl.experiments.plan.grid import Cell, Member, cell_errors, expand, members_to_json, unique_cells
from bladefl.experiments.plan.readings import Reading, reading_config, reading_errors, readings
from bladefl.fl.ranges import DETECTORS, RANGES, range_error
from bladefl.fl.run_config import ConfigError as RunConfigError
from bladefl.fl.run_config import RunConfig, load_config

ENGINE_DIR = Path("config/engines")
# The config the Snakefile loads (``configfile:``) before any ``--configfile``: every other workflow
# config (config/paper.yaml, config/smoke.yaml, ...) is an overlay on it.
DEFAULT_CONFIG = Path("config/config.yaml")


class ConfigError(ValueError):
    """The workflow config is invalid; the message lists every problem found."""


def engine_path(config: Mapping[str, Any]) -> Path:
    return ENGINE_DIR / f"{config.get('engine', 'paper')}.yaml"


def available_engines() -> list[str]:
    """The engines there are: config/engines/<name>.yaml."""
    return sorted(p.stem for p in ENGINE_DIR.glob("*.yaml"))


def engine(config: Mapping[str, Any]) -> RunConfig:
    path = engine_path(config)
    if not path.is_file():
        raise ConfigError(f"engine must be one of {available_engines()} (got {config.get('engine')!r}: no {path})")
    return load_config(path)


def renamed_keys(config: Mapping[str, Any]) -> tuple[dict, list[str]]:
    """A config written before ``profile`` became ``engine`` (top level, each reading's key and the
    ``profile`` axis), under the new names, with a line per renaming for the user. Snakemake's
    ``--profile`` (``profiles/``) is another thing; the engine's settings are ``config/engines/``."""
    out, notes = dict(config), []
    if "profile" in out:
        value = out.pop("profile")
        out["engine"] = value
        notes.append(f"config key 'profile' is now 'engine' (config/engines/): read as engine: {value}")
    if isinstance(out.get("readings"), Mapping):
        readings_ = {}
        for name, spec in out["readings"].items():
            if isinstance(spec, Mapping) and ("profile" in spec or spec.get("axis") == "profile"):
                spec = dict(spec)
                if "profile" in spec:
                    spec["engine"] = spec.pop("profile")
                if spec.get("axis") == "profile":
                    spec["axis"] = "engine"
                notes.append(f"readings.{name}: 'profile' is now 'engine' (key and axis)")
            readings_[name] = spec
        out["readings"] = readings_
    return out, notes


def partition_draws(config: Mapping[str, Any]) -> list[int]:
    """The partition draws of the grid: ``partition.seeds`` (replicates of the same scheme), else the
    one ``partition.seed``, else the engine's."""
    part = config.get("partition", {})
    if "seeds" in part:
        return [int(s) for s in part["seeds"]]
    return [int(part["seed"]) if "seed" in part else engine(config).partition.seed]


def partition_draw(config: Mapping[str, Any], seed: int) -> int:
    """The partition draw run seed ``seed`` trains on: run seeds are paired with draws in turn (the
    i-th seed of ``seeds`` with draw i mod P), so P draws share the seeds and cost no extra run."""
    draws, seeds = partition_draws(config), [int(s) for s in config.get("seeds", [0])]
    if seed not in seeds:
        raise ConfigError(f"seed {seed} is not one of the config's seeds {seeds}")
    return draws[seeds.index(seed) % len(draws)]


def partition_overrides(config: Mapping[str, Any], seed: int | None = None) -> dict[str, Any]:
    """The config's partition overrides for run seed ``seed`` (its draw; the first without one)."""
    part = {k: v for k, v in config.get("partition", {}).items() if k != "seeds"}
    if "seeds" in config.get("partition", {}):
        part["seed"] = partition_draw(config, seed) if seed is not None else partition_draws(config)[0]
    return part


def partition_spec(config: Mapping[str, Any], N: int, seed: int | None = None) -> PartitionSpec:
    """The engine's partition with the config's overrides and the cell's N: run seed ``seed``'s draw
    (the first draw without a seed)."""
    values = {**dataclasses.asdict(engine(config).partition), **partition_overrides(config, seed), "N": N}
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
    return sets + [f"partition.{k}={v}" for k, v in partition_overrides(config, seed).items()]


@dataclass(frozen=True)
class PartitionJob:
    """One grid job under ``grouping: partition``: every cell with this N, for a block of seeds,
    computed as one stacked group whatever partition draws the seeds train on (each run gathers
    its own draw's clients; the dataset and N are shared)."""

    dataset: str
    N: int
    block: int
    seeds: tuple[int, ...]
    cells: tuple[str, ...]  # cell keys
    draws: tuple[int, ...] = (0,)  # the partition draws its seeds train on (their seeds), in seed order

    @property
    def name(self) -> str:
        return f"{self.dataset}_N{self.N}_block{self.block}"

    def run_dirs(self, runs_root: str) -> list[str]:
        return [run_id.folder(runs_root, self.dataset, c, s) for c in self.cells for s in self.seeds]


def partition_jobs(config: Mapping[str, Any]) -> list[PartitionJob]:
    """The grid's jobs under ``grouping: partition``: per dataset and N, blocks of ``seeds_per_job``
    of the seeds (in the config's order), each holding the runs of every draw its seeds train on."""
    seeds = [int(s) for s in config.get("seeds", [0])]
    per = int(config.get("seeds_per_job", len(seeds)))
    by_n: dict[int, list[str]] = {}
    for cell in all_cells(config):
        by_n.setdefault(cell.N, []).append(cell.key)
    blocks = [tuple(seeds[i : i + per]) for i in range(0, len(seeds), per)]
    return [PartitionJob(d, N, b, block, tuple(keys), tuple(dict.fromkeys(partition_draw(config, s) for s in block)))
            for d in config.get("datasets", []) for N, keys in sorted(by_n.items())
            for b, block in enumerate(blocks)]


def group_plan(config: Mapping[str, Any], group: PartitionJob, runs_root: str) -> str:
    """The plan of a group job (JSON for ``bladefl run-group --plan``): per run folder, its
    overrides and whether it records the distance to the reference optimum (the bound's cells)."""
    bound = {c.key for c in bound_cells(config)}
    plan = [{"out": run_id.folder(runs_root, group.dataset, c, s),
             "set": run_sets(config, Cell.from_key(c), group.dataset, s), "reference": c in bound}
            for c in group.cells for s in group.seeds]
    return json.dumps(plan, separators=(",", ":"))


def reading_plan(config: Mapping[str, Any], reading: Reading, dataset: str, seed: int, runs_root: str) -> str:
    """The plan of one sensitivity job (``bladefl run-group --plan``): every cell of the grid under
    one reading, for one dataset and seed; no measurement, no reference."""
    seen = reading_config(config, reading)
    plan = [{"out": run_id.folder(f"{runs_root}/{reading.name}", dataset, c.key, seed),
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
        build(f"cell {cell.key}", engine_path(config), run_sets(config, cell, datasets[0], seeds[0]))
    for seed in seeds[1:]:
        if grid:
            build(f"seed {seed!r}", engine_path(config), run_sets(config, grid[0], datasets[0], seed))
    for reading in readings(config):
        seen = reading_config(config, reading)
        if not engine_path(seen).is_file():
            continue  # named by reading_errors
        found: dict[str, list[str]] = {}  # the reading's problems, and the cells they arise in
        for cell in cells(config):
            sets = [*run_sets({**seen, "measure_constants": False}, cell, datasets[0], seeds[0]),
                    *reading.run_sets(), *reading.cell_sets(cell)]
            try:
                load_config(engine_path(seen), sets)
            except RunConfigError as exc:
                for problem in str(exc).removeprefix("invalid run config: ").split("; "):
                    found.setdefault(problem, []).append(cell.key)
        total = len(cells(config))
        errors += [f"readings.{reading.name}: {problem}" + ("" if len(where) == total else f" (cells {where})")
                   for problem, where in found.items()]
    return errors


def _partition_errors(config: Mapping[str, Any], grid_cells: list[Cell]) -> list[str]:
    """The partition's problems: both forms of the draws, more draws than run seeds, and every draw's
    partition for every N of the grid."""
    errors, part = [], config.get("partition", {})
    if "seed" in part and "seeds" in part:
        errors.append("partition: give `seed` (one draw) or `seeds` (replicate draws, paired with the run seeds), "
                      f"not both (got seed={part['seed']!r}, seeds={part['seeds']!r})")
    elif "seeds" in part and len(part["seeds"]) > len(config.get("seeds", [0])):
        errors.append(f"partition.seeds: at most one draw per run seed ({len(config.get('seeds', [0]))} seeds; "
                      f"got {len(part['seeds'])} draws): a draw without a run seed would run nothing")
        return errors
    for N in sorted({c.N for c in grid_cells} or {20}):
        for seed in config.get("seeds", [0])[: len(partition_draws(config))]:
            try:
                partition_spec(config, N, seed)
            except ConfigError as exc:
                errors.append(f"{exc} (for a cell with N={N})")
    return errors


def schema_errors(config: Mapping[str, Any], schema_path: str | Path, most: int = 8) -> list[str]:
    """What the workflow's JSON schema refuses, one short line per problem naming the field (at
    most ``most``), for a config mistake to fit on one screen: an unknown key says which keys are
    allowed there and which one it was probably meant to be."""
    import difflib

    import jsonschema
    import yaml

    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    lines = []
    for error in sorted(validator.iter_errors(dict(config)), key=lambda e: [str(p) for p in e.absolute_path]):
        where = ".".join(str(p) for p in error.absolute_path) or "(the top level)"
        if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
            allowed = sorted(error.schema.get("properties", {}))
            for key in sorted(set(error.instance) - set(allowed), key=str):
                near = difflib.get_close_matches(str(key), allowed, n=1)
                lines.append(f"{where}: unknown key {key!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
                             + (f"; allowed: {', '.join(allowed)}" if allowed else ""))
        else:
            lines.append(f"{where}: {error.message}")
    return lines[:most] + ([f"... and {len(lines) - most} more"] if len(lines) > most else [])


def merged(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict:
    """``overlay`` merged into ``base`` key by key, mappings recursively: how Snakemake combines
    the config files it is given."""
    out = dict(base)
    for key, value in overlay.items():
        both = isinstance(value, Mapping) and isinstance(out.get(key), Mapping)
        out[key] = merged(out[key], value) if both else value
    return out


def layers(paths: Sequence[str | Path], default: str | Path = DEFAULT_CONFIG) -> list[Path]:
    """The files Snakemake reads for ``--configfile paths``: the Snakefile's default config first
    (once), then ``paths`` in order."""
    given = [Path(p) for p in paths]
    base = Path(default)
    return given if given and given[0].resolve() == base.resolve() else [base, *given]


def read_configs(paths: Sequence[str | Path], default: str | Path | None = DEFAULT_CONFIG) -> dict:
    """The workflow config Snakemake would see for ``--configfile paths``: the files merged in order
    on top of the default config (``default=None``: ``paths`` alone), each read strictly (a key
    given twice is an error naming the file)."""
    from bladefl.core import strict_yaml

    config: dict = {}
    for path in layers(paths, default) if default is not None else [Path(p) for p in paths]:
        try:
            layer = strict_yaml.read_file(path) or {}
        except strict_yaml.YamlFileError as exc:
            raise ConfigError(f"invalid config: {exc}") from None
        if not isinstance(layer, Mapping):
            raise ConfigError(f"invalid config: {path}: not a mapping of keys to values")
        config = merged(config, renamed_keys(layer)[0])
    return config


def config_file_errors(paths: Sequence[str | Path]) -> list[str]:
    """A key given twice in a config file, or an integer not in plain decimal (Snakemake's reader
    keeps the last key silently and reads ``017`` as 15): :func:`strict_yaml.file_problem`."""
    from bladefl.core import strict_yaml

    return [problem for path in paths if (problem := strict_yaml.file_problem(path))]


def sweep_errors(config: Mapping[str, Any]) -> list[str]:
    """Sweeps of one name (merged, they would lose their table and bound fit) and a value swept twice."""
    names = [s.get("name") for s in config.get("sweeps", [])]
    twice = sorted({str(n) for n in names if names.count(n) > 1})
    errors = ([f"sweeps: each name once (got {twice} more than once; sweeps of one name would be merged)"]
              if twice else [])
    for s in config.get("sweeps", []):
        values = list(s.get("values", []))
        again = sorted({v for v in values if values.count(v) > 1}, key=str)
        if again:
            errors.append(f"sweeps[{s.get('name')}].values: each value once (got {again} more than once)")
    return errors


def _detection_errors(config: Mapping[str, Any]) -> list[str]:
    """The detection settings' problems: unknown detectors, exclusion sweeps the grid lacks."""
    errors, detection = [], config.get("detection", {})
    names = [s.get("name") for s in config.get("sweeps", [])]
    unknown = sorted(set(detection.get("detectors", [])) - set(DETECTORS))
    if unknown:
        errors.append(f"detection.detectors: each must be one of {list(DETECTORS)} (got {unknown})")
    for sweep in detection.get("exclude_sweeps", []):
        if sweep not in names:
            errors.append(f"detection.exclude_sweeps: each must name one of the sweeps {names} (got {sweep!r})")
    if detection.get("exclude_sweeps") and not detection.get("detectors"):
        errors.append("detection.exclude_sweeps needs detection.detectors (the first one decides exclusion)")
    return errors


def check(config: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` naming the field and the allowed values, or return None."""
    errors = []
    for name in config.get("datasets", []):
        if name not in SPECS:
            errors.append(f"datasets: each entry must be one of {sorted(SPECS)} (got {name!r})")
    try:
        engine(config)
    except (ConfigError, RunConfigError) as exc:
        raise ConfigError(f"invalid config: {exc}") from None
    try:
        grid_cells, errors = cells(config), errors + plan_grid.lazy_count_errors(members(config))
    except ConfigError as exc:
        errors, grid_cells = [*errors, str(exc)], []
    t_sum = config.get("t_sum", 100)
    if isinstance(t_sum, bool) or not isinstance(t_sum, (int, float)) or not 0 < t_sum < math.inf:
        raise ConfigError(f"invalid config: t_sum must be a finite number > 0 (got {t_sum!r})")
    t_sum = float(t_sum)
    errors.extend(sweep_errors(config))
    n = int(config.get("partition", {}).get("n", 512))
    if n > TRAIN_SIZE:  # no N fits: said once, not once per cell and draw
        raise ConfigError(f"invalid config: partition.n must be at most the training set size {TRAIN_SIZE} "
                          f"(N clients of n samples each; got {n})")
    errors.extend(_partition_errors(config, grid_cells))
    if config.get("measure_constants", True):
        names = [s.get("name") for s in config.get("sweeps", [])]
        bound = config.get("bound_sweep", "fig3")
        if bound not in names:
            errors.append(f"bound_sweep: must name one of the sweeps {names} when measure_constants is true "
                          f"(got {bound!r})")
    errors.extend(_detection_errors(config))
    engines = available_engines()
    errors.extend(reading_errors(config, engines))
    for reading in readings(config):
        if reading.engine in engines:
            for N in sorted({c.N for c in grid_cells}):
                try:
                    partition_spec(reading_config(config, reading), N)
                except (ConfigError, TypeError) as exc:
                    errors.append(f"readings.{reading.name}: {exc}")
    bad_base = {}  # a default out of range: said once for `base`, not once per cell that keeps it
    for r in RANGES:
        value = config.get("base", {}).get(r.cell)
        if value is not None and (wrong := range_error(r, value, f"base.{r.cell}")):
            errors.append(wrong)
            bad_base[r.cell] = value
    for cell in grid_cells:
        errors.extend(e for e in cell_errors(cell, n, t_sum)
                      if not any(f": {p} must be" in e and getattr(cell, p) == v for p, v in bad_base.items()))
    if not errors:  # every job's own config, once the grid itself is sound
        errors.extend(job_config_errors(config))
    if errors:
        raise ConfigError("invalid config:\n  - " + "\n  - ".join(dict.fromkeys(errors)))
