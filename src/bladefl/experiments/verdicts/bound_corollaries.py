"""The corollaries' readings on the bound fitted to the runs (its real-valued minimiser, the integer K*
of the time model beside it) and Corollary 4's second part on it: readings under statements judged as
mathematics (:mod:`.mathematics`), with support over the bootstrap resamples of the units. A reading
is judged where the fitted bound speaks: its real K* a feasible number of rounds and eta L < 1."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from bladefl.experiments.plan.grid import Member
from bladefl.experiments.verdicts.bound_fit import CellFit, base_cell, corollary_values, fitted_base
from bladefl.experiments.verdicts.vocabulary import Replicates, claim_row, fmt, sweep_varying
from bladefl.theory.claims import (
    COROLLARIES,
    Corollary,
    Verdict,
    bound_falls_with_eta,
    on_bound,
    on_bounds,
    sweep_point,
)


def _k_values(claim: Corollary, base: dict[str, float], v: Verdict) -> list[float]:
    """K* at each swept value of a corollary's verdict (beta K* divided back by beta)."""
    return [round(y if claim.quantity == "K" else y / sweep_point(base, claim.param, x)["beta"], 3)
            for x, y in zip(v.x, v.y, strict=True)]


def _caveats(claim: Corollary, base: dict[str, float], values: Sequence[float], real: Sequence[float]) -> str:
    """Where the fitted bound's reading leaves the theory: eta L >= 1 (outside Lemma 1), a real K*
    below one round (outside the feasible K >= 1)."""
    notes = []
    etas = values if claim.param == "eta" else [base["eta"]]
    outside = [f"{fmt(e)} (eta L = {e * base['L']:.2g})" for e in etas if e * base["L"] >= 1]
    if outside:
        notes.append(f"eta L >= 1, outside Lemma 1's eta L < 1, at eta = {', '.join(outside)}")
    below = [k for k in real if math.isfinite(k) and k < 1]
    if below:
        notes.append(f"real K* below one round ({', '.join(f'{k:g}' for k in below)}): outside the feasible K >= 1")
    return "; ".join(notes)


def _feasible(claim: Corollary, base: dict[str, float], values: Sequence[float], k_real: Sequence[float]) -> list[bool]:
    """Where the fitted bound speaks: its real K* a number of rounds the time budget allows, 1 <= K* <=
    t_sum / (alpha + beta) at that value (outside it no run exists to minimise over), and eta L < 1
    there (outside it Lemma 1, and with it the bound, does not hold)."""
    out = []
    for x, k in zip(values, k_real, strict=True):
        p = sweep_point(base, claim.param, x)
        out.append(math.isfinite(k) and 1 <= k <= p["t_sum"] / (p["alpha"] + p["beta"]) and p["eta"] * base["L"] < 1)
    return out


