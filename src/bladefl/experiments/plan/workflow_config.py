"""What the Snakemake workflow derives from its config: the engine, the partition draws, the cells
and their runs' overrides, the partition jobs and the GPU groups' plans.

Its checks live in ``config_checks`` and its reading from files in ``config_files``; both import
this module, never the other way round.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bladefl.core.errors import BladeflError
from bladefl.data.datasets import train_size
from bladefl.data.partition import PartitionSpec, partition_errors
from bladefl.experiments.plan import run_id
from bladefl.experiments.plan.grid import Cell, Member, expand, members_to_json, unique_cells
from bladefl.experiments.plan.readings import Reading, reading_config
from bladefl.fl.run_config import RunConfig, load_config

ENGINE_DIR = Path("config/engines")
# The config the Snakefile loads (``configfile:``) before any ``--configfile``: every other workflow
# config (config/paper.yaml, config/smoke.yaml, ...) is an overlay on it.
DEFAULT_CONFIG = Path("config/config.yaml")


class ConfigError(BladeflError):
    """The workflow config is invalid; the message lists every problem found."""


def engine_dir() -> Path:
    """Where the engines are: config/engines under the working folder (a clone run where it lies),
    else the project's own (the workflow used as a Snakemake module from another folder)."""
    if ENGINE_DIR.is_dir():
        return ENGINE_DIR
    return Path(__file__).resolve().parents[4] / ENGINE_DIR  # <root>/src/bladefl/experiments/plan/this file


def per_dataset(name: str) -> bool:
    """Whether engine ``name`` is given per dataset: no config/engines/<name>.yaml, but a
    config/engines/<name>-<dataset>.yaml for some registered dataset (``calibrated``: each dataset
    under the reading its calibration picked, config/engines/calibrated-<dataset>.yaml)."""
    from bladefl.data.datasets import SPECS

    here = engine_dir()
    return not (here / f"{name}.yaml").is_file() and any((here / f"{name}-{d}.yaml").is_file() for d in SPECS)


def engine_name(config: Mapping[str, Any], dataset: str | None = None) -> str:
    """The name of the engine file ``dataset``'s runs read: the config's ``engine``, or
    ``<engine>-<dataset>`` where the engine is given per dataset (:func:`per_dataset`). Such an engine
    needs the dataset: without one its name is returned as it is, a file that does not exist, so
    :func:`engine` refuses it rather than read another dataset's reading."""
    name = str(config.get("engine", "paper"))
    return f"{name}-{dataset}" if dataset is not None and per_dataset(name) else name


def engine_path(config: Mapping[str, Any], dataset: str | None = None) -> Path:
    """config/engines/<engine>.yaml, or <engine>-<dataset>.yaml for an engine given per dataset."""
    return engine_dir() / f"{engine_name(config, dataset)}.yaml"


def available_engines() -> list[str]:
    """The engines there are: config/engines/<name>.yaml, and each engine given per dataset
    (``<name>-<dataset>.yaml``: :func:`per_dataset`) by its name."""
    from bladefl.data.datasets import SPECS

    files = sorted(p.stem for p in engine_dir().glob("*.yaml"))
    families = {f.removesuffix(f"-{d}") for f in files for d in SPECS if f.endswith(f"-{d}")}
    return sorted({*files, *(f for f in families if per_dataset(f))})


def engine(config: Mapping[str, Any], dataset: str | None = None) -> RunConfig:
    """The engine's run config for ``dataset`` (ConfigError naming the engines there are when its file
    is missing: an engine given per dataset without the dataset, or without that dataset's file)."""
    path = engine_path(config, dataset)
    if not path.is_file():
        name = config.get("engine")
        why = (f"it is given per dataset ({name}-<dataset>.yaml) and has no file for {dataset!r}"
               if dataset is not None else f"it is given per dataset: say which dataset's ({name}-<dataset>.yaml)")
        raise ConfigError(f"engine must be one of {available_engines()} (got {name!r}: no {path}"
                          + (f"; {why})" if per_dataset(str(name)) else ")"))
    return load_config(path)


def model_size(config: Mapping[str, Any], dataset: str | None = None) -> int:
    """P, the parameters of the engine's model on ``dataset`` (the config's first dataset unless given;
    :func:`bladefl.fl.shape.parameters_on`)."""
    from bladefl.fl.shape import parameters_on

    name = dataset or next(iter(config.get("datasets") or []), None) or engine(config).dataset
    return parameters_on(name, engine(config, name).model.hidden)


RUN_SEEDS_FORMS = "a list of the config's seeds, or text 'i-j' (seeds i to j) or 'a,b,c' (from --config)"


def run_seeds(config: Mapping[str, Any]) -> list[int]:
    """The run seeds whose runs the workflow's run targets make (``run_seeds``; default every seed, in
    the config's order): a part of the grid, each run still the run of the whole config (its seed
    trains on its own draw), for one call of a machine (docs/gpu.md). Given as a list in a config file
    or, from Snakemake's ``--config`` (which passes lists as text), as ``'i-j'`` or ``'a,b,c'``;
    ConfigError naming the field otherwise, or when a seed is not one of ``seeds``."""
    seeds = [int(s) for s in config.get("seeds", [0])]
    given = config.get("run_seeds")
    if given is None:
        return seeds
    if isinstance(given, int) and not isinstance(given, bool):
        chosen = [given]
    elif isinstance(given, str) and re.fullmatch(r"[0-9]{1,9}-[0-9]{1,9}", given.strip()):
        lo, hi = (int(x) for x in given.strip().split("-"))
        chosen = [s for s in seeds if lo <= s <= hi]
        if lo > hi or not chosen:
            raise ConfigError(f"run_seeds: {given!r} holds none of the seeds {seeds[:20]}")
    elif isinstance(given, str) and re.fullmatch(r"[0-9]{1,9}(,[0-9]{1,9})*", given.strip()):
        chosen = [int(x) for x in given.strip().split(",")]
    elif isinstance(given, list) and given and all(
            (isinstance(x, int) and not isinstance(x, bool)) or (isinstance(x, str) and x.isascii() and x.isdigit()
                                                                  and len(x) < 10) for x in given):
        chosen = [int(x) for x in given]
    else:
        raise ConfigError(f"run_seeds must be {RUN_SEEDS_FORMS} (got {str(given)[:60]!r})")
    outside = [s for s in chosen if s not in seeds]
    if outside or len(set(chosen)) != len(chosen):
        raise ConfigError(f"run_seeds must be distinct seeds of the config's seeds {seeds[:20]}"
                          f"{' ...' if len(seeds) > 20 else ''} (got {chosen[:20]})")
    return [s for s in seeds if s in chosen]


