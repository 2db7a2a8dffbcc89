# Helpers of grid.smk (its globals, wildcard constraints and input/parameter functions).
# config["grouping"] is set in common.smk (profiles/gpu: partition). The groups are planned under both
# groupings (grid.smk says why).
GROUPED = config["grouping"] == "partition"
# The group jobs of the part of the grid being run (config run_seeds: each holds only the part's seeds),
# and of the whole design, named alike: a run's group has one name in every part.
GROUPS = wc_cfg.partition_jobs(config)
WHOLE_GROUPS = wc_cfg.partition_jobs(
    {k: v for k, v in config.items() if k != "run_seeds"}
)
# Each name's group: the part's where it has one (a block holding part seeds), else the whole design's.
GROUPS_BY_NAME = {g.name: g for g in [*WHOLE_GROUPS, *GROUPS]}
# The group job of each run (dataset, cell, seed).
GROUP_OF_RUN = {
    (g.dataset, c, s): g.name for g in WHOLE_GROUPS for c in g.cells for s in g.seeds
}
GROUP_RUNS = (
    f"{RESULTS}/groups/{ENGINE}"  # grouping: partition, each group's runs till moved
)


wildcard_constraints:
    group=r"[a-z0-9_]+_N\d+_block\d+",


def dataset_run_summaries(wildcards):
    return run_summaries(wildcards.dataset)


def cell_partition(wildcards):
    key = partition_key(wildcards.dataset, CELLS[wildcards.cell].N, wildcards.seed)
    return f"{PARTITIONS}/{wildcards.dataset}/{key}.npy"


def cell_reference(wildcards):
    """A bound cell's reference optimum (its runs record ||w^k - w*||); none for the others."""
    if wildcards.cell not in BOUND_CELLS:
        return []
    key = partition_key(wildcards.dataset, CELLS[wildcards.cell].N, wildcards.seed)
    return f"{REFERENCES}/{wildcards.dataset}/{key}.npz"


def reference_option(wildcards, input):
    """`--reference FILE...` where the job has reference optima, as arguments (quoted by `:q`)."""
    refs = input.reference
    refs = [refs] if isinstance(refs, str) else list(refs)
    return ["--reference", *refs] if refs else []


def run_overrides(wildcards):
    """`--set` options of one grid job (see wc_cfg.run_sets), as arguments (quoted by `:q`)."""
    sets = wc_cfg.run_sets(
        config, CELLS[wildcards.cell], wildcards.dataset, int(wildcards.seed)
    )
    return [arg for s in sets for arg in ("--set", s)]


def group_raw_files(wildcards):
    return raw_files(GROUPS_BY_NAME[wildcards.group].dataset)


def group_engine(wildcards):
    return engine_of(GROUPS_BY_NAME[wildcards.group].dataset)


def group_partition_keys(group):
    """The partition (one per draw) of each of a group's seeds, once each, in seed order."""
    return list(
        dict.fromkeys(partition_key(group.dataset, group.N, s) for s in group.seeds)
    )


def group_partition(wildcards):
    """Every partition draw a group's runs train on (its seeds' draws)."""
    group = GROUPS_BY_NAME[wildcards.group]
    return [
        f"{PARTITIONS}/{group.dataset}/{key}.npy" for key in group_partition_keys(group)
    ]


def group_reference(wildcards):
    """The reference optimum of each of a group's draws when one of its cells is a bound cell."""
    group = GROUPS_BY_NAME[wildcards.group]
    if not any(c in BOUND_CELLS for c in group.cells):
        return []
    return [
        f"{REFERENCES}/{group.dataset}/{key}.npz" for key in group_partition_keys(group)
    ]


def run_group_threads(wildcards):
    """A group job's threads: threads_per_group for the largest groups, a share for a
    smaller one (wc_cfg.group_threads); 1 for the default grouping's idle group jobs."""
    if not GROUPED:
        return 1
    return wc_cfg.group_threads(
        GROUPS, GROUPS_BY_NAME[wildcards.group], config["threads_per_group"]
    )


def group_plan_json(wildcards):
    return wc_cfg.group_plan(
        config, GROUPS_BY_NAME[wildcards.group], f"{GROUP_RUNS}/{wildcards.group}"
    )


def group_of_run(wildcards):
    """The name of the group job that computes run (dataset, cell, seed)."""
    return GROUP_OF_RUN[(wildcards.dataset, wildcards.cell, int(wildcards.seed))]


def group_done(wildcards):
    """The mark the group job of run (dataset, cell, seed) leaves once done (under grouping: cell, its
    group computes nothing and the run trains in its own job). Under grouping: partition a run of a
    seed outside the part (config run_seeds) is no group's: its part computes it. The mark is ancient:
    where it exists (an imported design's: bladefl import-runs writes them), a group job that runs for
    a run it lacks plans none of its finished runs again; a missing mark (a fresh grid's) does.
    """
    if GROUPED and int(wildcards.seed) not in RUN_SEEDS:
        raise ValueError(
            f"run seed {wildcards.seed} is outside run_seeds {RUN_SEEDS}: under grouping: partition a part "
            "of the grid computes only its own seeds' runs (target run_folders, or leave run_seeds out)"
        )
    return ancient(f"{GROUP_RUNS}/{group_of_run(wildcards)}.done")


def run_in_group(wildcards):
    """Where run (dataset, cell, seed) lies in its group's folder when its group computes it."""
    return run_id.folder(
        f"{GROUP_RUNS}/{group_of_run(wildcards)}",
        wildcards.dataset,
        wildcards.cell,
        wildcards.seed,
    )


def run_inputs():
    """Every partition file and reference optimum the grid's runs (of the seeds of run_seeds) read."""
    Ns = {c.N for c in CELLS.values()}
    partitions = [
        p
        for d in DATASETS
        for key in sorted({partition_key(d, N, s) for N in Ns for s in RUN_SEEDS})
        for p in partition_files(d, key)
    ]
    references = [
        f"{REFERENCES}/{d}/{key}.npz" for d, key in wc_cfg.reference_keys(config)
    ]
    return partitions + references
