"""The corollary checks hold on the bound over a grid of parameters, and can fail."""

from __future__ import annotations

import itertools

import pytest

from bladefl.theory.claims import CLAIMS, bound_falls_with_eta, monotone, on_bound

VALUES = {"alpha": [1, 2, 5], "beta": [6, 8, 10, 12], "delta": [0.1, 0.3, 1.0], "N": [10, 15, 20, 25],
          "eta": [0.005, 0.01, 0.05], "lazy_ratio": [0.0, 0.1, 0.2, 0.3], "sigma2": [0.01, 0.1, 0.2, 0.3]}


def parameter_grid():
    for L, delta, eps2 in itertools.product([0.5, 2.0], [0.2, 0.5], [2.0, 5.0]):
        yield dict(alpha=1, beta=6, eta=0.01, L=L, xi=1.0, delta=delta, phi=0.5, eps2=eps2, t_sum=100, N=20,
                   theta=0.01, sigma2=0.01)


@pytest.mark.parametrize("claim", list(CLAIMS))
def test_corollaries_hold_on_the_bound(claim):
    param = CLAIMS[claim][0]
    for params in parameter_grid():
        v = on_bound(claim, params, VALUES[param])
        assert v.holds, (params, v)
        assert v.x == sorted(float(x) for x in VALUES[param]) and len(v.y) == len(v.x)


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
