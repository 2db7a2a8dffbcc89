"""The bound against the experiments, per cell and seed: measured constants, the upper fit,
per-K gaps with the bound's preconditions, and K* (closed form, exact, experimental).

Constants of a run: the median over all its rounds (every K) of the per-round sample-weighted
means of L, xi and delta (medians resist the few rounds where a local model barely moved);
phi measured from the run's w0 and the reference w*; theta as the mean over rounds of the lazy
clients' plagiarism distance (trained counterfactual vs copied model, before noise).

eps2 is measured as Wang et al. define epsilon (S. Wang et al., "Adaptive Federated Learning in
Resource Constrained Edge Computing Systems", IEEE JSAC 37(6), 2019, Theorem 2, whose bound the
paper's Lemma restates): a lower bound on the loss gap F(w) - F(w*) over the whole training
(their conditions F(v_k) - F(w*) >= epsilon at every aggregation and at the end), so
eps2 = (min over every round of every K of F(w^k) - F*)^2, and undefined (nan) where the gap
reaches zero. The experimental gap is F(w^K) - F* at the final round of each K. Every G uses the
paper's integer tau; its preconditions (eta L < 1, a positive bracket) are reported per K.

theta, the plagiarism distance "after K integrated rounds" (Theorem 4), is each K's value at its
last round (``theta`` is the mean over every round, kept for comparison); the lazy bound of each
K uses that K's theta.

Beside the measured bound and the upper fit, ``variants.csv`` gives per cell and seed every way of
choosing the constants the report discusses (:data:`VARIANTS`), each with its largest relative
excess over the experiment, its K* over the K the experiment ran, and the K where it is
undefined; ``certificate.csv`` says per cell what no choice of constants can do
(:mod:`bladefl.theory.certificate`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from bladefl.core import atomic, run_files
from bladefl.data.partition import PartitionSpec
from bladefl.experiments.plan import run_id
from bladefl.experiments.plan.grid import Member
from bladefl.experiments.runs.run_checks import read_checked_run
from bladefl.fl import constants_against
from bladefl.fl.run_config import from_dict
from bladefl.theory.bound import k_star_closed_form, lazy_upper_bound, preconditions
from bladefl.theory.certificate import certificate, closed_form_eta_L
from bladefl.theory.fit import Fit, GapReport, best_over_L, compare, fit_bound, fit_minimax

if TYPE_CHECKING:  # torch is loaded where a run is analysed, not by what only reads the tables (verdicts)
    from bladefl.theory import reference


def wang_eps2(train_losses: np.ndarray, f_star: float) -> float:
    """(min_k F(w^k) - F*)^2 over a run's rounds; nan where the gap reaches zero or below."""
    gaps = np.asarray(train_losses, dtype=float) - f_star
    gaps = gaps[np.isfinite(gaps)]
    low = float(gaps.min()) if gaps.size else math.nan
    return low**2 if low > 0 else math.nan


def last_round_theta(rounds: pd.DataFrame) -> dict[int, float]:
    """Theorem 4's theta after K integrated rounds: each K's value at its last round (nan where
    the run measured none: no lazy clients, or no counterfactual)."""
    ok = rounds[rounds.status == "ok"]
    last = ok.sort_values("round").groupby("K").tail(1).set_index("K").theta
    return {int(k): float(v) for k, v in last.items()}


def per_k_eps2(rounds: pd.DataFrame, f_star: float) -> dict[int, float]:
    """Wang et al.'s eps2 for each K's run alone: (min over its rounds of F(w^k) - F*)^2."""
    ok = rounds[rounds.status == "ok"]
    return {int(k): wang_eps2(part.train_loss.to_numpy(), f_star) for k, part in ok.groupby("K")}


