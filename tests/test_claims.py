"""The corollary checks hold on the bound over a grid of parameters, and can fail."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bladefl.theory.claims import COROLLARIES, bound_falls_with_eta, corollary, monotone, on_bound, on_bounds

VALUES = {"alpha": [1, 2, 5], "beta": [6, 8, 10, 12], "delta": [0.1, 0.3, 1.0], "N": [10, 15, 20, 25],
          "eta": [0.005, 0.01, 0.05], "lazy_ratio": [0.0, 0.1, 0.2, 0.3], "sigma2": [0.01, 0.1, 0.2, 0.3]}


def parameter_grid():
    for L, delta, eps2 in itertools.product([0.5, 2.0], [0.2, 0.5], [2.0, 5.0]):
        yield dict(alpha=1, beta=6, eta=0.01, L=L, xi=1.0, delta=delta, phi=0.5, eps2=eps2, t_sum=100, N=20,
                   theta=0.01, sigma2=0.01)


STATED = [c for c in COROLLARIES if "proof" not in c.name]


@pytest.mark.parametrize("claim", STATED, ids=[c.name for c in STATED])
def test_corollaries_as_stated_hold_for_the_real_minimiser_of_the_bound(claim):
    """The continuous analysis (real K, real tau) the paper's proofs use: every stated corollary
    holds on a grid of constants, through the same function the report's verdicts call."""
    for params in parameter_grid():
        v = on_bound(claim, params, VALUES[claim.param], integer=False)
        assert v.holds, (params, v)
        assert v.x == sorted(float(x) for x in VALUES[claim.param]) and len(v.y) == len(v.x)


@pytest.mark.parametrize("integer", [False, True])
def test_many_base_points_judged_at_once_are_each_judged_as_alone(integer):
    """on_bounds (a fit's resamples, every setting in one batched minimisation) gives each base point the
    verdict on_bound gives it alone, K* for K*, on every corollary."""
    bases = list(parameter_grid())
    for claim in COROLLARIES:
        together = on_bounds(claim, bases, VALUES[claim.param], integer=integer)
        alone = [on_bound(claim, base, VALUES[claim.param], integer=integer) for base in bases]
        assert together == alone, claim.name


def test_the_proofs_reading_of_corollary_4_fails_where_the_statement_holds():
    stated, proof = corollary("K* rises with eta"), corollary("K* falls as eta grows (Corollary 4's proof)")
    for params in parameter_grid():
        assert on_bound(stated, params, VALUES["eta"], integer=False).holds
        assert not on_bound(proof, params, VALUES["eta"], integer=False).holds


def _cells():
    import numpy as np

    from bladefl.experiments.verdicts.bound_fit import BoundCell, CellFit
    from bladefl.theory.fit import Fit

    common = dict(alpha=1, beta=6, eta=0.005, L=2.0, xi=1.0, delta=0.5, t_sum=100, M=0, N=20, theta=0.0, sigma2=0.0)
    plain = CellFit(BoundCell("c", 1, 6, 0.005, 100, 0, 20, 0.0), np.arange(1, 15.0), np.ones(14),
                    {"delta": 0.5, "theta": 0.0}, common, Fit(0.5, 3.0, ("phi", "eps2"), 0.0))
    lazy = CellFit(BoundCell("lazy", 1, 6, 0.01, 100, 8, 20, 0.01), np.arange(1, 15.0), np.ones(14),
                   {"delta": 0.5, "theta": 0.3}, {**common, "M": 8, "theta": 0.3, "sigma2": 0.01},
                   Fit(0.5, 3.0, ("phi", "eps2"), 0.0))
    return common, plain, lazy


def _reps():
    from bladefl.experiments.verdicts.vocabulary import Replicates

    return Replicates(2, "run", 2, "2 runs")


