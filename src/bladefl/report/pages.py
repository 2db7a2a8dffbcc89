"""The report's HTML pages: each executed notebook rendered as a stand-alone page (code hidden and
linked, figures embedded, nothing fetched from the network), and the front page (verdicts,
headline figure, provenance line, links grouped by dataset)."""

from __future__ import annotations

import base64
import html
import os
import platform
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from bladefl.core import atomic
from bladefl.experiments import provenance as provenance_module
from bladefl.report.inputs import read_csv
from bladefl.report.paper import claim_quote
from bladefl.report.views import effect_text, not_counted, verdict_test, verdict_units

NOTEBOOK_TITLES = {
    "00_verdicts": "verdicts and provenance",
    "01_data": "data: the clients' non-IID partitions",
    "02_sweeps": "sweeps: Tables II-VII, Figs. 4-9",
    "03_bound": "the bound against the experiment: Fig. 3 and K*",
    "04_privacy": "privacy: the optimum versus epsilon",
    "05_lazy": "lazy clients: detection and exclusion",
    "06_sensitivity": "sensitivity: readings of the paper's unstated settings",
}
DATASET_TITLES = {"mnist": "MNIST", "fashion_mnist": "Fashion-MNIST"}

# The lab template without its network scripts (require.js, MathJax, mermaid, widgets: the pages
# use none), with a navigation line under the body's opening tag.
PAGE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{%- block body_header -%}
{{ super() }}
<style>.jp-RenderedHTMLCommon table{max-width:100%}
.jp-RenderedHTMLCommon th,.jp-RenderedHTMLCommon td{overflow-wrap:break-word;white-space:normal}</style>
<nav style="font-family:sans-serif;font-size:90%;padding:.5em 1em;border-bottom:1px solid #ccc">
<a href="{{ resources.bladefl.index | e }}">&larr; report index</a> &middot;
{{ resources.bladefl.title | e }} &middot;
code: <a href="{{ resources.bladefl.source | e }}">the executed notebook</a></nav>
{%- endblock body_header -%}
"""


def dataset_title(name: str) -> str:
    return DATASET_TITLES.get(name, name)


def page_title(page: str | Path) -> str:
    """``results/report/mnist/02_sweeps.html`` -> ``MNIST: sweeps: Tables II-VII, Figs. 4-9``."""
    page = Path(page)
    return f"{dataset_title(page.parent.name)}: {NOTEBOOK_TITLES.get(page.stem, page.stem)}"


def render_html(notebook: str | Path, out: str | Path, index: str | Path) -> Path:
    """An executed notebook as a page: markdown and outputs only (inputs and prompts hidden),
    images embedded as data URIs, and links to the front page and to the notebook itself."""
    import nbformat
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    notebook, out = Path(notebook), Path(out)
    exporter = HTMLExporter(template_name="lab", template_file="bladefl_page.html.j2",
                            extra_loaders=[DictLoader({"bladefl_page.html.j2": PAGE_TEMPLATE})],
                            exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
    title = page_title(out)
    resources = {"metadata": {"name": title},
                 "bladefl": {"title": title, "index": os.path.relpath(index, out.parent),
                             "source": os.path.relpath(notebook, out.parent)}}
    body, _ = exporter.from_notebook_node(nbformat.read(notebook, as_version=4), resources=resources)
    atomic.write_text(out, body)
    return out


def provenance_line(provenance: Mapping[str, pd.DataFrame], config_files: Sequence[str], seeds: Sequence[int],
                    when: datetime | None = None) -> str:
    """One line: code version, config file(s), seeds, data checksums, date, machine, run time.
    ``provenance``: per dataset, the runs' provenance table (``report.provenance``)."""
    frame = pd.concat([f.assign(dataset=d) for d, f in provenance.items()], ignore_index=True)
    when = when or datetime.now(UTC)
    versions = ", ".join(sorted(map(str, frame.code_version.dropna().unique()))) or "unknown"
    hosts = ", ".join(sorted(map(str, frame.host.dropna().unique()))) if "host" in frame else "unknown"
    devices = sorted(map(str, frame.device.dropna().unique())) if "device" in frame else []
    hosts += f" ({', '.join(devices)})" if devices else ""
    checksums = "; ".join(f"{dataset_title(d)} train images {str(sha)[:12]}"
                          for d, sha in frame.groupby("dataset").train_images_sha256.first().items())
    seconds = float(pd.to_numeric(frame.seconds, errors="coerce").sum())
    run_time = f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
    configs = ", ".join(_relative(c) for c in config_files) or "default"
    return (f"code {versions} · config {configs} · seeds {list(seeds)} · data SHA-256 {checksums} · "
            f"built {when:%Y-%m-%d %H:%M} UTC on {platform.node()} ({os.cpu_count()} CPUs) · "
            f"{len(frame)} runs on {hosts}, {run_time} of run time in all")


