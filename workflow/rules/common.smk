# Config validation (schema, then the library's cross-field checks) and shared helpers.
# Both run when the workflow is parsed, so a bad config stops everything before any job.
from pathlib import Path

from snakemake.utils import validate

from bladefl import workflow_config as wc_cfg
from bladefl.datasets import FILES, get_spec


validate(config, schema="../schemas/config.schema.yaml")
wc_cfg.check(config)

DATA = config["data_dir"]
RAW = f"{DATA}/raw"
PARTITIONS = f"{DATA}/partitions"
RESULTS = config["results_dir"]
DATASETS = config["datasets"]
PROFILE = config["profile"]
TV_NAMES = {name: get_spec(name).torchvision_name for name in DATASETS}
DATASET_OF_TV = {tv: name for name, tv in TV_NAMES.items()}
CELLS = {cell.key: cell for cell in wc_cfg.cells(config)}
PARTITION_KEYS = {N: wc_cfg.partition_spec(config, N).key for N in sorted({c.N for c in CELLS.values()})}
SEEDS = config["seeds"]
RUNS = f"{RESULTS}/runs/{PROFILE}"
REFERENCES = f"{RESULTS}/reference/{PROFILE}"
BOUND = f"{RESULTS}/bound"
BOUND_FILES = ["constants.csv", "fit.csv", "gaps.csv", "kstar.csv", "members.csv", "claims.csv", "bound.json"]


wildcard_constraints:
    dataset="|".join(DATASETS),
    tv="|".join(TV_NAMES.values()),
    cell="[^/]+",
    seed=r"\d+",


def raw_root(raw_file):
    """The torchvision root of a raw file: <root>/<Class>/raw/<file>."""
    return Path(raw_file).parents[2]


def raw_files(dataset):
    return [f"{RAW}/{TV_NAMES[dataset]}/raw/{f}" for f in FILES]


def partition_files(dataset, key):
    return multiext(f"{PARTITIONS}/{dataset}/{key}", ".npy", ".json", ".png")


def cell_partition(wildcards):
    return f"{PARTITIONS}/{wildcards.dataset}/{PARTITION_KEYS[CELLS[wildcards.cell].N]}.npy"


def cell_reference(wildcards):
    return f"{REFERENCES}/{wildcards.dataset}/{PARTITION_KEYS[CELLS[wildcards.cell].N]}.npz"


def measure_overrides(cell):
    """The bound needs measured constants, and theta (a counterfactual) in lazy cells."""
    if not config["measure_constants"]:
        return []
    return ["measure.constants=true", f"lazy.counterfactual={'true' if cell.lazy_ratio > 0 else 'false'}"]


def run_summaries(dataset):
    return expand(f"{RUNS}/{dataset}/{{cell}}/seed~{{seed}}/summary.json", cell=list(CELLS), seed=SEEDS)


def all_targets():
    return [
        *[p for d in DATASETS for key in PARTITION_KEYS.values() for p in partition_files(d, key)],
        *expand(f"{RESULTS}/summary/{{dataset}}.csv", dataset=DATASETS),
        *expand(f"{RESULTS}/summary/{{dataset}}_optimum.csv", dataset=DATASETS),
        *(expand(f"{BOUND}/{{dataset}}/{{file}}", dataset=DATASETS, file=BOUND_FILES)
          if config["measure_constants"] else []),
    ]
