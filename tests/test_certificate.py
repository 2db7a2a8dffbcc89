"""What the bound's form allows, before any fit: the certificate against a dense scan of constants."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from bladefl.theory.bound import lazy_upper_bound, upper_bound
from bladefl.theory.certificate import ETA_L_GRID, certificate, closed_form_eta_L

CELL = dict(alpha=1, beta=6, t_sum=100)  # Fig. 3's cells
ETA = 0.005


def _scan(lazy: bool):
    """K* and the first K where the bound is defined, for a dense grid of constants (eta L on the
    certificate's grid, xi, delta, phi, eps2 and, with lazy clients, theta over decades)."""
    Ks = np.arange(1, 15, dtype=float)
    out = []
    decades = [1e-3, 1e-2, 1e-1, 1, 10, 100]
    thetas = [0.0, 0.1, 1.0, 10.0] if lazy else [0.0]
    for x, xi, delta, phi, eps2, theta in itertools.product(ETA_L_GRID[::6], decades, [0.1, 1, 10], [0.1, 1],
                                                          [1e-3, 1e-2, 0.1, 1], thetas):
        G = np.asarray(lazy_upper_bound(Ks, eta=ETA, L=x / ETA, xi=xi, delta=delta, phi=phi, eps2=eps2, M=8 if lazy
                                        else 0, N=20, theta=theta, sigma2=0.0, **CELL))
        finite = np.isfinite(G)
        if finite.any():
            out.append((int(Ks[int(np.argmin(G))]), int(Ks[np.flatnonzero(finite)[0]])))
    return out


@pytest.mark.parametrize("lazy", [False, True])
def test_no_choice_of_constants_beats_the_certificate(lazy):
    cert = certificate(**CELL, lazy=lazy)
    scanned = _scan(lazy)
    assert len(scanned) > 1000
    for k_star, first in scanned:
        assert cert.achievable[k_star], k_star
        assert first >= cert.defined_from[k_star], (k_star, first)
        if first == 1:
            assert k_star <= cert.largest_if_defined_at_1
    # the scan reaches the certificate's headline (it is tight, not merely safe)
    assert max(k for k, first in scanned if first == 1) == cert.largest_if_defined_at_1 == 4


def test_the_certificates_witnesses_give_their_minimiser():
    cert = certificate(**CELL, lazy=False)
    Ks = np.arange(1, 15, dtype=float)
    for K, (x, b) in cert.witness.items():
        # b = xi delta / (phi eps2): take phi = delta = eps2 = 1 and xi = b
        G = np.asarray(upper_bound(Ks, eta=ETA, L=x / ETA, xi=b, delta=1.0, phi=1.0, eps2=1.0, **CELL))
        assert np.isfinite(G[K - 1]) and G[K - 1] <= np.min(G) * (1 + 1e-9), K
        assert Ks[np.flatnonzero(np.isfinite(G))[0]] == cert.defined_from[K]


def test_where_tau_is_one_the_bound_is_one_over_K_eta_phi_whatever_the_other_constants():
    # t_sum = 14, alpha = 1, beta = 6: tau = 1 at K = 2
    for L, xi, delta, eps2 in itertools.product([0.1, 10, 300], [0.01, 5], [0.1, 3], [1e-4, 1]):
        assert upper_bound(2, alpha=1, beta=6, eta=0.01, L=L, xi=xi, delta=delta, phi=0.5, eps2=eps2, t_sum=14) == \
            pytest.approx(1 / (2 * 0.01 * 0.5))


def test_the_closed_form_needs_eta_L_far_from_small_for_the_experiments_K_star():
    for K in (7, 8, 9, 10):
        x = closed_form_eta_L(K, **CELL)
        assert 0.05 < x < 0.25
        assert math.isclose(100 / math.sqrt(2 * 6 / x + 6 + 36), K)
    assert math.isnan(closed_form_eta_L(20, **CELL))


def _brute_force_minimisers(beta: float, lazy: bool) -> set[int]:
    """Every K* of a bound defined at K = 1 over a dense scan of (eta L < 1, b, d): F = K (tau -
    b g(tau) - d), the bound's minimiser the argmax of F where F > 0."""
    from bladefl.theory.bound import tau_of
    from bladefl.theory.certificate import g

    Ks = np.arange(1, int(100 // (1 + beta)) + 1)
    taus = tau_of(Ks.astype(float), alpha=1.0, beta=beta, t_sum=100.0)
    bs = np.concatenate([[0.0], np.logspace(-8, 4, 300)])
    ds = np.concatenate([[0.0], np.logspace(-6, 3, 80)]) if lazy else np.zeros(1)
    found: set[int] = set()
    for x in np.logspace(-6, np.log10(0.999), 120):
        G = g(np.array([x]), taus)[0]
        F = Ks * (taus - bs[:, None, None] * G - ds[None, :, None])  # [b, d, K]
        best = Ks[np.argmax(np.where(F > 0, F, -np.inf), axis=2)]
        found |= set(best[F[..., 0] > 0].tolist())
    return found


@pytest.mark.parametrize("beta", [6.0, 10.0])
@pytest.mark.parametrize("lazy", [False, True])
def test_the_certificate_has_neither_false_positives_nor_false_negatives_against_brute_force(beta, lazy):
    """Its largest minimiser of a bound defined at K = 1 is the brute-force scan's (the lazy
    beta = 10 cell once said 4 where the truth is 3: an absolute slack and eta L up to 3)."""
    cert = certificate(alpha=1, beta=beta, t_sum=100, lazy=lazy)
    brute = _brute_force_minimisers(beta, lazy)
    assert cert.largest_if_defined_at_1 == max(brute)
    assert brute <= {K for K in cert.Ks if cert.defined_from.get(K) == 1}


def test_theorem_3_is_judged_and_witnessed_only_at_a_feasible_k_star():
    """A K* below one round is no allocation: the closed form is judged only where the bound's K* lies in
    1 <= K* < t_sum / (alpha + beta), and its witness, if any, has such a K*."""
    import re

    from bladefl.theory import theorem_scans

    base = {"alpha": 1.0, "beta": 6.0, "eta": 0.01, "t_sum": 100.0, "L": 4.0, "xi": 1.0, "delta": 0.5, "phi": 0.5,
            "eps2": 3.0}
    for rule in ("free", "proof"):
        check = theorem_scans.closed_form(base, eps2_rule=rule, settings=400)
        if check.witness:
            k = float(re.search(r"the bound.s K\* = ([0-9.e+-]+)", check.witness).group(1))
            assert 1 <= k < 100 / 7, check.witness
        assert "below one round" in check.skipped
