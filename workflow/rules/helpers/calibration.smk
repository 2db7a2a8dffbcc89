# Helpers of calibration.smk (its globals, wildcard constraints and input/parameter functions).
# The calibration study (config `calibration`, e.g. config/calibration.yaml): the unstated settings
# searched jointly (docs/calibration.md).
from collections import namedtuple

from bladefl.experiments.calibration import study as cal_study

# A role's wildcards, for calling the input functions outside a job.
RoleOf = namedtuple("RoleOf", "dataset role")

CALIBRATION = bool(config.get("calibration"))
CAL = f"{RESULTS}/calibration"
CAL_WORKERS = [
    f"w{i}" for i in range(int(config.get("calibration", {}).get("workers", 1)))
]
CAL_TABLE_FILES = [
    "trials.csv",
    "trial_rows.csv",
    "second_rows.csv",
    "second.csv",
    "per_table.csv",
    "repeated.csv",
    "importances.csv",
    "conventions.csv",
    "outcome.json",
]


def calibration_spec_text(dataset):
    """The study spec of a dataset (JSON), as every calibration job reads it."""
    return cal_study.spec_from_files(
        config,
        own("config/paper_values.yaml"),
        dataset,
        engine_of(dataset),
        RAW,
    )


# The study per dataset (its rows, draws and roles), worked out once when the workflow is parsed.
def _calibration_specs():
    try:
        return {d: cal_study.load_spec(calibration_spec_text(d)) for d in DATASETS}
    except ValueError as exc:  # one line naming the field, before any job
        raise wc_cfg.ConfigError(f"invalid config: {exc}") from None


CAL_SPECS = _calibration_specs() if CALIBRATION else {}
CAL_ROLES = next(iter(CAL_SPECS.values())).roles if CAL_SPECS else ["stated"]


wildcard_constraints:
    worker="w[0-9]+",
    role="stated|best[0-9]+",


def calibration_spec_param(wildcards):
    return calibration_spec_text(wildcards.dataset)


def calibration_rerun_outputs():
    """Every run of a role's second pass (each row's cell on each draw); none without a study."""
    if not CAL_SPECS:
        return []
    spec = next(iter(CAL_SPECS.values()))
    root = f"{CAL}/{{dataset}}/rerun/{{role}}"
    return [
        run_id.file(root, "{dataset}", c.key, d, "summary.json")
        for c in spec.second.cells()
        for d in spec.second.draws
    ]


def calibration_role_runs(wildcards):
    spec = CAL_SPECS[wildcards.dataset]
    root = f"{CAL}/{wildcards.dataset}/rerun/{wildcards.role}"
    return [
        run_id.file(root, wildcards.dataset, c.key, d, "summary.json")
        for c in spec.second.cells()
        for d in spec.second.draws
    ]


def calibration_members_param(wildcards):
    return cal_study.members_json(CAL_SPECS[wildcards.dataset])


def calibration_roots(wildcards):
    return [f"{r}={CAL}/{wildcards.dataset}/rerun/{r}" for r in CAL_ROLES]


def calibration_table_files(dataset):
    return {
        Path(f).stem if not f.endswith(".json") else "outcome": f"{CAL}/{dataset}/{f}"
        for f in CAL_TABLE_FILES
    }


def calibration_page_files(dataset):
    """What a dataset's calibration page reads: the study's tables and each role's verdicts."""
    files = calibration_table_files(dataset)
    return {
        "trials": files["trials"],
        "second_rows": files["second_rows"],
        "second": files["second"],
        "per_table": files["per_table"],
        "repeated": files["repeated"],
        "importances": files["importances"],
        "outcome": files["outcome"],
        "verdicts": [f"{CAL}/{dataset}/{r}/verdicts.csv" for r in CAL_ROLES],
    }


def calibration_kept_inputs():
    """What `make keep` copies of a calibration: each dataset's page inputs, the study itself (its
    spec, journal, picked points, calibrated engine) and the second pass's provenance.
    """
    files = []
    for d in DATASETS:
        for v in calibration_page_files(d).values():
            files += [v] if isinstance(v, str) else v
        files += [
            f"{CAL}/{d}/{f}"
            for f in (
                "spec.json",
                "study.journal",
                "picked.json",
                f"calibrated-{d}.yaml",
                "conventions.csv",
            )
        ]
    provenance = [f"{CAL}/{d}/provenance.csv" for d in DATASETS]
    return {"files": sorted(set(files)), "provenance": provenance}


def calibration_outcomes_kept(wildcards):
    """The kept calibration bundle's outcome of each dataset (config `calibration_bundle`), where it
    holds one: the report's front page says from it why our numbers differ from the paper's.
    """
    bundle = config.get("calibration_bundle", "")
    found = [f"{bundle}/results/calibration/{d}/outcome.json" for d in DATASETS]
    return [f for f in found if bundle and Path(f).is_file()]


def calibration_page_option(wildcards):
    """`--calibration-page` with where `make reference-report` renders the kept calibration bundle."""
    bundle = config.get("calibration_bundle", "")
    if not bundle:
        return []
    return ["--calibration-page", f"results/kept/{Path(bundle).name}/report/index.html"]
