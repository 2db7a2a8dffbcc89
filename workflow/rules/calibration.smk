# The calibration study (config `calibration`; docs/calibration.md): per dataset, the search's
# workers sharing one Optuna journal, the points picked from its Pareto front, their second pass on
# more draws over every K, the tables and verdicts of the stated and the picked readings.


include: "helpers/calibration.smk"


rule calibration_spec:
    output:
        f"{CAL}/{{dataset}}/spec.json",
    log:
        f"{LOGS}/calibration/{{dataset}}/spec.log",
    benchmark:
        f"{BENCHMARKS}/calibration_spec/{{dataset}}.tsv"
    params:
        spec=calibration_spec_param,
    run:
        write_logged(output[0], params.spec, log[0])


rule calibration_search:
    input:
        raw=dataset_raw_files,
        spec=f"{CAL}/{{dataset}}/spec.json",
        engine=dataset_engine,
    output:
        f"{CAL}/{{dataset}}/workers/{{worker}}.json",
    log:
        f"{LOGS}/calibration/{{dataset}}/search_{{worker}}.log",
    benchmark:
        f"{BENCHMARKS}/calibration_search/{{dataset}}/{{worker}}.tsv"
    conda:
        JOB_ENV
    threads: config["threads_per_run"]
    resources:
        mem_mb=3000,
        runtime=600,
    params:
        storage=f"{CAL}/{{dataset}}/study.journal",
        trials=f"{CAL}/{{dataset}}/trials",
    shell:
        "bladefl calibrate --spec {input.spec:q} --storage {params.storage:q} --trials-dir {params.trials:q} "
        "--worker {wildcards.worker:q} --threads {threads} --done {output:q} > {log:q} 2>&1"


rule calibration_pick:
    input:
        spec=f"{CAL}/{{dataset}}/spec.json",
        workers=expand(
            f"{CAL}/{{{{dataset}}}}/workers/{{worker}}.json", worker=CAL_WORKERS
        ),
    output:
        f"{CAL}/{{dataset}}/picked.json",
    log:
        f"{LOGS}/calibration/{{dataset}}/pick.log",
    benchmark:
        f"{BENCHMARKS}/calibration_pick/{{dataset}}.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        storage=f"{CAL}/{{dataset}}/study.journal",
    shell:
        "bladefl calibration-pick --spec {input.spec:q} --storage {params.storage:q} --out {output:q} > {log:q} 2>&1"


rule calibration_rerun:
    input:
        raw=dataset_raw_files,
        spec=f"{CAL}/{{dataset}}/spec.json",
        picked=f"{CAL}/{{dataset}}/picked.json",
    output:
        runs=calibration_rerun_outputs(),
        engine=f"{CAL}/{{dataset}}/rerun/{{role}}/engine.yaml",
    log:
        f"{LOGS}/calibration/{{dataset}}/rerun_{{role}}.log",
    benchmark:
        f"{BENCHMARKS}/calibration_rerun/{{dataset}}/{{role}}.tsv"
    conda:
        JOB_ENV
    threads: config["threads_per_run"]
    resources:
        mem_mb=3000,
        runtime=600,
    params:
        out_dir=lambda w, output: Path(output.engine).parent,
        trials=f"{CAL}/{{dataset}}/trials",
    shell:
        "bladefl calibration-rerun --spec {input.spec:q} --picked {input.picked:q} --role {wildcards.role:q} "
        "--out-dir {params.out_dir:q} --trials-dir {params.trials:q} --threads {threads} > {log:q} 2>&1"


rule calibration_members:
    output:
        f"{CAL}/{{dataset}}/members.json",
    log:
        f"{LOGS}/calibration/{{dataset}}/members.log",
    benchmark:
        f"{BENCHMARKS}/calibration_members/{{dataset}}.tsv"
    params:
        members=calibration_members_param,
    run:
        write_logged(output[0], params.members, log[0])


