"""The ``bladefl`` command line's arguments, one function per command (``cli`` wires each to its
handler): what a user can pass, with its help text and choices."""

from __future__ import annotations

import argparse

MEMBERS_HELP = "the grid's sweep members: a JSON list of {sweep, feeds, vary, value, cell}, or @file holding it"


def add_fetch(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, choices=["mnist", "fashion_mnist"])
    p.add_argument("--root", default="data/raw", help="torchvision root (default: data/raw)")
    p.add_argument("--sources", nargs="+", default=["existing", "torchvision", "registry"],
                   help="sources in the order to try them")


def add_partition(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, choices=["mnist", "fashion_mnist"])
    p.add_argument("--key", required=True, help="partition key, e.g. shards2_N20_n512_seed0")
    p.add_argument("--root", default="data/raw")
    p.add_argument("--out", default="data/partitions")


def add_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="run config YAML, e.g. config/engines/paper.yaml")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a field, e.g. --set time.beta=6 --set dataset=fashion_mnist")
    p.add_argument("--out", default="results/run", help="output folder (default: results/run)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--partition", help="client index file [N, n] written by `bladefl partition`")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    p.add_argument("--reference", help="reference optimum (.npz from `bladefl reference`): record ||w - w*||")


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
    p.add_argument("--threads", type=int, default=0, help="torch threads and chain threads (default: torch's)")
    p.add_argument("--chain-processes", type=int, default=-1,
                   help="worker processes for the chain's proof of work and signatures (default: half the "
                        "cores on a GPU, none on the CPU)")
    p.add_argument("--max-rows", type=int, default=4096, help="training rows stacked per computation on a GPU")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def add_reference(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="run config YAML (model, dataset, seed)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--partition", required=True, help="client index file [N, n]")
    p.add_argument("--out", required=True, help="output .npz (a .json with F* is written beside it)")
    p.add_argument("--eta", type=float, default=0.05)
    p.add_argument("--max-epochs", type=int, default=300)


