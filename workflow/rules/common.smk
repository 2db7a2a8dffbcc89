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
REPORT = f"{RESULTS}/report"
BOUND_FILES = ["constants.csv", "fit.csv", "gaps.csv", "kstar.csv", "members.csv", "claims.csv", "bound.json"]


wildcard_constraints:
    dataset="|".join(DATASETS),
    tv="|".join(TV_NAMES.values()),
    cell="[^/]+",
    seed=r"\d+",
    nb="|".join(["00_verdicts", "01_data", "02_sweeps", "03_bound", "04_privacy"]),


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


def notebooks():
    names = ["00_verdicts", "01_data", "02_sweeps"]
    if config["measure_constants"]:
        names.append("03_bound")
    if any(m.vary == "epsilon" for m in wc_cfg.members(config)):
        names.append("04_privacy")
    return names


def notebook_inputs(wc):
    """Named inputs of a report notebook (also passed to it as papermill parameters)."""
    d = wc.dataset
    summary = {"summary": f"{RESULTS}/summary/{d}.csv", "optimum": f"{RESULTS}/summary/{d}_optimum.csv"}
    bound = {f.split(".")[0]: f"{BOUND}/{d}/{f}" for f in BOUND_FILES} if config["measure_constants"] else {}
    return {
        "00_verdicts": {"optimum": summary["optimum"], **bound, "config": f"{REPORT}/config.yaml",
                        "runs": run_summaries(d)},
        "01_data": {"partitions": [f"{PARTITIONS}/{d}/{key}.json" for key in PARTITION_KEYS.values()]},
        "02_sweeps": {**summary, "paper_values": "config/paper_values.yaml"},
        "03_bound": bound,
        "04_privacy": {"optimum": summary["optimum"]},
    }[wc.nb]


def notebook_params(wc, input):
    d = wc.dataset
    p = {"dataset": d}
    if wc.nb == "00_verdicts":
        p.update(optimum=input.optimum, runs_dir=RUNS, config_file=input.config,
                 bound_dir=f"{BOUND}/{d}" if config["measure_constants"] else "")
    elif wc.nb == "01_data":
        p.update(partitions_dir=PARTITIONS)
    elif wc.nb == "02_sweeps":
        p.update(summary=input.summary, optimum=input.optimum, paper_values=input.paper_values, t_sum=config["t_sum"])
    elif wc.nb == "03_bound":
        p.update(bound_dir=f"{BOUND}/{d}")
    else:
        p.update(optimum=input.optimum)
    return " ".join(f"-p {k} {v}" for k, v in p.items())


def report_pages():
    return expand(f"{REPORT}/{{dataset}}/{{nb}}.html", dataset=DATASETS, nb=notebooks())


def dump_workflow_config(cfg, path):
    import yaml

    from bladefl import atomic

    atomic.write_text(path, yaml.safe_dump(dict(cfg), sort_keys=False))


def all_targets():
    return [
        *[p for d in DATASETS for key in PARTITION_KEYS.values() for p in partition_files(d, key)],
        *expand(f"{RESULTS}/summary/{{dataset}}.csv", dataset=DATASETS),
        *expand(f"{RESULTS}/summary/{{dataset}}_optimum.csv", dataset=DATASETS),
        *(expand(f"{BOUND}/{{dataset}}/{{file}}", dataset=DATASETS, file=BOUND_FILES)
          if config["measure_constants"] else []),
        f"{REPORT}/index.html",
    ]
