# The bound against the experiments: constants, fits, gaps, K* and claims per dataset.


include: "helpers/bound.smk"


rule bound:
    input:
        runs=bound_run_summaries,
        references=dataset_references,
        members=MEMBERS,
    output:
        [f"{BOUND}/{{dataset}}/{f}" for f in BOUND_FILES],
    log:
        f"{LOGS}/bound/{{dataset}}.log",
    benchmark:
        f"{BENCHMARKS}/bound/{{dataset}}.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    params:
        out_dir=folder_of_output,
    shell:
        "bladefl bound --runs {input.runs:q} --members @{input.members:q} "
        "--references {input.references:q} --out-dir {params.out_dir:q} > {log:q} 2>&1"


rule verdicts:
    input:
        unpack(verdict_bound_inputs),
        summary=f"{RESULTS}/summary/{{dataset}}.csv",
        members=MEMBERS,
        statements=own("config/paper_statements.yaml"),
        paper_values=own("config/paper_values.yaml"),
        engine=dataset_engine,
    output:
        f"{RESULTS}/verdicts/{{dataset}}.csv",
    log:
        f"{LOGS}/verdicts/{{dataset}}.log",
    benchmark:
        f"{BENCHMARKS}/verdicts/{{dataset}}.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    params:
        t_sum=config["t_sum"],
        bound=verdict_bound_options,
    shell:
        "bladefl verdicts --dataset {wildcards.dataset:q} --summary {input.summary:q} "
        "--members @{input.members:q} --t-sum {params.t_sum:q} {params.bound:q} --statements {input.statements:q} "
        "--paper-values {input.paper_values:q} --engine {input.engine:q} --out {output:q} > {log:q} 2>&1"
