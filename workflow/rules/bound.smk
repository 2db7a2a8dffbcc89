# The bound against the experiments: constants, fits, gaps, K* and claims per dataset.


rule bound:
    input:
        runs=lambda wc: run_summaries(wc.dataset),
        references=lambda wc: expand(f"{REFERENCES}/{wc.dataset}/{{key}}.npz", key=PARTITION_KEYS.values()),
    output:
        [f"{BOUND}/{{dataset}}/{f}" for f in BOUND_FILES],
    params:
        members=wc_cfg.members_json(config),
        out_dir=lambda wc, output: Path(output[0]).parent,
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    log:
        "logs/bound/{dataset}.log",
    benchmark:
        "benchmarks/bound/{dataset}.tsv"
    conda:
        "../../envs/environment.yaml"
    shell:
        "bladefl bound --runs {input.runs} --members {params.members:q} "
        "--references {input.references} --out-dir {params.out_dir} > {log} 2>&1"
