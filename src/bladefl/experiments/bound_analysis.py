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
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bladefl.core import atomic
from bladefl.data.partition import PartitionSpec
from bladefl.experiments.grid import Member
from bladefl.fl import engine
from bladefl.fl.measured_constants import phi as phi_of
from bladefl.fl.run_config import from_dict
from bladefl.theory import reference
from bladefl.theory.bound import k_star_closed_form, k_star_exact, lazy_upper_bound, preconditions
from bladefl.theory.fit import compare, fit_bound


def wang_eps2(train_losses: np.ndarray, f_star: float) -> float:
    """(min_k F(w^k) - F*)^2 over a run's rounds; nan where the gap reaches zero or below."""
    gaps = np.asarray(train_losses, dtype=float) - f_star
    gaps = gaps[np.isfinite(gaps)]
    low = float(gaps.min()) if gaps.size else math.nan
    return low**2 if low > 0 else math.nan


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


def analyse_run(summary_path: Path, summary: dict, ref: reference.Reference) -> dict:
    """One run (its parsed ``summary.json`` and the ``rounds.csv`` beside it) against the bound."""
    cfg = from_dict(summary["config"])
    rounds = pd.read_csv(summary_path.parent / "rounds.csv")
    consts = run_constants(rounds, ref.f_star)
    shape = engine.model_shape(cfg)
    w0 = engine.initial_model(cfg, shape)
    phi_m = phi_of(cfg.train.eta, consts["L"], w0, ref.w_star)
    per_k = pd.DataFrame(summary["per_K"])
    per_k = per_k[per_k.status == "ok"]
    K = per_k.K.to_numpy(dtype=float)
    gap = per_k.train_loss.to_numpy(dtype=float) - ref.f_star
    gap = np.where(gap > 0, gap, np.nan)
    common = dict(alpha=cfg.time.alpha, beta=cfg.time.beta, eta=cfg.train.eta, L=consts["L"], xi=consts["xi"],
                  delta=consts["delta"], t_sum=cfg.time.t_sum, M=cfg.num_lazy, N=cfg.partition.N,
                  theta=consts["theta"], sigma2=cfg.lazy.sigma2)
    G_meas = np.asarray(lazy_upper_bound(K, phi=phi_m, eps2=consts["eps2_measured"], **common))
    try:
        fitted = fit_bound(K, gap, **common)
    except ValueError:
        fitted = None
    G_fit = (np.asarray(lazy_upper_bound(K, phi=fitted.phi, eps2=fitted.eps2, **common)) if fitted
             else np.full_like(K, np.nan))
    rep_fit, rep_meas = compare(G_fit, gap), compare(G_meas, gap)
    pre_meas = preconditions(K, phi=phi_m, eps2=consts["eps2_measured"], **common)
    pre_fit = (preconditions(K, phi=fitted.phi, eps2=fitted.eps2, **common) if fitted
               else preconditions(K, phi=math.nan, eps2=math.nan, **common))
    k_args = {k: v for k, v in common.items() if k not in ("M", "N", "theta", "sigma2")}
    lazy_args = dict(M=common["M"], N=common["N"], theta=common["theta"], sigma2=common["sigma2"])
    k_exp = float(K[int(np.nanargmin(per_k.train_loss.to_numpy()))]) if len(K) else math.nan
    return {
        "seed": cfg.seed,
        "constants": {**consts, "phi_measured": phi_m, "f_star": ref.f_star, "M": cfg.num_lazy},
        "fit": ({"phi_fit": fitted.phi, "eps2_fit": fitted.eps2, "residual": fitted.residual,
                 "free": "+".join(fitted.free)} if fitted else {"phi_fit": math.nan, "eps2_fit": math.nan,
                                                                "residual": math.nan, "free": ""}),
        "gaps": pd.DataFrame({"K": K.astype(int), "gap": gap, "G_fit": G_fit, "G_measured": G_meas,
                              "rel_gap_fit": rep_fit.relative_gap, "rel_gap_measured": rep_meas.relative_gap,
                              "eta_L_below_1": pre_meas.eta_L_below_1,
                              "bracket_measured_positive": pre_meas.bracket_positive,
                              "bracket_fit_positive": pre_fit.bracket_positive}),
        "kstar": {
            "K_closed_form": k_star_closed_form(alpha=cfg.time.alpha, beta=cfg.time.beta, eta=cfg.train.eta,
                                                L=consts["L"], t_sum=cfg.time.t_sum),
            "K_exact_fit": (k_star_exact(**k_args, phi=fitted.phi, eps2=fitted.eps2, **lazy_args) if fitted
                            else math.nan),
            "K_exact_measured": k_star_exact(**k_args, phi=phi_m, eps2=consts["eps2_measured"], **lazy_args),
            "K_experiment": k_exp,
            "max_rel_gap_fit": rep_fit.max_relative_gap, "mean_rel_gap_fit": rep_fit.mean_relative_gap,
            "fit_above_everywhere": rep_fit.bound_above_everywhere,
            "max_rel_gap_measured": rep_meas.max_relative_gap, "mean_rel_gap_measured": rep_meas.mean_relative_gap,
            "measured_above_everywhere": rep_meas.bound_above_everywhere,
        },
    }


def _csv(frame: pd.DataFrame, path: Path) -> Path:
    atomic.write_csv(path, frame)
    return path


def write_report(runs: Sequence[str | Path], members: Sequence[Member], references: Sequence[str | Path],
                 out_dir: str | Path) -> list[Path]:
    refs = {Path(r).stem: reference.load(r) for r in references}
    out = Path(out_dir)
    constants, fits, gaps, kstars = [], [], [], []
    for path in map(Path, runs):
        summary = json.loads(path.read_text())
        key = PartitionSpec(**summary["config"]["partition"]).key
        if key not in refs:
            raise ValueError(f"{path}: no reference for partition {key} among {sorted(refs)}")
        res = analyse_run(path, summary, refs[key])
        ident = {"cell": path.parent.parent.name, "seed": res["seed"]}
        constants.append({**ident, **res["constants"]})
        fits.append({**ident, **res["fit"]})
        kstars.append({**ident, **res["kstar"]})
        gaps.append(res["gaps"].assign(**ident))
    constants_df, fit_df, kstar_df = pd.DataFrame(constants), pd.DataFrame(fits), pd.DataFrame(kstars)
    gaps_df = pd.concat(gaps, ignore_index=True)[["cell", "seed", "K", "gap", "G_fit", "G_measured", "rel_gap_fit",
                                                 "rel_gap_measured", "eta_L_below_1", "bracket_measured_positive",
                                                 "bracket_fit_positive"]]
    membership = pd.DataFrame([{"sweep": m.sweep, "feeds": m.feeds, "vary": m.vary or "", "value": m.value,
                                "cell": m.cell.key} for m in members])
    written = [
        _csv(constants_df, out / "constants.csv"), _csv(fit_df, out / "fit.csv"), _csv(gaps_df, out / "gaps.csv"),
        _csv(kstar_df, out / "kstar.csv"), _csv(membership, out / "members.csv"),
    ]
    atomic.write_json(out / "bound.json", {"constants": constants, "fit": fits, "kstar": kstars})
    written.append(out / "bound.json")
    return written
