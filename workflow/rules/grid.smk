# The experiment grid: one job per dataset x cell x seed, each running all the cell's K.


include: "helpers/grid.smk"


rule reference:
    input:
        raw=dataset_raw_files,
        partition=f"{PARTITIONS}/{{dataset}}/{{key}}.npy",
        engine=f"config/engines/{ENGINE}.yaml",
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
        "bladefl reference --config {input.engine} --partition {input.partition} "
        "--set dataset={wildcards.dataset} --set data_dir={params.data_dir} --out {output.npz} > {log} 2>&1"


localrules:
    group_plan,


# The plan of a run-group job (JSON for `bladefl run-group --plan`): removed once the job has run.
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


if not GROUPED:

    # grouping: cell (the default): one job per dataset x cell x seed, each running all its K.
    rule run_cell:
        input:
            raw=dataset_raw_files,
            partition=cell_partition,
            reference=cell_reference,
            engine=f"config/engines/{ENGINE}.yaml",
        output:
            rounds=run_id.file(RUNS, "{dataset}", "{cell}", "{seed}", "rounds.csv"),
            summary=run_id.file(RUNS, "{dataset}", "{cell}", "{seed}", "summary.json"),
        log:
            run_id.folder(f"{LOGS}/run/{ENGINE}", "{dataset}", "{cell}", "{seed}")
            + ".log",
        benchmark:
            run_id.folder(
                f"{BENCHMARKS}/run_cell/{ENGINE}", "{dataset}", "{cell}", "{seed}"
            )
            + ".tsv"
        conda:
            JOB_ENV
        threads: config["threads_per_run"]
        resources:
            mem_mb=3000,
            runtime=60,
        params:
            out=folder_of_output,
            data_dir=raw_root_of_input,
            sets=run_overrides,
            reference=reference_option,
        shell:
            "bladefl run --config {input.engine} --partition {input.partition} "
            "{params.reference} --out {params.out} "
            "--set data_dir={params.data_dir} {params.sets} --threads {threads} --quiet > {log} 2>&1"

else:

    # grouping: partition (the GPU profile, profiles/gpu): one job per dataset x N x block of seeds, all its
    # cells, seeds and K stacked as one computation, whatever partition draws its seeds train on (see
    # docs/gpu.md). It writes its runs into a folder of its own, so that one wildcard rule holds every
    # group and a profile can set its resources by name. The folder is not the job's output (its
    # output is a mark left at the end): a killed group keeps the runs it finished, and its rerun
    # skips them (`bladefl run-group` resumes); each run leaves it once moved to its place.
    localrules:
        run_of_group,

    rule run_group:
        input:
            raw=group_raw_files,
            partition=group_partition,
            reference=group_reference,
            engine=f"config/engines/{ENGINE}.yaml",
            plan=f"{RESULTS}/plans/{ENGINE}/{{group}}.json",
        output:
            temp(f"{GROUP_RUNS}/{{group}}.done"),
        log:
            f"{LOGS}/run_group/{ENGINE}/{{group}}.log",
        benchmark:
            f"{BENCHMARKS}/run_group/{ENGINE}/{{group}}.tsv"
        conda:
            JOB_ENV
        threads: config["threads_per_group"]
        resources:
            mem_mb=16000,
            runtime=120,
            gpu=1,
        params:
            data_dir=raw_root_of_input,
            reference=reference_option,
        shell:
            "bladefl run-group --config {input.engine} --partition {input.partition} "
            "{params.reference} --plan @{input.plan} --set data_dir={params.data_dir} "
            "--threads {threads} --quiet > {log} 2>&1 && touch {output}"

    # Each run of a group moved from the group's folder to its place in the grid (what the
    # analyses read, as under grouping: cell), the emptied folders removed. Before the next group
    # starts (priority): a group holds every core, and a workflow stopped later keeps the moved runs.
    rule run_of_group:
        input:
            group_done,
        output:
            rounds=run_id.file(RUNS, "{dataset}", "{cell}", "{seed}", "rounds.csv"),
            summary=run_id.file(RUNS, "{dataset}", "{cell}", "{seed}", "summary.json"),
        log:
            run_id.folder(
                f"{LOGS}/run_of_group/{ENGINE}", "{dataset}", "{cell}", "{seed}"
            )
            + ".log",
        benchmark:
            run_id.folder(
                f"{BENCHMARKS}/run_of_group/{ENGINE}", "{dataset}", "{cell}", "{seed}"
            )
            + ".tsv"
        priority: 10
        params:
            src=run_in_group,
            dst=folder_of_output,
        shell:
            "(cp -R {params.src}/. {params.dst}/ && rm -rf {params.src} && "
            "rmdir -p --ignore-fail-on-non-empty $(dirname {params.src})) > {log} 2>&1"


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
        "bladefl summarize --runs {input.runs} --members @{input.members} "
        "--table {output.table} --optimum {output.optimum} > {log} 2>&1"


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
        "bladefl provenance --runs {input.runs} --out {output} > {log} 2>&1"


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
        "bladefl chain anchor --summary {input.runs} --out {output} > {log} 2>&1"


rule paper_comparison:
    input:
        summary=f"{RESULTS}/summary/{{dataset}}.csv",
        optimum=f"{RESULTS}/summary/{{dataset}}_optimum.csv",
        paper_values="config/paper_values.yaml",
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
        "bladefl paper-comparison --dataset {wildcards.dataset} --summary {input.summary} "
        "--optimum {input.optimum} --paper-values {input.paper_values} --t-sum {params.t_sum} "
        "--out {output.csv} > {log} 2>&1"
