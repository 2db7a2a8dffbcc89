"""How a verdict row reads on a page: its test (p-values or bootstrap support), its units, its
role (counted, a reading of a statement, derived from another row, the paper's own error), why a
row is not counted, its effect with its interval, and the verdict table as a reader sees it."""

from __future__ import annotations

import pandas as pd


def _is_text(value: object) -> bool:
    return isinstance(value, str) and value != ""


def _number(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")


def verdict_test(r: object, opposite: bool = True) -> str:
    """A verdict row's test: an experiment claim's p-value (claimed direction, BH-adjusted; with
    ``opposite`` the other direction's beside it), or its p against (convexity), or a bound claim's
    bootstrap support."""
    p, against = _number(getattr(r, "p_claim", None)), _number(getattr(r, "p_opposite", None))
    if p == p:
        return f"p = {p:.2g}" + (f" (opposite {against:.2g})" if opposite and against == against else "")
    if against == against:
        return f"p (against) = {against:.2g}"
    support = _number(getattr(r, "support", None))
    return f"support {support:.2f}" if support == support else "n/a"


def refuted_by(r: object) -> str:
    """What decided a *refuted* row, in a reader's words ("" for any other verdict): an experiment claim's
    change shown inside its equivalence margin (a small effect, not the opposite), the opposite direction
    significant, or a trend significant against a claim of no change; a bound claim's support at most 10%
    of resamples; a statement about the formula failing at a valid setting (its witness)."""
    if getattr(r, "verdict", "") != "refuted":
        return ""
    basis, finding = getattr(r, "basis", ""), getattr(r, "finding", "")
    decided = str(getattr(r, "decided_by", "") or "")
    if basis == "experiment":
        if _is_text(finding) and str(finding).startswith("no change inside") or decided.startswith("equivalence:"):
            return "equivalent within the margin"
        if "either direction" in decided:
            return "a trend is significant"
        return "the opposite is significant"
    if basis == "bound":
        return "in at most 10% of resamples"
    if basis == "mathematics":
        return "fails at a valid setting"
    return ""


# Column names of the report's tables as a reader reads them (others: underscores to spaces).


def verdict_units(r: object) -> str:
    """What a verdict row rests on: its independent units (e.g. "5 draws"), else its seeds."""
    units, unit = _number(getattr(r, "units", None)), getattr(r, "unit", "")
    count, noun = (int(units), unit) if units == units and _is_text(unit) else (int(r.seeds), "seed")  # type: ignore[attr-defined]
    return f"{count} {noun}{'' if count == 1 else 's'}"


def derived_from(r: object) -> str:
    """The claim a verdict row follows from ("" for a claim counted on its own)."""
    value = getattr(r, "derived_from", "")
    return value if _is_text(value) else ""


def reading_of(r: object) -> str:
    """The claim a verdict row reads another way (K* by accuracy; "" for a claim's own row)."""
    value = getattr(r, "reading_of", "")
    return value if _is_text(value) else ""


def role(r: object) -> str:
    """A verdict row's role: claim (counted), reading, derived or paper error; a table written
    before roles were recorded: from its derived_from and reading_of columns."""
    value = getattr(r, "role", "")
    if _is_text(value):
        return str(value)
    return "derived" if derived_from(r) else "reading" if reading_of(r) else "claim"


def not_counted(r: object) -> str:
    """Why a verdict row is in no tally of claims ("" where it is counted): derived from, or another
    reading of, another row's claim; a paper error (tallied apart)."""
    kind = role(r)
    if kind == "derived":
        return f"derived from “{derived_from(r)}”, not counted"
    if kind == "reading":
        return f"another reading of “{reading_of(r)}”, not counted" if reading_of(r) else "another reading, not counted"
    if kind == "paper error":
        return "the paper's own error"
    return ""


def effect_text(r: object) -> str:
    """An experiment row's change over the sweep with its 95% interval, in the quantity's unit (its
    evidence names the quantity: a loss or beta K* changes relatively, in %; the accuracy in
    points); "" where the row has no effect."""
    effect, low, high = (_number(getattr(r, k, None)) for k in ("effect", "effect_low", "effect_high"))
    if effect != effect:
        return ""
    evidence = str(getattr(r, "evidence", ""))
    scale, unit = (100, "%") if "change (relative)" in evidence else (100, " pts") if (
        "max accuracy per" in evidence) else (1, "")

    def show(v: float) -> str:
        return f"{scale * v:+.3g}{unit}"

    return show(effect) + (f" [{show(low)}, {show(high)}]" if low == low and high == high else "")


def per_draw(r: object) -> str:
    """The per-draw view of a verdict row: the label, with the count of draws where it holds only where
    the label does not already say it (a split between draws)."""
    label = getattr(r, "across_partitions", "")
    if not _is_text(label):
        return ""
    count = getattr(r, "draws_holding", "")
    split = label in ("differs between draws", "flips") and _is_text(count) and count
    return f"{label} (holds on {count})" if split else label


def verdict_view(table: pd.DataFrame) -> pd.DataFrame:
    """The verdict table as a reader takes it in: the statement and where the paper makes it, the
    verdict (rows in no tally say why), the number that decided it, what the data show, the units,
    the per-draw view and the evidence."""
    rows = []
    for r in table.itertuples():
        aside = not_counted(r)
        draws = per_draw(r)
        decided = getattr(r, "decided_by", "")
        rows.append({"claim": f"{r.claim} ({r.source})",
                     "verdict": r.verdict + (f", {aside}" if aside else ""),
                     "decided by": decided if _is_text(decided) else verdict_test(r),
                     "what the data show": getattr(r, "finding", "") if _is_text(getattr(r, "finding", "")) else "",
                     "units": verdict_units(r) if _number(getattr(r, "units", None)) == _number(
                         getattr(r, "units", None)) else "", "per draw": draws, "evidence": r.evidence})
    return pd.DataFrame(rows)


def design_power(table: pd.DataFrame) -> str:
    """A markdown section: what the experiment's independent units can decide (the smallest p each
    exact test can give, the units it needs, the smallest change the paired t-test finds), computed
    from the units of the experiment rows ("" without them)."""
    from bladefl.experiments.verdicts.power import design_limits, detectable_change
    from bladefl.report.tables import markdown

    rows = table[(table.basis == "experiment")] if "basis" in table else table.iloc[:0]
    units = pd.to_numeric(rows.get("units", pd.Series(dtype=float)), errors="coerce").dropna()
    if units.empty:
        return ""
    m = int(units.mode().iloc[0])
    noun = str(rows.unit.dropna().mode().iloc[0]) if "unit" in rows and rows.unit.notna().any() else "unit"
    limits = design_limits(m)
    for column in limits.columns:
        if limits[column].dtype == bool:
            limits[column] = limits[column].map({True: "yes", False: "no"})
        elif column.startswith("smallest p"):
            limits[column] = limits[column].map(lambda p: f"{p:.2g}" if p >= 1e-9 else "below 1e-9")
    d = detectable_change(m)
    change = (f"The paired t-test over {m} {noun}s finds a mean change of {d:.2f} standard deviations of the "
              f"{noun}s' changes with 80% power (two-sided, 5%); a smaller true change is mostly called "
              "inconclusive (refuted needs the change shown inside its equivalence margin)." if d == d else "")
    within = f" (the run seeds within a {noun} are not independent of each other)" if noun != "run" else ""
    return (f"### What {m} {noun}s can decide\n\nThe experiment's independent units are {m} {noun}s{within}. "
            "Before any data, each exact test has a smallest "
            "p-value it can give; the false-discovery adjustment over the dataset's statements raises it further "
            f"(a row says *too few runs* where it cannot reach 0.05). {change}\n\n" + markdown(limits))
