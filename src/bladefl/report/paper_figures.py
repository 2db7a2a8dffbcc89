"""The paper's figures as the report cites them, from the one table of them
(``config/paper_statements.yaml``'s ``figures``, checked against the tex's order by a test): a
sweep's figure number and table, the sweeps in the paper's order, and under each figure a note
where our runs differ from the paper's statements about it, computed from the verdict table; and
the front page's headline figure with a caption that says what its lines and bands are over."""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

import pandas as pd

from bladefl.experiments.runs import provenance
from bladefl.experiments.verdicts.experiment_claims import claims
from bladefl.experiments.verdicts.statements import Figure, Inventory, read_inventory
from bladefl.report.plots import param_name


@lru_cache(maxsize=1)
def inventory() -> Inventory:
    """The project's inventory of the paper's statements and figures."""
    return read_inventory(provenance.project_root() / "config" / "paper_statements.yaml")


def figure_of(vary: str, dataset: str | None = None) -> Figure | None:
    return inventory().figure_of(vary, dataset)


def sweep_order(varies: Sequence[str], dataset: str | None = None) -> list[str]:
    """Swept parameters in the order of the paper's figures (those with none last, as given)."""
    def key(vary: str) -> tuple[int, int]:
        fig = figure_of(vary, dataset)
        return (fig.number if fig else 99, list(varies).index(vary))

    return sorted(dict.fromkeys(varies), key=key)


def heading(vary: str, values: Sequence[float], dataset: str | None = None) -> str:
    """"Fig. 4 (Table II): α = 1, 2, 5"."""
    fig = figure_of(vary, dataset)
    where = f"Fig. {fig.number}" + (f" ({fig.table})" if fig.table else "") if fig else "not in the paper"
    shown = ", ".join("no DP" if v != v or v == float("inf") else f"{v:g}" for v in values)
    return f"{where}: {param_name(vary)} = {shown}"


SIZE_GAP = {"K_star": 1.0, "accuracy": 3.0}  # per row on average: the calibration study's targets


def size_gap(comparison: pd.DataFrame | None, vary: str) -> str:
    """A line where this sweep's table is far from the paper's in size (mean |K* - paper| over its rows
    above 1 round, or mean |best accuracy - paper's| above 3 points), whatever the verdicts on its
    direction: the numbers beside each other; "" where it is close or the paper gives none."""
    if comparison is None or comparison.empty:
        return ""
    part = comparison[comparison.parameter == vary].sort_values("value")
    k = part.dropna(subset=["K_star", "paper_K_star"])
    acc = part.dropna(subset=["max_accuracy", "paper_max_accuracy"])
    k_gap = float((k.K_star - k.paper_K_star).abs().mean()) if len(k) else 0.0
    acc_gap = float((acc.max_accuracy - acc.paper_max_accuracy).abs().mean()) if len(acc) else 0.0
    if k_gap <= SIZE_GAP["K_star"] and acc_gap <= SIZE_GAP["accuracy"]:
        return ""

    def listed(values: pd.Series, fmt: str) -> str:
        return ", ".join(f"{v:{fmt}}" for v in values)

    shown = []
    if len(k):
        shown.append(f"K\\* {listed(k.K_star, 'g')} against the paper's {listed(k.paper_K_star, 'g')} "
                     f"(mean gap {k_gap:.1f} rounds)")
    if len(acc):
        shown.append(f"best accuracy {listed(acc.max_accuracy, '.1f')}% against "
                     f"{listed(acc.paper_max_accuracy, '.1f')}% (mean gap {acc_gap:.1f} points)")
    table = str(part.table.iloc[0]) if len(part) else ""
    return (f"- **The size differs** ({table}, {param_name(vary)} = {listed(part.value, 'g')}): "
            + "; ".join(shown) + ". The verdicts judge directions; how near any reading of the settings the paper "
            f"leaves unstated comes on {table or 'this table'} is {table or 'its'}'s row of the calibration study's "
            "per-table distances (its report's calibration page, docs/calibration.md).")


def differs_note(verdicts: pd.DataFrame, vary: str, comparison: pd.DataFrame | None = None) -> str:
    """Markdown under a sweep's figure: each counted statement about this sweep that the runs do not
    reproduce, with its verdict, what the data show and the likely reason (the inventory's
    ``if_differs``), and a line where the sweep's numbers are far from the paper's in size even where
    every direction is reproduced (:func:`size_gap`); "" where neither."""
    statements = {c.statement for c in claims() if c.param == vary}
    rows = verdicts[verdicts.statement.isin(statements) & (verdicts.role == "claim")
                    & (verdicts.basis == "experiment") & (verdicts.verdict != "reproduced")]
    gap = size_gap(comparison, vary)
    if rows.empty and not gap:
        return ""
    lines = [gap] if gap else []
    for r in rows.itertuples():
        s = inventory().get(str(r.statement))
        reason = f" *Likely:* {_md(s.if_differs)}." if s is not None and s.if_differs else ""
        lines.append(f"- **{_md(r.claim)}** ({_md(s.where if s else r.source)}): **{r.verdict}**: "
                     f"{_md(r.finding)}.{reason}")
    return "**Where this differs from the paper:**\n\n" + "\n".join(lines)


