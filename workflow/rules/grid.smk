# The experiment grid: one job per dataset x cell x seed, each running all the cell's K.


include: "helpers/grid.smk"


rule reference:
    input:
        raw=dataset_raw_files,
        partition=f"{PARTITIONS}/{{dataset}}/{{key}}.npy",
        engine=dataset_engine,
    output:
        npz=f"{REFERENCES}/{{dataset}}/{{key}}.npz",
        info=f"{REFERENCES}/{{dataset}}/{{key}}.json",
    log:
        f"{LOGS}/reference/{ENGINE}/{{dataset}}/{{key}}.log",
    benchmark:
        f"{BENCHMARKS}/reference/{ENGINE}/{{dataset}}/{{key}}.tsv"
    conda:
        JOB_ENV
    threads: config["threads_per_run"]
    resources:
        mem_mb=3000,
        runtime=30,
    params:
        data_dir=raw_root_of_input,
    shell:
        "bladefl reference --config {input.engine:q} --partition {input.partition:q} "
        "--set dataset={wildcards.dataset:q} --set data_dir={params.data_dir:q} --out {output.npz:q} > {log:q} 2>&1"


# The same group jobs are planned under both groupings (a group: one dataset x N x block of
# `seeds_per_job` seeds, every cell), and every run folder is written by run_cell with one command, one
# list of inputs and one set of parameters, so that a run folder written under one profile is not planned
# again under the other (Snakemake reruns a job whose recorded command, inputs or params changed; see
# bladefl.experiments.runs.run_source). grouping: partition (the GPU profile, profiles/gpu): a group job
# computes all its cells, seeds and K stacked as one computation, whatever partition draws its seeds
# train on (docs/gpu.md), into a folder of its own, and run_cell moves each run to its place. grouping:
# cell (the default): a group job (local) computes nothing, and run_cell trains. Which of the two a group
# job does follows from its `gpu` resource (1: it holds the GPU and computes), a resource rather than a
# parameter because Snakemake records a job's parameters, not its resources.
if GROUPED:

    localrules:
        group_plan,
        run_cell,

else:

    localrules:
        group_plan,
        run_group,


# The plan of a group job (JSON for `bladefl run-group --plan`): removed once the job has run.
rule group_plan:
    output:
        temp(f"{RESULTS}/plans/{ENGINE}/{{group}}.json"),
    log:
        f"{LOGS}/group_plan/{ENGINE}/{{group}}.log",
    benchmark:
        f"{BENCHMARKS}/group_plan/{ENGINE}/{{group}}.tsv"
    params:
        plan=group_plan_json,
    run:
        write_logged(output[0], params.plan, log[0])


# The group's folder is not the job's output (its output is a mark left at the end): a killed group keeps
# the runs it finished, and its rerun skips them (`bladefl run-group` resumes); each run leaves it once
# run_cell has moved it. One wildcard rule holds every group, so a profile can set its resources by name.
rule run_group:
    input:
        raw=group_raw_files,
        partition=group_partition,
        reference=group_reference,
        engine=group_engine,
        plan=f"{RESULTS}/plans/{ENGINE}/{{group}}.json",
    output:
        temp(f"{GROUP_RUNS}/{{group}}.done"),
    log:
        f"{LOGS}/run_group/{ENGINE}/{{group}}.log",
    benchmark:
        f"{BENCHMARKS}/run_group/{ENGINE}/{{group}}.tsv"
    conda:
        JOB_ENV
    threads: run_group_threads
    resources:
        mem_mb=16000 if GROUPED else 500,
        runtime=120 if GROUPED else 5,
        gpu=1 if GROUPED else 0,
    params:
        data_dir=raw_root_of_input,
        reference=reference_option,
    shell:
        "bladefl run-group --config {input.engine:q} --partition {input.partition:q} "
        "{params.reference:q} --plan @{input.plan:q} --set data_dir={params.data_dir:q} "
        "--threads {threads} --compute {resources.gpu} --quiet --done {output:q} > {log:q} 2>&1"