def _relative(path: str) -> str:
    """A path relative to the working directory when it lies below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


VERDICT_COLUMNS = ("dataset", "claim", "source", "basis", "verdict", "support", "seeds", "evidence")
VERDICT_COLOURS = {"reproduced": "#dfd", "refuted": "#fdd", "inconclusive": "#ffd", "too few runs": "#eee",
                   "single seed": "#eee", "not applicable": "#dde8f5"}


def _text(value: object) -> str:
    """A cell's text: empty for a missing value (nan)."""
    return "" if value is None or value != value else str(value)


def _draws_cell(r: object) -> str:
    """Whether the claim holds on each partition draw (verdict tables written before replicates
    have no such column: empty)."""
    label, holding = _text(getattr(r, "across_partitions", "")), _text(getattr(r, "draws_holding", ""))
    return html.escape(label + (f" ({holding})" if holding else ""))


def _claim_cell(r: object) -> str:
    """The claim, linked to the report page whose figures it rests on (when the table names one),
    with the paper's own words below it (:data:`bladefl.report.paper.CLAIM_QUOTES`)."""
    page = _text(getattr(r, "page", ""))
    name = html.escape(str(r.claim))
    quote = claim_quote(str(r.claim))
    words = f"<br><small><i>“{html.escape(quote)}”</i></small>" if quote else ""
    if not page:
        return name + words
    href = html.escape(f"{r.dataset}/{page}.html")  # beside the front page
    return f"<a href='{href}' title='{html.escape(NOTEBOOK_TITLES.get(page, page))}'>{name}</a>{words}"


def paper_beside(claim: str, comparison: pd.DataFrame | None) -> str:
    """For an experiment claim about K* or a table's time quantity: the paper's numbers over the
    sweep beside ours (the paper-comparison table: its K* and time per swept value, ours from the
    seed-mean curves); "" where the paper gives no numbers for it (a loss read off its figures)."""
    from bladefl.experiments.experiment_verdicts import claims

    found = next((c for c in claims() if c.name == claim), None)
    if found is None or comparison is None or found.quantity not in ("K", "mining_time", "training_time"):
        return ""
    part = comparison[comparison.parameter == found.param].sort_values("value")
    if part.empty:
        return ""
    same = found.quantity == "K" or (part.paper_quantity == found.quantity).all()
    if not same:
        return ""
    paper, ours = ((part.paper_K_star, part.K_star) if found.quantity == "K" else (part.paper_value, part.quantity))

    def shown(values: pd.Series) -> str:
        return ", ".join("?" if pd.isna(v) else f"{float(v):g}" for v in values)

    name = "K*" if found.quantity == "K" else "β·K*" if found.quantity == "mining_time" else "τ·α·K*"
    return (f"{found.param} = {shown(part.value)}: paper {name} {shown(paper)}; ours {shown(ours)} "
            f"({str(part.table.iloc[0])}; ? = not in the paper or no integer K*)")


def _effect_cell(r: object) -> str:
    """An experiment claim's per-unit change over the sweep with its 95% interval; a bound claim's
    bootstrap support."""
    shown = effect_text(r) if r.basis == "experiment" else ""
    return html.escape(shown or verdict_test(r, opposite=False))


