# Helpers of detection.smk (its globals, wildcard constraints and input/parameter functions).
DETECTION_FILES = ["quality", "per_round", "roc", "exclusion", "exclusion_curves"]
DETECTING = bool(wc_cfg.detectors(config)) and bool(wc_cfg.lazy_members(config))


def detection_files(dataset):
    return {f: f"{RESULTS}/detection/{dataset}/{f}.csv" for f in DETECTION_FILES}


def detection_run_summaries(wildcards):
    """The runs with lazy clients (their detections.csv) and the exclusion sweeps' points."""
    sweeps = set(config.get("detection", {}).get("exclude_sweeps", []))
    cells = {m.cell.key for m in wc_cfg.lazy_members(config)}
    cells |= {m.cell.key for m in wc_cfg.members(config) if m.sweep in sweeps}
    cells |= {c.key for c in wc_cfg.detection_cells(config)}
    return summaries(RUNS, wildcards.dataset, sorted(cells))
