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
from bladefl.report.inputs import read_csv
from bladefl.report.views import not_counted, verdict_test, verdict_units

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
    """The claim, linked to the report page whose figures it rests on (when the table names one)."""
    page = _text(getattr(r, "page", ""))
    name = html.escape(str(r.claim))
    if not page:
        return name
    href = html.escape(f"{r.dataset}/{page}.html")  # beside the front page
    return f"<a href='{href}' title='{html.escape(NOTEBOOK_TITLES.get(page, page))}'>{name}</a>"


def _strength_cell(r: object) -> str:
    """An experiment claim's p-value (claimed direction, BH-adjusted) and effect; a bound claim's
    bootstrap support (:func:`bladefl.report.views.verdict_test`)."""
    p, effect = getattr(r, "p_claim", None), getattr(r, "effect", None)
    tested = r.basis == "experiment" and pd.notna(p) and pd.notna(effect)
    return html.escape(verdict_test(r, opposite=False)) + (f"<br>effect {float(effect):+.3g}" if tested else "")


def _verdict_rows(table: pd.DataFrame) -> str:
    rows = []
    for r in table.itertuples():
        colour = VERDICT_COLOURS.get(r.verdict, "#fff")
        aside = not_counted(r)
        verdict = html.escape(r.verdict) + (f"<br><small>{html.escape(aside)}</small>" if aside else "")
        rows.append(f"<tr><td>{html.escape(dataset_title(r.dataset))}</td><td>{_claim_cell(r)}</td>"
                    f"<td>{html.escape(str(r.source))} ({html.escape(str(r.basis))})</td>"
                    f"<td style='background:{colour}'>{verdict}</td>"
                    f"<td>{_strength_cell(r)}</td><td>{html.escape(verdict_units(r))}</td>"
                    f"<td>{_draws_cell(r)}</td><td>{html.escape(str(r.evidence))}</td></tr>")
    return "\n".join(rows)


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
                title: str = "BLADE-FL reproduction report") -> Path:
    """The report's front page: verdict summary and table, the headline figure (embedded), the
    pages grouped by dataset, and the provenance line."""
    path = Path(path)
    table = pd.concat([read_csv(p, VERDICT_COLUMNS) for p in verdict_tables], ignore_index=True)
    per_dataset = verdict_tally(table)
    figure = ""
    if headline_png is not None:
        data = base64.b64encode(Path(headline_png).read_bytes()).decode("ascii")
        figure = (f"<h2>Accuracy and loss versus K, beside the paper's optimum</h2>\n"
                  f"<p>Our curves (mean over seeds) for the main sweeps; a star marks the paper's K* and maximal "
                  f"accuracy for the value of the same colour, a dashed line its K* on the loss. The paper's K* is "
                  f"derived from its tables by each table's own formula.</p>\n"
                  f"<img src='data:image/png;base64,{data}' alt='accuracy and loss versus K for the main sweeps' "
                  f"style='max-width:100%'>")
    body = f"""<h2>Verdicts</h2>
<p><strong>{html.escape(per_dataset)}.</strong></p>
<p><em>Experiment claims</em> are tested within independent units (a partition draw holding several run
seeds, their mean; else a run): Page's trend test over the sweep (the sign test for two values), p-values
adjusted for the false discovery rate over each dataset's claims (Benjamini-Hochberg).
<em>Reproduced</em>: the claimed direction is significant (p &lt; 0.05); <em>refuted</em>: the opposite
direction is significant, or the change is shown inside the equivalence margin; <em>inconclusive</em>:
neither; <em>too few runs</em>: the design cannot reach p &lt; 0.05. The effect is the per-unit change over
the sweep (relative for a loss). A claim that follows from another is shown as derived and not counted;
each K* claim is judged again with K* read as the K of the best accuracy (its own row, not counted).
<em>Bound claims</em> refit the bound to bootstrap resamples of the seeds; support is the share in which the
claim holds (reproduced at &ge; 0.9, refuted at &le; 0.1); <em>not applicable</em>: the bound's
preconditions fail. <em>Partition draws</em>: the claim tested again inside each draw (its seeds as units),
where draws hold several seeds. Each claim links to the page whose figures it rests on.</p>
<table><tr><th>dataset</th><th>claim</th><th>source (basis)</th><th>verdict</th><th>p, effect (support)</th>
<th>units</th><th>partition draws</th><th>evidence</th></tr>
{_verdict_rows(table)}
</table>
{figure}"""
    return _write_front_page(path, title, provenance, body, pages)


def headline_panels(summaries: Mapping[str, pd.DataFrame], comparisons: Mapping[str, pd.DataFrame],
                    max_sweeps: int = 3) -> list[dict]:
    """Per dataset, the first ``max_sweeps`` of the paper's tables that the grid ran, with our
    curves and the paper's (K*, maximal accuracy) per swept value (from the paper-comparison
    table), for :func:`plots.headline_figure`."""
    from bladefl.report.views import sweep_curves

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
                "curves": sweep_curves(summary, sweep),
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
           "provenance_line", "write_index", "write_sensitivity_index", "headline_panels"]
