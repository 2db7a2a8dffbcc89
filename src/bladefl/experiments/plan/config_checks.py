"""The workflow config's checks beyond its JSON schema, run when the Snakefile is parsed, before any job.

The schema (``workflow/schemas/config.schema.yaml``) checks types and ranges field by field
(:func:`schema_errors` words its refusals); :func:`check` checks what a schema cannot express (the
engine file, N*n against the training set size, n against the shards or classes per client,
feasible K in every cell, sweeps, detection, readings) and then builds every job's own run config
(:func:`job_config_errors`). Imports only ``workflow_config`` and ``grid``/``readings`` of this sub-wing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bladefl.data.datasets import SPECS, train_size
from bladefl.experiments.plan import grid as plan_grid
from bladefl.experiments.plan.grid import Cell, cell_errors
from bladefl.experiments.plan.readings import reading_config, reading_errors, readings
from bladefl.experiments.plan.workflow_config import (
    ConfigError,
    all_cells,
    available_engines,
    cells,
    engine,
    engine_path,
    members,
    partition_draws,
    partition_spec,
    per_dataset,
    run_seeds,
    run_sets,
)
from bladefl.fl.ranges import DETECTORS, RANGES, range_error
from bladefl.fl.run_config import RunConfigError, load_config

MAX_T_SUM = 1e6  # as the schema bounds it: a million local iterations at alpha 1
PATH_FIELDS = ("data_dir", "results_dir", "logs_dir", "benchmarks_dir", "calibration_bundle")
# What a path the config names may hold: no control character, no shell metacharacter ($ ` ; | & < > ( )
# quotes \ * ? ! { } [ ] #), whatever quoting the rules do.
PATH_TEXT = re.compile(r"[A-Za-z0-9._/+=,@:%~ -]{1,4096}")


def path_errors(config: Mapping[str, Any], workdir: str | Path | None = None) -> list[str]:
    """The config's paths (:data:`PATH_FIELDS` and each of ``readings_beside``) checked as paths before any
    job: plain text (no control character, no shell metacharacter) and inside the working folder, unless the
    config says
    ``paths_outside_workdir: true``."""
    root = Path(workdir or Path.cwd()).resolve()
    outside_ok = config.get("paths_outside_workdir") is True
    errors = []
    given = [(field, config[field]) for field in PATH_FIELDS
             if field in config and not (field == "calibration_bundle" and config[field] == "")]
    given += [(f"readings_beside[{i}]", v) for i, v in enumerate(config.get("readings_beside") or [])]
    for field, value in given:
        if not isinstance(value, str) or not PATH_TEXT.fullmatch(value):
            shown = ascii(value)[:80]
            errors.append(f"{field} must be a path of letters, digits, spaces and ._/+=,@:%~- only (no control "
                          f"character or shell metacharacter; got {shown})")
            continue
        where = (root / value).resolve()
        if not outside_ok and where != root and root not in where.parents:
            errors.append(f"{field} {value!r} lies outside the working folder {root} (set paths_outside_workdir: "
                          "true to allow it)")
    return errors


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
    # an engine given per dataset is a file per dataset: each dataset's runs built from its own
    own = datasets if per_dataset(str(config.get("engine", "paper"))) else datasets[:1]
    for dataset in own:
        where = f"{dataset} " if len(own) > 1 else ""
        for cell in grid:
            build(f"{where}cell {cell.key}", engine_path(config, dataset), run_sets(config, cell, dataset, seeds[0]))
        for seed in seeds[1:]:
            if grid:
                build(f"{where}seed {seed!r}", engine_path(config, dataset), run_sets(config, grid[0], dataset, seed))
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
    datasets = ([d for d in config.get("datasets", []) if d in SPECS]
                if per_dataset(str(config.get("engine", "paper"))) else [None])
    for dataset in datasets:
        for N in sorted({c.N for c in grid_cells} or {20}):
            for seed in config.get("seeds", [0])[: len(partition_draws(config))]:
                try:
                    partition_spec(config, N, seed, dataset)
                except ConfigError as exc:
                    errors.append(f"{exc} (for a cell with N={N}{f' on {dataset}' if dataset else ''})")
    return errors


SCHEMA = Path(__file__).resolve().parents[4] / "workflow" / "schemas" / "config.schema.yaml"  # <root>/src/bladefl/...


def read_checked(paths: Sequence[str | Path], part: Callable[[dict], dict] | None = None) -> dict:
    """The workflow config of ``--configfile paths`` (on the default config; ``part``: what a command sets on
    top, such as its part's ``run_seeds``) checked as the Snakefile checks it, for a command that reads one
    outside Snakemake: each file strictly, the merged config's size, the schema (:func:`schema_errors`, one
    line per problem), the schema's defaults filled in (:func:`with_defaults`), then :func:`check`;
    :class:`ConfigError` otherwise."""
    from bladefl.experiments.plan import config_files

    config = config_files.read_configs(paths)
    config = part(config) if part is not None else config
    problems = config_files.config_size_errors(config) or schema_errors(config, SCHEMA)
    if problems:
        raise ConfigError("invalid config: " + "; ".join(problems))
    config = with_defaults(config)  # as Snakemake's validation fills them: the same groups, draws and folders
    check(config)
    return config


def with_defaults(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with the workflow schema's top-level defaults where it is silent, as Snakemake's validation
    fills them (``seeds_per_job`` 5, ...): a command that reads a workflow config outside Snakemake plans the
    same group jobs the workflow runs."""
    from bladefl.core import strict_yaml

    schema = strict_yaml.read_file(SCHEMA)
    defaults = {k: v["default"] for k, v in schema.get("properties", {}).items() if "default" in v}
    return {**defaults, **config}


