# Config validation (schema, then the library's cross-field checks) and shared helpers.
# Both run when the workflow is parsed, so a bad config stops everything before any job.
import shlex
import sys
from collections import namedtuple
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from bladefl.experiments import readings as rd
from bladefl.experiments import run_id
from bladefl.experiments import workflow_config as wc_cfg
from bladefl.data.datasets import FILES, get_spec

try:
    validate(config, schema="../schemas/config.schema.yaml")
except WorkflowError:  # one line per problem naming the field, not the whole schema
    raise wc_cfg.ConfigError(
        "invalid config:\n  - "
        + "\n  - ".join(
            wc_cfg.schema_errors(
                config,
                Path(str(workflow.current_basedir)) / "../schemas/config.schema.yaml",
            )
        )
    ) from None
if duplicates := wc_cfg.duplicate_key_errors(workflow.configfiles):
    raise wc_cfg.ConfigError("invalid config:\n  - " + "\n  - ".join(duplicates))
wc_cfg.check(config)

# The tools (`bladefl`, `papermill`) of the environment that runs the workflow, found by every job
# without `.venv/bin` on the caller's PATH (a cluster node, `.venv/bin/snakemake` run directly): the
# folder of this Python's executable goes first on each job's PATH. With the conda deployment
# method each job's own environment provides them instead.
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
PROFILE = config["profile"]
TV_NAMES = {name: get_spec(name).torchvision_name for name in DATASETS}
DATASET_OF_TV = {tv: name for name, tv in TV_NAMES.items()}
CELLS = {cell.key: cell for cell in wc_cfg.all_cells(config)}
SEEDS = config["seeds"]


# The partition file of each (N, run seed): the seed's draw; computed once, when the workflow is parsed.
PARTITION_OF = {
    (N, s): wc_cfg.partition_spec(config, N, s).key
    for N in {c.N for c in CELLS.values()}
    for s in SEEDS
}
PARTITION_KEYS = sorted(set(PARTITION_OF.values()))


def partition_key(N, seed):
    """The partition file of run seed ``seed`` in a cell with N clients (its draw)."""
    return PARTITION_OF[(N, int(seed))]


GROUPED = config.get("grouping", "cell") == "partition"
GROUPS = wc_cfg.partition_jobs(config) if GROUPED else []
GROUPS_BY_NAME = {g.name: g for g in GROUPS}
# The group job of each run (dataset, cell, seed) under grouping: partition.
GROUP_OF_RUN = {
    (g.dataset, c, s): g.name for g in GROUPS for c in g.cells for s in g.seeds
}
# The sensitivity study (config `readings`, e.g. config/sensitivity.yaml): the grid once per reading.
READINGS = {r.name: r for r in rd.readings(config)}
SENSITIVITY = bool(READINGS)
SENS = f"{RESULTS}/sensitivity"
RUNS = f"{RESULTS}/runs/{PROFILE}"
GROUP_RUNS = (
    f"{RESULTS}/groups/{PROFILE}"  # grouping: partition, each group's runs till copied
)
REFERENCES = f"{RESULTS}/reference/{PROFILE}"
BOUND = f"{RESULTS}/bound"
REPORT = f"{RESULTS}/report"
MEMBERS = f"{RESULTS}/members.json"  # the grid's sweep members (rule members), read by the analyses
BOUND_FILES = [
    "constants.csv",
    "fit.csv",
    "gaps.csv",
    "kstar.csv",
    "members.csv",
    "variants.csv",
    "certificate.csv",
    "bound.json",
]
BOUND_CELLS = {cell.key: cell for cell in wc_cfg.bound_cells(config)}
# The bound's files the bound page reads (all but bound.json).
BOUND_PAGE_FILES = [f.split(".")[0] for f in BOUND_FILES if f.endswith(".csv")]


wildcard_constraints:
    dataset="|".join(DATASETS),
    tv="|".join(TV_NAMES.values()),
    cell="[^/]+",
    seed=r"\d+",
    nb="|".join(
        [
            "00_verdicts",
            "01_data",
            "02_sweeps",
            "03_bound",
            "04_privacy",
            "05_lazy",
            "06_sensitivity",
        ]
    ),
    reading="[a-z0-9][a-z0-9.-]*",
    group=r"[a-z_]+_N\d+_draw\d+_block\d+",


JOB_ENV = "../../envs/environment.yaml"


def raw_root(raw_file):
    """The torchvision root of a raw file: <root>/<Class>/raw/<file>."""
    return Path(raw_file).parents[2]


