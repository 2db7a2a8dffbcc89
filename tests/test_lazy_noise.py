"""The lazy clients' noise as the authors' deleted lazy script draws it (``lazy.noise: authors``,
:mod:`bladefl.fl.lazy`): copies of earlier lazy clients, noise added again after each copy, sigma2 as a
standard deviation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bladefl.experiments.runs.device_check import small_config, synthetic_data
from bladefl.fl.engine import run_k


class _Picks:
    """A generator whose ``integers`` gives the picks asked for (each below its bound)."""

    def __init__(self, picks):
        self.picks = np.asarray(picks)

    def integers(self, low, high):
        assert (self.picks >= low).all() and (self.picks < high).all()
        return self.picks


def _literal_authors(honest, picks):
    """The authors' lazy loop as written (main_FL&BL_lazy.py lines 201-239), on symbols: each position holds
    (its honest root, the set of noise draws (lazy j, step t) it carries)."""
    w = [(c, frozenset()) for c in range(honest)]
    for step, k in enumerate(picks):
        w.append(w[k])  # copy of an earlier position as it is now
        for j in range(step + 1):  # every lazy client copied so far gets one more draw
            root, held = w[honest + j]
            w[honest + j] = (root, held | {(j, step)})
    return w[honest:]


@pytest.mark.parametrize("seed", range(6))
def test_the_authors_lazy_copying_holds_the_draws_their_loop_adds(seed):
    from bladefl.fl.lazy import authors_copies

    honest, M = 3, 4
    rng = np.random.default_rng(seed)
    picks = [int(rng.integers(0, honest + j)) for j in range(M)]
    root, held = authors_copies(_Picks(picks), honest, M)
    row = {(j, t): j * M - j * (j - 1) // 2 + (t - j) for j in range(M) for t in range(j, M)}
    for j, (want_root, want) in enumerate(_literal_authors(honest, picks)):
        assert root[j] == want_root and sorted(held[j]) == sorted(row[d] for d in want)


def test_the_authors_noise_is_sigma2_as_a_standard_deviation_in_the_first_round():
    data = synthetic_data(N=4, n=48, d=30, classes=10, T=200, seed=0)
    runs = {s: run_k(small_config("cpu", lazy={"ratio": 0.5, "sigma2": s, "noise": "authors"}), data, 2)
            for s in (0.01, 0.02)}
    first = [r.rounds[0].noise_norm for r in runs.values()]
    assert math.isclose(first[1], 2 * first[0], rel_tol=1e-5)  # the same draws, twice the std
    per_parameter = run_k(small_config("cpu", lazy={"ratio": 0.5, "sigma2": 0.01}), data, 2).rounds[0].noise_norm
    assert first[0] < per_parameter / 5  # std 0.01 (drawn 1-3 times), against sqrt(0.01) = 0.1
