"""The paper's statements about the bound's formula, judged as mathematics: each over a scan of
valid constants centred on the base cell's measured ones (:mod:`bladefl.theory.constant_scan`,
:mod:`bladefl.theory.theorem_scans`). A statement is ``reproduced`` when it holds in every scanned
setting that can judge it, ``refuted`` when one fails (its witness in the row), ``not applicable``
when no setting can judge it. The data enter only through the scan's centre: these rows have no
units and no bootstrap."""

from __future__ import annotations

import math
from collections.abc import Sequence

from bladefl.experiments.plan.grid import Member
from bladefl.experiments.verdicts.bound_fit import CellFit, base_cell, corollary_values
from bladefl.experiments.verdicts.vocabulary import fmt, sweep_varying
from bladefl.theory import theorem_scans
from bladefl.theory.claims import COROLLARIES
from bladefl.theory.constant_scan import scan


def math_row(statement: str, name: str, source: str, holds: bool, judged: int, settings: int, summary: str,
             witness: str, role: str = "claim", reading_of: str = "", page: str = "03_bound", failing: int = 0,
             note: str = "") -> dict:
    """A verdict row of a statement judged as mathematics (``note``: why it fails, appended to the finding)."""
    if judged == 0:
        verdict, decided = "not applicable", f"no scanned setting of {settings} can judge it"
        found = "no valid setting to judge it"
    elif holds:
        verdict, decided = "reproduced", f"holds in every one of {judged} valid scanned settings"
        found = ""
    else:
        verdict, decided = "refuted", f"fails in a scanned setting (witness: {witness})"
        found = (f"fails in {failing} of {judged} valid settings of the constants scanned ({failing / judged:.0%})"
                 f"{note}")
    return {"statement": statement, "role": role, "claim": name, "source": source, "basis": "mathematics",
            "verdict": verdict, "decided_by": decided, "finding": found, "support": math.nan, "seeds": math.nan,
            "units": math.nan,
            "unit": "", "replication": "", "reading_of": reading_of, "page": page, "evidence": summary}


def scan_base(f: CellFit) -> dict[str, float]:
    """The scan's centre: the cell's settings and its measured constants (phi, eps2 measured)."""
    c = f.constants
    return {**{k: f.common[k] for k in ("alpha", "beta", "eta", "L", "xi", "delta", "t_sum")},
            "phi": c.get("phi_measured", math.nan), "eps2": c.get("eps2_measured", math.nan), "M": f.cell.M,
            "N": f.cell.N, "theta": c["theta"], "sigma2": f.cell.sigma2}


def corollary_rows(fits: Sequence[CellFit], members: Sequence[Member], settings: int = 2000) -> list[dict]:
    """Corollaries 1-5 over the scan, at the swept values (delta: half, once and twice the measured
    value); Corollary 4's proof's conclusion as a reading under that paper error."""
    rows = []
    for claim in COROLLARIES:
        f = base_cell(fits, claim.param)
        values = corollary_values(members, claim.param, f.constants["delta"])
        if len(values) < 2:
            continue
        s = scan(claim, scan_base(f), values, settings=settings)
        witness = "" if s.holds else ", ".join(f"{k} = {v:.3g}" for k, v in (s.witness or {}).items()) + (
            f": K* = [{', '.join(f'{k:.4g}' for k in s.witness_k)}] at {[fmt(v) for v in values]}")
        proof = claim.statement == "cor4-proof"
        rows.append(math_row(claim.statement, f"{claim.name} (on the bound)", claim.source, s.holds, s.judged,
                             s.settings, f"{claim.param} = {[fmt(v) for v in values]}, centred on {f.cell.cell}; "
                             f"{s.summary()}", witness, role="reading" if proof else "claim", failing=s.failing))
    return rows


def theorem_rows(fits: Sequence[CellFit], members: Sequence[Member], settings: int = 2000) -> list[dict]:
    """Theorem 2 (real tau counted, integer tau a reading), Theorem 3 (eps2 free counted, the
    proof's eps2 = delta xi / phi a reading) and Corollary 4's second part, centred on the first
    bound cell."""
    f = fits[0]
    base = scan_base(f)
    centre = f"centred on {f.cell.cell}"
    rows = []
    real = theorem_scans.convexity(base, tau_rule="real", settings=settings)
    kinks = ": bends at the integer tau's kinks (with real tau, the paper's analysis, it holds in every setting)"
    specs = [
        ("thm2", "claim", "the bound is convex in K (real tau)", "Theorem 2", real, ""),
        ("thm2", "reading", "the bound is convex in K (the integer tau of the time model)", "Theorem 2",
         theorem_scans.convexity(base, tau_rule="integer", settings=settings), "the bound is convex in K (real tau)"),
        ("thm3", "claim", "Theorem 3's closed form is the bound's minimiser", "Theorem 3",
         theorem_scans.closed_form(base, eps2_rule="free", settings=settings), ""),
        ("thm3", "reading", "Theorem 3's closed form is the bound's minimiser (eps2 = delta xi / phi, its proof's)",
         "Appendix, proof of Theorem 3", theorem_scans.closed_form(base, eps2_rule="proof", settings=settings),
         "Theorem 3's closed form is the bound's minimiser"),
    ]
    sweep = sweep_varying(members, "eta")
    if sweep is not None and len(sweep.values) >= 2:
        specs.append(("cor4-bound-eta", "claim", "the bound falls as eta grows while eta L < 1 (Corollary 4)",
                      "Corollary 4", theorem_scans.bound_falls_with_eta(base, sweep.values, settings=settings), ""))
    lazy, noise = next((x for x in fits if x.cell.M > 0), None), sweep_varying(members, "sigma2")
    small = min((float(v) for v in (noise.values if noise is not None else []) if float(v) > 0), default=math.nan)
    if lazy is not None and math.isfinite(small):  # Section VI, on Theorem 4's bound: under the experiment's dp-K
        specs.append(("dp-K", "reading", f"a small noise leaves K* unchanged (on the bound, Theorem 4, sigma2 = "
                      f"{small:g})", "Section VI", theorem_scans.small_noise(scan_base(lazy), small, settings=settings),
                      "K* does not depend on epsilon"))
    for statement, role, name, source, check, reading_of in specs:
        rows.append(math_row(statement, name, source, check.holds, check.judged, check.settings,
                             f"{centre}; {check.summary()}", check.witness, role=role, reading_of=reading_of,
                             failing=check.failing, note=kinks if statement == "thm2" and real.holds else ""))
    return rows


__all__ = ["math_row", "corollary_rows", "theorem_rows", "scan_base"]