def raw_files(dataset):
    return [f"{RAW}/{TV_NAMES[dataset]}/raw/{f}" for f in FILES]


def partition_files(dataset, key):
    return multiext(f"{PARTITIONS}/{dataset}/{key}", ".npy", ".json", ".png")


def summaries(root, dataset, cells):
    """The summary.json of every seed's run of ``cells`` under ``root`` (cell by cell)."""
    return [
        run_id.file(root, dataset, c, s, "summary.json") for c in cells for s in SEEDS
    ]


def run_summaries(dataset):
    return summaries(RUNS, dataset, CELLS)


# --- input functions (wildcards -> files) ---------------------------------------------------


def dataset_raw_files(wildcards):
    return raw_files(wildcards.dataset)


def dataset_run_summaries(wildcards):
    return run_summaries(wildcards.dataset)


def bound_run_summaries(wildcards):
    """The runs the bound is fitted to: the bound sweep's cells (they measure the constants)."""
    return summaries(RUNS, wildcards.dataset, BOUND_CELLS)


def dataset_references(wildcards):
    """Reference optima (F*, w*) of the bound cells' partitions (each draw's)."""
    keys = sorted({partition_key(c.N, s) for c in BOUND_CELLS.values() for s in SEEDS})
    return expand(f"{REFERENCES}/{wildcards.dataset}/{{key}}.npz", key=keys)


def cell_partition(wildcards):
    key = partition_key(CELLS[wildcards.cell].N, wildcards.seed)
    return f"{PARTITIONS}/{wildcards.dataset}/{key}.npy"


def cell_reference(wildcards):
    """A bound cell's reference optimum (its runs record ||w^k - w*||); none for the others."""
    if wildcards.cell not in BOUND_CELLS:
        return []
    key = partition_key(CELLS[wildcards.cell].N, wildcards.seed)
    return f"{REFERENCES}/{wildcards.dataset}/{key}.npz"


# --- parameter functions (wildcards, input, output -> values) ----------------------------------


def dataset_of_tv(wildcards):
    return DATASET_OF_TV[wildcards.tv]


def raw_root_of_output(wildcards, output):
    return raw_root(output[0])


def raw_root_of_input(wildcards, input):
    return raw_root(input.raw[0])


def partitions_root_of_output(wildcards, output):
    return Path(output[0]).parent.parent


def folder_of_output(wildcards, output):
    return Path(output[0]).parent


def reference_option(wildcards, input):
    return f"--reference {input.reference}" if input.reference else ""


def run_overrides(wildcards):
    """`--set` options of one grid job (see wc_cfg.run_sets)."""
    sets = wc_cfg.run_sets(
        config, CELLS[wildcards.cell], wildcards.dataset, int(wildcards.seed)
    )
    return " ".join(f"--set {s}" for s in sets)


def group_raw_files(wildcards):
    return raw_files(GROUPS_BY_NAME[wildcards.group].dataset)


def group_partition(wildcards):
    group = GROUPS_BY_NAME[wildcards.group]
    return f"{PARTITIONS}/{group.dataset}/{partition_key(group.N, group.seeds[0])}.npy"


def group_reference(wildcards):
    """The reference optimum of a group's partition when one of its cells is a bound cell."""
    group = GROUPS_BY_NAME[wildcards.group]
    if not any(c in BOUND_CELLS for c in group.cells):
        return []
    return f"{REFERENCES}/{group.dataset}/{partition_key(group.N, group.seeds[0])}.npz"


def group_plan_json(wildcards):
    return wc_cfg.group_plan(
        config, GROUPS_BY_NAME[wildcards.group], f"{GROUP_RUNS}/{wildcards.group}"
    )


def _group_name_of_run(wildcards):
    return GROUP_OF_RUN[(wildcards.dataset, wildcards.cell, int(wildcards.seed))]


def group_of_run(wildcards):
    """The folder of the group job that computes run (dataset, cell, seed)."""
    return f"{GROUP_RUNS}/{_group_name_of_run(wildcards)}"


def run_in_group(wildcards):
    """Where run (dataset, cell, seed) lies in its group's folder."""
    root = f"{GROUP_RUNS}/{_group_name_of_run(wildcards)}"
    return run_id.folder(root, wildcards.dataset, wildcards.cell, wildcards.seed)


DETECTION_FILES = ["quality", "per_round", "roc", "exclusion", "exclusion_curves"]
DETECTING = bool(wc_cfg.detectors(config)) and bool(wc_cfg.lazy_members(config))


