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
from bladefl.report.bundle_read import check_verdicts, checked_about
from bladefl.report.bundle_read import md as _md
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


def _scope_counts(rows: pd.DataFrame, inventory_size: int, datasets: Sequence[str]) -> str:
    """What each count counts: the inventory's statements, those judged here, and per dataset the counted rows
    split into claims (by what decided them), the paper's own errors and its ambiguities."""
    from bladefl.report.front_page import dataset_title

    per = []
    for d in datasets:
        part = rows[rows.dataset == d]
        claims = part[~part.verdict.isin(["paper error", "ambiguous"])]
        bases = ", ".join(f"{int((claims.basis == b).sum())} {w}" for b, w in
                          (("experiment", "on the runs"), ("bound", "on the bound fitted to them"),
                           ("mathematics", "as mathematics")) if (claims.basis == b).any())
        per.append(f"{dataset_title(d)} {len(part)} ({len(claims)} claims: {bases}; "
                   f"{int((part.verdict == 'paper error').sum())} errors of the paper's own; "
                   f"{int((part.verdict == 'ambiguous').sum())} ambiguities)")
    return (f"The inventory (`config/paper_statements.yaml`) lists {inventory_size} statements; "
            f"{rows.statement.nunique()} of them have a counted row on at least one dataset (the others say why "
            f"none: an assumption, a description). Counted rows per dataset: {'; '.join(per)}. The report's front "
            "page counts the claims.")


def _results_words(readings: Sequence[Any], outcomes: Sequence[Mapping]) -> list[str]:
    """The results in words, with intervals: each reading's distance to the paper per row, which claims hold
    under every reading and which depend on it, where every reading stays above the targets."""
    from bladefl.report import readings_beside as rb
    from bladefl.report.distance import distance_tables, gap_lines, targets_of
    from bladefl.report.distance import gaps as find_gaps
    from bladefl.report.front_page import dataset_title

    targets = targets_of(outcomes)
    table = distance_tables(readings, targets)
    lines = []
    overall = table[table.scope == "dataset"]
    for dataset, part in overall.groupby("dataset", sort=False):
        said = []
        for reading, rows in part.groupby("reading", sort=False):
            k = rows[rows.measure == "K_star"].iloc[0]
            a = rows[rows.measure == "accuracy"].iloc[0]
            said.append(f"{reading} {k.distance:.2f} [{k.low:.2f}, {k.high:.2f}] rounds and {a.distance:.1f} "
                        f"[{a.low:.1f}, {a.high:.1f}] points")
        within = table[(table.dataset == dataset) & (table.scope == "table") & table.within]
        near = ", ".join(f"{r.table} {'K*' if r.measure == 'K_star' else 'accuracy'} ({r.reading})"
                         for r in within.itertuples()) or "no table"
        lines.append(f"- {dataset_title(dataset)}, how far from the paper's Tables II-VII per row (mean, 95% "
                     f"percentile bootstrap over the independent units): {'; '.join(said)}. Within the targets "
                     f"({targets['K_star']:g} round, {targets['accuracy']:g} points) by the interval's upper end: "
                     f"{near}.")
    if len(readings) > 1:
        frame = rb.side_by_side(readings)
        frame = frame[(frame.role == "claim") & frame.basis.isin(rb.ON_RUNS)]
        holds, depends = rb.verdict_lines(frame, [r.label for r in readings])
        lines.append(f"- Under both readings ({', '.join(r.label for r in readings)}; each judged on its own runs): "
                     f"{int((~frame.depends).sum())} of {len(frame)} claims on the runs or the fitted bound get the "
                     f"same verdict; {int(frame.depends.sum())} depend on the reading. "
                     + " ".join(f"{_md(h)}." for h in holds))
        lines += [f"  - depends on the reading: {_md(d)}" for d in depends]
    gaps = gap_lines(find_gaps(readings, table, outcomes))
    if gaps:
        lines.append("- Where every reading stays above the targets, the change over the table's sweep:")
        lines += [f"  - {_md(g)}" for g in gaps]
    return lines


