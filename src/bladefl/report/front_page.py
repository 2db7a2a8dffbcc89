"""The report's front page, computed from the bundle's tables: the findings first (what reproduced,
what was refuted and why, what is not settled, the paper's own errors, the accuracy beside the
paper's), the pages, then every statement of the paper with each dataset's verdict and the number
that decided it (its readings and evidence folded), and the accuracy table with its spread (the
headline figure and its caption are :mod:`bladefl.report.paper_figures`')."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

import pandas as pd

from bladefl.report.page_html import dataset_title
from bladefl.report.paper import accuracy_gap, paper_beside
from bladefl.report.verdict_rows import refuted_by, role

COLOURS = {"reproduced": "#d9f2d9", "refuted": "#f8d7d7", "inconclusive": "#fff3c4", "too few runs": "#e8e8e8",
           "not applicable": "#dde8f5", "vacuous": "#e8e8e8", "paper error": "#eedcf5", "single seed": "#e8e8e8",
           "ambiguous": "#f5ecdc"}
BASIS_TITLES = {"experiment": "On the experiment: paired tests over the independent units, FDR-controlled",
                "bound": "On the bound fitted to the runs: bootstrap over the units",
                "mathematics": "The bound's formula as mathematics: a scan of valid constants",
                "paper": "The paper's own errors"}
UNSETTLED = ("inconclusive", "too few runs", "not applicable")
FOLD_AFTER = 12  # a findings list longer than this is folded under its count
STYLE = """body{font-family:sans-serif;max-width:80em;margin:1.2em auto;padding:0 1em;font-size:15px}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1em 0 .4em}
td,th{border:1px solid #ccc;padding:.25em .4em;vertical-align:top}table{border-collapse:collapse}
.prov{color:#555;font-size:80%;margin:.2em 0 .6em}.small{font-size:85%}.muted{color:#555}
.findings{background:#f7f9fc;border:1px solid #c9d6e8;padding:.5em .9em;margin:.4em 0}
.findings p{margin:.25em 0}.v{font-weight:bold;padding:0 .3em;border-radius:3px;white-space:nowrap}
.statements td{font-size:86%;text-align:left}.statements th{background:#f0f0f0;text-align:left}
.paper{color:#333;margin:.1em 0 .3em}.section td{background:#f6f6f6;font-weight:bold}
details summary{cursor:pointer;color:#235}.links{margin:.3em 0}
.statements details:not([open]){display:inline;margin-left:.4em;font-size:92%}
.statements details:not([open])>summary{display:inline}
.statements details:not([open])>summary::before{content:"\u25b8 "}"""


# What the report reproduces, on every front page (a saved copy names its paper). Not a result: a citation.
PAPER = ("Reproducing J. Li et al., <i>Blockchain Assisted "
         "Decentralized Federated Learning (BLADE-FL): Performance Analysis and Resource Allocation</i>, IEEE "
         "Transactions on Parallel and Distributed Systems 33(10), 2401-2415, 2022, doi:10.1109/TPDS.2021.3138848, "
         "arXiv:2101.06905; the authors' code: the GitHub repository ElvisShaoYumeng/BLADE-FL.")
PAPER_LINE = f"<p class='paper small'>{PAPER}</p>"


def footer() -> str:
    """The page's last line: the release of bladefl that rendered it (CHANGELOG.md says what it holds)."""
    from bladefl import __version__

    return f"<footer class='small muted'>Rendered by bladefl {html.escape(__version__)}.</footer>"


def counted(table: pd.DataFrame) -> pd.DataFrame:
    """The counted rows (one per statement and dataset) and the paper's errors."""
    return table[[role(r) in ("claim", "paper error") for r in table.itertuples()]]


def changed(ours: pd.DataFrame, theirs: pd.DataFrame) -> pd.DataFrame:
    """The counted rows of ``ours`` whose verdict differs from ``theirs``' on the same statement and
    dataset, ``theirs``' verdict beside each (column ``theirs``); a statement ``theirs`` lacks is left out."""
    head = counted(theirs).set_index(["statement", "dataset"]).verdict
    rows = counted(ours)
    there = head.reindex(pd.MultiIndex.from_frame(rows[["statement", "dataset"]])).to_numpy()
    rows = rows.assign(theirs=there)
    return rows[rows.theirs.notna() & (rows.theirs != rows.verdict)]


def _units(table: pd.DataFrame) -> int:
    experiment = table[table.basis == "experiment"]
    units = pd.to_numeric(experiment.get("units", pd.Series(dtype=float)), errors="coerce").dropna()
    return int(units.max()) if len(units) else 0


def _replication(table: pd.DataFrame) -> str:
    if "replication" not in table:
        return ""
    values = [str(v) for v in table[table.basis == "experiment"].replication.dropna().unique() if str(v)]
    return values[0] if values else ""


def banner(table: pd.DataFrame) -> str:
    """Where nothing can be judged (one run), or a design of two units judges little: say what the
    bundle is and the command that renders the kept headline report (its design read from its config)."""
    from bladefl.report.bundle_design import HEADLINE_BUNDLE, headline_design

    units = _units(table)
    design = headline_design()
    where = (f"<code>make reference-report</code> renders the kept report of <code>{HEADLINE_BUNDLE}</code>"
             + (f" ({html.escape(design)})" if design else "") + " from its tables, nothing run")
    if units >= 3:
        return ""
    if units < 2:
        head = ("No verdicts here: this grid has one run per point, too few to test any claim (every row says "
                "why).")
    else:
        head = (f"A look, not the verdicts: {html.escape(_replication(table) or '2 units')}. Two independent "
                f"units show a direction, not evidence: no statement judged on them is tallied as reproduced or "
                f"refuted (each row says which way they point), and a bootstrap over them takes three distinct "
                f"resamples.")
    return (f"<p style='background:#fff3cd;border:1px solid #e0c36a;padding:.5em .8em'><strong>{head}</strong> "
            f"The verdicts: {where}.</p>")


def basis_line(design: str, reading: str, sensitivity: str = "") -> str:
    """What every verdict of the page rests on: the runs' design (its independent units) and the
    engine's reading of what the paper leaves unsaid; where the sensitivity study says which
    verdicts depend on that reading."""
    if not design and not reading:
        return ""
    study = (f" Which verdicts change under other readings: <a href='{html.escape(sensitivity)}'>the sensitivity "
             f"study</a>." if sensitivity else "")
    parts = [f"<b>Design</b>: {html.escape(design)}." if design else "",
             f"<b>Reading</b> (what the paper leaves unsaid, as the runs' engine sets it): {html.escape(reading)}."
             if reading else ""]
    return f"<p class='small'>{' '.join(p for p in parts if p)}{study}</p>"


def _names(rows: pd.DataFrame, datasets: Sequence[str]) -> dict[str, dict[str, pd.Series]]:
    """Per statement (in table order), each dataset's counted row."""
    out: dict[str, dict[str, pd.Series]] = {}
    for _, r in rows.iterrows():
        out.setdefault(str(r.statement), {})[str(r.dataset)] = r
    return {s: v for s, v in out.items() if any(d in v for d in datasets)}


def _where(by: Mapping[str, pd.Series], datasets: Sequence[str], verdicts: Sequence[str]) -> str:
    """"" where the statement has a verdict of ``verdicts`` on every dataset that judges it, else
    the datasets that do."""
    judged = [d for d in datasets if d in by]
    hit = [d for d in judged if by[d].verdict in verdicts]
    if len(hit) == len(judged) and len(datasets) > 1 and len(judged) == len(datasets):
        return ""
    return ", ".join(dataset_title(d) for d in hit)


def _short(text: object, limit: int = 150) -> str:
    text = "" if text is None or text != text else str(text)
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _has(by: Mapping[str, pd.Series], dataset: str, verdicts: Sequence[str]) -> bool:
    return dataset in by and by[dataset].verdict in verdicts


def accuracy_line(comparisons: Mapping[str, pd.DataFrame]) -> str:
    """One line per dataset, the same row on both sides: at the paper's best row (the table row where
    its accuracy is highest), ours beside the paper's, and the range of that difference over the
    tables (each at its own best paper row)."""
    from bladefl.report.plots import param_name

    gap = accuracy_gap(comparisons)
    parts = []
    for dataset, part in gap.groupby("dataset", sort=False):
        top = part.loc[part.paper.idxmax()]
        spread = f" ± {top.sd:.1f}" if math.isfinite(top.sd) else ""
        where = f"{top.table}, {param_name(str(top.parameter))} = {top.value:g}" if math.isfinite(top.value) else \
            str(top.table)
        lo, hi = part.difference.min(), part.difference.max()
        per = (f"{lo:+.1f} points" if len(part) == 1 else
               f"{top.difference:+.1f} points; at each table's best paper row {lo:+.1f} to {hi:+.1f}")
        parts.append(f"{dataset_title(str(dataset))} at the paper's best row ({where}): ours {top.ours:.1f}{spread}% "
                     f"against the paper's {top.paper:.1f}% ({per})")
    return html.escape("; ".join(parts) + "." if parts else "")


def _beside(r: pd.Series, others: Mapping[str, str]) -> str:
    """The statement's verdict under each other reading (``others``: label -> verdict), marked where it
    differs from this report's ("" without other readings)."""
    if not others:
        return ""
    parts = [f"{html.escape(label)}: <span class='v' style='background:{COLOURS.get(v, '#fff')}'>"
             f"{html.escape(v)}</span>" for label, v in others.items()]
    mark = " <b>differs</b>" if any(v != str(r.verdict) for v in others.values()) else ""
    return f"<br><span class='small'>{' · '.join(parts)}{mark}</span>"


def _cell(r: pd.Series | None, readings: pd.DataFrame, comparison: pd.DataFrame | None = None,
          others: Mapping[str, str] | None = None) -> str:
    if r is None:
        return "<td class='muted'>not stated for this dataset</td>"
    colour = COLOURS.get(str(r.verdict), "#fff")
    extra = "".join(f"<li>{html.escape(str(x.claim))}: <b>{html.escape(str(x.verdict))}</b> — "
                    f"{html.escape(_short(x.decided_by, 220))}</li>" for x in readings.itertuples())
    beside = paper_beside(str(r.claim), comparison) if r.basis == "experiment" else ""
    found = html.escape(str(r.finding)) if isinstance(r.finding, str) and r.finding != r.decided_by else ""
    draws = _draws(r)
    found = " · ".join(x for x in (found, f"draws: {html.escape(draws)}" if draws else "") if x)
    summary = "evidence" + (f", {len(readings)} reading{'s' if len(readings) > 1 else ''}" if len(readings) else "")
    number, test = deciding_number(_shown(r.decided_by))
    folded = (f"<details><summary>{summary}</summary>{'<p>by ' + html.escape(test) + '</p>' if test else ''}"
              f"{'<p>' + found + '</p>' if found else ''}"
              f"{'<p>' + html.escape(beside) + '</p>' if beside else ''}"
              f"{'<ul>' + extra + '</ul>' if extra else ''}<p>{html.escape(str(r.evidence))}</p></details>")
    decided = html.escape(_short(number, 110 if r.verdict != "not applicable" else 90))
    why = refuted_by(r)
    why = f" <span class='small'><b>({html.escape(why)})</b></span>" if why else ""
    return (f"<td><span class='v' style='background:{colour}'>{html.escape(str(r.verdict))}</span>{why} "
            f"<span class='small'>{decided}</span>" + _beside(r, others or {}) + folded + "</td>")


def deciding_number(decided_by: str) -> tuple[str, str]:
    """A verdict's deciding number, and the test that gave it (folded on the front page, where it would repeat on
    every row): ``"tie-aware exact Page test over 10 runs: p (falls) = 1.2e-05, FDR-adjusted"`` -> ``("p (falls)
    = 1.2e-05, FDR-adjusted", "tie-aware exact Page test over 10 runs")``; a text with no p-value is its own
    number."""
    test, sep, rest = decided_by.rpartition(": p (")
    return (f"p ({rest}", test) if sep else (decided_by, "")


def _draws(r: pd.Series) -> str:
    """Whether the statement holds on each partition draw, where draws are the units ("" else)."""
    from bladefl.report.verdict_rows import per_draw

    label = str(getattr(r, "across_partitions", "") or "")
    if label in ("", "nan", "one draw", "not applicable", "vacuous", "mathematics: no units") or label.startswith(
            "one seed per draw"):
        return ""
    return per_draw(r)


FOLDED_BASES = ("mathematics", "paper")  # judged without runs: folded under their tally, the findings name them


def statement_table(table: pd.DataFrame, comparisons: Mapping[str, pd.DataFrame] | None = None,
                    beside: Mapping[str, pd.DataFrame] | None = None) -> str:
    """Every counted statement, grouped by what it is judged on, one column per dataset: the
    verdict and the number that decided it (and its verdict under each reading ``beside``: label ->
    that reading's verdict table, where it judged it), what the data show, readings, the paper's words
    and the evidence folded. The statements judged without runs (the bound's formula as mathematics, the
    paper's own errors) are folded, each under its tally."""
    datasets = list(dict.fromkeys(table.dataset))
    rows = counted(table)
    other = {label: counted(t).set_index(["statement", "dataset"]).verdict.astype(str).to_dict()
             for label, t in (beside or {}).items()}
    is_reading = [role(x) == "reading" for x in table.itertuples()]
    readings = {key: part for key, part in table[is_reading].groupby(["dataset", "statement"], sort=False)}
    empty = table.iloc[0:0]
    head = "".join(f"<th>{html.escape(dataset_title(d))}</th>" for d in datasets)
    opening = f"<table class='statements'><tr><th style='width:30%'>the paper's statement</th>{head}</tr>"
    shown, folded = [opening], []
    for basis, title in BASIS_TITLES.items():
        part = rows[rows.basis == basis]
        if part.empty:
            continue
        body = []
        for statement, by in _names(part, datasets).items():
            first = next(iter(by.values()))
            quote = str(getattr(first, "quote", "") or "")
            page = str(getattr(first, "page", "") or "")
            name = html.escape(str(first.claim))
            if page:
                name = f"<a href='{html.escape(f'{first.dataset}/{page}.html')}'>{name}</a>"
            cells = "".join(_cell(by.get(d), readings.get((d, statement), empty), (comparisons or {}).get(d),
                                  {label: v[(statement, d)] for label, v in other.items()
                                   if (statement, d) in v and basis not in FOLDED_BASES})
                            for d in datasets)
            words = f"<details><summary>its words</summary><i>“{html.escape(quote)}”</i></details>" if quote else ""
            body.append(f"<tr><td>{name}<br><span class='small muted'>{html.escape(str(first.source))}</span>{words}"
                        f"</td>{cells}</tr>")
        if basis in FOLDED_BASES:
            counts = {d: part[part.dataset == d].verdict.value_counts() for d in datasets}
            tally = "; ".join(f"{dataset_title(d)}: " + ", ".join(f"{n} {v}" for v, n in c.items())
                              for d, c in counts.items() if len(c))
            folded.append(f"<details><summary>{html.escape(title)} ({html.escape(tally)})</summary>{opening}"
                          + "\n".join(body) + "</table></details>")
        else:
            shown.append(f"<tr class='section'><td colspan='{1 + len(datasets)}'>{html.escape(title)}</td></tr>")
            shown.extend(body)
    shown.append("</table>")
    return "\n".join(shown + folded)


def _shown(value: object) -> str:
    """A cell's text; "" for a missing value (NaN, None), never the word "nan"."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def verdict_table_html(part: pd.DataFrame) -> str:
    """A dataset's verdict rows as an HTML table: the statement and where the paper makes it, its
    role (rows in no tally say why), the verdict and the number that decided it, what the data show,
    the units and the per-draw view; the evidence folded."""
    from bladefl.report.verdict_rows import not_counted, verdict_units

    rows = []
    for r in part.itertuples():
        colour = COLOURS.get(str(r.verdict), "#fff")
        aside = not_counted(r)
        units = verdict_units(r) if str(getattr(r, "unit", "") or "") not in ("", "nan") else ""
        draws = _draws(pd.Series(r._asdict()))
        rows.append(f"<tr><td>{html.escape(str(r.claim))}<br><span class='muted'>{html.escape(str(r.source))}</span>"
                    + (f"<br><i>{html.escape(aside)}</i>" if aside else "") + "</td>"
                    f"<td><span class='v' style='background:{colour}'>{html.escape(str(r.verdict))}</span><br>"
                    f"{html.escape(_shown(getattr(r, 'decided_by', '')))}</td>"
                    f"<td>{html.escape(_shown(getattr(r, 'finding', '')))}</td>"
                    f"<td>{html.escape(units)}{'<br>' + html.escape(draws) if draws else ''}</td>"
                    f"<td><details><summary>evidence</summary>{html.escape(str(r.evidence))}</details></td></tr>")
    return ("<table style='font-size:85%'><tr><th style='width:28%'>statement</th><th style='width:24%'>verdict, "
            "decided by</th><th>what the data show</th><th>units, per draw</th><th>evidence</th></tr>"
            + "".join(rows) + "</table>")


LEGEND = ("<details class='small muted'><summary>what each verdict means</summary><p><b>reproduced</b>: the claimed "
          "direction significant (experiment: p &lt; 0.05 "
          "after the false-discovery correction; bound: in &ge; 90% of bootstrap resamples; mathematics: in every "
          "valid setting scanned). <b>refuted</b>: the opposite significant, the change shown inside a stated "
          "equivalence margin, in &le; 10% of resamples, or a valid setting where it fails (the witness is in the "
          "evidence). <b>inconclusive</b>: neither; never called refuted. <b>too few runs</b>: this design cannot "
          "reach p &lt; 0.05 after the correction. <b>not applicable</b>: the bound's preconditions fail. "
          "<b>vacuous</b>: a reading that holds whatever the data. Rows in no tally: other readings of a statement "
          "and rows derived from another. <b>per draw</b>: the statement judged again on each partition draw's own "
          "run seeds alone: holds (the claimed direction significant on that draw), fails (the opposite, or no change, "
          "significant), unresolved (neither: a draw's few seeds often leave it so).</p></details>")


__all__ = ["verdict_table_html", "banner", "statement_table",
           "accuracy_line", "LEGEND", "STYLE", "counted", "changed"]


def unjudged_section(statements: Sequence[object], datasets: Sequence[str] | None = None) -> str:
    """The inventory's statements with no verdict row, each with where the paper makes it and why:
    ``judged: none`` (its ``why_no_row``), or judged on datasets the report holds no runs of (where
    ``datasets``, the report's, are given: "needs runs on Cifar-10"), folded under the statement table
    ("" where there are none)."""
    from bladefl.data.datasets import TITLES

    def why(s: object) -> str | None:
        if getattr(s, "judged", "") == "none":
            return str(getattr(s, "why_no_row", ""))
        on = tuple(getattr(s, "datasets", ()))
        if datasets is not None and on and not set(on) & set(datasets):
            names = ", ".join(TITLES.get(d, d) for d in on)
            return (f"needs runs on {names}, which this report holds none of (a workflow config listing "
                    f"{'them' if len(on) > 1 else 'it'} under datasets makes them)")
        return None

    none = [(s, reason) for s in statements if (reason := why(s)) is not None]
    if not none:
        return ""
    items = "".join(f"<li><b>{html.escape(str(s.where))}</b>: <i>“{html.escape(str(s.quote))}”</i> — "  # type: ignore[attr-defined]
                    f"{html.escape(str(reason))}</li>" for s, reason in none)
    return (f"<details class='small'><summary>{len(none)} statements of the paper with no verdict row, and why"
            f"</summary><ul>{items}</ul></details>")
