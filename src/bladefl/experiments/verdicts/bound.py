"""Fig. 3's statements and the Remark on the bound fitted to the runs, and the corollaries' readings
on that fitted bound: per bound cell and bootstrap resample of the independent units, judged by
:func:`.vocabulary.claim_row` (bootstrap support).

The bound is fitted to the unit-mean gap F(w^K) - F* of each resample as the tightest upper bound
by its largest relative excess (``theory.fit.fit_minimax``, the fit the bound page reports), with
the median of the resampled runs' measured constants and, in a lazy cell, theta at each K's last
round; where the measured bound is undefined (its bracket not positive) a claim about it is ``not
applicable``. The corollaries themselves are statements about the bound's formula and are counted
as mathematics (:mod:`.mathematics`); their values on this fitted bound are readings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bladefl.experiments.tables.bound_analysis import bound_on, defined_where_measured
from bladefl.experiments.verdicts.bound_corollaries import eta_fitted, fitted_corollaries
from bladefl.experiments.verdicts.bound_fit import BoundCell, CellFit, fitted_base
from bladefl.experiments.verdicts.vocabulary import Replicates, claim_row
from bladefl.theory.bound import k_star_closed_form, k_star_real, lazy_upper_bound
from bladefl.theory.certificate import certificate


def _kinks(f: CellFit, concave: Sequence[int]) -> list[int]:
    """The K of ``concave`` where the same fitted bound with real tau = (t_sum/K - beta)/alpha (the
    paper's analysis, which drops the floor) is not concave: a bend made by the integer tau's floor."""
    if f.fit is None or not concave:
        return []
    with np.errstate(all="ignore"):
        kw: dict[str, Any] = dict(f.common)
        G = np.asarray(lazy_upper_bound(f.K, phi=f.fit.phi, eps2=f.fit.eps2, tau_rule="real", **kw), dtype=float)
        d2 = G[:-2] - 2 * G[1:-1] + G[2:]
    bends = {int(k) for k, d, g in zip(f.K[1:-1], d2, G[1:-1], strict=True) if np.isfinite(d) and d < -1e-9 * abs(g)}
    return [k for k in concave if k not in bends]


def _fig3_checks(f: CellFit, exp_k: float) -> dict:
    """Fig. 3's checks of one cell on one resample."""
    b = f.bound if f.bound is not None else bound_on(f.K, f.gap, f.common, f.constants["phi_measured"],
                                                     f.constants["eps2_measured"])
    rel = np.abs(np.asarray(b.fitted.relative_gap, dtype=float))
    G = np.asarray(b.G_fit, dtype=float)
    finite = np.isfinite(G)
    with np.errstate(invalid="ignore"):
        d2 = G[:-2] - 2 * G[1:-1] + G[2:]
    triple = finite[:-2] & finite[1:-1] & finite[2:]
    concave = [int(k) for k, bad in zip(f.K[1:-1], triple & (d2 < -1e-9 * np.abs(G[1:-1])), strict=True) if bad]
    drops = _kinks(f, concave)
    closest = float(np.nanmin(rel)) if np.isfinite(rel).any() else math.inf
    return {"within": b.fitted.max_relative_gap, "closest": closest,
            "above": b.measured.bound_above_everywhere and defined_where_measured(b.G_measured, f.gap),
            "k_fit": b.k_star_fit, "k_exp": exp_k, "undefined": b.undefined_measured,
            "convex": f.fit is not None and not concave, "concave_at": concave, "at_drops": drops}


def _real_k_star(f: CellFit) -> float:
    """The fitted bound's real-valued minimiser (nan without a fit). An infinite eps2 (the fit's
    term xi h(tau) / (tau eps2) dropped) is a fit too: its minimiser is that of the rest."""
    if f.fit is None:
        return math.nan
    base: dict[str, Any] = fitted_base(f)
    return float(k_star_real(**base))


def _below_one_round(fits: Sequence[CellFit]) -> list[int]:
    """The cells whose fitted bound has its real minimiser below one round: over K >= 1 its K* is the
    boundary K = 1, not a minimum to hold the runs' K* to, so the K* statement leaves them out."""
    return [i for i, f in enumerate(fits) if _real_k_star(f) < 1]


def _left_out(fits: Sequence[CellFit], below: Sequence[int]) -> str:
    """Why those cells are not held to the runs' K* ("" where none is left out)."""
    if not below:
        return ""
    cells = ", ".join(f"{fits[i].cell.cell} ({_real_k_star(fits[i]):.3g})" for i in below)
    return (f"the fitted bound's real minimiser lies below one round in {cells}: over K >= 1 its K* is the "
            "boundary K = 1, not a minimum to hold the runs' K* to")


def _k_star_spec(fits: Sequence[CellFit], full: Sequence[dict], certified: Sequence[str],
                 per_cell: Callable[[Sequence[object]], str]) -> tuple:
    """Fig. 3's K* statement, judged on the cells whose fitted bound has a minimum to hold the runs' K*
    to: the others (real minimiser below one round) are left out, and with every cell left out it is not
    applicable."""
    below = _below_one_round(fits)
    labels = [f"({chr(ord('a') + i)})" for i in range(len(full))]
    judged_on = (f"; judged on {per_cell(['yes' if i not in below else 'left out' for i in range(len(full))])} "
                 f"({_left_out(fits, below)})" if below and len(below) < len(full) else "")
    return ("fig3-kstar", "claim", "the bound's K* is the experiment's K*", "Fig. 3, Theorem 3",
            lambda r: all(x["k_fit"] == x["k_exp"] for i, x in enumerate(r) if i not in below),
            f"K* of the upper fit {[x['k_fit'] for x in full]} vs experiment {[x['k_exp'] for x in full]}"
            f"{judged_on}; for any constants: {' / '.join(certified)}",
            _left_out(fits, below) if len(below) == len(full) else "",
            f"the fitted bound's K* {per_cell([_g(x['k_fit']) for x in full])} against the experiment's "
            f"{per_cell([_g(x['k_exp']) for x in full])}"
            + (f"; {', '.join(labels[i] for i in below)} left out (its fit's minimiser below one round)"
               if below else ""))


def _g(x: float) -> str:
    return f"{x:g}"


def _runs(ks: Sequence[int]) -> str:
    """[1, 2, 3, 5] -> "1-3, 5"."""
    out: list[str] = []
    for k in sorted(ks):
        if out and k == int(out[-1].split("-")[-1]) + 1:
            out[-1] = f"{out[-1].split('-')[0]}-{k}"
        else:
            out.append(str(k))
    return ", ".join(out)


def certificate_of(cell: BoundCell, k_experiment: float, eta_L: float | None = None) -> str:
    """What no choice of constants can do in ``cell`` (:mod:`bladefl.theory.certificate`), and the
    sharper fact at the cell's measured eta L (the other constants free)."""
    cert = certificate(alpha=cell.alpha, beta=cell.beta, t_sum=cell.t_sum, lazy=cell.M > 0)
    text = f"{cell.cell}: {cert.summary(k_experiment)}"
    if eta_L is not None and np.isfinite(eta_L):
        if eta_L >= 1:
            text += f"; the measured eta L = {eta_L:.3g} is outside the lemma's eta L < 1"
        else:
            at = certificate(alpha=cell.alpha, beta=cell.beta, t_sum=cell.t_sum, lazy=cell.M > 0,
                             eta_L=np.array([eta_L]))
            text += (f"; at the measured eta L = {eta_L:.3g}, no constants give K* > {at.largest_if_defined_at_1} "
                     f"with the bound defined at K = 1")
    return text


def _fit_note(fits: Sequence[CellFit]) -> str:
    fitted = [(f.cell.cell, f.fit) for f in fits]
    shown = "; ".join(f"{name}: phi {fit.phi:.3g}, eps2 {fit.eps2:.3g}" if fit else f"{name}: none"
                      for name, fit in fitted)
    no_term = [name for name, fit in fitted if fit is not None and not np.isfinite(fit.eps2)]
    return f"minimax fit per cell ({shown})" + (
        f"; eps2 = inf in {', '.join(no_term)}: that fitted bound has no xi-delta term and no lazy term at all"
        if no_term else "") + "".join(f"; {f.cell.cell}: L, xi, delta measured against the {f.against}"
                                     for f in fits if f.cell.M > 0)


def _kink_note(full: Sequence[dict]) -> str:
    bends = sum(len(x["concave_at"]) for x in full)
    kinks = sum(len(x["at_drops"]) for x in full)
    if not bends:
        return ""
    return (", every one a kink of the integer tau (with real tau, the paper's analysis, convex there)"
            if kinks == bends else
            f"; {kinks} of the {bends} bends are kinks of the integer tau's floor")


def bound_claims(fits: Sequence[Sequence[CellFit]], k_exp: Sequence[Sequence[float]], reps: Replicates,
                 within: float = 0.05) -> pd.DataFrame:
    """Fig. 3's statements over the bound cells (``fits[d][c]``, ``k_exp[d][c]``: resample d, the
    full sample first, bound cell c): within ``within`` at every K (the closest K: a reading that
    cannot fail), above at every K (every constant measured), convex in K, the same K*."""
    results = [[_fig3_checks(f, k) for f, k in zip(row, ks, strict=True)] for row, ks in zip(fits, k_exp, strict=True)]
    full = results[0]
    names = ", ".join(f.cell.cell for f in fits[0])
    empty = [f"{f.cell.cell} at K = {x['undefined']}" for f, x in zip(fits[0], full, strict=True) if x["undefined"]]
    empty_reason = ("with every constant measured the bound's bracket eta phi - xi h(tau) / (tau eps2) is not "
                    "positive, so the bound is undefined (bounds nothing), in " + "; ".join(empty)) if empty else ""
    note = _fit_note(fits[0])
    certified = [certificate_of(f.cell, x["k_exp"], f.common["L"] * f.cell.eta)
                 for f, x in zip(fits[0], full, strict=True)]
    excess = [round(x["within"], 3) for x in full]
    labels = [f"({chr(ord('a') + i)})" for i in range(len(full))]

    def per_cell(values: Sequence[object]) -> str:
        return ", ".join(f"{v} {label}" for v, label in zip(values, labels, strict=True))

    undefined = [_runs(x["undefined"]) or "nowhere" for x in full]
    specs = [
        ("fig3-close", "claim", f"the bound is within {within:.0%} of the experiment at every K", "Fig. 3",
         lambda r: all(x["within"] <= within for x in r),
         f"largest relative excess (G - gap) / gap of the minimax upper fit to each cell's mean gap: {excess} "
         f"({', '.join(f'{100 * e:.0f}%' for e in excess)} against the paper's 5%); {note}", "",
         f"the minimax upper fit to each cell's mean gap exceeds the experiment by up to "
         f"{per_cell([f'{100 * e:.0f}%' for e in excess])}"),
        ("fig3-above", "claim", "the bound is above the experiment at every K", "Fig. 3",
         lambda r: all(x["above"] for x in r),
         f"measured-constants bound above and defined at every K, per cell: {[x['above'] for x in full]}",
         empty_reason, f"with every constant measured the bound is undefined at K = {per_cell(undefined)}"),
        ("fig3-convex-bound", "claim", "the fitted bound is convex in K (Fig. 3's cells)", "Fig. 3",
         lambda r: all(x["convex"] for x in r),
         f"second differences of the upper fit at the K and tau the runs used; negative at K = "
         f"{[x['concave_at'] for x in full]} per cell, of them where the same fit with real tau is not concave (a "
         f"bend of the integer tau's floor, which the paper's analysis drops): {[x['at_drops'] for x in full]}; {note}",
         "", f"the fitted bound bends down at K = {per_cell([_runs(x['concave_at']) or 'none' for x in full])}"
         + _kink_note(full)),
        _k_star_spec(fits[0], full, certified, per_cell),
    ]
    rows = [claim_row(name, source, "bound", [holds(r) for r in results], reps, f"{evidence} (cells: {names})", why,
                      statement=statement, role=role, finding=found)
            for statement, role, name, source, holds, evidence, why, found in specs]
    closest = [round(x["closest"], 3) for x in full]
    rows.append({**claim_row(f"the bound is within {within:.0%} of the experiment at some K (the other reading)",
                             "Fig. 3", "bound", [all(x["closest"] <= within for x in r) for r in results], reps,
                             f"smallest relative excess of the upper fit over K per cell: {closest}; a tightest upper "
                             f"fit touches the experiment at some K by construction, so this reading holds for any "
                             f"such fit: it cannot fail and is not evidence (cells: {names})",
                             statement="fig3-close", role="reading",
                             finding=f"the upper fit touches the experiment at some K in every cell ({closest})"),
                 "verdict": "vacuous", "reading_of": f"the bound is within {within:.0%} of the experiment at every K",
                 "decided_by": "cannot fail: a tightest upper fit touches the curve at some K by construction"})
    return pd.DataFrame(rows)


def closed_form_readings(fits: Sequence[Sequence[CellFit]], k_exp: Sequence[Sequence[float]],
                         reps: Replicates) -> list[dict]:
    """Theorem 3's closed form at each bound cell's measured L beside the experiment's K* and the
    fitted bound's: readings under Theorem 3 (it holds when the closed form rounds to the experiment's K*)."""
    rows = []
    for c, f in enumerate(fits[0]):
        def closed(g: CellFit) -> float:
            return k_star_closed_form(alpha=g.cell.alpha, beta=g.cell.beta, eta=g.cell.eta, L=g.constants["L"],
                                      t_sum=g.cell.t_sum)

        holds = [round(closed(row[c])) == ks[c] for row, ks in zip(fits, k_exp, strict=True)]
        k_fit = f.bound.k_star_fit if f.bound is not None else math.nan
        tau = (f.cell.t_sum / closed(f) - f.cell.beta) / f.cell.alpha
        rows.append({**claim_row(
            f"Theorem 3's closed form gives the experiment's K* ({f.cell.cell})", "Theorem 3", "bound", holds, reps,
            f"closed form at the measured L = {f.constants['L']:.3g}: K* = {closed(f):.3g}; the experiment's K* = "
            f"{k_exp[0][c]:g}, the fitted bound's {k_fit:g}; its precondition eta L tau = "
            f"{f.cell.eta * f.constants['L'] * tau:.2g} there (the theorem needs << 1)",
            statement="thm3", role="reading",
            finding=f"closed form {closed(f):.3g} against the experiment's {k_exp[0][c]:g} (eta L tau = "
                    f"{f.cell.eta * f.constants['L'] * tau:.2g})"),
            "reading_of": "Theorem 3's closed form is the bound's minimiser"})
    return rows


def remark_rows(fits: Sequence[Sequence[CellFit]], reps: Replicates) -> list[dict]:
    """The Remark: plagiarism (M/N theta) outweighs the artificial noise, on the lazy bound cells:
    counted with the noise the proof bounds, sqrt(M) ||n|| / N (the measured noise norm per lazy
    upload); as written, sqrt(M) sigma2 / N, a reading."""
    lazy = [c for c, f in enumerate(fits[0]) if f.cell.M > 0]
    if not lazy:
        return []

    def terms(f: CellFit) -> tuple[float, float, float]:
        M, N = f.cell.M, f.cell.N
        root = math.sqrt(M) / N
        return M / N * f.constants["theta"], root * f.constants["noise_norm"], root * f.cell.sigma2

    rows: list[dict[str, Any]] = []
    for role, index, name in (("claim", 1, "plagiarism outweighs the artificial noise (the noise as measured)"),
                              ("reading", 2, "plagiarism outweighs the artificial noise (the noise term as written)")):
        holds = [all(terms(row[c])[0] > terms(row[c])[index] for c in lazy) for row in fits]
        shown = "; ".join(f"{fits[0][c].cell.cell}: (M/N) theta = {terms(fits[0][c])[0]:.3g} against "
                          f"{terms(fits[0][c])[index]:.3g}" for c in lazy)
        what = ("sqrt(M) ||n|| / N with the measured noise norm ||n|| per lazy upload (sigma sqrt(P))" if index == 1
                else "sqrt(M) sigma2 / N, Theorem 4's term as written")
        missing = "" if all(math.isfinite(terms(fits[0][c])[index]) for c in lazy) else (
            "the runs' constants table has no noise_norm (measured before it was recorded)")
        row = claim_row(name, "Remark (Section V-C)", "bound", holds, reps,
                        f"theta measured (median over the resampled runs), noise {what}: {shown}", missing,
                        statement="remark-plagiarism", role=role, finding=shown.split(": ", 1)[-1])
        rows.append({**row, "reading_of": "" if role == "claim" else rows[0]["claim"]})
    return rows


__all__ = ["certificate_of", "bound_claims", "fitted_corollaries", "eta_fitted", "closed_form_readings", "remark_rows"]
