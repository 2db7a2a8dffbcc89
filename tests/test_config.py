import math
from pathlib import Path

import pytest

from bladefl.fl.run_config import ConfigError, from_dict, load_config

PROFILES = Path(__file__).resolve().parents[1] / "config" / "profiles"


def test_profiles_load_and_differ():
    paper = load_config(PROFILES / "paper.yaml")
    authors = load_config(PROFILES / "authors-code.yaml")
    assert (paper.model.hidden, paper.model.activation, paper.partition.scheme) == (256, "relu", "shards")
    assert (authors.model.hidden, authors.model.activation, authors.partition.scheme) == (32, "none", "classes")
    assert authors.partition.classes_per_client == 4 and authors.train.batch_size == 64
    assert math.isinf(paper.privacy.epsilon) and paper.time.K == tuple(range(1, 10))


def test_overrides():
    cfg = load_config(PROFILES / "paper.yaml", ["time.beta=6", "dataset=fashion_mnist", "time.K=[2, 3]",
                                                "privacy.epsilon=50"])
    assert cfg.time.beta == 6 and cfg.dataset == "fashion_mnist" and cfg.time.K == (2, 3)
    assert cfg.privacy.epsilon == 50


@pytest.mark.parametrize(
    "data, message",
    [
        ({"dataset": "svhn"}, "dataset must be one of"),
        ({"train": {"eta": -1}}, "train.eta must be a number > 0"),
        ({"train": {"iteration": "sgd"}}, "train.iteration must be one of ['full_batch', 'epoch']"),
        ({"time": {"K": [0, 1]}}, "time.K must be a non-empty list of integers >= 1"),
        ({"lazy": {"ratio": 1.0}}, "lazy.ratio must be a number in [0, 1)"),
        ({"chain": {"block_time": "poisson"}}, "chain.block_time must be one of"),
        ({"chain": {"difficulty_bits": 64}}, "chain.difficulty_bits must be an integer in 0..32"),
        ({"privacy": {"delta": 2}}, "privacy.delta must be a number in (0, 1)"),
        ({"partition": {"N": 200}}, "partition.N * partition.n must be at most"),
        ({"model": {"widht": 3}}, "model.: unknown field(s) ['widht']"),
        ({"device": "tpu"}, "device must be one of"),
    ],
)
def test_bad_fields_are_named(data, message):
    with pytest.raises(ConfigError) as info:
        from_dict(data)
    assert message in str(info.value)