def detection_files(dataset):
    return {f: f"{RESULTS}/detection/{dataset}/{f}.csv" for f in DETECTION_FILES}


def detection_run_summaries(wildcards):
    """The runs with lazy clients (their detections.csv) and the exclusion sweeps' points."""
    sweeps = set(config.get("detection", {}).get("exclude_sweeps", []))
    cells = {m.cell.key for m in wc_cfg.lazy_members(config)}
    cells |= {m.cell.key for m in wc_cfg.members(config) if m.sweep in sweeps}
    cells |= {c.key for c in wc_cfg.detection_cells(config)}
    return summaries(RUNS, wildcards.dataset, sorted(cells))


# --- the sensitivity study ----------------------------------------------------------------------


def reading_profile(wildcards):
    return f"config/profiles/{READINGS[wildcards.reading].profile}.yaml"


def reading_partition(wildcards):
    """The partition of a reading (its scheme, the seed's draw); the study's cells share one N."""
    (N,) = {c.N for c in wc_cfg.cells(config)}
    seen = rd.reading_config(config, READINGS[wildcards.reading])
    key = wc_cfg.partition_spec(seen, N, int(wildcards.seed)).key
    return f"{PARTITIONS}/{wildcards.dataset}/{key}.npy"


def reading_plan_json(wildcards):
    return wc_cfg.reading_plan(
        config,
        READINGS[wildcards.reading],
        wildcards.dataset,
        int(wildcards.seed),
        f"{SENS}/runs",
    )


def reading_run_outputs():
    root = f"{SENS}/runs/{{reading}}"
    return [
        run_id.file(root, "{dataset}", c.key, "{seed}", "summary.json")
        for c in wc_cfg.cells(config)
    ]


def reading_summaries(wildcards):
    root = f"{SENS}/runs/{wildcards.reading}"
    return summaries(root, wildcards.dataset, [c.key for c in wc_cfg.cells(config)])


def sensitivity_inputs(wildcards):
    d = wildcards.dataset
    return {
        "summaries": [f"{SENS}/{r}/summary/{d}.csv" for r in READINGS],
        "optima": [f"{SENS}/{r}/summary/{d}_optimum.csv" for r in READINGS],
        "verdicts": [f"{SENS}/{r}/verdicts/{d}.csv" for r in READINGS],
        "paper_values": "config/paper_values.yaml",
    }


def sensitivity_files(dataset):
    return {
        f: f"{SENS}/{dataset}/{f}.csv"
        for f in ("ranking", "verdict_changes", "curves", "paper_points")
    }


def page_index(wildcards):
    if wildcards.nb == "06_sensitivity":
        return f"{REPORT}/sensitivity.html"
    return f"{REPORT}/index.html"


# --- the report ------------------------------------------------------------------------------


# A report page's wildcards, for calling the input functions outside a job.
Page = namedtuple("Page", "dataset nb")


def notebooks():
    names = ["00_verdicts", "01_data", "02_sweeps"]
    if BOUND_CELLS:
        names.append("03_bound")
    if any(m.vary == "epsilon" for m in wc_cfg.members(config)):
        names.append("04_privacy")
    if DETECTING:
        names.append("05_lazy")
    return names


def bound_files(dataset):
    return {f.split(".")[0]: f"{BOUND}/{dataset}/{f}" for f in BOUND_FILES}


def notebook_inputs(wildcards):
    """The files a report notebook reads (each also one of its parameters)."""
    return {
        k: v
        for k, v in notebook_parameters(wildcards).items()
        if k not in NOTEBOOK_SETTINGS and v is not None
    }


NOTEBOOK_SETTINGS = ("dataset", "figures_dir", "tables_dir")


def notebook_parameters(wildcards):
    """Every parameter of a report notebook: the explicit list of files it reads, its settings and
    its output folders (written to a YAML file for papermill -f)."""
    d, nb = wildcards.dataset, wildcards.nb
    optimum = f"{RESULTS}/summary/{d}_optimum.csv"
    bound = bound_files(d) if BOUND_CELLS else {}
    files = {
        "00_verdicts": {
            "verdicts": f"{RESULTS}/verdicts/{d}.csv",
            "provenance": f"{RESULTS}/provenance/{d}.csv",
            "config_file": f"{REPORT}/config.yaml",
        },
        "01_data": {
            "partitions": [f"{PARTITIONS}/{d}/{key}.json" for key in PARTITION_KEYS]
        },
        "02_sweeps": {
            "summary": f"{RESULTS}/summary/{d}.csv",
            "optimum": optimum,
            "comparison": f"{RESULTS}/tables/{d}_paper_comparison.csv",
            "config_file": f"{REPORT}/config.yaml",
        },
        "03_bound": {k: bound.get(k) for k in BOUND_PAGE_FILES},
        "04_privacy": {"optimum": optimum},
        "05_lazy": detection_files(d) if DETECTING else {},
        "06_sensitivity": sensitivity_files(d) if SENSITIVITY else {},
    }[nb]
    return {
        "dataset": d,
        **files,
        "figures_dir": f"{RESULTS}/figures/{d}/{nb}",
        "tables_dir": f"{RESULTS}/tables/{d}/{nb}",
    }


