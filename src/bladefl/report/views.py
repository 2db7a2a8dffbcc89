"""What the pages show, computed from the tidy tables: curves per sweep, the privacy table, the
runs' provenance."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from bladefl.experiments import run_id
from bladefl.report.inputs import ReportInputError, read_json
from bladefl.report.tables import plus_minus


def sweep_curves(summary: pd.DataFrame, sweep: str) -> pd.DataFrame:
    """Per (value, K): mean and std over seeds of the training loss and test accuracy."""
    part = summary[(summary.sweep == sweep) & (summary.status == "ok")]
    if part.empty:
        raise ReportInputError(f"sweep {sweep!r} has no rows in the summary table")
    return (part.groupby(["value", "cell", "K"], as_index=False)
            .agg(loss=("train_loss", "mean"), loss_std=("train_loss", "std"), accuracy=("test_accuracy", "mean"),
                 accuracy_std=("test_accuracy", "std"), test_loss=("test_loss", "mean"), seeds=("seed", "nunique"))
            .fillna({"loss_std": 0.0, "accuracy_std": 0.0}))


def k_star_spread(optimum: pd.DataFrame) -> pd.DataFrame:
    """Per (sweep, value) of the sweeps that vary a parameter: K* (by loss, seed-mean curve of every
    run), its spread over run seeds on one partition draw and over partition draws, as the optimum
    table holds them (:func:`bladefl.experiments.tidy.optimum`)."""
    varying = optimum[optimum.vary.notna() & (optimum.vary.astype(str) != "")]
    return varying.rename(columns={"K_star_loss": "K_star"})[
        ["sweep", "vary", "value", "cell", "seeds", "K_star", "partitions", "K_star_loss_std_seeds",
         "K_star_loss_std_partitions"]].reset_index(drop=True)


def privacy_table(optimum: pd.DataFrame) -> pd.DataFrame:
    part = optimum[optimum.sweep == "epsilon"].sort_values("value")
    if part.empty:
        raise ReportInputError("no 'epsilon' sweep in the optimum table")
    return part[["value", "K_star_loss", "K_star_accuracy", "min_train_loss", "max_accuracy"]].rename(
        columns={"value": "epsilon"}).reset_index(drop=True)


def provenance(summary_paths: Sequence[str | Path]) -> pd.DataFrame:
    rows = []
    for p in summary_paths:
        s = read_json(p)
        prov = s.get("provenance", {})
        rows.append({"run": run_id.from_path(p).name, "seed": s["config"]["seed"],
                     "partition": s["config"].get("partition", {}).get("seed"),
                     "code_version": prov.get("code_version"),
                     "torch": prov.get("torch"), "host": prov.get("host"), "device": prov.get("device"),
                     "seconds": s.get("seconds", {}).get("total"),
                     "train_images_sha256": prov.get("data_sha256", {}).get("train-images-idx3-ubyte")})
    return pd.DataFrame(rows)


__all__ = ["derived_from", "reading_of", "not_counted",
           "sweep_curves", "k_star_spread", "privacy_table", "provenance", "detection_quality_table", "exclusion_table",
           "detection_worst_rounds"]


def detection_quality_table(quality: pd.DataFrame) -> pd.DataFrame:
    """Per sweep point and detector: each metric as "mean +- std" over seeds (fractions)."""
    out = quality[["sweep", "lazy_ratio", "sigma2", "detector", "seeds"]].copy()
    for metric in ("precision", "recall", "fpr", "auc"):
        out[metric] = plus_minus(quality[metric], quality[f"{metric}_std"], ".3f", missing="n/a (nothing flagged)")
    return out.rename(columns={"lazy_ratio": "M/N", "fpr": "false-positive rate", "auc": "ROC AUC"})


def exclusion_table(exclusion: pd.DataFrame) -> pd.DataFrame:
    """Per lazy ratio and condition: K* and the maximal accuracy, "mean +- std" over seeds."""
    out = exclusion[["lazy_ratio", "condition", "seeds"]].copy()
    for col, std in (("K_star_loss", "K_star_loss_std"), ("K_star_accuracy", "K_star_accuracy_std"),
                     ("max_accuracy", "max_accuracy_std")):
        out[col] = plus_minus(exclusion[col], exclusion[std], ".4g", ".2g")
    return out.rename(columns={"lazy_ratio": "M/N", "K_star_loss": "K* (loss)", "K_star_accuracy": "K* (accuracy)",
                               "max_accuracy": "max accuracy"})


def detection_worst_rounds(per_round: pd.DataFrame) -> pd.DataFrame:
    """Per detector: how many rounds were scored and its worst round over every cell, seed and K
    (the lowest recall, the highest false-positive rate)."""
    return (per_round.groupby("detector")
            .agg(rounds=("recall", "size"), min_recall=("recall", "min"), max_fpr=("fpr", "max")).reset_index())


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


def verdict_units(r: object) -> str:
    """What a verdict row rests on: its independent units (e.g. "5 draws"), else its seeds."""
    units, unit = _number(getattr(r, "units", None)), getattr(r, "unit", "")
    return f"{int(units)} {unit}s" if units == units and _is_text(unit) else f"{int(r.seeds)} seeds"  # type: ignore[attr-defined]


def derived_from(r: object) -> str:
    """The claim a verdict row follows from ("" for a claim counted on its own)."""
    value = getattr(r, "derived_from", "")
    return value if _is_text(value) else ""


def reading_of(r: object) -> str:
    """The claim a verdict row reads another way (K* by accuracy; "" for a claim's own row)."""
    value = getattr(r, "reading_of", "")
    return value if _is_text(value) else ""


def not_counted(r: object) -> str:
    """Why a verdict row is in no tally ("" where it is counted): derived from, or another reading of,
    another row's claim."""
    if derived := derived_from(r):
        return f"derived from “{derived}”, not counted"
    if read := reading_of(r):
        return f"another reading of “{read}”, not counted"
    return ""


def verdict_view(table: pd.DataFrame) -> pd.DataFrame:
    """The verdict table as a reader takes it in: the claim and where the paper makes it, the
    verdict (rows in no tally say why), the test (:func:`verdict_test`), the effect with its 95%
    interval, the units, the per-draw view and the evidence."""
    rows = []
    for r in table.itertuples():
        effect, low, high = (_number(getattr(r, k, None)) for k in ("effect", "effect_low", "effect_high"))
        shown = "" if effect != effect else f"{effect:+.3g}" + (f" [{low:+.3g}, {high:+.3g}]" if low == low else "")
        aside = not_counted(r)
        draws = " ".join(x for x in (getattr(r, "across_partitions", ""), f"({getattr(r, 'draws_holding', '')})")
                         if _is_text(x) and x != "()")
        rows.append({"claim": f"{r.claim} ({r.source})",
                     "verdict": r.verdict + (f", {aside}" if aside else ""),
                     "test": verdict_test(r), "effect [95% CI]": shown, "units": verdict_units(r),
                     "per draw": draws, "evidence": r.evidence})
    return pd.DataFrame(rows)