def test_the_corollaries_on_the_fitted_bound_are_readings_judged_on_its_real_minimiser():
    """verdicts.fitted_corollaries judges each corollary on claims.on_bound's real-valued minimiser
    (continuous tau) of the fitted bound, a reading under the corollary's statement; M/N and sigma2
    on a lazy cell; eta L >= 1 and a K* below one round are said."""
    from bladefl.experiments.plan.grid import expand
    from bladefl.experiments.verdicts.bound_corollaries import fitted_corollaries

    grid = {"base": {"alpha": 1, "beta": 10, "N": 20, "eta": 0.01, "lazy_ratio": 0.0, "sigma2": 0.0},
            "sweeps": [{"name": "alpha", "vary": "alpha", "values": [1, 2, 5], "with": {"beta": 6}},
                       {"name": "eta", "vary": "eta", "values": [0.005, 0.01, 0.05, 0.6], "with": {"beta": 6}},
                       {"name": "sigma2", "vary": "sigma2", "values": [0.01, 0.3], "with": {"lazy_ratio": 0.2}}]}
    common, plain, lazy = _cells()
    rows = {r["claim"]: r for r in fitted_corollaries([[plain, lazy]], expand(grid), _reps())}
    base = {**{k: common[k] for k in ("alpha", "beta", "eta", "L", "xi", "delta", "t_sum")}, "phi": 0.5, "eps2": 3.0,
            "M": 0, "N": 20, "theta": 0.0, "sigma2": 0.0}
    alpha = rows["K* falls as alpha grows (on the fitted bound)"]
    every = on_bound(corollary("K* falls as alpha grows"), base, [1, 2, 5], integer=False)
    assert every.y[-1] < 1  # at alpha 5 the real K* is below one round: outside the feasible K, left out
    expected = on_bound(corollary("K* falls as alpha grows"), base, [1, 2], integer=False)
    assert alpha["role"] == "reading" and alpha["statement"] == "cor1-alpha" and alpha["basis"] == "bound"
    assert str([round(y, 3) for y in expected.y]) in alpha["evidence"]
    assert "judged where 1 <= K* <= t_sum / (alpha + beta) and eta L < 1 only (left out: alpha = 5" in alpha["evidence"]
    assert all(1 <= y for y in expected.y)
    # two runs: a direction, never tallied (the bootstrap's share over 2 units takes 3 distinct values)
    assert alpha["verdict"] == ("too few runs" if expected.holds else alpha["verdict"])
    assert "3 distinct values" in alpha["decided_by"]
    eta = rows["K* rises with eta (on the fitted bound)"]
    assert "eta L < 1 only (left out: eta = 0.6)" in eta["evidence"]  # outside Lemma 1: not judged there
    assert "cell lazy" in rows["K* falls as sigma2 grows (on the fitted bound)"]["evidence"]


def test_the_real_minimiser_is_the_brute_force_minimiser_of_the_continuous_bound():
    """k_star_exact(integer=False) against a dense grid of the bound with tau = (t_sum/K - beta)/alpha
    (the continuous analysis), at a hand-picked valid point (eta L < 1) and a lazy one."""
    import numpy as np

    from bladefl.theory.bound import k_star_exact, lazy_upper_bound

    for extra in ({}, {"M": 4.0, "N": 20.0, "theta": 0.5, "sigma2": 0.01}):
        p = dict(alpha=1.0, beta=6.0, eta=0.05, L=4.0, xi=1.0, delta=0.5, phi=0.5, eps2=3.0, t_sum=100.0)
        Ks = np.linspace(0.05, 100 / 7, 400001)
        G = lazy_upper_bound(Ks, **p, **{"M": 0.0, "N": 20.0, "theta": 0.0, "sigma2": 0.0, **extra}, tau_rule="real")
        brute = float(Ks[np.nanargmin(np.where(np.isfinite(G), G, np.nan))])
        assert k_star_exact(**p, **extra, integer=False) == pytest.approx(brute, abs=2e-3)


def test_bound_falls_with_eta_while_eta_L_below_one():
    for params in parameter_grid():
        v = bound_falls_with_eta(params, [0.001, 0.002, 0.005, 0.01], K=5)
        assert v.holds, v


def test_monotone_can_fail_and_says_where():
    v = monotone("x", "experiment", [1, 2, 3], [3, 1, 2], "falls")
    assert not v.holds and "2->3" in v.detail
    assert not monotone("x", "bound", [1, 2], [1, float("nan")], "rises").holds
    flat = monotone("x", "experiment", [1, 2, 3], [4, 4, 4], "falls")
    assert not flat.holds and "flat" in flat.detail
    assert monotone("x", "experiment", [1, 2, 3], [4, 4, 3], "falls").holds


def test_monotone_tolerates_steps_within_the_noise():
    x, y = [10, 100, 1000, 2000], [0.41, 0.55, 0.551, 0.5494]  # a plateau with a noise-sized dip
    assert not monotone("c", "experiment", x, y, "rises").holds
    assert monotone("c", "experiment", x, y, "rises", tolerance=0.005).holds
    assert not monotone("c", "experiment", x, [0.41, 0.55, 0.5, 0.49], "rises", tolerance=0.005).holds
    assert not monotone("c", "experiment", x, [0.55, 0.552, 0.549, 0.551], "rises", tolerance=0.005).holds  # flat