def _verdict_rows(table: pd.DataFrame, draws: bool, comparison: pd.DataFrame | None = None) -> str:
    """One row per claim: the claim (linked to its page) and where the paper makes it, the verdict
    in words (why a row is not counted), the effect and its interval, the p-value, the units, the
    per-draw view (``draws``), and the evidence folded away."""
    rows = []
    for r in table.itertuples():
        colour = VERDICT_COLOURS.get(r.verdict, "#fff")
        aside = not_counted(r)
        verdict = html.escape(r.verdict) + (f"<br><small>{html.escape(aside)}</small>" if aside else "")
        p = getattr(r, "p_claim", None)
        test = html.escape(verdict_test(r, opposite=False)) if r.basis == "experiment" and pd.notna(p) else ""
        draw_cell = f"<td>{_draws_cell(r)}</td>" if draws else ""
        beside = paper_beside(str(r.claim), comparison) if r.basis == "experiment" else ""
        beside = f"<br><small>{html.escape(beside)}</small>" if beside else ""
        rows.append(f"<tr><td>{_claim_cell(r)}{beside}</td>"
                    f"<td style='background:{colour}'>{verdict}</td><td>{_effect_cell(r)}</td><td>{test}</td>"
                    f"<td>{html.escape(verdict_units(r))}</td>{draw_cell}"
                    f"<td><details><summary>per unit, test</summary>{html.escape(str(r.evidence))}</details></td></tr>")
    return "\n".join(rows)


def _verdict_sections(table: pd.DataFrame, comparisons: Mapping[str, pd.DataFrame] | None = None) -> str:
    """Per dataset, the experiment's claims and the bound's in tables of their own; the paper's
    numbers beside ours where its tables give them (``comparisons``: per dataset, the
    paper-comparison table)."""
    out = []
    for dataset, part in table.groupby("dataset", sort=False):
        out.append(f"<h3>{html.escape(dataset_title(dataset))}</h3>")
        for basis, title, effect in (("experiment", "On the experiment", "change over the sweep [95% CI]"),
                                     ("bound", "On the bound", "bootstrap support")):
            rows = part[part.basis == basis]
            if rows.empty:
                continue
            labels = {_text(getattr(r, "across_partitions", "")) for r in rows.itertuples()} - {""}
            draws = bool(labels - {"one seed per draw: seed and draw not separable", "one draw"})
            note = "" if draws or not labels else f" <small>(partition draws: {html.escape(', '.join(labels))})</small>"
            head = (f"<tr><th style='width:45%'>claim (the paper's words)</th><th style='width:12%'>verdict</th>"
                    f"<th>{effect}</th><th>p</th>"
                    f"<th>units</th>{'<th>partition draws</th>' if draws else ''}<th>evidence</th></tr>")
            rows_html = _verdict_rows(rows, draws, (comparisons or {}).get(str(dataset)))
            out.append(f"<h4>{title}{note}</h4>\n<table>{head}\n{rows_html}\n</table>")
    return "\n".join(out)


LEGEND = """<table><tr><th>verdict</th><th>experiment claims (paired trend tests within units)</th>
<th>bound claims (bootstrap over seeds)</th></tr>
<tr><td style='background:#dfd'>reproduced</td><td>the claimed direction is significant (p &lt; 0.05, FDR-adjusted)</td>
<td>holds in &ge; 90% of resamples</td></tr>
<tr><td style='background:#fdd'>refuted</td><td>the opposite direction is significant, or the change is shown inside the
equivalence margin (negligible)</td><td>holds in &le; 10% of resamples</td></tr>
<tr><td style='background:#ffd'>inconclusive</td><td>neither: within noise (never called refuted)</td>
<td>between</td></tr>
<tr><td style='background:#eee'>too few runs</td><td>the design cannot reach p &lt; 0.05</td><td></td></tr>
<tr><td style='background:#dde8f5'>not applicable</td><td></td><td>the bound's preconditions fail</td></tr>
</table>
<p><small>Units: a partition draw holding several run seeds (their mean), else a run. A claim that follows from
another is shown as derived, and each K* claim is judged again with K* read as the K of the best accuracy: neither
is counted. Each claim links to the page whose figures it rests on; the evidence gives every unit's values and both
p-values.</small></p>"""


def verdict_tally(table: pd.DataFrame) -> str:
    """Per dataset, the experiment's and the bound's claims counted apart (derived rows and other
    readings not counted)."""
    counted = table[[not not_counted(r) for r in table.itertuples()]]
    parts = []
    for d, part in counted.groupby("dataset", sort=False):
        basis = []
        for name in ("experiment", "bound"):
            rows = part[part.basis == name]
            if len(rows):
                counts = rows.verdict.value_counts()
                shown = ", ".join(f"{int(counts[v])} {v}" for v in VERDICT_COLOURS if counts.get(v, 0))
                basis.append(f"{name} {len(rows)} claims ({shown})")
        parts.append(f"{dataset_title(d)}: " + "; ".join(basis))
    return ". ".join(parts)


