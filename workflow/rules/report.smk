# The report: parameterised notebooks executed by papermill, rendered to HTML by nbconvert,
# and a front page that opens with the verdict table.

localrules:
    kernel,
    dump_config,
    notebook,
    report_index,


rule kernel:
    output:
        f"{REPORT}/.kernel-bladefl",
    log:
        "logs/report/kernel.log",
    conda:
        "../../envs/environment.yaml"
    shell:
        "python -m ipykernel install --sys-prefix --name bladefl --display-name BLADE-FL > {log} 2>&1 "
        "&& touch {output}"


rule dump_config:
    output:
        f"{REPORT}/config.yaml",
    log:
        "logs/report/config.log",
    run:
        dump_workflow_config(config, output[0])


rule notebook:
    input:
        unpack(notebook_inputs),
        notebook="notebooks/{nb}.ipynb",
        kernel=f"{REPORT}/.kernel-bladefl",
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
    params:
        args=notebook_params,
        index=f"{REPORT}/index.html",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    log:
        "logs/report/{dataset}/{nb}.log",
    benchmark:
        "benchmarks/report/{dataset}/{nb}.tsv"
    conda:
        "../../envs/environment.yaml"
    shell:
        "mkdir -p {output.figures} {output.tables} && "
        "papermill {input.notebook} {output.executed} -k bladefl {params.args} "
        "-p figures_dir {output.figures} -p tables_dir {output.tables} > {log} 2>&1 && "
        "bladefl render-page {output.executed} --out {output.html} --index {params.index} >> {log} 2>&1"


rule report_index:
    input:
        pages=lambda wc: report_pages(),
        verdicts=expand(f"{RESULTS}/tables/{{dataset}}/00_verdicts", dataset=DATASETS),
        summaries=expand(f"{RESULTS}/summary/{{dataset}}.csv", dataset=DATASETS),
        paper_values="config/paper_values.yaml",
    output:
        index=report(f"{REPORT}/index.html", category="Report", caption="../report/index.rst"),
        figures=multiext(f"{RESULTS}/figures/report/headline", ".png", ".svg"),
    params:
        configfiles=" ".join(map(str, workflow.configfiles)),
        seeds=" ".join(map(str, SEEDS)),
        figures=lambda wc, output: Path(output.figures[0]).parent,
        t_sum=config["t_sum"],
    log:
        "logs/report/index.log",
    conda:
        "../../envs/environment.yaml"
    shell:
        "bladefl report-index --verdicts {input.verdicts} --pages {input.pages} --summaries {input.summaries} "
        "--paper-values {input.paper_values} --t-sum {params.t_sum} --configfiles {params.configfiles} "
        "--seeds {params.seeds} --figures {params.figures} --out {output.index} > {log} 2>&1"