def test_a_real_k_star_that_moves_below_the_minimisers_resolution_is_flat_not_a_fall(monkeypatch):
    """The real minimiser's last digits differ between machines: a K* that moves by 1e-9 of itself over
    a sweep neither falls nor rises (it once decided bootstrap shares by the machine), one that moves by
    1e-3 does, and integer K* keep their exact reading."""
    import bladefl.theory.claims as claims

    claim = next(c for c in COROLLARIES if c.param == "sigma2" and c.quantity == "K")
    base = {"alpha": 1, "beta": 6, "eta": 0.01, "L": 1.0, "xi": 1.0, "delta": 1.0, "phi": 1.0, "eps2": 1.0,
            "t_sum": 100, "M": 8, "N": 20, "theta": 0.1, "sigma2": 0.01}
    for step, holds in ((1e-9, False), (1e-3, True)):
        ks = np.array([1.414, 1.414 - step, 1.414 - 2 * step])  # the real K*: one batched call for the sweep
        monkeypatch.setattr(claims, "k_star_real", lambda ks=ks, **kw: ks)
        verdict = on_bound(claim, base, [0.01, 0.1, 0.2], integer=False)
        assert verdict.holds is holds, (step, verdict.detail)
        assert ("flat" in verdict.detail) is not holds
    ks = iter([2.0, 2.0, 1.0])
    monkeypatch.setattr(claims, "k_star_exact", lambda **kw: next(ks))
    assert on_bound(claim, base, [0.01, 0.1, 0.2], integer=True).holds


def test_a_fitted_bound_without_its_lazy_term_is_not_applicable_to_the_lazy_corollaries():
    import math
    from dataclasses import replace

    from bladefl.experiments.plan.grid import expand
    from bladefl.experiments.verdicts.bound_corollaries import fitted_corollaries
    from bladefl.theory.fit import Fit

    grid = {"base": {"alpha": 1, "beta": 10, "N": 20, "eta": 0.01, "lazy_ratio": 0.0, "sigma2": 0.0},
            "sweeps": [{"name": "sigma2", "vary": "sigma2", "values": [0.01, 0.3], "with": {"lazy_ratio": 0.2}},
                       {"name": "beta", "vary": "beta", "values": [6, 10]}]}
    _, plain, lazy = _cells()
    lazy = replace(lazy, fit=Fit(0.5, math.inf, ("phi", "eps2"), 0.0))
    rows = {r["claim"]: r for r in fitted_corollaries([[plain, lazy]], expand(grid), _reps())}
    row = rows["K* falls as sigma2 grows (on the fitted bound)"]
    assert row["verdict"] == "not applicable" and "eps2 = inf" in row["evidence"]
    assert rows["K* falls as beta grows (on the fitted bound)"]["verdict"] != "not applicable"


def test_corollary_4s_second_part_is_judged_as_mathematics_with_the_fitted_bound_a_reading():
    """Judged only where the fitted bound is defined, Corollary 4's second part can look true; over
    a scan of valid constants it fails, with a witness whose G indeed rises with eta at fixed K:
    the counted row is the mathematics, not the fitted bound."""
    import math

    from bladefl.experiments.plan.grid import expand
    from bladefl.experiments.verdicts.bound_corollaries import ETA_CLAIM, eta_fitted
    from bladefl.experiments.verdicts.mathematics import theorem_rows
    from bladefl.theory import theorem_scans
    from bladefl.theory.bound import upper_bound

    grid = {"base": {"alpha": 1, "beta": 10, "N": 20, "eta": 0.01, "lazy_ratio": 0.0, "sigma2": 0.0},
            "sweeps": [{"name": "eta", "vary": "eta", "values": [0.005, 0.01, 0.05, 0.1], "with": {"beta": 6}}]}
    common, plain, _ = _cells()
    members = expand(grid)
    fitted = eta_fitted([[plain]], members, _reps())[0]
    assert fitted["role"] == "reading" and fitted["statement"] == "cor4-bound-eta"
    counted = {r["claim"]: r for r in theorem_rows([plain], members, settings=400)}[ETA_CLAIM]
    assert counted["role"] == "claim" and counted["basis"] == "mathematics" and counted["verdict"] == "refuted"
    check = theorem_scans.bound_falls_with_eta({**common, "phi": math.nan, "eps2": math.nan},
                                               [0.005, 0.01, 0.05, 0.1], settings=400)
    w = check.witness_at
    G = [upper_bound(w["K"], **{k: w[k] for k in ("L", "xi", "delta", "phi", "eps2")}, alpha=1, beta=6, t_sum=100,
                     eta=e, tau_rule="real") for e in (0.005, 0.01, 0.05, 0.1)]
    assert 0.1 * w["L"] < 1 and any(b >= a for a, b in zip(G, G[1:], strict=False)), G


