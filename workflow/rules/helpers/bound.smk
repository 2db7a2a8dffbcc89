# Helpers of bound.smk (its globals, wildcard constraints and input/parameter functions).
BOUND = f"{RESULTS}/bound"
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
# The bound's files the bound page reads (all but bound.json).
BOUND_PAGE_FILES = [f.split(".")[0] for f in BOUND_FILES if f.endswith(".csv")]


def bound_run_summaries(wildcards):
    """The runs the bound is fitted to: the bound sweep's cells (they measure the constants)."""
    return summaries(RUNS, wildcards.dataset, BOUND_CELLS)


def dataset_references(wildcards):
    """Reference optima (F*, w*) of the bound cells' partitions (each draw's)."""
    keys = sorted(
        {
            partition_key(wildcards.dataset, c.N, s)
            for c in BOUND_CELLS.values()
            for s in SEEDS
        }
    )
    return expand(f"{REFERENCES}/{wildcards.dataset}/{{key}}.npz", key=keys)


def bound_files(dataset):
    return {f.split(".")[0]: f"{BOUND}/{dataset}/{f}" for f in BOUND_FILES}


def verdict_margin_options(wildcards):
    """`--margins` of the config's verdict margins (none: the library's defaults), as arguments (the
    shell command quotes each: `:q`)."""
    margins = config.get("verdicts", {}).get("margins", {})
    given = [f"{k}={v}" for k, v in sorted(margins.items())]
    return ["--margins", *given] if given else []


def verdict_bound_options(wildcards, input):
    """The margins, and the bound's gaps and constants where the grid measures them (arguments)."""
    options = verdict_margin_options(wildcards)
    if not BOUND_CELLS:
        return options
    return [
        *options,
        "--gaps",
        input.gaps,
        "--constants",
        input.constants,
        "--bound-sweep",
        config["bound_sweep"],
    ]


def verdict_bound_inputs(wildcards):
    if not BOUND_CELLS:
        return {}
    files = bound_files(wildcards.dataset)
    return {"gaps": files["gaps"], "constants": files["constants"]}