def undefined_at(K: np.ndarray, G: np.ndarray) -> str:
    """The K where a bound is undefined (infinite), as "1-3, 5" ("none" if it is defined everywhere)."""
    bad = [int(k) for k, g in zip(K, G, strict=True) if not np.isfinite(g)]
    if not bad:
        return "none"
    runs, start = [], bad[0]
    for prev, k in zip(bad, [*bad[1:], None], strict=True):
        if k != prev + 1:
            runs.append(f"{start}" if start == prev else f"{start}-{prev}")
            if k is not None:
                start = k
    return ", ".join(runs)


# The ways of choosing the bound's constants that the bound page compares, in its order.
VARIANTS = ("measured", "fitted (mean)", "fitted (minimax)", "best over L", "paper's eps2 = delta xi / phi",
            "per-K eps")


def _variant_row(name: str, K: np.ndarray, gap: np.ndarray, G: np.ndarray, L: float, phi: float, eps2: float,
                 k_experiment: float) -> dict:
    rep = compare(G, gap)
    finite = np.isfinite(G)
    return {"variant": name, "L": L, "phi": phi, "eps2": eps2, "max_rel_excess": rep.max_relative_gap,
            "above_everywhere": rep.bound_above_everywhere and bool(finite[np.isfinite(gap)].all()),
            "K_star": BoundOn.minimiser(K, G),
            "K_experiment": k_experiment, "undefined_at": undefined_at(K, G)}


def variants(K: np.ndarray, gap: np.ndarray, common: dict, consts: dict, phi_m: float, eps2_K: np.ndarray,
             k_experiment: float) -> pd.DataFrame:
    """Every variant of :data:`VARIANTS` on one run: the bound's constants chosen that way, its
    largest relative excess (inf where it is undefined at a K with a gap), whether it is above the
    experiment and defined at every K, its K* over the experiment's K, and where it is undefined."""
    rows = []

    def add(name: str, phi: float, eps2: float | np.ndarray, L: float | None = None) -> None:
        args: dict[str, Any] = {**common, "L": common["L"] if L is None else L}
        G = np.asarray(lazy_upper_bound(K, phi=phi, eps2=eps2, **args))
        shown = math.nan if np.ndim(eps2) else float(eps2)
        rows.append(_variant_row(name, K, gap, G, args["L"], phi, shown, k_experiment))

    def missing(name: str, L: float) -> None:
        rows.append({"variant": name, "L": L, "phi": math.nan, "eps2": math.nan, "max_rel_excess": math.nan,
                     "above_everywhere": False, "K_star": math.nan, "K_experiment": k_experiment,
                     "undefined_at": "no upper bound of this form fits"})

    add("measured", phi_m, consts["eps2_measured"])
    for name, fitter in (("fitted (mean)", fit_bound), ("fitted (minimax)", fit_minimax)):
        try:
            f: Fit = fitter(K, gap, **common)
            add(name, f.phi, f.eps2)
        except ValueError:
            missing(name, common["L"])
    best = best_over_L(K, gap, **common)
    if best is None:
        missing("best over L", math.nan)
    else:
        add("best over L", best[1].phi, best[1].eps2, L=best[0])
    add("paper's eps2 = delta xi / phi", phi_m, common["delta"] * common["xi"] / phi_m)
    add("per-K eps", phi_m, eps2_K)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class BoundOn:
    """The bound of one cell against its gaps, the one path the bound page and the verdicts take:
    the upper fit (phi and eps2 fitted, None where no upper bound of the form exists) and the
    bound with every constant measured, each per K and compared with the gaps."""

    K: np.ndarray
    fit: Fit | None
    G_fit: np.ndarray
    G_measured: np.ndarray
    fitted: GapReport
    measured: GapReport

    @staticmethod
    def minimiser(K: np.ndarray, G: np.ndarray) -> float:
        """A bound's K* over the K the experiment ran (nan where it is undefined everywhere)."""
        finite = np.isfinite(G)
        return float(K[int(np.argmin(np.where(finite, G, np.inf)))]) if finite.any() else math.nan

    @property
    def k_star_fit(self) -> float:
        return self.minimiser(self.K, self.G_fit) if self.fit is not None else math.nan

    @property
    def k_star_measured(self) -> float:
        return self.minimiser(self.K, self.G_measured)

    @property
    def undefined_measured(self) -> list[int]:
        return [int(k) for k, g in zip(self.K, self.G_measured, strict=True) if not np.isfinite(g)]