def _conclusion(rows: pd.DataFrame, readings: Sequence[Any]) -> str:
    """The results in one paragraph of words: what holds on every dataset (under every reading where there are
    several), what fails, and how near the numbers come."""
    from bladefl.report import readings_beside as rb

    on_runs = rows[rows.basis.isin(rb.ON_RUNS) & (rows.role == "claim")]
    if len(readings) > 1:
        frame = rb.side_by_side(readings)
        frame = frame[(frame.role == "claim") & frame.basis.isin(rb.ON_RUNS) & ~frame.depends]
        first = readings[0].label
        held = _claims_everywhere(frame.rename(columns={first: "verdict"}), "reproduced")
        failed = _claims_everywhere(frame.rename(columns={first: "verdict"}), "refuted")
        under = " under both readings"
    else:
        held, failed, under = _claims_everywhere(on_runs, "reproduced"), _claims_everywhere(on_runs, "refuted"), ""
    return (f"**Conclusion.** On every dataset{under}, {len(held)} of the paper's claims judged on the runs or on "
            f"the bound fitted to them are reproduced ({'; '.join(map(_md, held)) or 'none'}) and {len(failed)} are "
            f"refuted ({'; '.join(map(_md, failed)) or 'none'}); the rest depend on the dataset or the reading, or "
            "stay within noise. The directions hold more often than the paper's numbers: how far each reading's "
            "K* and accuracy are from its tables is below, with intervals.\n")


def _claims_everywhere(frame: pd.DataFrame, verdict: str) -> list[str]:
    datasets = frame.dataset.nunique()
    hit = frame[frame.verdict == verdict].groupby("claim").dataset.nunique()
    return sorted(hit[hit == datasets].index)


def _easy_lines(rows: pd.DataFrame) -> list[str]:
    """Statements reproduced on every dataset, each with why it was easy: its effect against the spread
    between the units (what the data show), or that it follows from the formula (as mathematics)."""
    from bladefl.report.front_page import dataset_title

    lines = []
    for statement in _both(rows, ("reproduced",)):
        part = rows[rows.statement == statement]
        first = part.iloc[0]
        if first.basis == "mathematics":
            why = "it follows from the bound's formula: it holds at every valid setting of the constants scanned"
        elif first.basis == "bound":
            why = "the fitted bound moves that way in at least 90% of the resamples of the units"
        else:
            why = "a large effect against the spread between units: " + "; ".join(
                f"{dataset_title(r.dataset)} {_md(r.finding)}" for r in part.itertuples()
                if isinstance(r.finding, str) and r.finding)
        lines.append(f"- `{_md(statement)}` ({_md(first.claim)}): {why}")
    return lines


def _difficult_lines(rows: pd.DataFrame, inventory: Any) -> list[str]:
    """Statements refuted on every dataset with what decided it and the likely reason (the inventory's
    ``if_differs``); the paper's own errors and ambiguities."""
    from bladefl.report.verdict_rows import refuted_by

    by_id = {s.id: s for s in inventory.statements}
    lines = []
    for statement in _both(rows, ("refuted",)):
        part = rows[rows.statement == statement]
        first = part.iloc[0]
        decided = sorted({refuted_by(r) for r in part.itertuples()} - {""})
        reason = by_id[statement].if_differs if statement in by_id else ""
        lines.append(f"- `{_md(statement)}` ({_md(first.claim)}): refuted, {', '.join(decided) or 'on every dataset'}"
                     + (f"; likely: {_md(reason)}" if reason else ""))
    for verdict, what in (("paper error", "an error of the paper's own (its formulas or tables against "
                                          "themselves)"),
                          ("ambiguous", "an ambiguity of the paper's own, both readings judged")):
        for statement in sorted(rows[rows.verdict == verdict].statement.unique()):
            first = rows[rows.statement == statement].iloc[0]
            lines.append(f"- `{_md(statement)}` ({_md(first.claim)}): {what}")
    return lines


AUTHORS = (
    "No contact was made with the authors for this reproduction; what they have answered in public is their "
    "repository (`ElvisShaoYumeng/BLADE-FL`: `main_FL&BL.py` and its helpers; a lazy-client script deleted in its "
    "history) and its one issue. That issue (#1, \"BlockChain\", opened 2021-10-26, still open) asked where the "
    "blockchain is in the code: the authors answered that mining is modelled as a delay, `args.bc_difficulty` "
    "(200 = beta N, `main_FL&BL.py` line 38), and that the blockchain's implementation belongs to work then under "
    "revision; no blockchain code has been published since, so this project's ledger, mining race and "
    "verification are its own. What the code answers, and where it differs from the paper engine's reading "
    "(`config/engines/authors-code.yaml` against `config/engines/paper.yaml`):\n")