# One job per dataset x cell x seed, running all its K (grouping: cell); under grouping: partition a
# local job that moves the run its group computed to its place, before the next group starts
# (priority: a group holds every core, and a workflow stopped later keeps the moved runs).
rule run_cell:
    input:
        raw=dataset_raw_files,
        partition=cell_partition,
        reference=cell_reference,
        engine=dataset_engine,
        group=group_done,
    output:
        rounds=run_id.file(RUNS, "{dataset}", "{cell}", "{seed}", "rounds.csv"),
        summary=run_id.file(RUNS, "{dataset}", "{cell}", "{seed}", "summary.json"),
    log:
        run_id.folder(f"{LOGS}/run/{ENGINE}", "{dataset}", "{cell}", "{seed}") + ".log",
    benchmark:
        (
            run_id.folder(
                f"{BENCHMARKS}/run_cell/{ENGINE}", "{dataset}", "{cell}", "{seed}"
            )
            + ".tsv"
        )
    priority: 10 if GROUPED else 0
    conda:
        JOB_ENV
    threads: 1 if GROUPED else config["threads_per_run"]
    # a run peaks at ~1.5 GB and takes 1-3 min on one 2-core x86_64 thread: a margin, and more at each retry
    resources:
        mem_mb=lambda wildcards, attempt: (1000 if GROUPED else 2000) * attempt,
        runtime=lambda wildcards, attempt: (5 if GROUPED else 15) * attempt,
    params:
        out=folder_of_output,
        data_dir=raw_root_of_input,
        sets=run_overrides,
        reference=reference_option,
        computed_in=run_in_group,
    shell:
        "bladefl run --config {input.engine:q} --partition {input.partition:q} "
        "{params.reference:q} --out {params.out:q} --group {input.group:q} --computed-in {params.computed_in:q} "
        "--set data_dir={params.data_dir:q} {params.sets:q} --threads {threads} --quiet > {log:q} 2>&1"


localrules:
    members,


rule members:
    output:
        MEMBERS,
    log:
        f"{LOGS}/members.log",
    benchmark:
        f"{BENCHMARKS}/members/members.tsv"
    params:
        members=wc_cfg.members_json(config),
    run:
        write_logged(output[0], params.members, log[0])


rule summarize:
    input:
        runs=dataset_run_summaries,
        members=MEMBERS,
    output:
        table=f"{RESULTS}/summary/{{dataset}}.csv",
        optimum=f"{RESULTS}/summary/{{dataset}}_optimum.csv",
    log:
        f"{LOGS}/summarize/{{dataset}}.log",
    benchmark:
        f"{BENCHMARKS}/summarize/{{dataset}}.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "bladefl summarize --runs {input.runs:q} --members @{input.members:q} "
        "--table {output.table:q} --optimum {output.optimum:q} > {log:q} 2>&1"


rule provenance:
    input:
        runs=dataset_run_summaries,
    output:
        f"{RESULTS}/provenance/{{dataset}}.csv",
    log:
        f"{LOGS}/provenance/{{dataset}}.log",
    benchmark:
        f"{BENCHMARKS}/provenance/{{dataset}}.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "bladefl provenance --runs {input.runs:q} --out {output:q} > {log:q} 2>&1"


# Each run's chains (chain id, tip, block count), for `bladefl chain verify --anchor`: a record kept
# outside the run folders (a kept bundle holds it), so a ledger rewritten with the seed's keys is caught.
rule anchors:
    input:
        runs=dataset_run_summaries,
    output:
        f"{RESULTS}/anchors/{{dataset}}.json",
    log:
        f"{LOGS}/anchors/{{dataset}}.log",
    benchmark:
        f"{BENCHMARKS}/anchors/{{dataset}}.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "bladefl chain anchor --summary {input.runs:q} --out {output:q} > {log:q} 2>&1"


rule paper_comparison:
    input:
        summary=f"{RESULTS}/summary/{{dataset}}.csv",
        optimum=f"{RESULTS}/summary/{{dataset}}_optimum.csv",
        paper_values=own("config/paper_values.yaml"),
    output:
        csv=f"{RESULTS}/tables/{{dataset}}_paper_comparison.csv",
        md=f"{RESULTS}/tables/{{dataset}}_paper_comparison.md",
    log:
        f"{LOGS}/paper_comparison/{{dataset}}.log",
    benchmark:
        f"{BENCHMARKS}/paper_comparison/{{dataset}}.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        t_sum=config["t_sum"],
    shell:
        "bladefl paper-comparison --dataset {wildcards.dataset:q} --summary {input.summary:q} "
        "--optimum {input.optimum:q} --paper-values {input.paper_values:q} --t-sum {params.t_sum:q} "
        "--out {output.csv:q} > {log:q} 2>&1"