def schema_errors(config: Mapping[str, Any], schema_path: str | Path, most: int = 8, layer: bool = False) -> list[str]:
    """What the workflow's JSON schema refuses, one short line per problem naming the field (at
    most ``most``), for a config mistake to fit on one screen: an unknown key says which keys are
    allowed there and which one it was probably meant to be. ``layer``: ``config`` is one file of several
    (an overlay such as config/paper.yaml), so a key the merged config must have may be absent from it."""
    import difflib

    import jsonschema
    import yaml

    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = jsonschema.validators.validator_for(schema)(schema)
    lines = []
    for error in sorted(validator.iter_errors(dict(config)), key=lambda e: [str(p) for p in e.absolute_path]):
        if layer and error.validator == "required":
            continue  # a key another file of the merge gives (the files merge deeply)
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


def _check_engines(config: Mapping[str, Any]) -> None:
    """The config's engine (each dataset's, for a per-dataset engine) read and checked, or ConfigError."""
    try:
        if per_dataset(str(config.get("engine", "paper"))):
            for name in [d for d in config.get("datasets", []) if d in SPECS]:
                engine(config, name)
        else:
            engine(config)
    except (ConfigError, RunConfigError) as exc:
        raise ConfigError(f"invalid config: {exc}") from None


def _reading_errors(config: Mapping[str, Any], grid_cells: Sequence[Any]) -> list[str]:
    """The readings' errors, and each reading's partition at every N of the grid."""
    engines = [e for e in available_engines() if not per_dataset(e)]  # a reading's engine is one file for every dataset
    errors = reading_errors(config, engines)
    for reading in readings(config):
        if reading.engine in engines:
            for N in sorted({c.N for c in grid_cells}):
                try:
                    partition_spec(reading_config(config, reading), N)
                except (ConfigError, TypeError) as exc:
                    errors.append(f"readings.{reading.name}: {exc}")
    return errors


def check(config: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` naming the field and the allowed values, or return None."""
    errors = []
    for name in config.get("datasets", []):
        if name not in SPECS:
            errors.append(f"datasets: each entry must be one of {sorted(SPECS)} (got {name!r})")
    _check_engines(config)
    try:
        grid_cells, errors = cells(config), errors + plan_grid.lazy_count_errors(members(config))
    except ConfigError as exc:
        errors, grid_cells = [*errors, str(exc)], []
    t_sum = config.get("t_sum", 100)
    if isinstance(t_sum, bool) or not isinstance(t_sum, (int, float)) or not 0 < t_sum <= MAX_T_SUM:
        raise ConfigError(f"invalid config: t_sum must be a number in (0, {MAX_T_SUM:g}] (got {t_sum!r})")
    t_sum = float(t_sum)
    errors.extend(sweep_errors(config))
    n = int(config.get("partition", {}).get("n", 512))
    size = train_size(config.get("datasets", []))
    if n > size:  # no N fits: said once, not once per cell and draw
        raise ConfigError(f"invalid config: partition.n must be at most the training set size {size} "
                          f"(N clients of n samples each; got {n})")
    errors.extend(_partition_errors(config, grid_cells))
    errors.extend(path_errors(config))
    try:
        run_seeds(config)
    except ConfigError as exc:
        errors.append(str(exc))
    if config.get("measure_constants", True):
        names = [s.get("name") for s in config.get("sweeps", [])]
        bound = config.get("bound_sweep", "fig3")
        if bound not in names:
            errors.append(f"bound_sweep: must name one of the sweeps {names} when measure_constants is true "
                          f"(got {bound!r})")
    errors.extend(_detection_errors(config))
    errors.extend(_reading_errors(config, grid_cells))
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