def bound_on(K: np.ndarray, gap: np.ndarray, common: dict, phi_measured: float, eps2_measured: float,
             fitter: Callable[..., Fit] = fit_bound) -> BoundOn:
    """Fit the bound to the gaps as an upper bound (``fitter``: :func:`bladefl.theory.fit.fit_bound`,
    or :func:`~bladefl.theory.fit.fit_minimax`) and evaluate it and the measured bound at every K.
    ``common``: the bound's other arguments (alpha, beta, eta, L, xi, delta, t_sum, M, N, theta
    (one value or one per K), sigma2)."""
    G_meas = np.asarray(lazy_upper_bound(K, phi=phi_measured, eps2=eps2_measured, **common))
    try:
        fitted = fitter(K, gap, **common)
    except ValueError:
        fitted = None
    G_fit = (np.asarray(lazy_upper_bound(K, phi=fitted.phi, eps2=fitted.eps2, **common)) if fitted
             else np.full_like(K, np.inf, dtype=float))
    return BoundOn(K, fitted, G_fit, G_meas, compare(G_fit, gap), compare(G_meas, gap))


def run_constants(rounds: pd.DataFrame, f_star: float) -> dict:
    ok = rounds[rounds.status == "ok"]
    theta = ok.theta.dropna()
    noise = ok.noise_norm.dropna() if "noise_norm" in ok else pd.Series(dtype=float)
    return {
        "L": float(ok.L_mean.median()), "L_max": float(ok.L_max.max()),
        "xi": float(ok.xi_mean.median()), "xi_max": float(ok.xi_max.max()),
        "delta": float(ok.delta_mean.median()), "delta_max": float(ok.delta_max.max()),
        "theta": float(theta.mean()) if len(theta) else 0.0,
        "noise_norm": float(noise.mean()) if len(noise) else 0.0,
        "eps2_measured": wang_eps2(ok.train_loss.to_numpy(), f_star),
    }