def _md(text: object) -> str:
    """Text for a Markdown line: HTML escaped, and the asterisks of K* kept literal."""
    return html.escape(str(text)).replace("*", "\\*")


def cited(sweep: str, vary: str | None, dataset: str | None = None) -> str:
    """Where the paper shows a sweep: "Fig. 4, Table II"; the bound's cells: "Fig. 3"."""
    fig = figure_of(vary, dataset) if vary else next((f for f in inventory().figures if f.sweep == sweep), None)
    if fig is None:
        return "not in the paper"
    return f"Fig. {fig.number}" + (f", {fig.table}" if fig.table else "")


def settings_view(setup: pd.DataFrame, dataset: str | None = None) -> pd.DataFrame:
    """The sweeps' settings as a reader reads them: the paper's figure and table from the one table of
    the paper's figures (not the config's free text), swept parameters by their names."""
    out = setup.copy()
    if "sweep" in out:
        varies = [str(v).split(" in ")[0] if isinstance(v, str) and " in " in v else "" for v in out.get(
            "varies", [""] * len(out))]
        out["feeds"] = [cited(str(s), v or None, dataset) for s, v in zip(out.sweep, varies, strict=True)]
        out["varies"] = [str(v).replace(vary, param_name(vary), 1) if vary else v
                         for v, vary in zip(out.get("varies", [""] * len(out)), varies, strict=True)]
        out = out.rename(columns={"feeds": "the paper's"})
    return out


def paper_points(comparison: pd.DataFrame, sweep: str) -> list[dict]:
    """The paper's optimum per swept value of ``sweep`` (for the figure's marks)."""
    part = comparison[comparison.parameter == sweep].sort_values("value")
    return [{"value": float(r.value), "paper_K_star": float(r.paper_K_star),
             "paper_max_accuracy": float(r.paper_max_accuracy)} for r in part.itertuples()]


__all__ = ["headline_caption", "figure_section", "inventory", "figure_of", "sweep_order", "heading", "differs_note",
           "size_gap", "paper_points", "cited", "settings_view"]


def annotated_config(text: str, dataset: str | None = None) -> str:
    """A workflow config's YAML as written, each sweep's free-text ``feeds`` label that names another
    figure than the inventory's (the compiled paper's order) replaced by the inventory's, the old
    label kept in a comment: a config kept before the figures were renumbered reads right."""
    import re

    from bladefl.core import strict_yaml

    try:
        sweeps = (strict_yaml.load(text) or {}).get("sweeps") or []
    except (ValueError, AttributeError, yaml_error()):
        return text
    labels = iter([cited(str(s.get("name", "")), s.get("vary"), dataset) for s in sweeps if isinstance(s, dict)
                   and "feeds" in s])
    out = []
    for line in text.splitlines(keepends=True):
        match = re.match(r"^(\s*-?\s*)feeds: (.*?)\s*$", line)
        label = next(labels, None) if match else None
        if match and label and not _names_same(match.group(2), label):
            said = match.group(2)
            line = f"{match.group(1)}feeds: {label}  # the compiled paper's numbering; the config said: {said}\n"
        out.append(line)
    return "".join(out)


def yaml_error() -> type[Exception]:
    import yaml

    return yaml.YAMLError


def _names_same(written: str, label: str) -> bool:
    """Whether a free-text label ("Table II, Fig. 4", "Figs. 10-11 (privacy)") names the figure (and
    table) of ``label`` ("Fig. 4, Table II")."""
    import re

    def figures(text: str) -> set[int]:
        out: set[int] = set()
        for a, b in re.findall(r"Figs?\.\s*(\d+)(?:\s*-\s*(\d+))?", text):
            out.update(range(int(a), int(b or a) + 1))
        return out

    tables = set(re.findall(r"Table ([IVX]+)", label))
    return figures(label) <= figures(written) and tables <= set(re.findall(r"Table ([IVX]+)", written))


def headline_caption(summaries: Mapping[str, pd.DataFrame]) -> str:
    """What the headline figure's lines and bands are over, from the tables (never a constant)."""
    from bladefl.report.views import unit_description

    described = {unit_description(s) for s in summaries.values()}
    over = "; ".join(sorted(described))
    return (f"Test accuracy and training loss versus K for the main sweeps. Each line is the mean over {over}, "
            f"the band ±1 standard deviation over them. In each swept value's colour: a star marks the paper's K* "
            f"and best accuracy, a dashed line the paper's K* on the loss panel, a dotted line the paper's best "
            f"accuracy where its K* is not an integer at the table's stated beta. The paper's K* is derived from "
            f"its tables by each table's own formula.")


def figure_section(png: str | Path | None, caption: str) -> str:
    if png is None:
        return ""
    data = base64.b64encode(Path(png).read_bytes()).decode("ascii")
    return (f"<h2>Accuracy and loss versus K, beside the paper's optimum</h2>\n<p class='small'>{html.escape(caption)}"
            f"</p>\n<img src='data:image/png;base64,{data}' alt='accuracy and loss versus K for the main sweeps' "
            f"style='max-width:64%'>")
