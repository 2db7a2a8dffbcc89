# Shared by every rule file. The config checked (schema, then the library's cross-field checks,
# both when the workflow is parsed, so a bad config stops everything before any job), the tools on
# each job's PATH, the folders, the grid's cells and partitions, and the path helpers. What only
# one rule file uses is in helpers/<that file> (the grid's groups, the bound's files, the pages).
import os
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from bladefl.experiments.plan import gpu_profile
from bladefl.experiments.plan import resource_mix
from bladefl.experiments.plan import readings as rd
from bladefl.experiments.plan import run_id
from bladefl.experiments.plan import config_checks as wc_checks
from bladefl.experiments.plan import config_files as wc_files
from bladefl.experiments.plan import workflow_config as wc_cfg
from bladefl.core.atomic import write_logged, write_yaml_logged
from bladefl.data.datasets import get_spec, root_of_raw_file

# A config written before `profile` became `engine` is read under the new names, with a note.
_renamed, _notes = wc_files.renamed_keys(config)
config.clear()
config.update(_renamed)
if workflow.is_main_process:  # once, not again in each job's own process
    for _note in _notes:
        print(f"note: {_note}", file=sys.stderr)

# before the schema: its message prints the whole config (aliases of aliases would never end)
if _problems := wc_files.config_file_errors(
    workflow.configfiles
) or wc_files.config_size_errors(config):
    raise wc_cfg.ConfigError("invalid config:\n  - " + "\n  - ".join(_problems))
try:
    validate(config, schema="../schemas/config.schema.yaml")
except WorkflowError:  # one line per problem naming the field, not the whole schema
    raise wc_cfg.ConfigError(
        "invalid config:\n  - "
        + "\n  - ".join(
            wc_checks.schema_errors(
                config,
                Path(str(workflow.current_basedir)) / "../schemas/config.schema.yaml",
            )
        )
    ) from None
wc_checks.check(config)
# --set-resources beside a profile that sizes rules would silently discard the profile's sizes
if workflow.is_main_process and (_mix := resource_mix.mixed_resources(sys.argv[1:])):
    raise wc_cfg.ConfigError(_mix)
# profiles/gpu declares a `gpu` resource: its grouping and its GPU check follow from that, not from
# a config key that a `--config` on the command line would replace (bladefl.experiments.plan.gpu_profile).
_gpu_resource = "gpu" in workflow.global_resources
config["grouping"] = gpu_profile.grouping(config, _gpu_resource)


onstart:
    # before any job of a real run (a dry run plans the grouped jobs anywhere)
    if _refusal := gpu_profile.refusal(config, _gpu_resource):
        raise wc_cfg.ConfigError(_refusal)


# The `bladefl` tool of the environment that runs the workflow, found by every job
# without `.venv/bin` on the caller's PATH (a cluster node, `.venv/bin/snakemake` run directly): the
# folder of this Python's executable goes first on each job's PATH. With the conda deployment
# method each job's own environment provides it instead.
if not any(
    "conda" in str(m).lower() for m in workflow.deployment_settings.deployment_method
):
    shell.prefix(f"export PATH={shlex.quote(str(Path(sys.executable).parent))}:$PATH; ")

DATA = config["data_dir"]
RAW = f"{DATA}/raw"
PARTITIONS = f"{DATA}/partitions"
RESULTS = config["results_dir"]
LOGS = config["logs_dir"]
BENCHMARKS = config["benchmarks_dir"]
DATASETS = config["datasets"]
ENGINE = config["engine"]
CELLS = {cell.key: cell for cell in wc_cfg.all_cells(config)}
SEEDS = config["seeds"]
# The seeds whose runs the run targets make (config run_seeds: a part of the grid; default every seed).
RUN_SEEDS = wc_cfg.run_seeds(config)


# The partition file of each (dataset, N, run seed): the seed's draw of the dataset's engine (one engine
# for every dataset, or one per dataset: config/engines/<engine>-<dataset>.yaml); computed once, when the
# workflow is parsed.
PARTITION_OF = {
    (d, N, s): wc_cfg.partition_spec(config, N, s, d).key
    for d in DATASETS
    for N in {c.N for c in CELLS.values()}
    for s in SEEDS
}


def partition_key(dataset, N, seed):
    """The partition file of run seed ``seed`` in a cell with N clients on ``dataset`` (its draw)."""
    return PARTITION_OF[(dataset, N, int(seed))]


def partition_keys(dataset):
    """Every partition file of ``dataset``'s grid (each draw at each N), once each."""
    return sorted({k for (d, _, _), k in PARTITION_OF.items() if d == dataset})


def engine_of(dataset):
    """The engine file ``dataset``'s jobs read (config/engines/<engine>.yaml, or <engine>-<dataset>.yaml)."""
    return own(f"config/engines/{wc_cfg.engine_name(config, dataset)}.yaml")


def dataset_engine(wildcards):
    return engine_of(wildcards.dataset)


RUNS = f"{RESULTS}/runs/{ENGINE}"
REFERENCES = f"{RESULTS}/reference/{ENGINE}"
REPORT = f"{RESULTS}/report"
MEMBERS = f"{RESULTS}/members.json"  # the grid's sweep members (rule members), read by the analyses
BOUND_CELLS = {cell.key: cell for cell in wc_cfg.bound_cells(config)}


wildcard_constraints:
    dataset="|".join(DATASETS),
    cell="[^/]+",
    seed=r"\d+",


JOB_ENV = "../../envs/environment.yaml"
# The workflow's own files (engines, the paper's values and statements, notebooks) from its own tree,
# so that it runs as a Snakemake module from another folder; relative where it runs from its clone.
WORKFLOW_ROOT = Path(str(workflow.current_basedir)).parents[1]
# the conda post-deploy script installs the package from here, not from the working folder
os.environ.setdefault("BLADEFL_SOURCE", str(WORKFLOW_ROOT))


def own(path):
    """A file of the workflow's own tree, as a path Snakemake and the jobs find from the working folder."""
    if WORKFLOW_ROOT.resolve() == Path.cwd().resolve():
        return path
    return str(WORKFLOW_ROOT / path)


def raw_files(dataset):
    """The dataset's raw files, in the registry's folder and names (bladefl.data.datasets)."""
    spec = get_spec(dataset)
    return [f"{RAW}/{spec.folder}/{f}" for f in spec.files]


def partition_files(dataset, key):
    return multiext(f"{PARTITIONS}/{dataset}/{key}", ".npy", ".json", ".png")


def summaries(root, dataset, cells, seeds=None):
    """The summary.json of every seed's run (of ``seeds``: default every seed) of ``cells`` under
    ``root`` (cell by cell)."""
    return [
        run_id.file(root, dataset, c, s, "summary.json")
        for c in cells
        for s in (SEEDS if seeds is None else seeds)
    ]


def run_summaries(dataset):
    return summaries(RUNS, dataset, CELLS)


def dataset_raw_files(wildcards):
    return raw_files(wildcards.dataset)


def raw_root_of_input(wildcards, input):
    """The data root the raw files lie under, derived from the first of them (as Snakemake's lint asks)."""
    return root_of_raw_file(input.raw[0])


def folder_of_output(wildcards, output):
    return Path(output[0]).parent
