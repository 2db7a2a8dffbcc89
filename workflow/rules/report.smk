# The report: parameterised notebooks executed by papermill (parameters from a YAML file that
# lists every input file explicitly; `bladefl run-page` gives each its own kernel on private sockets,
# so pages run side by side without racing for TCP ports), each rendered to a stand-alone HTML
# page, and a front page with the verdicts, a headline figure and a provenance line.


include: "helpers/report.smk"


localrules:
    dump_config,
    notebook_parameters,
    notebook,
    report_index,


rule dump_config:
    output:
        f"{REPORT}/config.yaml",
    log:
        f"{LOGS}/report/config.log",
    benchmark:
        f"{BENCHMARKS}/dump_config/config.tsv"
    run:
        write_yaml_logged(output[0], dict(config), log[0])


# A page's parameters (removed once its notebook has run: the executed notebook holds them).
rule notebook_parameters:
    output:
        temp(f"{REPORT}/parameters/{{dataset}}/{{nb}}.yaml"),
    log:
        f"{LOGS}/report/{{dataset}}/{{nb}}.parameters.log",
    benchmark:
        f"{BENCHMARKS}/notebook_parameters/{{dataset}}/{{nb}}.tsv"
    params:
        values=notebook_parameters,
    run:
        write_yaml_logged(output[0], params.values, log[0])


rule notebook:
    input:
        unpack(notebook_inputs),
        notebook=own("notebooks/{nb}.ipynb"),
        parameters=f"{REPORT}/parameters/{{dataset}}/{{nb}}.yaml",
    output:
        executed=f"{REPORT}/notebooks/{{dataset}}/{{nb}}.ipynb",
        html=f"{REPORT}/{{dataset}}/{{nb}}.html",
        figures=report(
            directory(f"{RESULTS}/figures/{{dataset}}/{{nb}}"),
            patterns=["{name}.png"],
            category="Figures",
            subcategory="{dataset}",
        ),
        tables=report(
            directory(f"{RESULTS}/tables/{{dataset}}/{{nb}}"),
            patterns=["{name}.csv"],
            category="Tables",
            subcategory="{dataset}",
        ),
    log:
        f"{LOGS}/report/{{dataset}}/{{nb}}.log",
    benchmark:
        f"{BENCHMARKS}/notebook/{{dataset}}/{{nb}}.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    params:
        index=page_index,
        results=results_root,
        data=data_root,
    shell:
        "mkdir -p {output.figures:q} {output.tables:q} && "
        "bladefl run-page {input.notebook:q} --parameters {input.parameters:q} --executed {output.executed:q} "
        "--out {output.html:q} --index {params.index:q} --results-dir {params.results:q} "
        "--data-dir {params.data:q} > {log:q} 2>&1"


rule report_index:
    input:
        pages=report_pages,
        verdicts=expand(f"{RESULTS}/verdicts/{{dataset}}.csv", dataset=DATASETS),
        tables=expand(f"{RESULTS}/tables/{{dataset}}/00_verdicts", dataset=DATASETS),
        summaries=expand(f"{RESULTS}/summary/{{dataset}}.csv", dataset=DATASETS),
        comparisons=expand(
            f"{RESULTS}/tables/{{dataset}}_paper_comparison.csv", dataset=DATASETS
        ),
        calibration=calibration_outcomes_kept,
    output:
        figures=multiext(f"{RESULTS}/figures/report/headline", ".png", ".svg"),
        index=report(
            f"{REPORT}/index.html", category="Report", caption="../report/index.rst"
        ),
    log:
        f"{LOGS}/report/index.log",
    benchmark:
        f"{BENCHMARKS}/report_index/index.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        configfiles=list(map(str, workflow.configfiles)),
        seeds=list(map(str, SEEDS)),
        figures=folder_of_output,
        provenance=provenance_tables,
        calibration=calibration_page_option,
        engine=ENGINE,
        beside=readings_beside_option,
    shell:
        "bladefl report-index --verdicts {input.verdicts:q} --provenance {params.provenance:q} "
        "--pages {input.pages:q} --summaries {input.summaries:q} --comparisons {input.comparisons:q} "
        "--configfiles {params.configfiles:q} --seeds {params.seeds:q} --figures {params.figures:q} "
        "--calibration {input.calibration:q} {params.calibration:q} --engine {params.engine:q} {params.beside:q} "
        "--out {output.index:q} > {log:q} 2>&1"


# The report's inputs kept for good (`make keep NAME=...`, docs/gpu.md): reference/<name>/ with a
# manifest (write-protected: keeping again under the same name needs the old bundle removed first);
# `make reference-report` renders the report from such a folder without running anything.
rule keep:
    input:
        unpack(kept_inputs),
        config=f"{REPORT}/config.yaml",
    output:
        protected("reference/{name}/MANIFEST.json"),
    log:
        f"{LOGS}/keep/{{name}}.log",
    benchmark:
        f"{BENCHMARKS}/keep/{{name}}.tsv"
    conda:
        JOB_ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        results=results_root,
        data=data_root,
        imported=imported_option,
    shell:
        "bladefl keep --files {input.files:q} --provenance {input.provenance:q} {params.imported:q} "
        "--results-dir {params.results:q} --data-dir {params.data:q} --config-file {input.config:q} "
        "--out reference/{wildcards.name:q} > {log:q} 2>&1"
