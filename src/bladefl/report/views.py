"""What the pages show, computed from the tidy tables: curves per sweep, the privacy table, the
runs' provenance."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bladefl.core import run_files
from bladefl.data.datasets import MNIST, SPECS
from bladefl.experiments.plan import run_id
from bladefl.experiments.tables.tidy import draws_are_units
from bladefl.report.inputs import ReportInputError
from bladefl.report.tables import plus_minus


def _sweep_rows(summary: pd.DataFrame, sweep: str) -> pd.DataFrame:
    """The rows of one sweep that trained to a result (status ok: not infeasible, not diverged)."""
    part = summary[(summary.sweep == sweep) & (summary.status == "ok")]
    if part.empty:
        raise ReportInputError(f"sweep {sweep!r} has no rows in the summary table")
    return part


def sweep_curves(summary: pd.DataFrame, sweep: str) -> pd.DataFrame:
    """Per (value, K): mean and std over seeds of the training loss and test accuracy, with tau and
    the total local steps K tau of each K."""
    part = _sweep_rows(summary, sweep)
    out = (part.groupby(["value", "cell", "K"], as_index=False)
           .agg(loss=("train_loss", "mean"), loss_std=("train_loss", "std"), accuracy=("test_accuracy", "mean"),
                accuracy_std=("test_accuracy", "std"), test_loss=("test_loss", "mean"), seeds=("seed", "nunique"),
                tau=("tau", "first"))
           .fillna({"loss_std": 0.0, "accuracy_std": 0.0}))
    return out.assign(steps=out.K * out.tau)


def sweep_units(summary: pd.DataFrame, sweep: str) -> pd.DataFrame:
    """The curves of one sweep per independent unit, as the verdicts take them: a partition draw
    (its seeds' mean) where every draw holds at least two seeds, else a run. Per (unit, value, K):
    the training loss, the test accuracy in %, tau and the total local steps K tau; ``unit_kind``
    ("draw" or "run") and ``units`` (how many) in every row."""
    part = _sweep_rows(summary, sweep)
    kind = "draw" if draws_are_units(part) else "run"
    unit = part.partition if kind == "draw" else part.seed
    out = (part.assign(unit=unit).groupby(["unit", "value", "K"], as_index=False)
           .agg(loss=("train_loss", "mean"), accuracy=("test_accuracy", "mean"), tau=("tau", "first")))
    return out.assign(accuracy=100 * out.accuracy, steps=out.K * out.tau, unit_kind=kind, units=out.unit.nunique())


def unit_description(summary: pd.DataFrame) -> str:
    """What a figure's mean and band are over, from the runs (never a constant): "the 5 partition
    draws (each the mean of its 4 seeds)", "the 2 runs (one seed on each partition draw)", "the 20
    runs on one partition draw"."""
    ok = summary[summary.status == "ok"]
    per = ok.groupby("partition").seed.nunique() if "partition" in ok else pd.Series(dtype=int)
    seeds = int(ok.seed.nunique())
    if draws_are_units(ok):
        lo, hi = int(per.min()), int(per.max())
        each = f"{lo} seeds" if lo == hi else f"{lo}-{hi} seeds"
        return f"the {len(per)} partition draws (each the mean of its {each})"
    if len(per) == 1 and seeds > 1:
        return f"the {seeds} runs on one partition draw"
    if seeds == 1:
        return "the 1 run"
    return f"the {seeds} runs" + (" (one seed on each partition draw)" if len(per) > 1 else "")


def k_star_spread(optimum: pd.DataFrame) -> pd.DataFrame:
    """Per (sweep, value) of the sweeps that vary a parameter: K* (by loss, seed-mean curve of every
    run), its spread over run seeds on one partition draw and over partition draws, as the optimum
    table holds them (:func:`bladefl.experiments.tables.tidy.optimum`)."""
    varying = optimum[optimum.vary.notna() & (optimum.vary.astype(str) != "")]
    return varying.rename(columns={"K_star_loss": "K_star"})[
        ["sweep", "vary", "value", "cell", "seeds", "K_star", "partitions", "K_star_loss_std_seeds",
         "K_star_loss_std_partitions"]].reset_index(drop=True)


def privacy_table(optimum: pd.DataFrame) -> pd.DataFrame:
    part = optimum[optimum.sweep == "epsilon"].sort_values("value")
    if part.empty:
        raise ReportInputError("no 'epsilon' sweep in the optimum table")
    out = part[["value", "K_star_loss", "K_star_accuracy", "min_train_loss", "max_accuracy"]].rename(
        columns={"value": "epsilon"}).reset_index(drop=True)
    return out.assign(max_accuracy=100 * out.max_accuracy)  # in %, as every page shows accuracy


def provenance(summary_paths: Sequence[str | Path]) -> pd.DataFrame:
    """One row per run: where and with what it ran, from its summary (read strictly, as every run
    file is: :mod:`bladefl.core.run_files`)."""
    rows = []
    for p in summary_paths:
        s = run_files.read_summary(p)
        prov = s.get("provenance", {})
        rows.append({"run": run_id.from_path(p).name, "seed": s["config"]["seed"],
                     "partition": s["config"].get("partition", {}).get("seed"),
                     "code_version": prov.get("code_version"), "torch": prov.get("torch"), "host": prov.get("host"),
                     "device": prov.get("device"), "seconds": s.get("seconds", {}).get("total"),
                     # the dataset's first training file stands for its data (MNIST's images, Cifar-10's batch 1)
                     "train_images_sha256": prov.get("data_sha256", {}).get(
                         SPECS.get(str(s["config"].get("dataset")), MNIST).train_files[0]),
                     "partition_sha256": prov.get("partition_sha256")})
    return pd.DataFrame(rows)


__all__ = ["provenance_summary", "variants_summary", "kstar_summary", "constants_summary", "unit_description",
           "fig3_labels", "readable", "csv_link", "HEADERS", "seed_means", "provenance_view", "sweep_curves",
           "sweep_units", "k_star_spread", "privacy_table", "privacy_units", "provenance", "detection_quality_table",
           "exclusion_table", "detection_worst_rounds", "lazy_explanations", "percent"]


def detection_quality_table(quality: pd.DataFrame) -> pd.DataFrame:
    """Per sweep point and detector: each metric as "mean +- std" over seeds (fractions)."""
    names = {"lazy_ratio": "M/N", "sigma2": "σ²", "fig3": "Fig. 3"}  # as the paper names them
    out = quality[["sweep", "lazy_ratio", "sigma2", "detector", "seeds"]].replace({"sweep": names})
    for metric in ("precision", "recall", "fpr", "auc"):
        out[metric] = plus_minus(quality[metric], quality[f"{metric}_std"], ".3f", missing="n/a (nothing flagged)")
    return out.rename(columns={**names, "fpr": "false-positive rate", "auc": "ROC AUC"})


def exclusion_table(exclusion: pd.DataFrame) -> pd.DataFrame:
    """Per lazy ratio and condition: K* and the maximal accuracy (%), "mean +- std" over seeds."""
    out = exclusion[["lazy_ratio", "condition", "seeds"]].copy()
    for col, std, scale in (("K_star_loss", "K_star_loss_std", 1), ("K_star_accuracy", "K_star_accuracy_std", 1),
                            ("max_accuracy", "max_accuracy_std", 100)):
        out[col] = plus_minus(scale * exclusion[col], scale * exclusion[std], ".4g", ".2g")
    return out.rename(columns={"lazy_ratio": "M/N", "K_star_loss": "K* (loss)", "K_star_accuracy": "K* (accuracy)",
                               "max_accuracy": "max accuracy (%)"})


def detection_worst_rounds(per_round: pd.DataFrame) -> pd.DataFrame:
    """Per detector: how many rounds were scored and its worst round over every cell, seed and K
    (the lowest recall, the highest false-positive rate)."""
    return (per_round.groupby("detector").agg(rounds=("recall", "size"), min_recall=("recall", "min"), max_fpr=(
        "fpr", "max")).reset_index().rename(columns={"min_recall": "lowest recall of a round",
                                                     "max_fpr": "highest false-positive rate of a round"}))


HEADERS = {"K_star": "K*", "K_experiment": "K* experiment", "K_closed_form": "K* closed form (Thm. 3)",
           "K_exact_fit": "K* of fitted bound", "K_exact_measured": "K* of measured bound",
           "largest_K_star_if_defined_at_1": "largest K* (bound defined at K = 1)", "gap": "gap F(w^K) - F*",
           "G_fit": "G (run's mean fit)", "G_measured": "G measured", "rel_gap_fit": "(G mean fit - gap) / gap",
           "rel_gap_measured": "(G measured - gap) / gap", "rel_gap_fit_pct": "(G mean fit - gap) / gap, %",
           "rel_gap_measured_pct": "(G measured - gap) / gap, %", "eta_L_below_1": "eta L < 1",
           "bracket_measured_positive": "bracket > 0 (measured)", "bracket_fit_positive": "bracket > 0 (fitted)",
           "theta_last": "theta (last round)", "eps2_of_K": "eps2 of K", "phi_measured": "phi measured",
           "eps2_measured": "eps2 measured", "phi_fit": "phi fitted", "eps2_fit": "eps2 fitted",
           "f_star": "F*", "max_rel_excess": "largest (G - gap) / gap of the run's fit",
           "above_everywhere": "above at every K",
           "undefined_at": "undefined at K", "max_rel_gap_fit": "largest rel. gap (run's mean fit)",
           "mean_rel_gap_fit": "mean rel. gap (run's mean fit)", "fit_above_everywhere": "fitted above at every K",
           "closed_form_eta_L": "eta L for the closed form to give K* experiment", "lazy_term": "with the lazy term",
           "cell": "condition", "K_star_loss": "K* (by loss)", "K_star_accuracy": "K* (by accuracy)",
           "min_train_loss": "min training loss", "max_accuracy": "max accuracy (%)",
           "K_star_loss_std_seeds": "K* sd over run seeds", "K_star_loss_std_partitions": "K* sd over draws",
           "partitions": "draws"}


def fig3_labels(cells: Sequence[str]) -> dict[str, str]:
    """Fig. 3's conditions named as the paper names them, (a), (b), ..., with their settings:
    ``alpha~1_beta~6_N~20_eta~0.005_lazy~0_sigma2~0_eps~inf`` -> ``Fig. 3(a): beta 6, eta 0.005, M/N 0``."""
    out = {}
    for i, cell in enumerate(cells):
        pairs = dict(part.split("~", 1) for part in cell.split("_") if "~" in part)
        shown = [f"beta {pairs.get('beta', '?')}", f"eta {pairs.get('eta', '?')}", f"M/N {pairs.get('lazy', '0')}"]
        if pairs.get("lazy", "0") not in ("0", "0.0"):
            shown.append(f"sigma2 {pairs.get('sigma2', '?')}")
        out[cell] = f"Fig. 3({chr(ord('a') + i)}): " + ", ".join(shown)
    return out


def readable(frame: pd.DataFrame, labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """A table as a reader reads it: headers in words (:data:`HEADERS`), cell keys replaced by
    ``labels`` (e.g. :func:`fig3_labels`)."""
    out = frame.copy()
    if labels is not None and "cell" in out:
        out["cell"] = out["cell"].map(lambda c: labels.get(c, c))
    for c in out.columns:  # a true/false column in words
        if out[c].dtype == bool or (out[c].dtype == object and len(out[c].dropna()) and set(out[c].dropna()) <= {
                True, False}):
            out[c] = out[c].map({True: "yes", False: "no"}).fillna("")
    return out.rename(columns=lambda c: HEADERS.get(c, str(c).replace("_", " ")))


def seed_means(frame: pd.DataFrame, keys: Sequence[str] = ("cell", "K")) -> pd.DataFrame:
    """A per-seed table as one row per ``keys``: numbers averaged over the seeds (a true/false column
    becomes the share of seeds where it holds), with how many seeds."""
    numeric = frame.drop(columns=[c for c in ("seed",) if c in frame]).copy()
    for c in numeric.columns:
        if numeric[c].dtype == bool or set(numeric[c].dropna().unique()) <= {True, False}:
            numeric[c] = numeric[c].astype(float)
    grouped = numeric.groupby(list(keys), as_index=False, sort=False)
    out = grouped.mean(numeric_only=True)
    return out.assign(seeds=grouped.size()["size"].to_numpy()) if "seed" in frame else out


def csv_link(name: str, dataset: str, page: str) -> str:
    """A Markdown link from a report page (``report/<dataset>/<page>.html``) to a table it wrote
    (``tables/<dataset>/<page>/<name>.csv``)."""
    return f"[{name}.csv](../../tables/{dataset}/{page}/{name}.csv)"


def provenance_view(prov: pd.DataFrame) -> pd.DataFrame:
    """The provenance table as a page shows it: run names that wrap (their settings spaced), the
    data and partition checksums shortened to 12 characters (the CSV keeps them whole; a run written
    before the partition's digest was recorded shows none)."""
    out = prov.copy()
    if "run" in out:
        out["run"] = out["run"].astype(str).str.replace("_", " ", regex=False)
    for column in ("train_images_sha256", "partition_sha256"):
        if column in out:
            out[column] = out[column].where(out[column].notna(), "").astype(str).str[:12]
    return out.rename(columns={"train_images_sha256": "train images SHA-256", "partition_sha256": "partition SHA-256",
                               "code_version": "code"})


def provenance_summary(prov: pd.DataFrame) -> pd.DataFrame:
    """The runs' provenance in one row per code version, device and data checksum: how many runs,
    seeds and partition draws, and their run time (each run's share of its job's wall time, summed)."""
    frame = prov.copy()
    for column in ("code_version", "device", "train_images_sha256", "partition"):
        if column not in frame:
            frame[column] = ""
    frame["train_images_sha256"] = frame.train_images_sha256.fillna("").astype(str).str[:12]
    grouped = frame.fillna({"code_version": "", "device": ""}).groupby(
        ["code_version", "device", "train_images_sha256"], as_index=False)
    out = grouped.agg(runs=("run", "size"), seeds=("seed", "nunique"), draws=("partition", "nunique"),
                      seconds=("seconds", "sum"))
    return out.rename(columns={"code_version": "code", "train_images_sha256": "train images SHA-256",
                               "seconds": "run time (s, each run's share of its job)"})


def _range(values: pd.Series, fmt: str) -> str:
    """"median (min-max)" of finite values; "undefined" where none is finite."""
    finite = pd.to_numeric(values, errors="coerce")
    finite = finite[np.isfinite(finite)]
    if finite.empty:
        return "undefined"
    lo, mid, hi = finite.min(), finite.median(), finite.max()
    return f"{mid:{fmt}}" if lo == hi else f"{mid:{fmt}} ({lo:{fmt}}-{hi:{fmt}})"


def _mode(values: pd.Series) -> str:
    counts = values.astype(str).value_counts()
    return "" if counts.empty else str(counts.index[0]) + ("" if len(counts) == 1 else f" ({counts.iloc[0]} of "
                                                                                     f"{int(counts.sum())})")


def variants_summary(variants: pd.DataFrame, labels: Mapping[str, str]) -> pd.DataFrame:
    """One row per cell and way of choosing the constants (the per-run rows stay in the CSV): the
    largest excess over the experiment in % (median and range over runs), the bound's K* and where
    it is undefined (the most common, with how many runs), the experiment's K*."""
    rows = []
    for (cell, variant), part in variants.groupby(["cell", "variant"], sort=False):
        rows.append({"condition": labels.get(cell, cell), "constants": variant, "runs": len(part),
                     "largest (G − gap) / gap of each run's own fit, % (median, range)":
                         _range(100 * pd.to_numeric(part.max_rel_excess), ".0f"),
                     "bound's K*": _mode(part.K_star.map(lambda v: "undefined" if v != v else f"{v:g}")),
                     "undefined at K": _mode(part.undefined_at.fillna("none")),
                     "experiment's K*": _mode(part.K_experiment.map(lambda v: f"{v:g}"))})
    return pd.DataFrame(rows)


def kstar_summary(kstar: pd.DataFrame, variants: pd.DataFrame, labels: Mapping[str, str]) -> pd.DataFrame:
    """Per cell: K* of the closed form (Theorem 3), of the fitted and of the measured bound (with the K
    where the measured bound is undefined: its K* is a minimum over the rest only), and of the
    experiment, medians and ranges over the runs."""
    rows = []
    for cell, part in kstar.groupby("cell", sort=False):
        undefined = variants[(variants.cell == cell) & (variants.variant == "measured")].undefined_at
        where = _mode(undefined.fillna("none")) if len(undefined) else ""
        measured = _range(part.K_exact_measured, "g")
        if where and not where.startswith("none"):
            measured = f"{measured} (undefined at K = {where}: the minimum over the other K)"
        rows.append({"condition": labels.get(cell, cell), "runs": len(part),
                     "closed form (Thm. 3)": _range(part.K_closed_form, ".3g"),
                     "fitted bound": _range(part.K_exact_fit, "g"), "measured bound": measured,
                     "experiment": _range(part.K_experiment, "g"),
                     "largest (G − gap) / gap of each run's mean fit, % (median, range)":
                         _range(100 * pd.to_numeric(part.max_rel_gap_fit), ".0f")})
    return pd.DataFrame(rows)


def constants_summary(table: pd.DataFrame, labels: Mapping[str, str]) -> pd.DataFrame:
    """Per cell: each constant's median and range over the runs."""
    columns = [c for c in ("L", "xi", "delta", "phi_measured", "eps2_measured", "phi_fit", "eps2_fit", "theta",
                           "f_star") if c in table]
    rows = []
    for cell, part in table.groupby("cell", sort=False):
        rows.append({"condition": labels.get(cell, cell), "runs": len(part),
                     **{HEADERS.get(c, c): _range(part[c], ".3g") for c in columns}})
    return pd.DataFrame(rows)


def privacy_units(summary: pd.DataFrame) -> pd.DataFrame:
    """The epsilon sweep per independent unit (as the verdicts take them): per (unit, epsilon) the
    K* of the unit's mean loss curve, its minimal training loss and maximal test accuracy (%)."""
    units = sweep_units(summary, "epsilon") if (summary.sweep == "epsilon").any() else pd.DataFrame()
    if units.empty:
        return pd.DataFrame(columns=["unit", "epsilon", "K_star_loss", "min_train_loss", "max_accuracy"])
    rows = []
    for (unit, value), part in units.groupby(["unit", "value"]):
        best = part.loc[part.loss.idxmin()]
        rows.append({"unit": unit, "epsilon": float(value), "K_star_loss": float(best.K),
                     "min_train_loss": float(part.loss.min()), "max_accuracy": float(part.accuracy.max())})
    return pd.DataFrame(rows)


def lazy_explanations(quality: pd.DataFrame, exclusion: pd.DataFrame, model_size: int) -> str:
    """Markdown: what the detection numbers mean, from them: a detector whose ROC AUC is below 0.5
    (it ranks lazy uploads below honest ones) and why; how much of what lazy clients cost the
    exclusion recovers, and why not all of it."""
    lines = []
    auc = quality.groupby("detector").auc.mean()
    for detector, value in auc.items():
        if value < 0.5 and detector == "near_duplicate":
            sigma2 = float(quality.sigma2.median())
            lines.append(f"- **{detector}**: ROC AUC {value:.2f}, below chance: it scores an upload by how close its "
                         f"nearest other upload is (relative to the median distance). A lazy upload is a copy plus "
                         f"noise of norm σ√P (≈ {math.sqrt(sigma2 * model_size):.0f} at σ² = {sigma2:g} over the "
                         f"model's P = {model_size:,} parameters), far larger than the honest uploads' differences, "
                         f"so it sits *farther* from every other upload than the honest ones: the score ranks lazy "
                         f"uploads below honest ones.")
        elif value < 0.5:
            lines.append(f"- **{detector}**: ROC AUC {value:.2f}, below chance: it ranks lazy uploads below honest "
                         f"ones at these settings.")
    for ratio, part in exclusion.groupby("lazy_ratio"):
        by = part.set_index("condition").max_accuracy
        if {"lazy clients", "lazy, flagged excluded", "no lazy clients"} <= set(by.index):
            lazy, excluded, clean = (100 * float(by[c]) for c in ("lazy clients", "lazy, flagged excluded",
                                                                   "no lazy clients"))
            share = (excluded - lazy) / (clean - lazy) if clean != lazy else math.nan
            lines.append(f"- **M/N = {ratio:g}**: best accuracy {lazy:.1f}% with lazy clients, {excluded:.1f}% with "
                         f"the flagged uploads excluded, {clean:.1f}% without lazy clients: the exclusion recovers "
                         f"{share:.0%} of the loss. Excluding an upload removes the lazy client's noise, not its "
                         f"absence: its own shard of the data is never trained on, so the aggregate averages "
                         f"{1 - ratio:.0%} of the clients' data however well the validators detect.")
    return "\n".join(lines)


def percent(frame: pd.DataFrame, columns: Sequence[str] = ("rel_gap_fit", "rel_gap_measured")) -> pd.DataFrame:
    """Relative gaps (fractions) as percent, to stand beside the paper's "5%"."""
    out = frame.copy()
    for c in columns:
        if c in out:
            out[c] = 100 * pd.to_numeric(out[c], errors="coerce")
    return out.rename(columns={c: f"{c}_pct" for c in columns if c in out})
