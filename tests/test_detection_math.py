"""The detectors' arithmetic on synthetic rows (the detectors on real uploads: test_detection)."""

from __future__ import annotations

import numpy as np
import torch

from bladefl.fl.detection import excess_kurtosis, gaussian_difference, pairwise_difference_kurtosis


def test_pairwise_kurtosis_from_products_equals_the_kurtosis_of_each_difference():
    g = torch.Generator().manual_seed(0)
    base = torch.randn(6, 5000, generator=g) ** 3 * 0.01  # heavy-tailed "trained" rows
    rows = torch.cat([base, base[:2] + 1e-3 * torch.randn(2, 5000, generator=g)])  # two noisy copies
    i, j = np.triu_indices(8, 1)
    direct = excess_kurtosis(rows[torch.as_tensor(i)] - rows[torch.as_tensor(j)])
    assert torch.allclose(pairwise_difference_kurtosis(rows)[i, j], direct, atol=1e-5, rtol=1e-6)
    found = gaussian_difference(rows)
    assert found.flags.tolist() == [False] * 6 + [True, True]  # only the copies, not their sources


def test_near_duplicate_flags_the_larger_of_a_near_exact_pair():
    from bladefl.fl.detection import near_duplicate

    g = torch.Generator().manual_seed(1)
    rows = torch.randn(6, 4000, generator=g)
    rows[5] = rows[2] * 1.0001 + 1e-6 * torch.randn(4000, generator=g)  # a copy, slightly larger
    found = near_duplicate(rows)
    assert found.flags.tolist() == [False] * 5 + [True]
    assert found.scores[5] > 100 and found.scores[2] == 0.0


def test_shared_passes_equal_the_definitions_computed_directly():
    """The detectors' statistics from :class:`Moments` (one set of passes over the updates for all three)
    against each definition computed on the rows themselves, in float64: the distances of near-exact
    copies too, where the products' cancellation is worst."""
    from bladefl.fl.detection import Moments

    g = torch.Generator().manual_seed(2)
    base = (torch.randn(5, 20_000, generator=g, dtype=torch.float64) ** 3) * 0.01 + 0.003
    rows = torch.cat([base, base[:2] + 1e-5 * torch.randn(2, 20_000, generator=g, dtype=torch.float64)])
    m = Moments(rows.unsqueeze(0))
    i, j = np.triu_indices(rows.shape[0], 1)
    direct = (rows[torch.as_tensor(i)] - rows[torch.as_tensor(j)]).norm(dim=1)
    assert torch.allclose(m.distances()[0, i, j], direct, rtol=1e-6, atol=0)
    centred = rows - rows.mean(dim=1, keepdim=True)
    kurtosis = (centred**4).mean(dim=1) / (centred**2).mean(dim=1) ** 2 - 3
    assert torch.allclose(m.kurtosis()[0], kurtosis, rtol=1e-12, atol=1e-12)
    assert torch.equal(m.norms[0], rows.norm(dim=1))


def test_many_runs_detected_together_equal_each_run_alone():
    from bladefl.fl.detection import detect, detect_many

    g = torch.Generator().manual_seed(3)
    uploads = torch.randn(3, 8, 3000, generator=g) ** 3 * 0.01
    uploads[:, 7] = uploads[:, 1] + 1e-4 * torch.randn(3, 3000, generator=g)  # a lazy copy in each run
    previous = torch.randn(3, 3000, generator=g) * 0.01
    together = detect_many(uploads, previous)
    for r in range(3):
        for a, b in zip(together[r], detect(uploads[r], previous[r]), strict=True):
            assert a.detector == b.detector and np.array_equal(a.flags, b.flags)
            np.testing.assert_allclose(a.scores, b.scores, rtol=1e-9)
        found = {d.detector: d for d in together[r]}
        assert found["gaussian_difference"].flags[[1, 7]].sum() == 1  # the pair caught, the larger flagged