def fitted_corollaries(fits: Sequence[Sequence[CellFit]], members: Sequence[Member], reps: Replicates) -> list[dict]:
    """Each corollary on the bound fitted to the runs (its real-valued minimiser, the integer K* of
    the time model beside it), a reading under the corollary's statement: support over the resamples."""
    rows = []
    for claim in COROLLARIES:
        f = base_cell(fits[0], claim.param)
        values = corollary_values(members, claim.param, f.constants["delta"])
        if f.fit is None or len(values) < 2:
            continue
        base = fitted_base(f)
        real = on_bound(claim, base, values, integer=False)
        feasible = _feasible(claim, base, values, _k_values(claim, base, real))
        left_out = [str(fmt(x)) for x, ok in zip(values, feasible, strict=True) if not ok]
        if 2 <= sum(feasible) < len(values):  # judged where 1 <= K* <= t_sum / (alpha + beta) only
            values = [x for x, ok in zip(values, feasible, strict=True) if ok]
            real = on_bound(claim, base, values, integer=False)
        integer = on_bound(claim, base, values, integer=True)
        resampled = [base_cell(resample, claim.param) for resample in fits]
        judged = iter(on_bounds(claim, [fitted_base(g) for g in resampled if g.fit is not None], values,
                                integer=False))  # every resample's real K* in one batched minimisation
        holds = [g.fit is not None and next(judged).holds for g in resampled]
        k_real = _k_values(claim, base, real)
        caveat = _caveats(claim, base, values, k_real)
        vacuous = (f"the fitted bound of {f.cell.cell} has eps2 = inf (its minimax fit): no xi-delta term and no lazy "
                   f"term, so it cannot speak to {claim.param}") if not np.isfinite(f.fit.eps2) else (
            f"the fitted bound's real K* lies in the feasible 1 <= K* <= t_sum / (alpha + beta) with eta L < 1 at "
            f"{sum(feasible)} of its {len(feasible)} values of {claim.param}: no trend to judge") if sum(feasible) < 2 \
            else ""
        if left_out and not vacuous:
            caveat = "; ".join(x for x in (caveat, f"judged where 1 <= K* <= t_sum / (alpha + beta) and eta L < 1 only "
                                                   f"(left out: {claim.param} = {', '.join(left_out)})") if x)
        assumption = {"N": "; delta assumed to fall as sqrt(N0/N) (the paper's argument; no sweep measures it)",
                      "delta": "; delta at half, once and twice its measured value (no sweep varies it)"}
        rows.append({**claim_row(
            f"{claim.name} (on the fitted bound)", claim.source, "bound", holds, reps,
            f"{claim.param} = {[fmt(x) for x in values]} -> the fitted bound's real-valued K* = {k_real} "
            f"({real.detail}); integer K* of the time model = {_k_values(claim, base, integer)}; cell {f.cell.cell}"
            f"{assumption.get(claim.param, '')}" + (f"; {caveat}" if caveat else ""), vacuous,
            statement=claim.statement, role="reading",
            finding=f"the fitted bound's real K* {k_real[0]:g} → {k_real[-1]:g} over {claim.param} "
                    f"{fmt(values[0])} → {fmt(values[-1])}" + (f" ({caveat})" if caveat else "")),
            "reading_of": f"{claim.name} (on the bound)"})
    return rows


ETA_CLAIM = "the bound falls as eta grows while eta L < 1 (Corollary 4)"


def _falls_with_eta(f: CellFit, etas: Sequence[float]) -> tuple[bool, str]:
    """Corollary 4's second part on one resample's fitted bound (M = 0 cell): at every feasible K
    where it is defined, G over the swept etas with eta L < 1 (the fitted phi and eps2 held)."""
    if f.fit is None or not np.isfinite(f.fit.eps2):
        return False, "no fitted bound with a finite eps2"
    params = {**{k: f.common[k] for k in ("alpha", "beta", "L", "xi", "delta", "t_sum")}, "phi": f.fit.phi,
              "eps2": f.fit.eps2}
    checks = {int(k): bound_falls_with_eta(params, etas, float(k)) for k in f.K}
    undefined = [k for k, v in checks.items() if not np.isfinite(v.y).all()]
    failing = [k for k, v in checks.items() if k not in undefined and not v.holds]
    kept = [fmt(e) for e in etas if e * params["L"] < 1]
    where = f" (undefined at K = {undefined}: not judged there)" if undefined else ""
    return not failing, (f"eta = {kept} (eta L < 1): G falls at every K where it is defined{where}" if not failing
                         else f"eta = {kept} (eta L < 1): G does not fall at K = {failing}{where}")


def eta_fitted(fits: Sequence[Sequence[CellFit]], members: Sequence[Member], reps: Replicates) -> list[dict]:
    """Corollary 4's second part on the fitted bound: a reading (the statement is judged as
    mathematics); none without an eta sweep."""
    sweep = sweep_varying(members, "eta")
    if sweep is None or len(sweep.values) < 2:
        return []
    results = [_falls_with_eta(row[0], sweep.values) for row in fits]
    return [{**claim_row(f"{ETA_CLAIM} (on the fitted bound, where defined)", "Corollary 4", "bound",
                         [ok for ok, _ in results], reps, f"{results[0][1]}; cell {fits[0][0].cell.cell}, minimax fit",
                         statement="cor4-bound-eta", role="reading", finding=results[0][1]), "reading_of": ETA_CLAIM}]


__all__ = ["ETA_CLAIM", "eta_fitted", "fitted_corollaries"]
