# Data: fetch the raw files (one local job per dataset) and write non-IID partitions.


include: "helpers/data.smk"


# One fetch job per dataset, its outputs the registry's files for it (their folder and names differ by
# dataset: MNIST's IDX files, Cifar-10's batches), so the rule is written once and instanced per dataset.
for _dataset in DATASETS:

    rule:
        name:
            f"fetch_data_{_dataset}"
        output:
            raw_files(_dataset),
        log:
            f"{LOGS}/fetch/{_dataset}.log",
        benchmark:
            f"{BENCHMARKS}/fetch_data_{_dataset}.tsv"
        localrule: True
        conda:
            JOB_ENV
        threads: 1
        resources:
            mem_mb=2000,
            runtime=20,
            fetch_sources=FETCH_SOURCES,
        params:
            dataset=_dataset,
            root=raw_root_of_output,
        shell:
            "bladefl fetch --dataset {params.dataset:q} --root {params.root:q} "
            "--sources {resources.fetch_sources} > {log:q} 2>&1"


rule partition:
    input:
        raw=dataset_raw_files,
    output:
        multiext(f"{PARTITIONS}/{{dataset}}/{{key}}", ".npy", ".json", ".png"),
    log:
        f"{LOGS}/partition/{{dataset}}/{{key}}.log",
    benchmark:
        f"{BENCHMARKS}/partition/{{dataset}}/{{key}}.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        root=raw_root_of_input,
        out=partitions_root_of_output,
    shell:
        "bladefl partition --dataset {wildcards.dataset:q} --key {wildcards.key:q} "
        "--root {params.root:q} --out {params.out:q} > {log:q} 2>&1"