# The second pass's tables and verdicts per role: the grid's rules on the role's runs.
use rule summarize as calibration_summarize with:
    input:
        runs=calibration_role_runs,
        members=f"{CAL}/{{dataset}}/members.json",
    output:
        table=f"{CAL}/{{dataset}}/{{role}}/summary.csv",
        optimum=f"{CAL}/{{dataset}}/{{role}}/optimum.csv",
    log:
        f"{LOGS}/calibration/{{dataset}}/summarize_{{role}}.log",
    benchmark:
        f"{BENCHMARKS}/calibration_summarize/{{dataset}}/{{role}}.tsv"


use rule verdicts as calibration_verdicts with:
    input:
        summary=f"{CAL}/{{dataset}}/{{role}}/summary.csv",
        members=f"{CAL}/{{dataset}}/members.json",
        statements=own("config/paper_statements.yaml"),
        paper_values=own("config/paper_values.yaml"),
        engine=f"{CAL}/{{dataset}}/rerun/{{role}}/engine.yaml",
    output:
        f"{CAL}/{{dataset}}/{{role}}/verdicts.csv",
    log:
        f"{LOGS}/calibration/{{dataset}}/verdicts_{{role}}.log",
    benchmark:
        f"{BENCHMARKS}/calibration_verdicts/{{dataset}}/{{role}}.tsv"
    params:
        t_sum=config["t_sum"],
        bound=verdict_margin_options,


use rule provenance as calibration_provenance with:
    input:
        runs=lambda w: [
            f for r in CAL_ROLES for f in calibration_role_runs(RoleOf(w.dataset, r))
        ],
    output:
        f"{CAL}/{{dataset}}/provenance.csv",
    log:
        f"{LOGS}/calibration/{{dataset}}/provenance.log",
    benchmark:
        f"{BENCHMARKS}/calibration_provenance/{{dataset}}.tsv"


rule calibration_tables:
    input:
        spec=f"{CAL}/{{dataset}}/spec.json",
        picked=f"{CAL}/{{dataset}}/picked.json",
        runs=lambda w: [
            f for r in CAL_ROLES for f in calibration_role_runs(RoleOf(w.dataset, r))
        ],
    output:
        **{k: v for k, v in calibration_table_files("{dataset}").items()},
        engine=f"{CAL}/{{dataset}}/calibrated-{{dataset}}.yaml",
    log:
        f"{LOGS}/calibration/{{dataset}}/tables.log",
    benchmark:
        f"{BENCHMARKS}/calibration_tables/{{dataset}}.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        storage=f"{CAL}/{{dataset}}/study.journal",
        roots=calibration_roots,
        trials=f"{CAL}/{{dataset}}/trials",
        out_dir=folder_of_output,
    shell:
        "bladefl calibration-tables --spec {input.spec:q} --storage {params.storage:q} --picked {input.picked:q} "
        "--roots {params.roots:q} --trials-dir {params.trials:q} --out-dir {params.out_dir:q} > {log:q} 2>&1"


localrules:
    calibration_spec,
    calibration_members,


# The study's front page is its report's index (a calibration config's report is the study's).
if CALIBRATION:

    rule calibration_index:
        input:
            outcomes=expand(f"{CAL}/{{dataset}}/outcome.json", dataset=DATASETS),
            pages=expand(f"{REPORT}/{{dataset}}/07_calibration.html", dataset=DATASETS),
        output:
            f"{REPORT}/index.html",
        log:
            f"{LOGS}/calibration/index.log",
        benchmark:
            f"{BENCHMARKS}/calibration_index/index.tsv"
        conda:
            JOB_ENV
        threads: 1
        resources:
            mem_mb=1000,
            runtime=10,
        shell:
            "bladefl calibration-index --outcomes {input.outcomes:q} --pages {input.pages:q} --out {output:q} > {log:q} 2>&1"

    ruleorder: calibration_index > report_index

    localrules:
        calibration_index,
