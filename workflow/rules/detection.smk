# Lazy-client detection over the grid (config `detection`): quality per detector and sweep point,
# and accuracy / K* with the flagged uploads excluded.


include: "helpers/detection.smk"


rule detection:
    input:
        runs=detection_run_summaries,
        members=MEMBERS,
    output:
        **detection_files("{dataset}"),
    log:
        f"{LOGS}/detection/{{dataset}}.log",
    benchmark:
        f"{BENCHMARKS}/detection/{{dataset}}.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        out_dir=folder_of_output,
        sweeps=config.get("detection", {}).get("exclude_sweeps", []),
    shell:
        "bladefl detection --runs {input.runs:q} --members @{input.members:q} "
        "--exclude-sweeps {params.sweeps:q} --out-dir {params.out_dir:q} > {log:q} 2>&1"
