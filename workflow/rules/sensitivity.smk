# The sensitivity study (config `readings`): the grid under each reading of the paper's unstated
# settings, its tables and verdicts per reading, the ranking by distance to the paper, its pages.


include: "helpers/sensitivity.smk"


use rule group_plan as reading_plan with:
    output:
        temp(f"{SENS}/plans/{{reading}}/{{dataset}}/{run_id.seed_name('{seed}')}.json"),
    log:
        f"{LOGS}/sensitivity/plan/{{reading}}/{{dataset}}/{run_id.seed_name('{seed}')}.log",
    benchmark:
        f"{BENCHMARKS}/reading_plan/{{reading}}/{{dataset}}/{run_id.seed_name('{seed}')}.tsv"
    params:
        plan=reading_plan_json,


rule reading_runs:
    input:
        raw=dataset_raw_files,
        partition=reading_partition,
        engine=reading_engine,
        plan=f"{SENS}/plans/{{reading}}/{{dataset}}/{run_id.seed_name('{seed}')}.json",
    output:
        reading_run_outputs(),
    log:
        f"{LOGS}/sensitivity/run/{{reading}}/{{dataset}}/{run_id.seed_name('{seed}')}.log",
    benchmark:
        f"{BENCHMARKS}/reading_runs/{{reading}}/{{dataset}}/{run_id.seed_name('{seed}')}.tsv"
    conda:
        JOB_ENV
    threads: config["threads_per_run"]
    resources:
        mem_mb=3000,
        runtime=120,
    params:
        data_dir=raw_root_of_input,
    shell:
        "bladefl run-group --config {input.engine:q} --partition {input.partition:q} "
        "--plan @{input.plan:q} --set data_dir={params.data_dir:q} --threads {threads} --quiet > {log:q} 2>&1"


# The grid's tables and verdicts under each reading: the main grid's rules on the reading's runs.
use rule summarize as reading_summarize with:
    input:
        runs=reading_summaries,
        members=MEMBERS,
    output:
        table=f"{SENS}/{{reading}}/summary/{{dataset}}.csv",
        optimum=f"{SENS}/{{reading}}/summary/{{dataset}}_optimum.csv",
    log:
        f"{LOGS}/sensitivity/summarize/{{reading}}/{{dataset}}.log",
    benchmark:
        f"{BENCHMARKS}/reading_summarize/{{reading}}/{{dataset}}.tsv"


use rule verdicts as reading_verdicts with:
    input:
        summary=f"{SENS}/{{reading}}/summary/{{dataset}}.csv",
        members=MEMBERS,
        statements=own("config/paper_statements.yaml"),
        paper_values=own("config/paper_values.yaml"),
        engine=reading_engine,
    output:
        f"{SENS}/{{reading}}/verdicts/{{dataset}}.csv",
    log:
        f"{LOGS}/sensitivity/verdicts/{{reading}}/{{dataset}}.log",
    benchmark:
        f"{BENCHMARKS}/reading_verdicts/{{reading}}/{{dataset}}.tsv"
    params:
        t_sum=config["t_sum"],
        bound=verdict_margin_options,


rule sensitivity:
    input:
        unpack(sensitivity_inputs),
    output:
        **sensitivity_files("{dataset}"),
    log:
        f"{LOGS}/sensitivity/{{dataset}}.log",
    benchmark:
        f"{BENCHMARKS}/sensitivity/{{dataset}}.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        readings=list(READINGS),
        axes=[r.axis for r in READINGS.values()],
        t_sum=config["t_sum"],
        out_dir=folder_of_output,
    shell:
        "bladefl sensitivity --dataset {wildcards.dataset:q} --readings {params.readings:q} "
        "--axes {params.axes:q} --summaries {input.summaries:q} --optima {input.optima:q} "
        "--verdicts {input.verdicts:q} --paper-values {input.paper_values:q} --t-sum {params.t_sum:q} "
        "--out-dir {params.out_dir:q} > {log:q} 2>&1"


rule sensitivity_index:
    input:
        rankings=expand(f"{SENS}/{{dataset}}/ranking.csv", dataset=DATASETS),
        pages=expand(f"{REPORT}/{{dataset}}/06_sensitivity.html", dataset=DATASETS),
    output:
        f"{REPORT}/sensitivity.html",
    log:
        f"{LOGS}/sensitivity/index.log",
    benchmark:
        f"{BENCHMARKS}/sensitivity_index/index.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "bladefl sensitivity-index --rankings {input.rankings:q} --pages {input.pages:q} "
        "--out {output:q} > {log:q} 2>&1"


localrules:
    reading_plan,
    sensitivity_index,