def analyse_run(run: run_files.Run, ref: reference.Reference) -> dict:
    """One run (its ``summary.json`` and ``rounds.csv``, read strictly) against the bound."""
    from bladefl.fl import engine, measured_constants

    summary = run.summary
    cfg = from_dict(summary["config"])
    rounds = run.rounds_frame()
    consts = run_constants(rounds, ref.f_star)
    shape = engine.model_shape(cfg)
    w0 = engine.initial_model(cfg, shape)
    phi_m = measured_constants.phi(cfg.train.step_size, consts["L"], w0, ref.w_star)
    per_k = pd.DataFrame(summary["per_K"])
    per_k = per_k[per_k.status == "ok"]
    K = per_k.K.to_numpy(dtype=float)
    gap = per_k.train_loss.to_numpy(dtype=float) - ref.f_star
    gap = np.where(gap > 0, gap, np.nan)
    theta_last = last_round_theta(rounds)
    theta_K = np.array([theta_last.get(int(k), math.nan) for k in K])
    theta_K = np.where(np.isfinite(theta_K), theta_K, 0.0)  # no lazy clients (or no counterfactual): no term
    common = dict(alpha=cfg.time.alpha, beta=cfg.time.beta, eta=cfg.train.step_size, L=consts["L"], xi=consts["xi"],
                  delta=consts["delta"], t_sum=cfg.time.t_sum, M=cfg.num_lazy, N=cfg.partition.N,
                  theta=theta_K, sigma2=cfg.lazy.sigma2)
    bound = bound_on(K, gap, common, phi_m, consts["eps2_measured"])
    fitted, G_meas, rep_fit, rep_meas = bound.fit, bound.G_measured, bound.fitted, bound.measured
    G_fit = bound.G_fit if fitted else np.full_like(K, np.nan)
    pre_meas = preconditions(K, phi=phi_m, eps2=consts["eps2_measured"], **common)
    pre_fit = (preconditions(K, phi=fitted.phi, eps2=fitted.eps2, **common) if fitted
               else preconditions(K, phi=math.nan, eps2=math.nan, **common))
    k_exp = float(K[int(np.nanargmin(per_k.train_loss.to_numpy()))]) if len(K) else math.nan
    eps2_each = per_k_eps2(rounds, ref.f_star)
    eps2_K = np.array([eps2_each.get(int(k), math.nan) for k in K])
    return {
        "seed": cfg.seed,
        "constants": {**consts, "phi_measured": phi_m, "f_star": ref.f_star, "M": cfg.num_lazy,
                      # L, xi, delta measured against (runs written before it was recorded: the block's)
                      "against": summary.get("constants_against", constants_against.LEGACY)},
        "fit": ({"phi_fit": fitted.phi, "eps2_fit": fitted.eps2, "residual": fitted.residual,
                 "free": "+".join(fitted.free)} if fitted else {"phi_fit": math.nan, "eps2_fit": math.nan,
                                                                "residual": math.nan, "free": ""}),
        "variants": variants(K, gap, common, consts, phi_m, eps2_K, k_exp),
        "gaps": pd.DataFrame({"K": K.astype(int), "gap": gap, "G_fit": G_fit, "G_measured": G_meas,
                              "rel_gap_fit": rep_fit.relative_gap, "rel_gap_measured": rep_meas.relative_gap,
                              "eta_L_below_1": pre_meas.eta_L_below_1,
                              "bracket_measured_positive": pre_meas.bracket_positive,
                              "bracket_fit_positive": pre_fit.bracket_positive, "theta_last": theta_K,
                              "eps2_of_K": eps2_K}),
        "kstar": {
            "K_closed_form": k_star_closed_form(alpha=cfg.time.alpha, beta=cfg.time.beta, eta=cfg.train.step_size,
                                                L=consts["L"], t_sum=cfg.time.t_sum),
            "K_exact_fit": bound.k_star_fit,
            "K_exact_measured": bound.k_star_measured,
            "K_experiment": k_exp,
            "max_rel_gap_fit": rep_fit.max_relative_gap, "mean_rel_gap_fit": rep_fit.mean_relative_gap,
            # an undefined (infinite) bound bounds nothing: it is not "above"
            "fit_above_everywhere": rep_fit.bound_above_everywhere and defined_where_measured(G_fit, gap),
            "max_rel_gap_measured": rep_meas.max_relative_gap, "mean_rel_gap_measured": rep_meas.mean_relative_gap,
            "measured_above_everywhere": rep_meas.bound_above_everywhere and defined_where_measured(G_meas, gap),
        },
    }


def defined_where_measured(G: np.ndarray, gap: np.ndarray) -> bool:
    """Whether the bound is finite (defined) at every K with a measured gap."""
    G, gap = np.asarray(G, dtype=float), np.asarray(gap, dtype=float)
    return bool(np.isfinite(G[np.isfinite(gap)]).all())


def _csv(frame: pd.DataFrame, path: Path) -> Path:
    atomic.write_csv(path, frame)
    return path