def partition_draws(config: Mapping[str, Any]) -> list[int]:
    """The partition draws of the grid: ``partition.seeds`` (replicates of the same scheme), else the
    one ``partition.seed``, else the engine's."""
    part = config.get("partition", {})
    if "seeds" in part:
        return [int(s) for s in part["seeds"]]
    if "seed" in part:
        return [int(part["seed"])]
    if not per_dataset(str(config.get("engine", "paper"))):
        return [engine(config).partition.seed]
    own = {engine(config, d).partition.seed for d in config.get("datasets", [])}
    if len(own) != 1:
        raise ConfigError(f"partition.seed or partition.seeds must be given: the engine {config.get('engine')!r} is "
                          f"given per dataset and its datasets' files draw different partitions ({sorted(own)})")
    return [own.pop()]


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


def partition_spec(config: Mapping[str, Any], N: int, seed: int | None = None,
                   dataset: str | None = None) -> PartitionSpec:
    """The engine's partition (``dataset``'s, where the engine is given per dataset) with the config's
    overrides and the cell's N: run seed ``seed``'s draw (the first draw without a seed)."""
    values = {**engine(config, dataset).partition.record(), **partition_overrides(config, seed), "N": N}
    errors = partition_errors(values, train_size=train_size(config.get("datasets", [])))
    if errors:
        raise ConfigError("; ".join(errors))
    return PartitionSpec.of(**values)


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


def reference_keys(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(dataset, partition key) of every reference optimum the runs of ``run_seeds`` read, sorted, once each."""
    return sorted({(dataset, partition_spec(config, N, seed, dataset).key) for dataset in config.get("datasets", [])
                   for N in {cell.N for cell in bound_cells(config)} for seed in run_seeds(config)})


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


def _cells_by_n(config: Mapping[str, Any]) -> dict[int, list[str]]:
    """The grid's cell keys per N, in the config's order."""
    by_n: dict[int, list[str]] = {}
    for cell in all_cells(config):
        by_n.setdefault(cell.N, []).append(cell.key)
    return by_n


def seeds_per_group(config: Mapping[str, Any]) -> dict[int, int]:
    """Per N, the seeds of one group job: ``seeds_per_job`` at the N with the most cells, and as many
    more at another N as keep its group at most that size in runs (``seeds_per_job`` x the most
    cells): the paper grid's N = 10, 15 and 25 (one cell each, N = 20 has 24) hold every seed in one
    group, rather than four groups of 5 runs, each a process of its own."""
    seeds = [int(s) for s in config.get("seeds", [0])]
    per = int(config.get("seeds_per_job", len(seeds)))
    counts = {N: len(keys) for N, keys in _cells_by_n(config).items()}
    most = max(counts.values(), default=1)
    return {N: min(len(seeds), per * max(1, most // count)) for N, count in counts.items()}


def partition_jobs(config: Mapping[str, Any]) -> list[PartitionJob]:
    """The grid's jobs under ``grouping: partition``: per dataset and N, blocks of the seeds (in the
    config's order; :func:`seeds_per_group` of them), each holding the runs of every draw its seeds
    train on. A part of the grid (config ``run_seeds``) keeps each block's name and number (a run's
    group is named the same in every part) but holds only the part's seeds: a part trains its own
    runs and no other, and a block with none of them is no job."""
    seeds = [int(s) for s in config.get("seeds", [0])]
    part = set(run_seeds(config))
    per_n = seeds_per_group(config)
    blocks = {N: [tuple(s for s in seeds[i : i + per_n[N]] if s in part) for i in range(0, len(seeds), per_n[N])]
              for N in per_n}
    return [PartitionJob(d, N, b, block, tuple(keys), tuple(dict.fromkeys(partition_draw(config, s) for s in block)))
            for d in config.get("datasets", []) for N, keys in sorted(_cells_by_n(config).items())
            for b, block in enumerate(blocks[N]) if block]


MIN_GROUP_THREADS = 4  # the fewest threads a group job asks for (its chain's threads)


def group_threads(groups: Sequence[PartitionJob], group: PartitionJob, threads: int) -> int:
    """The threads a group job asks for: ``threads`` (``threads_per_group``) for the groups of the most
    runs, and for a smaller group its share by runs, at least :data:`MIN_GROUP_THREADS`: a small group
    leaves the other cores to the jobs beside it, the reference optima that the largest groups wait
    for (under the GPU profile one group holds the GPU at a time). Results do not depend on it."""
    most = max(len(g.cells) * len(g.seeds) for g in groups)
    share = math.ceil(threads * len(group.cells) * len(group.seeds) / most)
    return min(threads, max(MIN_GROUP_THREADS, share))


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