def _authors_lines(paper: Mapping[str, Any], authors: Mapping[str, Any]) -> list[str]:
    """The communication with the original authors: what their repository does where it differs from the
    paper engine, each difference with the file and lines that show it."""
    from bladefl.fl.run_config import from_dict

    parameters = from_dict(paper).parameters
    return [AUTHORS,
            *[f"- {d}" for d in _differences(paper, authors)],
            f"- the model's size: {from_dict(authors).parameters:,} parameters (the paper engine: "
            f"{parameters:,});",
            "- its tau: `local_frequence` x (time - bl_antifrequence x K), then // K, `local_frequence = 1` "
            "commented 'alpha' (lines 37, 111-113): read as 1, alpha changes nothing; read as 1/alpha, the "
            "text's rule (`tab2-tau-rule`, judged an ambiguity); its beta is fixed by `bc_difficulty = 200` at "
            "N = 20 (beta 10), where Table II says beta 6;",
            "- what it reports: the accuracy and loss on a 4-class test subset per client, and the clients' "
            "local minibatch losses, its CSV's train and test labels swapped (`main_FL&BL.py` lines 248-253, "
            "296-352; the `conventions` command reads runs both ways);",
            "- its lazy clients' noise: sigma2 a standard deviation, noise again after each copy (the deleted "
            "`main_FL&BL_lazy.py`, lines 201-239; `lazy.noise: authors`)."]


def summary_markdown(bundles: Sequence[str | Path], calibration: str | Path | None = None) -> str:
    """docs/summary.md for ``bundles`` (kept bundle folders, the headline first) in the ML Reproducibility
    Challenge's layout: scope (what each count counts), methodology and computational requirements, results in
    words with intervals (both readings where a bundle ran the headline's design under another engine), what was
    easy and what was difficult with reasons, and the communication with the original authors; ``calibration``:
    a kept calibration bundle (which setting moves a distance that stays far from the paper)."""
    from bladefl.experiments.plan import config_files
    from bladefl.experiments.verdicts.statements import read_inventory
    from bladefl.fl.run_config import from_dict
    from bladefl.report import readings_beside as rb
    from bladefl.report.bundle_design import engine_reading
    from bladefl.report.findings_doc import calibration_outcomes

    loaded = {Path(b).as_posix(): _bundle(Path(b)) for b in bundles}
    head_name, (head_about, head_verdicts, _) = next(iter(loaded.items()))
    rows = _counted(head_verdicts)
    paper, authors = _engine("paper"), _engine("authors-code")
    parameters = from_dict(paper).parameters
    datasets = sorted(rows.dataset.unique(), key=registry_order)
    inventory = read_inventory(Path(__file__).resolve().parents[3] / "config" / "paper_statements.yaml")
    first = Path(head_name)
    paired = rb.beside(config_files.read_configs([first / "config.yaml"], default=None),
                       [str(b) for b in list(loaded)[1:]], first)
    readings = [rb.read_reading(first), *map(rb.read_reading, paired)]
    outcomes = calibration_outcomes(calibration) if calibration is not None else []
    other_readings = "".join(f" Beside it, `{r.source}` ran the same design under the {r.label} reading "
                             f"({_md(engine_reading(r.engine, datasets))})." for r in readings[1:])
    lines = [HEADER, "## Scope of reproducibility\n",
             f"The paper: {PAPER}. Every statement of its text, theorems, corollaries, tables and figures that "
             "asserts a direction, a relation or a number is judged once per dataset: on the runs, on the bound "
             "fitted to them, or as mathematics, and the paper's own errors and ambiguities apart. "
             + _scope_counts(rows, len(inventory.statements), datasets) + "\n",
             "## Methodology\n",
             f"A library and a Snakemake workflow run every cell of the paper's grid at every feasible K; the "
             f"headline bundle `{head_name}` under the paper engine's reading ({_md(engine_reading('paper'))}; "
             f"{parameters:,} parameters).{other_readings} Each statement is judged with paired tests over the "
             "independent units (partition draws where each run has its own), false-discovery controlled, effects "
             "with intervals; each grid's report inputs are kept as a bundle with a manifest and an RO-Crate, its "
             "runs in git where the bundle says so.\n",
             "### Computational requirements\n",
             *[f"- `{name}`: {about.get('runs', '?')} runs, {_hours(about)}" for name, (about, _, _) in
               loaded.items()],
             "", "## Results\n", _conclusion(rows, readings), *_results_words(readings, outcomes),
             "", "Per bundle, the counted verdicts and the mean distance per row:\n"]
    for name, (_, verdicts, comparison) in loaded.items():
        lines += _results_lines(name, verdicts, comparison)
    lines += ["", "## What was easy\n", *(_easy_lines(rows) or ["- nothing reproduced on every dataset"]),
              "", "## What was difficult\n", *_difficult_lines(rows, inventory),
              "- The paper leaves the partition, the model's width and activation, what one local iteration is and "
              "the input scaling unstated; the sensitivity and calibration studies (docs/sensitivity.md, "
              "docs/calibration.md) measure how far each moves the distance to its tables.",
              "", "## Communication with the original authors\n", *_authors_lines(paper, authors), ""]
    return "\n".join(lines).rstrip("\n") + "\n"
