# Data: fetch the raw IDX files (one local job per dataset) and write non-IID partitions.

localrules:
    fetch_data,


rule fetch_data:
    output:
        [f"{RAW}/{{tv}}/raw/{f}" for f in FILES],
    params:
        dataset=lambda wc: DATASET_OF_TV[wc.tv],
        root=lambda wc, output: raw_root(output[0]),
        sources=" ".join(config["fetch_sources"]),
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    log:
        "logs/fetch/{tv}.log",
    benchmark:
        "benchmarks/fetch/{tv}.tsv"
    conda:
        "../../envs/environment.yaml"
    shell:
        "bladefl fetch --dataset {params.dataset} --root {params.root} "
        "--sources {params.sources} > {log} 2>&1"


rule partition:
    input:
        lambda wc: raw_files(wc.dataset),
    output:
        multiext(f"{PARTITIONS}/{{dataset}}/{{key}}", ".npy", ".json", ".png"),
    params:
        root=lambda wc, input: raw_root(input[0]),
        out=lambda wc, output: Path(output[0]).parent.parent,
    log:
        "logs/partition/{dataset}/{key}.log",
    conda:
        "../../envs/environment.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "bladefl partition --dataset {wildcards.dataset} --key {wildcards.key} "
        "--root {params.root} --out {params.out} > {log} 2>&1"
