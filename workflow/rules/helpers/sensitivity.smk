# Helpers of sensitivity.smk (its globals, wildcard constraints and input/parameter functions).
# The sensitivity study (config `readings`, e.g. config/sensitivity.yaml): the grid once per reading.
READINGS = {r.name: r for r in rd.readings(config)}
SENSITIVITY = bool(READINGS)
SENS = f"{RESULTS}/sensitivity"


wildcard_constraints:
    reading="[a-z0-9][a-z0-9.-]*",


def reading_engine(wildcards):
    return own(f"config/engines/{READINGS[wildcards.reading].engine}.yaml")


def reading_partition(wildcards):
    """The partition of a reading (its scheme, the seed's draw); the study's cells share one N."""
    (N,) = {c.N for c in wc_cfg.cells(config)}
    seen = rd.reading_config(config, READINGS[wildcards.reading])
    key = wc_cfg.partition_spec(seen, N, int(wildcards.seed)).key
    return f"{PARTITIONS}/{wildcards.dataset}/{key}.npy"


def reading_plan_json(wildcards):
    return wc_cfg.reading_plan(
        config,
        READINGS[wildcards.reading],
        wildcards.dataset,
        int(wildcards.seed),
        f"{SENS}/runs",
    )


def reading_run_outputs():
    root = f"{SENS}/runs/{{reading}}"
    return [
        run_id.file(root, "{dataset}", c.key, "{seed}", "summary.json")
        for c in wc_cfg.cells(config)
    ]


def reading_summaries(wildcards):
    root = f"{SENS}/runs/{wildcards.reading}"
    return summaries(root, wildcards.dataset, [c.key for c in wc_cfg.cells(config)])


def sensitivity_inputs(wildcards):
    d = wildcards.dataset
    return {
        "summaries": [f"{SENS}/{r}/summary/{d}.csv" for r in READINGS],
        "optima": [f"{SENS}/{r}/summary/{d}_optimum.csv" for r in READINGS],
        "verdicts": [f"{SENS}/{r}/verdicts/{d}.csv" for r in READINGS],
        "paper_values": own("config/paper_values.yaml"),
    }


def sensitivity_files(dataset):
    return {
        f: f"{SENS}/{dataset}/{f}.csv"
        for f in ("ranking", "verdict_changes", "curves", "paper_points")
    }