def verdict_bound_options(wildcards, input):
    margins = config.get("verdicts", {}).get("margins", {})
    given = " ".join(f"{k}={v}" for k, v in sorted(margins.items()))
    options = f"--margins {given}" if given else ""
    if not BOUND_CELLS:
        return options
    return f"{options} --gaps {input.gaps} --constants {input.constants} --bound-sweep {config['bound_sweep']}".strip()


def verdict_bound_inputs(wildcards):
    if not BOUND_CELLS:
        return {}
    files = bound_files(wildcards.dataset)
    return {"gaps": files["gaps"], "constants": files["constants"]}


def kept_inputs(wildcards):
    """What `keep` copies: every file the report's pages read (the workflow's config aside; the
    front page reads none besides them), the paper comparison as Markdown too, and the runs'
    provenance tables."""
    files = set()
    for d in DATASETS:
        for nb in notebooks():
            for k, v in notebook_inputs(Page(d, nb)).items():
                if k != "config_file":
                    files.update([v] if isinstance(v, str) else v)
        files.add(f"{RESULTS}/tables/{d}_paper_comparison.md")
    provenance = [f"{RESULTS}/provenance/{d}.csv" for d in DATASETS]
    return {"files": sorted(files - set(provenance)), "provenance": provenance}


def results_root(wildcards):
    return RESULTS


def data_root(wildcards):
    return DATA


def imported_option(wildcards):
    """`--imported` with the record of an import (`bladefl import-runs`), when the runs came from one;
    `--with-archive` where the config keeps the archive in the bundle (`keep_archive`).
    """
    path = Path(f"{RESULTS}/imported.json")
    if not path.is_file():
        return ""
    return f"--imported {path}" + (" --with-archive" if config["keep_archive"] else "")


def provenance_tables(wildcards, input):
    return [f"{folder}/provenance.csv" for folder in input.tables]


def report_pages(wildcards=None):
    return expand(f"{REPORT}/{{dataset}}/{{nb}}.html", dataset=DATASETS, nb=notebooks())


def write_yaml(values, path, log):
    import yaml

    write_text(yaml.safe_dump(values, sort_keys=False), path, log)


def run_inputs():
    """Every partition file and reference optimum the grid's runs read."""
    partitions = [
        p for d in DATASETS for key in PARTITION_KEYS for p in partition_files(d, key)
    ]
    references = (
        [f for d in DATASETS for f in dataset_references(Page(d, None))]
        if BOUND_CELLS
        else []
    )
    return partitions + references


def all_targets():
    if (
        SENSITIVITY
    ):  # the study's own outputs only (its grid runs under results/sensitivity)
        return [
            f"{REPORT}/sensitivity.html",
            *expand(f"{REPORT}/{{dataset}}/06_sensitivity.html", dataset=DATASETS),
        ]
    return [
        *[
            p
            for d in DATASETS
            for key in PARTITION_KEYS
            for p in partition_files(d, key)
        ],
        *expand(f"{RESULTS}/summary/{{dataset}}.csv", dataset=DATASETS),
        *expand(f"{RESULTS}/summary/{{dataset}}_optimum.csv", dataset=DATASETS),
        *(
            expand(f"{BOUND}/{{dataset}}/{{file}}", dataset=DATASETS, file=BOUND_FILES)
            if BOUND_CELLS
            else []
        ),
        *expand(f"{RESULTS}/verdicts/{{dataset}}.csv", dataset=DATASETS),
        *(
            [f for d in DATASETS for f in detection_files(d).values()]
            if DETECTING
            else []
        ),
        f"{REPORT}/index.html",
    ]


def write_text(text, path, log):
    """Write ``path`` (atomically) and say so in the rule's ``log``."""
    from bladefl.core import atomic

    atomic.write_text(path, text)
    atomic.write_text(log, f"wrote {path} ({len(text.encode())} bytes)\n")