def write_report(runs: Sequence[str | Path], members: Sequence[Member], references: Sequence[str | Path],
                 out_dir: str | Path) -> list[Path]:
    from bladefl.theory import reference

    refs = {Path(r).stem: reference.load(r) for r in references}
    out = Path(out_dir)
    constants, fits, gaps, kstars, variant_frames = [], [], [], [], []
    cells: dict[str, dict] = {}
    for path in map(Path, runs):
        run = read_checked_run(path)
        key = PartitionSpec.of(**run.summary["config"]["partition"]).key
        if key not in refs:
            raise ValueError(f"{path}: no reference for partition {key} among {sorted(refs)}")
        res = analyse_run(run, refs[key])
        ident = {"cell": run_id.from_path(path).cell, "seed": res["seed"]}
        constants.append({**ident, **res["constants"]})
        fits.append({**ident, **res["fit"]})
        kstars.append({**ident, **res["kstar"]})
        gaps.append(res["gaps"].assign(**ident))
        variant_frames.append(res["variants"].assign(**ident))
        cfg = run.summary["config"]
        cell = cells.setdefault(ident["cell"], {"cell": ident["cell"], "alpha": cfg["time"]["alpha"],
                                                "beta": cfg["time"]["beta"], "t_sum": cfg["time"]["t_sum"],
                                                "lazy": res["constants"]["M"] > 0, "k_experiment": []})
        cell["k_experiment"].append(res["kstar"]["K_experiment"])
    constants_df, fit_df, kstar_df = pd.DataFrame(constants), pd.DataFrame(fits), pd.DataFrame(kstars)
    gaps_df = pd.concat(gaps, ignore_index=True)[["cell", "seed", "K", "gap", "G_fit", "G_measured", "rel_gap_fit",
                                                 "rel_gap_measured", "eta_L_below_1", "bracket_measured_positive",
                                                 "bracket_fit_positive", "theta_last", "eps2_of_K"]]
    variants_df = pd.concat(variant_frames, ignore_index=True)[["cell", "seed", "variant", "L", "phi", "eps2",
                                                                "max_rel_excess", "above_everywhere", "K_star",
                                                                "K_experiment", "undefined_at"]]
    certificate_df = pd.DataFrame([certificate_row(**c) for c in cells.values()])
    membership = pd.DataFrame([{"sweep": m.sweep, "feeds": m.feeds, "vary": m.vary or "", "value": m.value,
                                "cell": m.cell.key} for m in members])
    written = [
        _csv(constants_df, out / "constants.csv"), _csv(fit_df, out / "fit.csv"), _csv(gaps_df, out / "gaps.csv"),
        _csv(kstar_df, out / "kstar.csv"), _csv(membership, out / "members.csv"),
        _csv(variants_df, out / "variants.csv"), _csv(certificate_df, out / "certificate.csv"),
    ]
    atomic.write_json(out / "bound.json", {"constants": constants, "fit": fits, "kstar": kstars})
    written.append(out / "bound.json")
    return written


def certificate_row(cell: str, alpha: float, beta: float, t_sum: float, lazy: bool, k_experiment: list[float]
                    ) -> dict:
    """What the bound's form allows in one cell, before any fit (:func:`certificate`), against the
    experiment's K* of each seed: the largest minimiser of a bound defined at K = 1, from which K
    a bound can be defined while its minimiser is the experiment's K*, and the eta L at which
    Theorem 3's closed form gives that K*."""
    cert = certificate(alpha=alpha, beta=beta, t_sum=t_sum, lazy=lazy)
    ks = sorted({int(k) for k in k_experiment if math.isfinite(k)})
    needs = {k: cert.defined_from.get(k) for k in ks}
    return {"cell": cell, "lazy_term": lazy, "largest_K_star_if_defined_at_1": cert.largest_if_defined_at_1,
            "K_experiment": ", ".join(str(k) for k in ks),
            "defined_from_for_K_experiment": ", ".join(f"{k}: {'never' if v is None else v}" for k, v in needs.items()),
            "closed_form_eta_L_for_K_experiment": ", ".join(
                f"{k}: {closed_form_eta_L(k, alpha=alpha, beta=beta, t_sum=t_sum):.3g}" for k in ks),
            "statement": cert.summary([float(k) for k in ks])}
