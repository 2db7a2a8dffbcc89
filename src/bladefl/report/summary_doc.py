"""docs/summary.md, computed: the reproduction summary in the form reproduction venues ask for (ReScience C,
the ML Reproducibility Challenge): scope, methodology, results, what was easy, what was difficult, the cost,
and what the authors' public code does differently. Every number comes from the kept bundles' own files
(checked against their manifests first) and the engines' configs; a test regenerates the page and compares
(`bladefl summary`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from bladefl.data.datasets import registry_order
from bladefl.report.findings_doc import _md, check_verdicts, checked_about
from bladefl.report.inputs import read_csv

HEADER = ("# Reproduction summary\n\n"
          "Commands here run in the project's environment: after `make`, `source .venv/bin/activate`. Computed from "
          "the kept bundles by `bladefl summary` (do not edit: `tests/test_summary_doc.py` regenerates this page and "
          "compares); the statements one by one are in [findings.md](findings.md), the methods in "
          "[workflow.md](workflow.md).\n")
PAPER = ("Li et al., *Blockchain Assisted Decentralized Federated Learning (BLADE-FL): Performance Analysis and "
         "Resource Allocation*, IEEE TPDS 33(10), 2022 (arXiv:2101.06905)")


def _bundle(bundle: Path) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """A checked bundle's manifest ``about``, its verdict table (every dataset) and its comparison table."""
    from bladefl.report.inputs import VERDICT_COLUMNS

    about = checked_about(bundle)
    results = bundle / "results"
    verdicts = pd.concat([check_verdicts(read_csv(p, VERDICT_COLUMNS), p)
                          for p in sorted((results / "verdicts").glob("*.csv"))], ignore_index=True)
    tables = [read_csv(p, ["table", "K_star", "paper_K_star", "max_accuracy", "paper_max_accuracy"]).assign(
        dataset=p.name.removesuffix("_paper_comparison.csv")) for p in sorted((results / "tables").glob(
            "*_paper_comparison.csv"))]
    return about, verdicts, pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()


def _counted(verdicts: pd.DataFrame) -> pd.DataFrame:
    """One row per (statement, dataset): the statement's own verdict (its headline claim, role 'claim' or
    'paper error'; other readings are judged beside it)."""
    heads = verdicts[verdicts.role.isin(["claim", "paper error"])] if "role" in verdicts else verdicts
    return heads.drop_duplicates(["statement", "dataset"])


def _hours(about: Mapping[str, Any]) -> str:
    seconds = about.get("run_seconds")
    devices = ", ".join(str(d) for d in about.get("devices", [])) or "an unrecorded device"
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return f"run time not recorded ({devices})"
    minutes = round(seconds / 60)
    spent = f"{seconds / 3600:.1f} hours" if seconds >= 3600 else f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"the runs' recorded seconds sum to {spent} on {devices} (stacked runs share their group's time)"


def _engine(name: str) -> dict[str, Any]:
    from bladefl.experiments.plan import workflow_config as wc

    return yaml.safe_load(wc.engine_path({"engine": name}).read_text()) or {}


def _shown(value: object) -> str:
    return "unset" if value is None else _md(value)


