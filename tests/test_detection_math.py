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
