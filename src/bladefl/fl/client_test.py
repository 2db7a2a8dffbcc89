"""The authors' client test subsets: the test set cut the way their public code cuts it, so that a run
records the accuracy and loss their tables report beside the full test set's.

``ElvisShaoYumeng/BLADE-FL``, ``main_FL&BL.py`` lines 92-93 and 248-253: the test set is split by the
same non-IID sampler as the training set (``sampling.py`` ``mnist_noniid``, lines 57-101, with
``degree_noniid = 1`` and ``num_items_test = 256``): client i gets the i-th of the 4-class combinations
of the 10 labels in a shuffled order (distinct combinations, drawn independently of its training
classes) and 256 / 4 = 64 samples of each of its classes, drawn without replacement across clients;
its reported accuracy and loss are the global model's on that subset, averaged over the clients.

Where the authors' sampler fails, this one goes on (never on MNIST or Fashion-MNIST at the paper's
settings; on small test sets): a class that runs out is drawn again from the whole class (a subset never
holds a sample twice, two clients may share one); clients beyond the combinations (210 for 4 of 10)
take the shuffled combinations again; a set with fewer labels than ``classes``, or a class smaller than
``per_class``, gives every client all its labels, or that class's size of each.
"""

from __future__ import annotations

import itertools

import numpy as np


def client_test_subsets(y_test: np.ndarray, N: int, classes: int, per_class: int,
                        rng: np.random.Generator) -> np.ndarray:
    """[N, c x m] indices into the test set: per client, m = ``per_class`` samples of each of
    c = ``classes`` labels (each capped as the module's text says)."""
    if classes < 1 or per_class < 1:
        raise ValueError(f"client test subsets need classes >= 1 and per_class >= 1 (got {classes}, {per_class})")
    labels = np.unique(y_test)
    pools = {c: np.flatnonzero(y_test == c) for c in labels.tolist()}
    classes, per_class = min(classes, len(labels)), min(per_class, *(len(p) for p in pools.values()))
    combos = list(itertools.combinations(labels.tolist(), classes))
    order = np.concatenate([rng.permutation(len(combos)) for _ in range(-(-N // len(combos)))])
    shuffled = {c: rng.permutation(pools[c]) for c in pools}
    cursor = dict.fromkeys(pools, 0)
    out = np.empty((N, classes * per_class), dtype=np.int64)
    for i in range(N):  # once per run, not in the hot path: N <= the combinations (210 for 4 of 10)
        for j, c in enumerate(combos[order[i]]):
            if cursor[c] + per_class > len(shuffled[c]):
                shuffled[c], cursor[c] = rng.permutation(pools[c]), 0
            out[i, j * per_class:(j + 1) * per_class] = shuffled[c][cursor[c]:cursor[c] + per_class]
            cursor[c] += per_class
    return out
