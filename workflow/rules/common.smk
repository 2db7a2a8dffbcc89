# Config validation (schema, then the library's cross-field checks) and shared helpers.
# Both run when the workflow is parsed, so a bad config stops everything before any job.
from pathlib import Path

from snakemake.utils import validate

from bladefl.datasets import FILES, get_spec
from bladefl.workflow_config import check, partition_spec


validate(config, schema="../schemas/config.schema.yaml")
check(config)

DATA = config["data_dir"]
RAW = f"{DATA}/raw"
PARTITIONS = f"{DATA}/partitions"
DATASETS = config["datasets"]
TV_NAMES = {name: get_spec(name).torchvision_name for name in DATASETS}
DATASET_OF_TV = {tv: name for name, tv in TV_NAMES.items()}
PARTITION = partition_spec(config)


wildcard_constraints:
    dataset="|".join(DATASETS),
    tv="|".join(TV_NAMES.values()),


def raw_files(dataset):
    return [f"{RAW}/{TV_NAMES[dataset]}/raw/{f}" for f in FILES]


def raw_root(raw_file):
    """The torchvision root of a raw file: <root>/<Class>/raw/<file>."""
    return Path(raw_file).parents[2]


def partition_files(dataset, key):
    return multiext(f"{PARTITIONS}/{dataset}/{key}", ".npy", ".json", ".png")


def all_targets():
    return [
        path
        for dataset in DATASETS
        for path in partition_files(dataset, PARTITION.key)
    ]
