"""Commands that compute: a dataset fetched, a partition written, one cell or a stacked group
run, the reference optimum (the tables over the grid's runs are :mod:`bladefl.cli.tables`'). Each
command: its arguments (``add_*``) beside its handler (``_cmd_*``)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from bladefl.cli.common import Command, dataset_name, error_text, json_text, positive, whole


def _partition_indices(path: str, spec, dataset: str):  # noqa: ANN001, ANN202 - PartitionSpec -> np.ndarray
    from bladefl.data.partition_store import checked_partition

    return checked_partition(path, spec, dataset, "--partition")


def _by_draw(paths: list[str], specs: list, option: str) -> dict:  # noqa: ANN001 - PartitionSpec keys
    """Each partition draw's file among ``paths``: the one named by the draw's key (``<key>.npy``,
    ``<key>.npz``, as the workflow names them); a single file for a single draw."""
    if len(paths) == 1 and len(specs) == 1:
        return {specs[0]: paths[0]}
    by_key = {Path(p).stem: p for p in paths}
    missing = [spec.key for spec in specs if spec.key not in by_key]
    if missing:
        raise ValueError(f"{option}: no file named for draw {missing[0]} (give one {option} per partition draw, "
                         f"named <key>: {', '.join(spec.key for spec in specs)})")
    return {spec: by_key[spec.key] for spec in specs}


def _writable_folder(path: str | Path, option: str) -> None:
    """Refuse, before any work, an output folder that is an existing file (or empty)."""
    if not str(path).strip():
        raise ValueError(f"{option}: give a folder (got an empty path)")
    if Path(path).exists() and not Path(path).is_dir():
        raise ValueError(f"{option} {path}: exists and is not a folder")


def add_fetch(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, type=dataset_name)
    p.add_argument("--root", default="data/raw", help="torchvision root (default: data/raw)")
    p.add_argument("--sources", nargs="+", default=["existing", "torchvision", "registry"],
                   help="sources in the order to try them")


def _cmd_fetch(args: argparse.Namespace) -> int:
    from bladefl.data.fetch import FetchError, fetch

    try:
        fetch(args.dataset, args.root, sources=args.sources, log=lambda m: print(m, flush=True))
    except FetchError as exc:  # its instructions line by line (where to place the files by hand)
        print(f"error: {error_text(exc)}", file=sys.stderr)
        return 1
    return 0


def add_partition(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, type=dataset_name)
    p.add_argument("--key", required=True, help="partition key, e.g. shards2_N20_n512_seed0")
    p.add_argument("--root", default="data/raw")
    p.add_argument("--out", default="data/partitions")


def _cmd_partition(args: argparse.Namespace) -> int:
    from bladefl.data.partition import PartitionSpec
    from bladefl.data.partition_store import PartitionPaths, write_partition

    spec = PartitionSpec.from_key(args.key)
    paths = PartitionPaths.under(args.out, args.dataset, spec)
    info = write_partition(args.dataset, spec, args.root, paths)
    print(f"wrote {paths.indices} ({info['shape'][0]} clients x {info['shape'][1]} samples), "
          f"{paths.manifest}, {paths.figure}")
    return 0


def add_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="run config YAML, e.g. config/engines/paper.yaml")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a field, e.g. --set time.beta=6 --set dataset=fashion_mnist")
    p.add_argument("--out", default="results/run", help="output folder (default: results/run)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--partition", help="client index file [N, n] written by `bladefl partition`")
    p.add_argument("--threads", type=whole(0, 1024), default=1,
                   help="torch threads (default 1: on a 2-core CPU one thread per run was measured fastest, "
                        "docs/measurements.md; 0: torch's choice)")
    p.add_argument("--reference", help="reference optimum (.npz from `bladefl reference`): record ||w - w*||")
    p.add_argument("--group", help="the mark of the run's group job (`bladefl run-group --done`): when that job "
                                   "computed its runs, the run is moved from --computed-in to --out, not trained")
    p.add_argument("--computed-in", help="where the group job wrote the run (with --group)")


def _cmd_run(args: argparse.Namespace) -> int:
    from bladefl.fl.run_config import load_config

    cfg = load_config(args.config, args.set)  # every field validated before any work starts
    _writable_folder(args.out, "--out")
    if args.group and _took_computed_run(args.group, args.computed_in, cfg, args.out):
        return 0  # a run its group computed, moved: no torch imported (a group's moves are bookkeeping)
    from bladefl.experiments.runs.runner import run_cell
    from bladefl.fl.execution import resolve

    if args.reference and not Path(args.reference).is_file():
        raise ValueError(f"--reference {args.reference}: no such file (`bladefl reference` writes it)")
    reference = None
    if args.reference:  # checked before any work: a hostile file is one line
        from bladefl.fl.stacked import model_shape
        from bladefl.theory.reference import load

        reference = load(args.reference, model_shape(cfg).size).w_star
    execution = resolve(cfg.device, threads=args.threads)
    execution.apply()
    data = None
    if args.partition:
        from bladefl.fl.engine import load_client_data

        data = load_client_data(cfg, _partition_indices(args.partition, cfg.partition, cfg.dataset))
    summary = run_cell(cfg, args.out, data=data, progress=not args.quiet, reference=reference, execution=execution)
    for row in summary["per_K"]:
        if row["status"] == "ok":
            print(f"K={row['K']:>2} tau={row['tau']:>3} train_loss={row['train_loss']:.4f} "
                  f"test_loss={row['test_loss']:.4f} test_acc={row['test_accuracy']:.4f}")
        else:
            print(f"K={row['K']:>2} tau={row['tau']:>3} {row['status']}")
    print(f"wrote {args.out}/rounds.csv and {args.out}/summary.json ({summary['seconds']['total']:.1f} s)")
    return 0


def _took_computed_run(mark: str, computed_in: str | None, cfg, out: str) -> bool:  # noqa: ANN001 - RunConfig
    """Whether the run's group job computed it: then it is moved to ``out``, checked, nothing trained."""
    from bladefl.experiments.bundles.run_folder import take_group_run

    if take_group_run(mark, computed_in, cfg, out):
        print(f"took {out} from {computed_in} (computed by its group job)")
        return True
    return False