def _differences(paper: Mapping[str, Any], authors: Mapping[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key in sorted(set(paper) | set(authors)):
        a, b = paper.get(key), authors.get(key)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += _differences(a, b, f"{prefix}{key}.")
        elif key == "seed" or (b is None and key.endswith("_per_client")):
            continue  # the seed, and the paper scheme's own parameter that the authors' scheme has not
        elif a != b:
            out.append(f"`{prefix}{key}`: {_shown(b)} (the paper engine: {_shown(a)})")
    return out


def _results_lines(name: str, verdicts: pd.DataFrame, comparison: pd.DataFrame) -> list[str]:
    from bladefl.report.front_page import dataset_title

    rows = _counted(verdicts)
    lines = []
    for dataset in sorted(rows.dataset.unique(), key=registry_order):
        part = rows[rows.dataset == dataset]
        counts = part.verdict.value_counts()
        said = ", ".join(f"{int(n)} {v}" for v, n in counts.items())
        line = f"- `{name}`, {dataset_title(dataset)}: {len(part)} statements judged ({said})"
        mine = comparison[comparison.dataset == dataset] if not comparison.empty else comparison
        if not mine.empty:
            k = (mine.K_star - mine.paper_K_star).abs().dropna()
            acc = (mine.max_accuracy - mine.paper_max_accuracy).abs().dropna()
            line += (f"; against the paper's Tables II-VII, K* {k.mean():.2f} rounds from the paper's per row "
                     f"({len(k)} rows with an integer paper K*), the best accuracy {acc.mean():.1f} points "
                     f"({len(acc)} rows)")
        lines.append(line)
    return lines


def _both(rows: pd.DataFrame, verdicts: Sequence[str]) -> list[str]:
    """The statements whose verdict is one of ``verdicts`` on every dataset."""
    datasets = rows.dataset.nunique()
    hit = rows[rows.verdict.isin(verdicts)].groupby("statement").dataset.nunique()
    return sorted(hit[hit == datasets].index)


def summary_markdown(bundles: Sequence[str | Path]) -> str:
    """docs/summary.md for ``bundles`` (kept bundle folders, the headline first)."""
    from bladefl.report.bundle_design import engine_reading
    from bladefl.report.front_page import dataset_title

    loaded = {Path(b).as_posix(): _bundle(Path(b)) for b in bundles}
    head_name, (head_about, head_verdicts, _) = next(iter(loaded.items()))
    rows = _counted(head_verdicts)
    paper, authors = _engine("paper"), _engine("authors-code")
    from bladefl.fl.run_config import from_dict

    parameters = from_dict(paper).parameters
    datasets = sorted(rows.dataset.unique(), key=registry_order)
    per = ", ".join(f"{int((rows.dataset == d).sum())} on {dataset_title(d)}" for d in datasets)
    lines = [HEADER, "## Scope\n",
             f"The paper: {PAPER}. Every statement of its text, theorems, corollaries, tables and figures is judged "
             f"once per dataset: {rows.statement.nunique()} statements ({per}) in the headline bundle "
             f"`{head_name}`, each on the runs, on the bound fitted to them, or as mathematics, and the paper's own "
             "errors apart.\n",
             "## Methodology\n",
             f"A library and a Snakemake workflow run every cell of the paper's grid at every feasible K under the "
             f"paper engine's reading ({_md(engine_reading('paper'))}; {parameters:,} parameters), judge each "
             "statement with paired tests over the independent units (partition draws where each run has its own), "
             "and keep each grid's report inputs as a bundle with a manifest and an RO-Crate.\n",
             "## Results\n", *_results_lines(head_name, head_verdicts, loaded[head_name][2])]
    for name, (_, verdicts, comparison) in list(loaded.items())[1:]:
        lines += _results_lines(name, verdicts, comparison)
    easy, hard = _both(rows, ("reproduced",)), _both(rows, ("refuted",))
    errors = sorted(rows[rows.verdict == "paper error"].statement.unique())
    lines += ["", "## What was easy\n",
              f"{len(easy)} statements are reproduced on every dataset of `{head_name}`: "
              f"{', '.join(f'`{_md(s)}`' for s in easy) or 'none'}.\n",
              "## What was difficult\n",
              f"{len(hard)} statements are refuted on every dataset: "
              f"{', '.join(f'`{_md(s)}`' for s in hard) or 'none'}; "
              f"{len(errors)} are errors of the paper's own (its formulas or tables against themselves): "
              f"{', '.join(f'`{_md(s)}`' for s in errors) or 'none'}. The paper leaves the partition, the model's "
              "width and activation, what one local iteration is and the input scaling unstated; the sensitivity "
              "and calibration studies (docs/sensitivity.md, docs/calibration.md) measure how far each moves the "
              "distance to its tables.\n",
              "## Cost\n"]
    lines += [f"- `{name}`: {about.get('runs', '?')} runs, {_hours(about)}" for name, (about, _, _) in loaded.items()]
    lines += ["", "## What the authors' public code does differently\n",
              "The authors' repository (`ElvisShaoYumeng/BLADE-FL`) differs from the paper engine's reading in "
              "(`config/engines/authors-code.yaml` against `config/engines/paper.yaml`):\n",
              *[f"- {d}" for d in _differences(paper, authors)],
              f"- the model's size: {from_dict(authors).parameters:,} parameters (the paper engine: "
              f"{parameters:,});",
              "- what it reports: the accuracy and loss on a 4-class test subset per client, and the clients' "
              "local minibatch losses, its CSV's train and test labels swapped (`main_FL&BL.py` lines 248-253, "
              "296-352; the `conventions` command reads runs both ways);",
              "- its lazy clients' noise: sigma2 a standard deviation, noise again after each copy (the deleted "
              "`main_FL&BL_lazy.py`, lines 201-239; `lazy.noise: authors`).", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
