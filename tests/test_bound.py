"""The bound module against Wang et al.'s form, the lazy bound, K* and convexity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bladefl.theory.bound import check_convexity, k_star_closed_form, k_star_exact, lazy_upper_bound, upper_bound


def wang(K, tau, eta, L, xi, delta, phi, eps2):
    h = (delta / L) * ((eta * L + 1) ** tau - 1) - eta * delta * tau
    return 1 / (K * tau * (eta * phi - xi * h / (tau * eps2)))


def random_points(n=200, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        p = dict(alpha=rng.uniform(0.5, 3), beta=rng.uniform(1, 15), eta=rng.uniform(0.001, 0.1),
                 L=rng.uniform(0.5, 20), xi=rng.uniform(0.1, 5), delta=rng.uniform(0.01, 2),
                 phi=rng.uniform(0.01, 1), eps2=rng.uniform(0.5, 50), t_sum=100.0)
        yield p, rng.uniform(0.2, 100 / (p["alpha"] + p["beta"]))


def test_upper_bound_equals_wangs_form_at_random_valid_points():
    checked = 0
    for p, K in random_points():
        tau = (p["t_sum"] - K * p["beta"]) / p["alpha"] / K
        expected = wang(K, tau, p["eta"], p["L"], p["xi"], p["delta"], p["phi"], p["eps2"])
        got = upper_bound(K, **p, tau_rule="real")
        if expected > 0 and math.isfinite(expected):
            assert got == pytest.approx(expected, rel=1e-9)
            checked += 1
        else:
            assert got == math.inf
    assert checked > 50


def test_invalid_region_is_inf_not_negative():
    p = dict(alpha=1, beta=10, eta=0.01, L=1, xi=1, delta=1, phi=0.001, eps2=1, t_sum=100)
    Ks = np.arange(1, 12)
    G = upper_bound(Ks, **p)
    assert (G > 0).all() and np.isinf(G[-2:]).all()  # K >= 10: gamma <= 0


def test_lazy_bound_equals_bound_at_zero_and_grows_with_M_and_sigma2():
    p = dict(alpha=1, beta=6, eta=0.01, L=5, xi=1, delta=0.5, phi=0.5, eps2=10, t_sum=100)
    Ks = np.arange(1, 10)
    base = upper_bound(Ks, **p)
    assert np.allclose(lazy_upper_bound(Ks, **p, M=0, N=20, theta=1, sigma2=0.1), base)
    g1 = lazy_upper_bound(Ks, **p, M=2, N=20, theta=0.1, sigma2=0.01)
    g2 = lazy_upper_bound(Ks, **p, M=8, N=20, theta=0.1, sigma2=0.01)
    g3 = lazy_upper_bound(Ks, **p, M=8, N=20, theta=0.1, sigma2=0.3)
    finite = np.isfinite(g3)
    assert finite.sum() >= 5
    assert (g1[finite] > base[finite]).all() and (g2[finite] > g1[finite]).all() and (g3[finite] > g2[finite]).all()


def test_closed_form_is_close_to_exact_real_minimiser_when_eta_L_tau_small():
    for L, eta in ((0.5, 0.005), (1.0, 0.002), (0.2, 0.01)):
        p = dict(alpha=1, beta=6, eta=eta, L=L, xi=1.0, delta=0.3, phi=0.4, t_sum=100)
        eps2 = p["delta"] * p["xi"] / p["phi"]
        closed = k_star_closed_form(alpha=1, beta=6, eta=eta, L=L, t_sum=100)
        exact = k_star_exact(**p, eps2=eps2, integer=False)
        assert abs(closed - exact) / exact < 0.15, (L, eta, closed, exact)


def test_exact_integer_minimiser_minimises_over_feasible_K():
    p = dict(alpha=1, beta=6, eta=0.01, L=5, xi=1, delta=0.5, phi=0.5, eps2=5, t_sum=100)
    k = k_star_exact(**p)
    Ks = np.arange(1, 15)
    tau = np.floor((100 / Ks - 6) / 1)
    values = [wang(K, t, 0.01, 5, 1, 0.5, 0.5, 5) for K, t in zip(Ks, tau, strict=True)]
    values = [v if v > 0 else math.inf for v in values]
    assert k == Ks[int(np.argmin(values))]


def test_convexity_holds_for_valid_parameters():
    p = dict(alpha=1, beta=6, eta=0.01, L=5, xi=1, delta=0.5, phi=0.5, eps2=5, t_sum=100)
    res = check_convexity(**p)
    assert res.convex and res.checked > 100 and res.violations == []


def test_upper_fit_recovers_known_constants_and_stays_above_noisy_data():
    from bladefl.theory.fit import compare, fit_bound

    rng = np.random.default_rng(0)
    p = dict(alpha=1, beta=6, eta=0.01, L=5.0, xi=1.0, delta=0.5, t_sum=100)
    true_phi, true_eps2 = 0.4, 3.0
    Ks = np.arange(1, 15)
    G = upper_bound(Ks, **p, phi=true_phi, eps2=true_eps2)  # the paper's integer tau
    finite = np.isfinite(G)
    exact = fit_bound(Ks[finite], G[finite], **p)
    assert exact.phi == pytest.approx(true_phi, rel=1e-6) and exact.eps2 == pytest.approx(true_eps2, rel=1e-6)
    assert exact.residual == pytest.approx(0, abs=1e-6)
    for trial in range(5):
        gap = G[finite] * (1 + 0.02 * rng.standard_normal(finite.sum()))
        fit = fit_bound(Ks[finite], gap, **p)
        G_fit = np.asarray(upper_bound(Ks[finite], **p, phi=fit.phi, eps2=fit.eps2))
        assert (G_fit >= gap * (1 - 1e-9)).all(), trial  # an upper bound at every K
        assert 0 <= fit.residual < 0.1 and compare(G_fit, gap).max_relative_gap < 0.2
        assert fit.eps2 == pytest.approx(true_eps2, rel=0.5) and fit.phi == pytest.approx(true_phi, rel=0.2)
    one = fit_bound(Ks[finite], G[finite], **p, phi=true_phi, free=("eps2",))
    assert one.eps2 == pytest.approx(true_eps2, rel=1e-6)
    lazy = dict(M=8, N=20, theta=0.002, sigma2=0.01)
    Gl = lazy_upper_bound(Ks, **p, phi=true_phi, eps2=true_eps2, **lazy)
    fl = np.isfinite(Gl)
    fitted = fit_bound(Ks[fl], Gl[fl], **p, **lazy)
    assert fitted.eps2 == pytest.approx(true_eps2, rel=1e-6) and fitted.phi == pytest.approx(true_phi, rel=1e-6)


def test_compare_counts_an_undefined_bound_against_closeness():
    from bladefl.theory.fit import compare

    gap = np.array([1.0, 0.8, 0.9])
    assert compare(gap * 1.1, gap).bound_above_everywhere
    assert compare(gap * 1.1, gap).max_relative_gap == pytest.approx(0.1)
    assert not compare(gap * 0.9, gap).bound_above_everywhere
    undefined = compare(np.array([1.1, np.inf, 0.99]), gap)
    assert undefined.max_relative_gap == math.inf and undefined.bound_above_everywhere


def test_preconditions_report_eta_L_and_the_bracket_per_K():
    from bladefl.theory.bound import preconditions

    p = dict(alpha=1, beta=6, eta=0.01, L=5.0, xi=1.0, delta=0.5, t_sum=100, phi=0.4)
    ok = preconditions(np.arange(1, 15), **p, eps2=3.0)
    G = upper_bound(np.arange(1, 15), **p, eps2=3.0)
    assert ok.eta_L_below_1 and ok.bracket_positive == np.isfinite(G).tolist()
    assert not ok.bracket_positive[0] and all(ok.bracket_positive[2:])  # tau = 94 at K = 1: h(tau) too large
    bad = preconditions(np.arange(1, 12), **{**p, "eta": 0.5}, eps2=1e-4)
    assert not bad.eta_L_below_1 and not any(bad.bracket_positive)


def test_the_bounds_tau_is_the_engines_tau_for_every_decimal_setting():
    """theory.bound.tau_of (integer rule) and fl.timemodel.tau_for are one rule: decimal alphas
    and betas whose float quotients sit just below an integer give the same tau."""
    from bladefl.fl.timemodel import tau_for
    from bladefl.theory.bound import tau_of

    K = np.arange(1, 30)
    for alpha in (0.1, 0.2, 0.3, 0.7, 1, 2, 5):
        for beta in (0.1, 0.3, 6, 10, 12):
            got = tau_of(K, alpha=alpha, beta=beta, t_sum=100)
            assert got.tolist() == [float(tau_for(int(k), alpha, beta, 100)) for k in K], (alpha, beta)
    with pytest.raises(ValueError, match="whole numbers"):
        tau_of(np.array([1.5]), alpha=1, beta=6, t_sum=100)


def test_an_undefined_bound_is_not_above_the_experiment():
    import numpy as np

    from bladefl.experiments.tables.bound_analysis import defined_where_measured

    assert not defined_where_measured(np.array([1.0, np.inf]), np.array([0.5, 0.4]))
    assert defined_where_measured(np.array([1.0, np.inf]), np.array([0.5, np.nan]))  # no gap there: not judged
