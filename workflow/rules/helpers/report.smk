# Helpers of report.smk (its globals, wildcard constraints and input/parameter functions).
from collections import namedtuple

from bladefl.report import bundle_design
from bladefl.report import readings_beside as rd_beside

# A report page's wildcards, for calling the input functions outside a job.
Page = namedtuple("Page", "dataset nb")
NOTEBOOK_SETTINGS = ("dataset", "figures_dir", "tables_dir")


wildcard_constraints:
    nb="|".join(
        [
            "00_verdicts",
            "01_data",
            "02_sweeps",
            "03_bound",
            "04_privacy",
            "05_lazy",
            "06_sensitivity",
            "07_calibration",
        ]
    ),


def page_index(wildcards):
    if wildcards.nb == "06_sensitivity":
        return f"{REPORT}/sensitivity.html"
    return f"{REPORT}/index.html"


def notebooks():
    names = ["00_verdicts", "01_data", "02_sweeps"]
    if BOUND_CELLS:
        names.append("03_bound")
    if any(m.vary == "epsilon" for m in wc_cfg.members(config)):
        names.append("04_privacy")
    if DETECTING:
        names.append("05_lazy")
    return names


def notebook_inputs(wildcards):
    """The files a report notebook reads (each also one of its parameters)."""
    return {
        k: v
        for k, v in notebook_parameters(wildcards).items()
        if k not in NOTEBOOK_SETTINGS and v is not None
    }


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
            "partitions": [f"{PARTITIONS}/{d}/{key}.json" for key in partition_keys(d)]
        },
        "02_sweeps": {
            "summary": f"{RESULTS}/summary/{d}.csv",
            "optimum": optimum,
            "comparison": f"{RESULTS}/tables/{d}_paper_comparison.csv",
            "verdicts": f"{RESULTS}/verdicts/{d}.csv",
            "config_file": f"{REPORT}/config.yaml",
        },
        "03_bound": {
            **{k: bound.get(k) for k in BOUND_PAGE_FILES},
            "verdicts": f"{RESULTS}/verdicts/{d}.csv",
        },
        "04_privacy": {
            "optimum": optimum,
            "summary": f"{RESULTS}/summary/{d}.csv",
            "verdicts": f"{RESULTS}/verdicts/{d}.csv",
        },
        "05_lazy": (
            {**detection_files(d), "config_file": f"{REPORT}/config.yaml"}
            if DETECTING
            else {}
        ),
        "06_sensitivity": sensitivity_files(d) if SENSITIVITY else {},
        "07_calibration": calibration_page_files(d) if CALIBRATION else {},
    }[nb]
    return {
        "dataset": d,
        **files,
        "figures_dir": f"{RESULTS}/figures/{d}/{nb}",
        "tables_dir": f"{RESULTS}/tables/{d}/{nb}",
    }


def kept_inputs(wildcards):
    """What `keep` copies: every file the report's pages read (the workflow's config aside; the
    front page reads none besides them), the paper comparison as Markdown too, and the runs'
    provenance tables."""
    if CALIBRATION:
        return calibration_kept_inputs()
    files = set()
    for d in DATASETS:
        for nb in notebooks():
            for k, v in notebook_inputs(Page(d, nb)).items():
                if k != "config_file":
                    files.update([v] if isinstance(v, str) else v)
        files.add(f"{RESULTS}/tables/{d}_paper_comparison.md")
        # the runs' chains (chain id, tip, blocks): the bundle is an anchor
        files.add(f"{RESULTS}/anchors/{d}.json")
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
        return []
    return ["--imported", str(path)] + (
        ["--with-archive"] if config["keep_archive"] else []
    )


def provenance_tables(wildcards, input):
    return [f"{folder}/provenance.csv" for folder in input.tables]


def report_pages(wildcards=None):
    return expand(f"{REPORT}/{{dataset}}/{{nb}}.html", dataset=DATASETS, nb=notebooks())


# Everything `snakemake` makes by default (the all target). The report and the tables and figures behind it
# (or, for a sensitivity config, the study's pages).
def all_targets():
    if CALIBRATION:  # the study's own outputs only (its runs under results/calibration)
        return [
            f"{REPORT}/index.html",
            *expand(f"{REPORT}/{{dataset}}/07_calibration.html", dataset=DATASETS),
        ]
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
            for key in partition_keys(d)
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
        *expand(f"{RESULTS}/anchors/{{dataset}}.json", dataset=DATASETS),
        *(
            [f for d in DATASETS for f in detection_files(d).values()]
            if DETECTING
            else []
        ),
        f"{REPORT}/index.html",
    ]


# The kept bundles the front page shows beside this report's runs (config readings_beside): the design
# run under another engine; the bundle this report renders (a kept bundle's own config) is not its own neighbour.
# Read by report-index (checked against its manifest there), never an input: an input named
# reference/<name>/MANIFEST.json is the keep rule's output, which Snakemake would run to write this run's tables
# over the kept bundle.
READINGS_BESIDE = rd_beside.beside(
    config,
    config.get("readings_beside", []),
    bundle_design.bundle_of(workflow.configfiles),
)


def readings_beside_option(wildcards):
    """`--beside BUNDLE...` where another reading of this design is kept, as arguments (quoted by `:q`)."""
    return ["--beside", *READINGS_BESIDE] if READINGS_BESIDE else []
