"""The report front page's inputs (``bladefl report-index``), every one read and checked before the
headline figure is drawn: a bad table, outcome, config file, engine name or output path is one line
naming it before any work."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bladefl.report.bundle_read import read_verdicts
from bladefl.report.inputs import SUMMARY_COLUMNS, read_csv, read_json

PAPER_VALUES = "config/paper_values.yaml"  # the default, read only where the working folder has it


@dataclass(frozen=True)
class IndexInputs:
    """What the front page shows, read: per dataset its tidy run table, provenance and paper comparison;
    the verdicts of every dataset as one table; the calibration outcomes; the paper's tables."""

    summaries: dict[str, pd.DataFrame]
    provenance: dict[str, pd.DataFrame]
    comparisons: dict[str, pd.DataFrame]
    verdicts: pd.DataFrame
    outcomes: list[Mapping[str, Any]]
    paper_tables: list[dict]
    beside: list[Any] = field(default_factory=list)  # readings_beside.Reading of each kept bundle beside


def read_outcomes(paths: Sequence[str | Path]) -> list[Mapping[str, Any]]:
    """Calibration studies' outcomes (``outcome.json``), each read as hostile and checked."""
    from bladefl.report.calibration_outcome import check_outcome

    return [check_outcome(read_json(p), p) for p in paths]


def read_index_inputs(*, verdicts: Sequence[str], provenance: Sequence[str], summaries: Sequence[str],
                      comparisons: Sequence[str], calibration: Sequence[str] = (), configfiles: Sequence[str] = (),
                      engine: str | None = None, paper_values: str | None = None, out: str = "",
                      figures: str = "", beside: Sequence[str] = ()) -> IndexInputs:
    """Every input of the front page read as hostile, and the outputs ``out`` (the page) and ``figures``
    (the headline figure's folder) checked as writable, before any work: the config files as workflow
    config files (named on the page as the run's config), ``engine`` as one of this checkout's engines,
    ``paper_values`` where given (else :data:`PAPER_VALUES` where it is there), each kept bundle ``beside``
    (another reading of the same design) through the kept bundles' checks."""
    from bladefl.core import atomic
    from bladefl.experiments.plan import config_files
    from bladefl.experiments.plan import workflow_config as wc
    from bladefl.report.bundle_design import PROVENANCE_COLUMNS
    from bladefl.report.paper import COMPARISON_COLUMNS
    from bladefl.report.paper import paper_tables as read_paper_tables
    from bladefl.report.readings_beside import read_reading

    found = IndexInputs(
        summaries={Path(p).stem: read_csv(p, SUMMARY_COLUMNS) for p in summaries},
        provenance={Path(p).parents[1].name: read_csv(p, PROVENANCE_COLUMNS) for p in provenance},
        comparisons={Path(p).stem.removesuffix("_paper_comparison"): read_csv(p, COMPARISON_COLUMNS)
                     for p in comparisons},
        verdicts=read_verdicts(verdicts), outcomes=read_outcomes(calibration),
        paper_tables=read_paper_tables(paper_values or PAPER_VALUES)
        if paper_values or Path(PAPER_VALUES).is_file() else [],
        beside=[read_reading(b) for b in beside])
    from bladefl.experiments.plan.config_checks import SCHEMA, schema_errors

    for path in configfiles:  # each a workflow config file: strict, bounded, and only the workflow's keys
        if wrong := schema_errors(config_files.read_configs([path], default=None), SCHEMA, layer=True):
            raise ValueError(f"--configfiles {path}: not a workflow config ({wrong[0]})")
    if engine is not None and engine not in wc.available_engines():
        raise ValueError(f"--engine must be one of {wc.available_engines()} (got {engine[:80]!r})")
    if out:
        atomic.check_writable(out)
    if figures:
        atomic.check_writable(figures, folder=True)
    return found


__all__ = ["PAPER_VALUES", "IndexInputs", "read_index_inputs", "read_outcomes", "read_verdicts"]
