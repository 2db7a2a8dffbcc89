"""Commands that measure the machine: a device's results against the CPU's, the bench, and jobs'
resources sized from the workflow's benchmark files.

Each command: its arguments (``add_*``) beside its handler (``_cmd_*``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from bladefl.cli.common import Command, refuse_unread, whole


def add_device_check(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", help="the device compared with the CPU: cuda (the default), cuda:N or mps; not with "
                                    "--tables")
    p.add_argument("--out", help="also write the comparison as CSV here")
    p.add_argument("--tables", nargs=2, metavar=("REFERENCE", "OTHER"),
                   help="instead: compare two tidy run tables of the same grid (bladefl summarize's "
                        "results/summary/<dataset>.csv), e.g. the CPU's and a GPU's, on the runs both hold")


def _cmd_device_check(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.experiments.runs import device_check

    if args.tables:
        refuse_unread({"--device": args.device}, "with --tables (the tables say where their runs ran)")
    import re

    device = args.device or "cuda"
    if not re.fullmatch(r"cpu|cuda(:[0-9]{1,2})?|mps", device):
        raise ValueError(f"--device must be cpu, cuda, cuda:N or mps, the device compared with the CPU (got "
                         f"{device[:40]!r})")
    if args.tables:
        check = device_check.summary_check(*(device_check.read_table(p) for p in args.tables))
        table = check.runs
        print(table.to_string(index=False, float_format=lambda x: f"{x:.2e}"))
        print(f"\n{check.compared} runs compared ({args.tables[0]} vs {args.tables[1]}): K* by loss identical in "
              f"{check.k_star_loss_same}, by accuracy in {check.k_star_accuracy_same}; largest differences: "
              f"accuracy {check.accuracy_max_abs:.2e}, training loss {check.loss_max_abs:.2e}")
        ok = True
    else:
        table = device_check.mixed_group_check(device)
        print(table.to_string(index=False, float_format=lambda x: f"{x:.2e}"))
        ok = bool(table.within.all())
        print(f"\nmixed group, {device} vs cpu: {int(table.within.sum())} of {len(table)} runs within "
              f"tolerance (model {device_check.MODEL_TOL:g}, accuracy {device_check.ACCURACY_TOL:g}, loss "
              f"{device_check.LOSS_TOL:g}; miners, votes, members, flags identical)")
    if args.out:
        atomic.write_text(Path(args.out), table.to_csv(index=False))
    return 0 if ok else 1


def add_bench(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="run config YAML (default: the paper engine defaults)")
    p.add_argument("--data-dir", default="data/raw")
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    p.add_argument("--threads", type=whole(1, 4096), default=None,
                   help="torch's threads (default: the workflow's threads_per_run, config/config.yaml: what a grid "
                        "job runs with; torch's own default is every core)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="cuda (or --seeds/--grid on the CPU): the multi-run engine's rates and chain share")
    p.add_argument("--seeds", type=whole(1, 1000), nargs="*", default=[],
                   help="stacked groups to time: one cell's K values for this many seeds each (cuda: 1 6 23)")
    p.add_argument("--grid", help="also run every grid run of this workflow config, e.g. config/paper.yaml")
    p.add_argument("--grid-seeds", help="a part of --grid's or --workflow's grid: k (its first k seeds), i-j or "
                                        "a,b,c (config run_seeds)")
    p.add_argument("--grid-only", action="store_true", help="with --grid: only the grid (no stacked groups, no drag)")
    p.add_argument("--workflow", nargs="+", metavar="CONFIG",
                   help="only run this workflow config's grid (a part: --grid-seeds) through Snakemake as a user runs "
                        "it here, its grouping (--grouping) on --cores cores, into a fresh --out (default "
                        "results/bench-workflow), and print each run target's wall and the CPU of every process it "
                        "started, per run, and the runs' engines' share of it")
    p.add_argument("--grouping", choices=["cell", "partition"],
                   help="--workflow: the grouping (default the config's: cell on the CPU; partition: a group's runs "
                        "in one process, one thread a group)")
    p.add_argument("--baseline-cpu", type=float,
                   help="--workflow: the same part's run_folders CPU-s measured on other code; prints the ratio")
    p.add_argument("--out", help="where the measurement writes its run folders: --grid (default results/bench-grid), "
                                "--bookkeeping (results/bench-bookkeeping), --peer (results/bench-peer), --workflow "
                                "(results/bench-workflow)")
    p.add_argument("--host-copy-compare", action="store_true",
                   help="cuda: also time the largest group with the round ends' host copies into buffers kept "
                        "across round ends (the option) beside the default, pinned memory taken for each")
    p.add_argument("--bookkeeping", nargs="+", metavar="CONFIG",
                   help="run this workflow config's grid through Snakemake with the GPU profile's grouping on this "
                        "machine (e.g. config/bench_bookkeeping.yaml) and print, per group, the seconds its runs take "
                        "to be in place after its computation over that computation (target <= 0.05)")
    p.add_argument("--cores", type=whole(1, 4096), default=os.cpu_count() or 1,
                   help="--bookkeeping and --workflow: Snakemake's cores")
    p.add_argument("--draws", metavar="CONFIG",
                   help="only time the random draws (epoch orders, round-end noise) of this workflow config's largest "
                        "group (e.g. config/paper.yaml) by a GPU's draw threads on this machine's cores, the training "
                        "taking no time: the least wall its computations can take here")
    p.add_argument("--peer", choices=["flower"],
                   help="only measure one run of --config (default: the paper engine) at K = --peer-rounds under "
                        "`bladefl run` and under Flower's simulation, the CPU of each process tree and their ratio "
                        "(Flower: the optional extra, pip install 'bladefl[peer]')")
    p.add_argument("--peer-rounds", type=whole(1, 100), default=5, help="--peer: the run's K (default 5)")
    p.add_argument("--fixed-work", action="store_true",
                   help="only measure whole runs (every K) of the paper engine and each calibrated reading in the "
                        "workflow's base, lazy and bound cells: the per-round fixed work's share of a run "
                        "(evaluation, detection, the bound's constants) and the training's rate over the sgemm rate")
    p.add_argument("--chain-drag", action="store_true",
                   help="only measure how much the chain slows the thread driving the training, with the chain's "
                        "GIL-bound part in threads vs in worker processes (also part of --device cuda)")


def _cmd_bench(args: argparse.Namespace) -> int:
    from bladefl.bench import checked
    from bladefl.bench import main as bench_main

    defaults = argparse.ArgumentParser()
    add_bench(defaults)
    default = vars(defaults.parse_args([]))
    checked(args, {name for name, value in default.items() if getattr(args, name) != value})
    return bench_main(args)


def add_resources(p: argparse.ArgumentParser) -> None:
    p.add_argument("--benchmarks", default="benchmarks",
                   help="the workflow's benchmark files (config benchmarks_dir; default: benchmarks)")
    p.add_argument("--out", required=True,
                   help="the workflow profile folder to write (its config.yaml), for --workflow-profile")
    p.add_argument("--margin", type=float, default=1.5, help="ask for the largest measured need times this (>= 1)")
    p.add_argument("--measured", nargs="+", metavar="CONFIG",
                   help="the config(s) the benchmarks were measured on (e.g. config/smoke.yaml), with --for")
    p.add_argument("--for", dest="target", nargs="+", metavar="CONFIG",
                   help="size the runs, groups and reference optima for this grid's largest jobs (e.g. "
                        "config/paper.yaml): the measured cost per unit of work times the work they do")


def _scaled(args: argparse.Namespace, measured: dict) -> tuple[list, str]:
    """The work-scaled rules for ``--measured`` and ``--for`` (both or neither), and the target's name."""
    if not args.measured:
        return [], ""
    from bladefl.experiments.plan import config_checks
    from bladefl.experiments.plan.config_files import read_configs
    from bladefl.experiments.runs import job_resources, job_work

    configs = {option: read_configs(files) for option, files in (("--measured", args.measured),
                                                                 ("--for", args.target))}
    for option, config in configs.items():  # each checked as the workflow checks it, before any sizing
        try:
            config_checks.check(config)
        except ValueError as exc:
            raise ValueError(f"{option}: {exc}") from None
    done = job_work.grid_jobs(configs["--measured"])
    target = job_work.grid_jobs(configs["--for"])
    return job_resources.scale(measured, done, target), " ".join(args.target)