def add_run_group(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="run config YAML, e.g. config/engines/paper.yaml")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override for every run")
    p.add_argument("--plan", required=True,
                   help='JSON list (or @file) of {"out": folder, "set": [KEY=VALUE, ...], "reference": bool}')
    p.add_argument("--partition", required=True, nargs="+",
                   help="client index file(s) [N, n]: one per partition draw the plan's runs train on, each named "
                        "<key>.npy (the runs of several draws of one dataset and N train as one group)")
    p.add_argument("--reference", nargs="+", default=[],
                   help="reference optimum .npz of each draw (named <key>.npz) for the runs whose plan entry asks")
    p.add_argument("--threads", type=whole(0, 1024), default=0,
                   help="torch threads and chain threads (default: torch's)")
    p.add_argument("--chain-processes", type=whole(-1, 1024), default=-1,
                   help="worker processes for the chain's proof of work and signatures (default: half the "
                        "cores on a GPU, none on the CPU)")
    p.add_argument("--max-rows", type=whole(1, 1 << 24), default=4096,
                   help="training rows stacked per computation on a GPU")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--done", help="the group's mark to write once every run is written (JSON: how many runs)")
    p.add_argument("--compute", type=int, choices=(0, 1), default=1,
                   help="1 (default): compute the plan's runs; 0: compute nothing, each run trains in a job of its "
                        "own (the workflow's grouping: cell), and the mark says so")


def _group_plan(plan: object) -> list[dict]:
    """``--plan``'s entries, refused unless a list of ``{"out": folder, "set": [overrides]}``."""
    bad = [i for i, item in enumerate(plan if isinstance(plan, list) else [None])
           if not (isinstance(item, dict) and isinstance(item.get("out"), str) and item["out"].strip()
                   and isinstance(item.get("set"), list))]
    if not isinstance(plan, list) or bad:
        raise ValueError(f"--plan: a list of {{\"out\": folder, \"set\": [overrides]}} entries, each folder named "
                         f"(entries {bad} are not)")
    return plan