def test_the_vectorised_real_miniser_agrees_with_one_setting_at_a_time():
    """k_star_real over an array of settings equals k_star_exact(integer=False) setting by setting
    (nan where the bound is undefined everywhere)."""
    import numpy as np

    from bladefl.theory.bound import k_star_exact, k_star_real

    L = np.array([0.5, 4.0, 40.0, 150.0])
    many = k_star_real(alpha=1.0, beta=6.0, eta=0.005, L=L, xi=1.0, delta=0.5, phi=0.5, eps2=3.0, t_sum=100.0)
    one = [k_star_exact(alpha=1.0, beta=6.0, eta=0.005, L=x, xi=1.0, delta=0.5, phi=0.5, eps2=3.0, t_sum=100.0,
                        integer=False) for x in L]
    np.testing.assert_allclose(many, one, rtol=1e-9)


def test_a_scan_of_valid_constants_holds_where_the_claim_is_a_theorem_and_names_a_witness_where_not():
    """Corollary 4's statement (K* rises with eta) holds at every scanned setting; its proof's
    conclusion (K* falls) fails at every one, with a witness whose K* indeed rises; the scan keeps
    eta L < 1 at every swept eta and is the same for the same seed."""
    import numpy as np

    from bladefl.theory.bound import k_star_real
    from bladefl.theory.constant_scan import scan

    base = dict(alpha=1.0, beta=6.0, eta=0.01, L=16.0, xi=3.2, delta=8.0, phi=0.05, eps2=0.5, t_sum=100.0, M=0.0,
                N=20.0, theta=0.0, sigma2=0.0)
    etas = [0.005, 0.01, 0.05, 0.1]
    rises = scan(corollary("K* rises with eta"), base, etas, settings=600)
    assert rises.judged > 20 and rises.failing == 0 and rises.holds and "holds in every one" in rises.summary()
    falls = scan(corollary("K* falls as eta grows (Corollary 4's proof)"), base, etas, settings=600)
    assert falls.judged > 20 and falls.failing == falls.judged and not falls.holds
    w = falls.witness
    assert w is not None and max(etas) * w["L"] < 1
    again = k_star_real(**{**base, **w, "eta": np.array(etas)})
    np.testing.assert_allclose(again, falls.witness_k, rtol=1e-9)
    assert np.all(np.diff(again) > 0) and "witness" in falls.summary()
    assert scan(corollary("K* rises with eta"), base, etas, settings=600) == rises


def test_a_fitted_bound_reading_with_no_feasible_k_star_is_not_applicable():
    """Where the fitted bound's real K* is below one round at all but one swept value there is no
    trend to judge: "not applicable", never a verdict read off K* = 0.8 and 0.6."""
    from bladefl.experiments.plan.grid import expand
    from bladefl.experiments.verdicts.bound_corollaries import fitted_corollaries

    grid = {"base": {"alpha": 1, "beta": 10, "N": 20, "eta": 0.01, "lazy_ratio": 0.0, "sigma2": 0.0},
            "sweeps": [{"name": "alpha", "vary": "alpha", "values": [5, 6, 8], "with": {"beta": 6}}]}
    common, plain, lazy = _cells()
    base = {**{k: common[k] for k in ("alpha", "beta", "eta", "L", "xi", "delta", "t_sum")}, "phi": 0.5, "eps2": 3.0,
            "M": 0, "N": 20, "theta": 0.0, "sigma2": 0.0}
    assert sum(k >= 1 for k in on_bound(corollary("K* falls as alpha grows"), base, [5, 6, 8], integer=False).y) < 2
    row = {r["claim"]: r for r in fitted_corollaries([[plain, lazy]], expand(grid), _reps())}[
        "K* falls as alpha grows (on the fitted bound)"]
    assert row["verdict"] == "not applicable" and "no trend to judge" in row["decided_by"] + row["evidence"]