def _cmd_resources(args: argparse.Namespace) -> int:
    from bladefl.core import atomic
    from bladefl.experiments.runs import job_resources

    if not args.out.strip():
        raise ValueError("--out: give the profile's folder (an empty path would write into the current folder)")
    if bool(args.measured) != bool(args.target):
        raise ValueError("--measured and --for go together: the configs the benchmarks ran and the grid to size")
    measured = job_resources.measurements(args.benchmarks)  # every benchmark file read once
    found = job_resources.needs_of(measured)
    scaled, target = _scaled(args, measured)
    text = job_resources.profile_text(found, args.margin, scaled, target)  # every file and the margin checked first
    out = Path(args.out) / "config.yaml"
    atomic.write_text(out, text)
    sized, scaled_rules = job_resources.scaled_needs(found, scaled), [x.rule for x in scaled if not x.why]
    for_target = f", {', '.join(scaled_rules)} sized for {target}'s largest jobs" if scaled_rules else ""
    print(f"{out}: runtime and mem_mb for {len(sized)} rules from {sum(n.jobs for n in found)} jobs' benchmark "
          f"files (their largest need x {args.margin:g}{for_target}); use with --workflow-profile {args.out}")
    return 0


COMMANDS: list[Command] = [
    ("device-check", "a device's results against the CPU's (the mixed group, or two run tables)",
     add_device_check, _cmd_device_check),
    ("bench", "engine vs GEMM peak vs a per-client loop; chain share; memory", add_bench, _cmd_bench),
    ("resources", "a workflow profile sizing each rule's jobs from the workflow's benchmark files",
     add_resources, _cmd_resources),
]