def _links(path: Path, pages: Sequence[str | Path]) -> str:
    groups: dict[str, list[Path]] = {}
    for p in map(Path, pages):
        groups.setdefault(p.parent.name, []).append(p)
    parts = []
    for dataset, members in groups.items():
        items = "\n".join(f"<li><a href='{html.escape(os.path.relpath(p, path.parent))}'>"
                          f"{html.escape(page_title(p))}</a></li>" for p in sorted(members, key=lambda p: p.stem))
        parts.append(f"<h3>{html.escape(dataset_title(dataset))}</h3><ul>\n{items}\n</ul>")
    return "\n".join(parts)


def _write_front_page(path: Path, title: str, provenance: str, body: str, pages: Sequence[str | Path]) -> Path:
    """A front page: title, provenance line, ``body`` (HTML), then the links to ``pages`` by dataset."""
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:75em;margin:2em auto;padding:0 1em}}
td,th{{border:1px solid #ccc;padding:.3em;vertical-align:top}}table{{border-collapse:collapse}}
.prov{{color:#555;font-size:85%}}</style>
</head><body><h1>{html.escape(title)}</h1>
<p class="prov">{html.escape(provenance)}</p>
{body}
<h2>Pages</h2>
{_links(path, pages)}
</body></html>
"""
    atomic.write_text(path, page)
    return path


def write_index(path: str | Path, verdict_tables: Sequence[str | Path], pages: Sequence[str | Path],
                headline_png: str | Path | None = None, provenance: str = "",
                title: str = "BLADE-FL reproduction report", comparisons: Mapping[str, pd.DataFrame] | None = None,
                runs_per_point: int | None = None, sensitivity: str | Path | None = None,
                summaries: Mapping[str, pd.DataFrame] | None = None) -> Path:
    """The report's front page: a banner where nothing could be judged, the verdict summary and
    table, the runs that diverged (when any), the best accuracy beside the paper's (with what the
    sensitivity study found, linked), the headline figure (embedded), the pages grouped by dataset,
    and the provenance line."""
    path = Path(path)
    table = pd.concat([read_csv(p, VERDICT_COLUMNS) for p in verdict_tables], ignore_index=True)
    per_dataset = verdict_tally(table)
    docs = provenance_module.project_root() / "docs" / "sensitivity.md"
    study = os.path.relpath(sensitivity, path.parent) if sensitivity and Path(sensitivity).exists() else None
    gap = _gap_section(accuracy_gap(comparisons or {}), study,
                       os.path.relpath(docs, path.parent) if docs.is_file() else None)
    figure = ""
    if headline_png is not None:
        data = base64.b64encode(Path(headline_png).read_bytes()).decode("ascii")
        runs = f"{runs_per_point} runs" if runs_per_point else "the runs"
        figure = (f"<h2>Accuracy and loss versus K, beside the paper's optimum</h2>\n"
                  f"<p>Our curves for the main sweeps: each point the mean over {runs} (run seeds), the band "
                  f"&plusmn;1 standard deviation over them; a star marks the paper's K* and maximal "
                  f"accuracy for the value of the same colour, a dashed line its K* on the loss; where the paper's "
                  f"K* is inconsistent (Table IV's MNIST column) a dotted line gives its accuracy alone. The "
                  f"paper's K* is derived from its tables by each table's own formula.</p>\n"
                  f"<img src='data:image/png;base64,{data}' alt='accuracy and loss versus K for the main sweeps' "
                  f"style='max-width:100%'>")
    body = f"""{_banner(table)}<h2>Which of the paper's findings stand</h2>
<p><strong>{html.escape(per_dataset)}.</strong></p>
{LEGEND}
{_verdict_sections(table, comparisons)}
{_diverged_section(summaries or {})}
{gap}
{figure}"""
    return _write_front_page(path, title, provenance, body, pages)


def diverged_counts(summaries: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per dataset: the (cell, seed, K) that trained, and of them those that diverged (a non-finite
    loss or accuracy)."""
    rows = []
    for dataset, table in summaries.items():
        trained = table[table.status != "infeasible"].drop_duplicates(["cell", "seed", "K"])
        diverged = trained[trained.status == "diverged"]
        rows.append({"dataset": dataset, "trained": len(trained), "diverged": len(diverged),
                     "cells": ", ".join(sorted(diverged.cell.unique())[:3])})
    return pd.DataFrame(rows, columns=["dataset", "trained", "diverged", "cells"])


def _diverged_section(summaries: Mapping[str, pd.DataFrame]) -> str:
    counts = diverged_counts(summaries)
    counts = counts[counts.diverged > 0]
    if counts.empty:
        return ""
    items = "".join(f"<li>{html.escape(dataset_title(r.dataset))}: {r.diverged} of {r.trained} (cell, seed, K) "
                    f"(e.g. <code>{html.escape(r.cells)}</code>)</li>" for r in counts.itertuples())
    return (f"<h2>Runs that diverged</h2>\n<p>A loss or accuracy that went non-finite (an overflow) marks its K "
            f"<em>diverged</em>: it counts as no result, left out of K* and of every verdict as an infeasible K "
            f"is (status <code>diverged</code> in the summary tables).</p>\n<ul>{items}</ul>")


# What the sensitivity study found about the accuracy gap (docs/sensitivity.md, measured 2026-11-26 on
# config/sensitivity.yaml, 3 seeds): which reading of the unstated settings closes it, per dataset.
GAP_ANSWER = {
    "mnist": "the split: with Dirichlet(0.5) instead of 2 shards per client the best accuracy comes within "
             "2 points per row of the paper's (86.8% against 87.4%), while its K* then move away",
    "fashion_mnist": "nothing needed: the paper engine's accuracies are within about 2 points per row of the "
                     "paper's (its K* are the ones that differ)",
}
VERDICT_LABELS = ("reproduced", "refuted", "inconclusive")


def accuracy_gap(comparisons: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per dataset and paper table: our best accuracy (%) over the table's rows beside the paper's,
    with the difference, from the paper-comparison tables."""
    rows = []
    for dataset, frame in comparisons.items():
        for table, part in frame.groupby("table", sort=False):
            ours, paper = pd.to_numeric(part.max_accuracy), pd.to_numeric(part.paper_max_accuracy)
            if ours.notna().any() and paper.notna().any():
                rows.append({"dataset": dataset, "table": table, "parameter": part.parameter.iloc[0],
                             "ours": float(ours.max()), "paper": float(paper.max()),
                             "difference": float(ours.max() - paper.max())})
    return pd.DataFrame(rows, columns=["dataset", "table", "parameter", "ours", "paper", "difference"])


def _gap_section(gap: pd.DataFrame, sensitivity: str | None, docs: str | None) -> str:
    if gap.empty:
        return ""
    rows = "\n".join(f"<tr><td>{html.escape(dataset_title(r.dataset))}</td><td>{html.escape(r.table)} "
                      f"({html.escape(str(r.parameter))})</td><td>{r.ours:.1f}</td><td>{r.paper:.1f}</td>"
                      f"<td>{r.difference:+.1f}</td></tr>" for r in gap.itertuples())
    answers = " ".join(f"{dataset_title(d)}: {GAP_ANSWER[d]}." for d in dict.fromkeys(gap.dataset) if d in GAP_ANSWER)
    where = (f"<a href='{html.escape(sensitivity)}'>this run's sensitivity study</a>" if sensitivity else
             "the sensitivity study (not run here: <code>snakemake --configfile config/sensitivity.yaml "
             "--cores all</code>, about 2.5 hours on 2 cores)")
    doc = f" (<a href='{html.escape(docs)}'>docs/sensitivity.md</a>)" if docs else ""
    return f"""<h2>Best accuracy beside the paper's</h2>
<p>Our best test accuracy over each table's rows (seed-mean curves, %) beside the paper's. The paper does not
say how it splits the data non-IID, nor its batch size or input scaling; {where}{doc} runs the grid under
each reading. What it found: {html.escape(answers)}</p>
<table><tr><th>dataset</th><th>table (swept)</th><th>ours, %</th><th>paper, %</th><th>ours &minus; paper</th></tr>
{rows}
</table>"""


def _banner(table: pd.DataFrame) -> str:
    """A first report with no verdict (one seed, a smoke grid) says where the real ones are."""
    experiment = table[table.basis == "experiment"] if "basis" in table else table
    if experiment.verdict.isin(VERDICT_LABELS).any():
        return ""
    return ("<p style='background:#fff3cd;border:1px solid #e0c36a;padding:.6em'><strong>No verdicts here:</strong> "
            "this grid has too few runs to test any claim (every row says why). The paper's grid with two seeds "
            "gives them: <code>make run</code> (<code>config/config.yaml</code>, about 90 minutes on 2 cores); "
            "with 20 seeds, <code>config/paper.yaml</code> (a GPU: docs/gpu.md). The kept verdicts render "
            "without running anything: <code>make reference-report</code> "
            "(<code>reference/default-2seeds</code>; <code>REF=reference/paper-20seeds</code> for 20 seeds).</p>")


def headline_panels(summaries: Mapping[str, pd.DataFrame], comparisons: Mapping[str, pd.DataFrame],
                    max_sweeps: int = 3) -> list[dict]:
    """Per dataset, the first ``max_sweeps`` of the paper's tables that the grid ran, with our
    curves and the paper's (K*, maximal accuracy) per swept value (from the paper-comparison
    table), for :func:`plots.headline_figure`."""
    from bladefl.report.views import sweep_units

    panels = []
    for dataset, summary in summaries.items():
        comparison = comparisons[dataset]
        ran = comparison[comparison.parameter.isin(set(summary.sweep))]
        for table in list(dict.fromkeys(ran.table))[:max_sweeps]:
            rows = ran[ran.table == table]
            sweep = rows.parameter.iloc[0]
            panels.append({
                "dataset": dataset_title(dataset), "sweep": sweep,
                "vary": summary[summary.sweep == sweep].vary.iloc[0],
                "units": sweep_units(summary, sweep),
                "paper": [{"value": r.value, "paper_K_star": r.paper_K_star, "paper_max_accuracy": r.paper_max_accuracy}
                          for r in rows.itertuples()],
            })
    return panels


def write_sensitivity_index(path: str | Path, rankings: Sequence[str | Path], pages: Sequence[str | Path],
                            provenance: str = "") -> Path:
    """The sensitivity study's front page: per dataset, the readings ranked by their distance to
    the paper, and links to the pages."""
    path = Path(path)
    sections = []
    for ranking in rankings:
        table = read_csv(ranking, ["reading", "axis", "dataset", "rank", "K_star_distance", "accuracy_distance"])
        rows = "\n".join(
            f"<tr><td>{int(r['rank'])}</td><td>{html.escape(str(r['reading']))}</td>"
            f"<td>{html.escape(str(r['axis']))}</td><td>{r['K_star_distance']:g} "
            f"({r['K_star_distance_seeds']:.1f} &plusmn; {r['K_star_distance_sd']:.1f})</td>"
            f"<td>{r['accuracy_distance']:.1f} ({r['accuracy_distance_seeds']:.1f} &plusmn; "
            f"{r['accuracy_distance_sd']:.1f})</td><td>{r['max_accuracy']:.1f}</td></tr>" for _, r in table.iterrows())
        sections.append(f"<h2>{html.escape(dataset_title(table.dataset.iloc[0]))}</h2>\n<table><tr><th>rank</th>"
                        f"<th>reading</th><th>axis</th><th>K* distance (per seed: mean &plusmn; sd)</th>"
                        f"<th>accuracy distance, points (per seed)</th><th>best accuracy %</th></tr>\n{rows}\n</table>")
    title = "BLADE-FL sensitivity study: readings of what the paper does not say"
    body = f"""<p>Each reading runs the same grid under one choice the paper leaves open. The distance to the paper
sums, over the rows of the paper's tables the grid covers, |K* &minus; K*<sub>paper</sub>| and |maximal
accuracy &minus; the paper's| (in points), from the seed-mean curves and, in brackets, per seed (mean
&plusmn; standard deviation). Readings are ranked by the K* distance, then the accuracy distance.</p>
{''.join(sections)}"""
    return _write_front_page(path, title, provenance, body, pages)


__all__ = ["NOTEBOOK_TITLES", "DATASET_TITLES", "PAGE_TEMPLATE", "page_title", "dataset_title", "render_html",
           "provenance_line", "write_index", "write_sensitivity_index", "headline_panels", "accuracy_gap"]
