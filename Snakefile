# BLADE-FL reproduction workflow. The rules live in workflow/rules/*.smk; the science in the
# `bladefl` library (src/bladefl), which every rule calls through the `bladefl` CLI.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/grid.smk"
include: "workflow/rules/bound.smk"
include: "workflow/rules/detection.smk"
include: "workflow/rules/sensitivity.smk"
include: "workflow/rules/calibration.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        all_targets(),


# What the grid's runs read (data, partitions, reference optima; of the seeds of config run_seeds), and
# nothing else: made before run folders computed elsewhere are imported (`make import-runs`, docs/gpu.md).
rule run_inputs:
    input:
        run_inputs(),


# Every grid run's folder (of the seeds of config run_seeds: a part of the grid) and nothing downstream:
# what the GPU machine computes (scripts/gpu/run.sh MODE=snakemake); the analyses and the report are
# made where the run tables are imported.
rule run_folders:
    input:
        [summaries(RUNS, d, CELLS, RUN_SEEDS) for d in DATASETS],
