# The experiment grid: one job per dataset x cell x seed, each running all the cell's K.


rule reference:
    input:
        raw=lambda wc: raw_files(wc.dataset),
        partition=f"{PARTITIONS}/{{dataset}}/{{key}}.npy",
        profile=f"config/profiles/{PROFILE}.yaml",
    output:
        npz=f"{REFERENCES}/{{dataset}}/{{key}}.npz",
        info=f"{REFERENCES}/{{dataset}}/{{key}}.json",
    params:
        data_dir=lambda wc, input: raw_root(input.raw[0]),
    threads: config["threads_per_run"]
    resources:
        mem_mb=3000,
        runtime=30,
    log:
        f"logs/reference/{PROFILE}/{{dataset}}/{{key}}.log",
    benchmark:
        f"benchmarks/reference/{PROFILE}/{{dataset}}/{{key}}.tsv"
    conda:
        "../../envs/environment.yaml"
    shell:
        "bladefl reference --config {input.profile} --partition {input.partition} "
        "--set dataset={wildcards.dataset} --set data_dir={params.data_dir} --out {output.npz} > {log} 2>&1"


rule run_cell:
    input:
        raw=lambda wc: raw_files(wc.dataset),
        partition=cell_partition,
        reference=cell_reference,
        profile=f"config/profiles/{PROFILE}.yaml",
    output:
        rounds=f"{RUNS}/{{dataset}}/{{cell}}/seed~{{seed}}/rounds.csv",
        summary=f"{RUNS}/{{dataset}}/{{cell}}/seed~{{seed}}/summary.json",
    params:
        out=lambda wc, output: Path(output.summary).parent,
        data_dir=lambda wc, input: raw_root(input.raw[0]),
        sets=lambda wc: " ".join(
            f"--set {s}"
            for s in [
                f"dataset={wc.dataset}",
                f"seed={wc.seed}",
                *CELLS[wc.cell].overrides(config["t_sum"]),
                *measure_overrides(CELLS[wc.cell]),
                *(f"partition.{k}={v}" for k, v in config["partition"].items()),
            ]
        ),
    threads: config["threads_per_run"]
    resources:
        mem_mb=3000,
        runtime=60,
    log:
        f"logs/run/{PROFILE}/{{dataset}}/{{cell}}/seed~{{seed}}.log",
    benchmark:
        f"benchmarks/run/{PROFILE}/{{dataset}}/{{cell}}/seed~{{seed}}.tsv"
    conda:
        "../../envs/environment.yaml"
    shell:
        "bladefl run --config {input.profile} --partition {input.partition} "
        "--reference {input.reference} --out {params.out} "
        "--set data_dir={params.data_dir} {params.sets} --threads {threads} --quiet > {log} 2>&1"


rule summarize:
    input:
        lambda wc: run_summaries(wc.dataset),
    output:
        table=f"{RESULTS}/summary/{{dataset}}.csv",
        optimum=f"{RESULTS}/summary/{{dataset}}_optimum.csv",
    params:
        members=wc_cfg.members_json(config),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    log:
        "logs/summarize/{dataset}.log",
    benchmark:
        "benchmarks/summarize/{dataset}.tsv"
    conda:
        "../../envs/environment.yaml"
    shell:
        "bladefl summarize --runs {input} --members {params.members:q} "
        "--table {output.table} --optimum {output.optimum} > {log} 2>&1"
