# The bound against the experiments: constants, fits, gaps, K* and claims per dataset.


rule bound:
    input:
        runs=dataset_run_summaries,
        references=dataset_references,
    output:
        [f"{BOUND}/{{dataset}}/{f}" for f in BOUND_FILES],
    log:
        "logs/bound/{dataset}.log",
    benchmark:
        "benchmarks/bound/{dataset}.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    params:
        members=wc_cfg.members_json(config),
        out_dir=folder_of_output,
    shell:
        "bladefl bound --runs {input.runs} --members {params.members:q} "
        "--references {input.references} --out-dir {params.out_dir} > {log} 2>&1"