def add_bound(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", nargs="+", required=True, help="the runs' summary.json files")
    p.add_argument("--members", required=True, help=MEMBERS_HELP)
    p.add_argument("--references", nargs="+", required=True, help="reference .npz files, one per partition")
    p.add_argument("--out-dir", required=True)


def add_detection(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", nargs="+", required=True, help="the runs' summary.json files (detections.csv beside)")
    p.add_argument("--members", required=True, help=MEMBERS_HELP)
    p.add_argument("--exclude-sweeps", nargs="*", default=[], help="sweeps whose lazy cells also ran with exclusion")
    p.add_argument("--out-dir", required=True)


def add_sensitivity(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True)
    p.add_argument("--readings", nargs="+", required=True)
    p.add_argument("--axes", nargs="+", required=True, help="each reading's axis (partition, iteration, ...)")
    p.add_argument("--summaries", nargs="+", required=True, help="each reading's tidy run table")
    p.add_argument("--optima", nargs="+", required=True, help="each reading's optimum table")
    p.add_argument("--verdicts", nargs="+", required=True, help="each reading's verdicts")
    p.add_argument("--paper-values", required=True, help="config/paper_values.yaml")
    p.add_argument("--t-sum", type=float, required=True)
    p.add_argument("--sweeps", nargs="+", default=["alpha", "beta"], help="sweeps whose curves the page draws")
    p.add_argument("--out-dir", required=True)


def add_sensitivity_index(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rankings", nargs="+", required=True, help="results/sensitivity/<dataset>/ranking.csv")
    p.add_argument("--pages", nargs="+", required=True, help="rendered sensitivity pages (HTML)")
    p.add_argument("--out", required=True)


def add_summarize(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", nargs="+", required=True, help="the runs' summary.json files")
    p.add_argument("--members", required=True, help=MEMBERS_HELP)
    p.add_argument("--table", required=True, help="output CSV, one row per sweep, cell, K and seed")
    p.add_argument("--optimum", required=True, help="output CSV, one row per sweep and cell")


def add_report_index(p: argparse.ArgumentParser) -> None:
    p.add_argument("--verdicts", nargs="+", required=True, help="results/verdicts/<dataset>.csv")
    p.add_argument("--provenance", nargs="+", required=True, help="the runs' provenance tables, one per dataset")
    p.add_argument("--pages", nargs="+", required=True, help="rendered notebooks (HTML)")
    p.add_argument("--summaries", nargs="+", required=True, help="tidy run tables results/summary/<dataset>.csv")
    p.add_argument("--comparisons", nargs="+", required=True, help="results/tables/<dataset>_paper_comparison.csv")
    p.add_argument("--configfiles", nargs="*", default=[], help="the workflow's config file(s), for provenance")
    p.add_argument("--seeds", nargs="+", type=int, required=True, help="the grid's seeds, for provenance")
    p.add_argument("--figures", required=True, help="folder for the headline figure (PNG and SVG)")
    p.add_argument("--out", required=True)


def add_verdicts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True)
    p.add_argument("--summary", required=True, help="results/summary/<dataset>.csv")
    p.add_argument("--members", required=True, help="the grid's sweep members (JSON, or @file holding it)")
    p.add_argument("--t-sum", type=float, required=True)
    p.add_argument("--bound-sweep", default="fig3", help="the sweep whose cells the bound is drawn for")
    p.add_argument("--gaps", help="results/bound/<dataset>/gaps.csv (omit when constants are not measured)")
    p.add_argument("--constants", help="results/bound/<dataset>/constants.csv")
    p.add_argument("--margins", nargs="*", default=[], metavar="QUANTITY=MARGIN",
                   help="equivalence margins of the experiment's claims: K (rounds), mining_time and min_loss "
                        "(relative), max_accuracy (absolute); defaults: bladefl.experiments.verdicts.trend.Margins")
    p.add_argument("--resamples", type=int, default=1000, help="(unused: the experiment's claims are tested, "
                   "not resampled; kept for old command lines)")
    p.add_argument("--bound-resamples", type=int, default=100, help="bootstrap resamples of the bound claims")
    p.add_argument("--statements", default=None, help="config/paper_statements.yaml: the paper's statements, each "
                   "judged once (default: the project's)")
    p.add_argument("--paper-values", default=None, help="config/paper_values.yaml: the paper's tables, for the rows "
                   "of the paper's own errors (default: the project's)")
    p.add_argument("--out", required=True)


def add_paper_comparison(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True)
    p.add_argument("--summary", required=True)
    p.add_argument("--optimum", required=True)
    p.add_argument("--paper-values", required=True)
    p.add_argument("--t-sum", type=float, required=True)
    p.add_argument("--out", required=True)


def add_provenance(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", nargs="+", required=True, help="the runs' summary.json files")
    p.add_argument("--out", required=True, help="output CSV, one row per run")


def add_keep(p: argparse.ArgumentParser) -> None:
    p.add_argument("--files", nargs="+", required=True, help="the report's input files")
    p.add_argument("--provenance", nargs="+", required=True, help="the runs' provenance tables (kept too)")
    p.add_argument("--imported", help="results/imported.json when the runs were imported (bladefl import-runs)")
    p.add_argument("--results-dir", required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--config-file", required=True, help="the workflow's config (results/report/config.yaml)")
    p.add_argument("--out", required=True, help="the bundle folder, e.g. reference/paper-20seeds")
    p.add_argument("--with-archive", action="store_true",
                   help="also copy the imported run tables archive into the bundle (runs/); off by default: "
                        "the archive (megabytes) stays out of git, the manifest names it by its SHA-256")


def add_import_runs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--archive", required=True,
                   help="run folders' tables, e.g. grid-tables.tar.xz from scripts/gpu/run.sh")
    p.add_argument("--configfile", nargs="+", required=True,
                   help="the workflow config the runs belong to, as Snakemake reads it: files merged in order, "
                        "e.g. config/config.yaml config/paper.yaml")
    p.add_argument("--seeds", type=int, nargs="+", help="only these run seeds of it (a partial grid: its first seeds)")
    p.add_argument("--results-dir", help="the results folder (default: the config's results_dir)")
    p.add_argument("--replace", action="store_true", help="overwrite run folders that exist")
    p.add_argument("--key-secret", metavar="FILE",
                   help="the verifier's copy of the runs' key secret (chain.key_secret_file), to verify their ledgers")


def add_lay_out(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", help="a kept bundle, e.g. reference/paper-20seeds")
    p.add_argument("--results-dir", required=True, help="where its results/ files go")
    p.add_argument("--data-dir", required=True, help="where its data/ files go")


def add_rejudge(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", help="a kept bundle, e.g. reference/paper-20seeds")
    p.add_argument("--statements", default="config/paper_statements.yaml", help="the paper's statements")
    p.add_argument("--paper-values", default="config/paper_values.yaml", help="the paper's tables")


def add_render_page(p: argparse.ArgumentParser) -> None:
    p.add_argument("notebook", help="the executed notebook (.ipynb)")
    p.add_argument("--out", required=True, help="the HTML page")
    p.add_argument("--index", required=True, help="the report's front page (linked from the page)")


def add_run_page(p: argparse.ArgumentParser) -> None:
    p.add_argument("notebook", help="the report notebook (notebooks/*.ipynb)")
    p.add_argument("--parameters", required=True, help="its parameters (YAML mapping, as papermill -f reads)")
    p.add_argument("--executed", required=True, help="the executed notebook to write (.ipynb)")
    p.add_argument("--out", required=True, help="the HTML page")
    p.add_argument("--index", required=True, help="the report's front page (linked from the page)")


def add_chain(p: argparse.ArgumentParser) -> None:
    chain_sub = p.add_subparsers(dest="chain_command", required=True)
    v = chain_sub.add_parser("verify", help="re-check a saved chain from scratch")
    v.add_argument("path", help="a saved chain, e.g. results/run/chains/K5.json")
    v.add_argument("--store", help="content-addressed model store to re-hash (e.g. results/run/models)")
    v.add_argument("--summary", help="the run's summary.json: the ledger must end at the tip the run recorded")
    v.add_argument("--key-secret", metavar="FILE",
                   help="the verifier's own copy of the run's key secret (chain.key_secret_file), with --summary: "
                        "the genesis keys are derived from it, never from the path the summary names")


def add_device_check(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="cuda", help="the device compared with the CPU (default: cuda)")
    p.add_argument("--out", help="also write the comparison as CSV here")
    p.add_argument("--tables", nargs=2, metavar=("REFERENCE", "OTHER"),
                   help="instead: compare two tidy run tables of the same grid (bladefl summarize's "
                        "results/summary/<dataset>.csv), e.g. the CPU's and a GPU's, on the runs both hold")


def add_bench(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="run config YAML (default: the paper engine defaults)")
    p.add_argument("--data-dir", default="data/raw")
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="cuda (or --seeds/--grid on the CPU): the multi-run engine's rates and chain share")
    p.add_argument("--seeds", type=int, nargs="*", default=[],
                   help="stacked groups to time: one cell's K values for this many seeds each (cuda: 1 6 23)")
    p.add_argument("--grid", help="also run every grid run of this workflow config, e.g. config/paper.yaml")
    p.add_argument("--grid-seeds", type=int, help="only the grid's first seeds (a partial grid)")
    p.add_argument("--grid-only", action="store_true", help="with --grid: only the grid (no stacked groups, no drag)")
    p.add_argument("--out", default="results/bench-grid", help="where --grid writes its run folders")
    p.add_argument("--host-copy-before", action="store_true",
                   help="cuda: also time the largest group with each round end's host copy into pinned memory "
                        "allocated for it (the engine before host buffers were kept): before and after in one call")
    p.add_argument("--chain-drag", action="store_true",
                   help="only measure how much the chain slows the thread driving the training, with the chain's "
                        "GIL-bound part in threads vs in worker processes (also part of --device cuda)")
