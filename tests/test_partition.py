"""Partitions: exact sizes, disjointness, determinism, per-scheme class structure, bounded work."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bladefl.data.partition import PartitionSpec, label_histogram, make_partition
from bladefl.data.schemes import dirichlet_counts


@pytest.fixture(scope="module")
def labels() -> np.ndarray:
    """Synthetic labels with MNIST-like, unequal class sizes (60 000 samples)."""
    counts = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    rng = np.random.default_rng(1)
    return rng.permutation(np.repeat(np.arange(10), counts))


SPECS = [
    PartitionSpec.of(scheme="shards", N=20, n=512, shards_per_client=2),
    PartitionSpec.of(scheme="classes", N=25, n=512, classes_per_client=4),
    PartitionSpec.of(scheme="dirichlet", N=25, n=512, dirichlet_alpha=0.3),
    PartitionSpec(scheme="iid", N=10, n=300),
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.key)
def test_sizes_disjoint_deterministic(labels, spec):
    idx = make_partition(labels, spec)
    assert idx.shape == (spec.N, spec.n) and idx.dtype == np.int64
    assert len(np.unique(idx)) == spec.N * spec.n  # disjoint clients, no repeats
    assert idx.min() >= 0 and idx.max() < len(labels)
    assert np.array_equal(idx, make_partition(labels, spec))
    other = dataclasses.replace(spec, seed=spec.seed + 1)
    assert not np.array_equal(idx, make_partition(labels, other))


def test_shards_give_each_client_at_most_s_plus_boundary_labels(labels):
    spec = SPECS[0]
    hist = label_histogram(labels, make_partition(labels, spec))
    # each shard is a run of the label-sorted data, so it spans at most 2 labels
    assert (np.count_nonzero(hist, axis=1) <= 2 * spec.value).all()
    assert np.median(np.count_nonzero(hist, axis=1)) <= spec.value + 1


def test_classes_give_c_distinct_classes_n_over_c_each(labels):
    spec = SPECS[1]
    hist = label_histogram(labels, make_partition(labels, spec))
    for row in hist:
        assert sorted(row[row > 0].tolist()) == [spec.n // spec.value] * spec.value


class CountingRng:
    """A generator that counts its multinomial draws (the passes of :func:`dirichlet_counts`)."""

    def __init__(self, seed: int) -> None:
        self.rng, self.passes = np.random.default_rng(seed), 0

    def multinomial(self, *args, **kwargs):
        self.passes += 1
        return self.rng.multinomial(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.rng, name)


@pytest.mark.parametrize("a", [1e-3, 0.01, 0.5, 1e6])
def test_dirichlet_counts_end_in_at_most_one_pass_per_class_and_client(labels, a):
    """The work is bounded whatever a is (counted, not timed: a busy machine cannot fail it): every
    pass finishes a client or fills a class. Tight classes (100 samples each for 25 clients of 40:
    every sample taken) force refills."""
    for available, n in ((np.bincount(labels, minlength=10), 512), (np.full(10, 100), 40)):
        rng = CountingRng(3)
        counts = dirichlet_counts(available, 25, n, a, rng)
        assert (counts.sum(axis=1) == n).all() and (counts.sum(axis=0) <= available).all()
        assert 25 <= rng.passes <= 25 + 10, rng.passes  # a pass per client, plus at most one per filled class


def test_dirichlet_small_alpha_is_skewed(labels):
    spec = PartitionSpec.of(scheme="dirichlet", N=25, n=512, dirichlet_alpha=0.01)
    idx = make_partition(labels, spec)
    hist = label_histogram(labels, idx)
    assert (hist.sum(axis=1) == 512).all()
    assert np.mean(hist.max(axis=1) / 512) > 0.8  # nearly one class per client


def test_dirichlet_large_alpha_is_near_uniform(labels):
    spec = PartitionSpec.of(scheme="dirichlet", N=20, n=1000, dirichlet_alpha=1000.0)
    hist = label_histogram(labels, make_partition(labels, spec))
    assert np.abs(hist / 1000 - 0.1).max() < 0.06


def test_key_roundtrip():
    for spec in SPECS:
        assert PartitionSpec.from_key(spec.key) == spec


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"scheme": "random"}, "partition.scheme must be one of"),
        ({"N": -1}, "partition.N must be an integer >= 1"),
        ({"n": 0}, "partition.n must be an integer >= 1"),
        ({"n": 511, "shards_per_client": 2}, "partition.n must be divisible by partition.shards_per_client"),
        ({"scheme": "classes", "n": 510, "classes_per_client": 4}, "divisible by partition.classes_per_client"),
        ({"scheme": "dirichlet", "dirichlet_alpha": -0.5}, "partition.dirichlet_alpha must be a number in"),
    ],
)
def test_bad_specs_name_the_field(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PartitionSpec.of(**kwargs)


def test_too_many_samples_is_rejected(labels):
    with pytest.raises(ValueError, match=r"N \* partition.n must be at most the training set size 60000"):
        make_partition(labels, PartitionSpec(N=200, n=512))


def test_a_key_with_a_dot_names_its_files_in_full(tmp_path):
    from bladefl.data.partition_store import PartitionPaths

    spec = PartitionSpec.of(scheme="dirichlet", N=4, n=16, dirichlet_alpha=0.5)
    paths = PartitionPaths.under(tmp_path, "mnist", spec)
    assert [p.name for p in (paths.indices, paths.manifest, paths.figure)] == [
        "dirichlet0.5_N4_n16_seed0.npy", "dirichlet0.5_N4_n16_seed0.json", "dirichlet0.5_N4_n16_seed0.png"]


def test_a_partition_file_is_checked_before_any_work(tmp_path, capsys):
    """Out-of-range, negative, repeated and shared indices, a text file and a float array are
    each refused with one line naming the file, and nothing is written."""
    from bladefl.cli import main

    good = np.arange(4 * 8).reshape(4, 8)
    cases = {
        "range": (np.where(good == 3, 60_000, good), "must lie in 0..59999"),
        "negative": (np.where(good == 3, -1, good), "must lie in 0..59999"),
        "repeated": (np.where(good == 1, 0, good), "hold a sample more than once"),
        "shared": (np.stack([good[0]] * 4), "more than one client"),
        "floats": (good.astype(float), "must be integers"),
        "shape": (good.reshape(8, 4), "partition.N=4 x partition.n=8"),
    }
    for name, (indices, message) in cases.items():
        path = tmp_path / f"{name}.npy"
        np.save(path, indices)
        out = tmp_path / f"out_{name}"
        code = main(["run", "--partition", str(path), "--out", str(out), "--set", "partition.N=4",
                     "--set", "partition.n=8", "--set", "device=cpu", "--quiet"])
        err = capsys.readouterr().err
        assert code == 2 and message in err and str(path) in err, (name, err)
        assert "Traceback" not in err and not out.exists()
    text = tmp_path / "text.npy"
    text.write_text("0 1 2 3\n")
    code = main(["run", "--partition", str(text), "--out", str(tmp_path / "o"), "--set", "partition.N=4",
                 "--set", "partition.n=8", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "not a partition index file" in err and "pickled" not in err


def test_a_parameters_error_names_its_field_and_range_whatever_its_bounds():
    """Each shape of range a scheme's parameter may have, and values of no kind at all, in one line each."""
    from bladefl.data.schemes import Parameter

    assert Parameter("a", int, 2, 1).error(0) == "partition.a must be an integer >= 1 (got 0)"
    assert Parameter("b", float, 0.5, 0, low_open=True).error(None) == "partition.b must be a number > 0 (got None)"
    assert Parameter("c", float, 0.5, 0, 1).error("x") == "partition.c must be a number in [0, 1] (got 'x')"
    assert Parameter("d", float, 0.5, 0, 1, low_open=True, advice="why").error(2) == (
        "partition.d must be a number in (0, 1] (got 2; why)")
    assert Parameter("e", float, 0.5, 0, 1).error(1) is None and Parameter("f", int, 2, 1).error(True) is not None