def _cmd_run_group(args: argparse.Namespace) -> int:
    import json
    import time

    started = time.time()
    from bladefl.experiments.runs.run_source import write_group_mark
    from bladefl.fl.run_config import load_config

    if args.done is not None and not args.done.strip():
        raise ValueError("--done: a file path is needed for the group's mark (got '')")
    if args.done:  # before any work: a mark never replaces a device, FIFO or folder
        from bladefl.core.atomic import refuse_special

        refuse_special(Path(args.done))
    plan = _group_plan(json.loads(json_text(args.plan)))
    cfgs = [load_config(args.config, [*args.set, *item["set"]]) for item in plan]  # all validated first
    if not cfgs:
        raise ValueError("--plan lists no runs")
    # grouping: cell: each of the group's runs trains in its own job, and this one reads none of the inputs the
    # workflow gives it alike under both groupings (its partitions and references: the run jobs read them)
    if not args.compute:
        if args.done:
            write_group_mark(args.done, 0)
        print(f"--compute 0: none of the {len(cfgs)} runs computed here (each trains in its own job)")
        return 0
    from bladefl.fl.client_data import load_draws
    from bladefl.fl.execution import resolve

    execution = resolve(cfgs[0].device, threads=args.threads, max_rows=args.max_rows,
                        chain_processes=None if args.chain_processes < 0 else args.chain_processes)
    execution.apply()

    specs = list(dict.fromkeys(c.partition for c in cfgs))  # the group's partition draws, in plan order
    if any(c.dataset != cfgs[0].dataset for c in cfgs) or len({dataclasses.replace(p, seed=0) for p in specs}) > 1:
        raise ValueError("--plan: every run of a group must share the dataset and the partition scheme, N and n "
                         "(its draws may differ)")
    paths = _by_draw(args.partition, specs, "--partition")
    loaded = _group_references(args.reference, specs, cfgs)
    indices = [_partition_indices(paths[spec], spec, cfgs[0].dataset) for spec in specs]
    from bladefl.experiments.runs.runner import CellJob, run_cells

    draw = {spec: i for i, spec in enumerate(specs)}
    jobs = [CellJob(cfg, Path(item["out"]), loaded.get(cfg.partition) if item.get("reference") else None,
                    draw[cfg.partition]) for cfg, item in zip(cfgs, plan, strict=True)]
    missing = [str(j.out) for j, item in zip(jobs, plan, strict=True) if item.get("reference") and j.reference is None]
    if missing:
        raise ValueError(f"--reference: no reference optimum for the draw of {missing[0]}"
                         + (f" and {len(missing) - 1} more runs" if len(missing) > 1 else ""))
    data = load_draws(cfgs[0], indices)
    summaries = run_cells(jobs, data, execution, progress=not args.quiet, resume=True)
    done = sum(s is not None for s in summaries)
    print(f"{done} run folders written, {len(jobs) - done} already finished (of {len(jobs)})")
    if args.done:
        write_group_mark(args.done, len(jobs), (started, time.time()))
    return 0


def _group_references(paths: list[str], specs: list, cfgs: list) -> dict:
    """The reference optimum of each draw the group names (checked, of the runs' model size), or {}."""
    if not paths:
        return {}
    from bladefl.fl.stacked import model_shape
    from bladefl.theory.reference import load

    size = model_shape(cfgs[0]).size
    if any(model_shape(c).size != size for c in cfgs):
        raise ValueError("--reference: the group's runs have models of different sizes (model.hidden)")
    return {spec: load(path, size).w_star for spec, path in _by_draw(paths, specs, "--reference").items()}


def add_reference(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="run config YAML (model, dataset, seed)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--partition", required=True, help="client index file [N, n]")
    p.add_argument("--out", required=True, help="output .npz (a .json with F* is written beside it)")
    p.add_argument("--eta", type=positive(10.0), default=0.05, help="the step size, in (0, 10]")
    p.add_argument("--max-epochs", type=whole(1, 100_000), default=300)


def _cmd_reference(args: argparse.Namespace) -> int:
    from bladefl.core.rng import torch_generator
    from bladefl.data.partition_store import read_partition
    from bladefl.fl import engine
    from bladefl.fl.run_config import load_config
    from bladefl.theory import reference

    indices = read_partition(args.partition)
    # On the CPU whatever the config's device, so that a GPU grid's optima are the CPU's (its data, model and
    # generator would otherwise sit on different devices). Its last bits still follow the CPU's instruction
    # path (docs/measurements.md): a kept bundle carries its optima (bladefl pack-optima, import-optima).
    cfg = load_config(args.config, [*args.set, f"partition.N={indices.shape[0]}", f"partition.n={indices.shape[1]}",
                                    "device=cpu"])
    data = engine.load_client_data(cfg, indices)
    shape = engine.model_shape(cfg, data.x.shape[2])
    ref = reference.train_reference(data.x, data.y, shape, engine.initial_model(cfg, shape), eta=args.eta,
                                    batch_size=cfg.train.batch_size, max_epochs=args.max_epochs,
                                    generator=torch_generator(cfg.seed, "reference"))
    reference.save(ref, args.out, {"dataset": cfg.dataset, "partition": str(args.partition), "eta": args.eta,
                                   "model": cfg.to_dict()["model"], "seed": cfg.seed})
    print(f"reference: F* = {ref.f_star:.5f} after {ref.epochs} epochs -> {args.out}")
    return 0


COMMANDS: list[Command] = [
    ("fetch", "fetch and verify a dataset's raw IDX files", add_fetch, _cmd_fetch),
    ("partition", "write a non-IID partition (indices, manifest, heatmap)", add_partition, _cmd_partition),
    ("run", "run one cell over its K values (per-round CSV, summary JSON)", add_run, _cmd_run),
    ("run-group", "run many cells and seeds sharing one partition as one computation", add_run_group, _cmd_run_group),
    ("reference", "train the reference optimum w* on the union of the clients' data", add_reference, _cmd_reference),
]
