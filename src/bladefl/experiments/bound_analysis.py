"""The bound against the experiments, per cell and seed: measured constants, fitted constants,
per-K gaps, K* (closed form, exact, experimental) and the corollary verdicts.

Constants of a run: the median over all its rounds (every K) of the per-round sample-weighted
means of L, xi and delta (medians resist the few rounds where a local model barely moved);
eps2 measured as min_k ||w^k - w*||^2 (Wang et al.'s epsilon); phi measured from the run's
w0 and the reference w*; theta as the mean over rounds of the lazy clients' counterfactual
distance. The experimental gap is F(w^K) - F* at the final round of each K.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict
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
from bladefl.theory.bound import k_star_closed_form, k_star_exact, lazy_upper_bound
from bladefl.theory.claims import CLAIMS, on_bound, on_experiment
from bladefl.theory.fit import compare, fit_bound


def run_constants(rounds: pd.DataFrame) -> dict:
    ok = rounds[rounds.status == "ok"]
    theta = ok.theta.dropna()
    dist = ok.dist_ref.dropna()
    return {
        "L": float(ok.L_mean.median()), "L_max": float(ok.L_max.max()),
        "xi": float(ok.xi_mean.median()), "xi_max": float(ok.xi_max.max()),
        "delta": float(ok.delta_mean.median()), "delta_max": float(ok.delta_max.max()),
        "theta": float(theta.mean()) if len(theta) else 0.0,
        "eps2_measured": float(dist.min() ** 2) if len(dist) else math.nan,
    }


def analyse_run(summary_path: Path, summary: dict, ref: reference.Reference) -> dict:
    """One run (its parsed ``summary.json`` and the ``rounds.csv`` beside it) against the bound."""
    cfg = from_dict(summary["config"])
    rounds = pd.read_csv(summary_path.parent / "rounds.csv")
    consts = run_constants(rounds)
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
                              "rel_gap_fit": rep_fit.relative_gap, "rel_gap_measured": rep_meas.relative_gap}),
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


def claim_verdicts(kstar: pd.DataFrame, fit: pd.DataFrame, constants: pd.DataFrame, members: Sequence[Member],
                   t_sum: float) -> pd.DataFrame:
    rows = []
    for claim, (param, _, _) in CLAIMS.items():
        sweep = [m for m in members if m.vary == param]
        if sweep:
            per_value = []
            for m in sweep:
                ks = kstar[kstar.cell == m.cell.key].K_experiment
                per_value.append({"value": m.value, "K_star_loss": ks.mean(), "mining_time": ks.mean() * m.cell.beta})
            v = on_experiment(claim, per_value)
            rows.append({**asdict(v), "x": json.dumps(v.x), "y": json.dumps(v.y)})
        med = constants.median(numeric_only=True)
        fit_med = fit.median(numeric_only=True)
        if all(math.isfinite(float(x)) for x in (med.L, med.xi, med.delta, fit_med.phi_fit, fit_med.eps2_fit)):
            params = dict(alpha=1.0, beta=6.0, eta=0.01, L=float(med.L), xi=float(med.xi), delta=float(med.delta),
                          phi=float(fit_med.phi_fit), eps2=float(fit_med.eps2_fit), t_sum=t_sum, N=20,
                          theta=float(med.theta), sigma2=0.01)
            values = sorted({float(m.value) for m in sweep}) if sweep else {
                "delta": [0.5 * params["delta"], params["delta"], 2 * params["delta"]]}.get(param, [])
            if len(values) >= 2:
                v = on_bound(claim, params, values)
                rows.append({**asdict(v), "x": json.dumps(v.x), "y": json.dumps(v.y)})
    return pd.DataFrame(rows, columns=["claim", "source", "holds", "x", "y", "detail"])


def write_report(runs: Sequence[str | Path], members: Sequence[Member], references: Sequence[str | Path],
                 out_dir: str | Path) -> list[Path]:
    refs = {Path(r).stem: reference.load(r) for r in references}
    out = Path(out_dir)
    constants, fits, gaps, kstars = [], [], [], []
    t_sum = 100.0
    for path in map(Path, runs):
        summary = json.loads(path.read_text())
        key = PartitionSpec(**summary["config"]["partition"]).key
        if key not in refs:
            raise ValueError(f"{path}: no reference for partition {key} among {sorted(refs)}")
        t_sum = float(summary["config"]["time"]["t_sum"])
        res = analyse_run(path, summary, refs[key])
        ident = {"cell": path.parent.parent.name, "seed": res["seed"]}
        constants.append({**ident, **res["constants"]})
        fits.append({**ident, **res["fit"]})
        kstars.append({**ident, **res["kstar"]})
        gaps.append(res["gaps"].assign(**ident))
    constants_df, fit_df, kstar_df = pd.DataFrame(constants), pd.DataFrame(fits), pd.DataFrame(kstars)
    gaps_df = pd.concat(gaps, ignore_index=True)[["cell", "seed", "K", "gap", "G_fit", "G_measured", "rel_gap_fit",
                                                 "rel_gap_measured"]]
    membership = pd.DataFrame([{"sweep": m.sweep, "feeds": m.feeds, "vary": m.vary or "", "value": m.value,
                                "cell": m.cell.key} for m in members])
    claims = claim_verdicts(kstar_df, fit_df, constants_df, members, t_sum)
    written = [
        _csv(constants_df, out / "constants.csv"), _csv(fit_df, out / "fit.csv"), _csv(gaps_df, out / "gaps.csv"),
        _csv(kstar_df, out / "kstar.csv"), _csv(membership, out / "members.csv"), _csv(claims, out / "claims.csv"),
    ]
    atomic.write_json(out / "bound.json", {
        "constants": constants, "fit": fits, "kstar": kstars, "claims": claims.to_dict(orient="records")})
    written.append(out / "bound.json")
    return written
