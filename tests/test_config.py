import math
import os
from pathlib import Path

import pytest

from bladefl.fl.run_config import RunConfigError, from_dict, load_config

ENGINES = Path(__file__).resolve().parents[1] / "config" / "engines"


def test_profiles_load_and_differ():
    paper = load_config(ENGINES / "paper.yaml")
    authors = load_config(ENGINES / "authors-code.yaml")
    assert (paper.model.hidden, paper.model.activation, paper.partition.scheme) == (256, "relu", "shards")
    assert (authors.model.hidden, authors.model.activation, authors.partition.scheme) == (32, "none", "classes")
    assert authors.partition.value == 4 and authors.train.batch_size == 64
    assert math.isinf(paper.privacy.epsilon) and paper.time.K == tuple(range(1, 10))


def test_overrides():
    cfg = load_config(ENGINES / "paper.yaml", ["time.beta=6", "dataset=fashion_mnist", "time.K=[2, 3]",
                                                "privacy.epsilon=50"])
    assert cfg.time.beta == 6 and cfg.dataset == "fashion_mnist" and cfg.time.K == (2, 3)
    assert cfg.privacy.epsilon == 50


@pytest.mark.parametrize(
    "data, message",
    [
        ({"dataset": "svhn"}, "dataset must be one of"),
        ({"train": {"eta": -1}}, "train.eta must be a finite number in (0, 1]"),
        ({"train": {"iteration": "sgd"}}, "train.iteration must be one of ['full_batch', 'epoch', 'steps']"),
        ({"time": {"K": [0, 1]}}, "time.K must be a non-empty list of distinct integers >= 1"),
        ({"lazy": {"ratio": 1.0}}, "lazy.ratio must be a finite number in [0, 1)"),
        ({"chain": {"block_time": "poisson"}}, "chain.block_time must be one of"),
        ({"chain": {"difficulty_bits": 64}}, "chain.difficulty_bits must be an integer in 0..32"),
        ({"privacy": {"delta": 2}}, "privacy.delta must be a number in (0, 1)"),
        ({"partition": {"N": 200}}, "partition.N * partition.n must be at most"),
        ({"model": {"widht": 3}}, "model: unknown field(s) ['widht']"),
        ({"device": "tpu"}, "device must be one of"),
        # values past which every loss is NaN (the float32 model overflows), refused instead of run as "ok"
        ({"lazy": {"sigma2": 1e300}}, "lazy.sigma2 must be a finite number in [0, 1e+06]"),
        ({"privacy": {"epsilon": 1e-300}}, "privacy.epsilon must be a number >= 0.001 (inf allowed)"),
        ({"privacy": {"clip": 1e300}}, "privacy.clip must be a number in (0, 1e6]"),
        # other scripts' digits are no number; an integer field takes no scientific notation (1e23 is inexact)
        ({"time": {"beta": "١"}}, "time.beta must be a finite number > 0 (got '١')"),
        ({"seed": "1e23"}, "seed must be an integer >= 0 (got '1e23')"),
    ],
)
def test_bad_fields_are_named(data, message):
    with pytest.raises(RunConfigError) as info:
        from_dict(data)
    assert message in str(info.value)


@pytest.mark.parametrize("override, field", [
    ("train.eta=inf", "train.eta"), ("privacy.clip=inf", "privacy.clip"), ("time.t_sum=inf", "time.t_sum"),
    ("time.alpha=.inf", "time.alpha"), ("time.beta=.nan", "time.beta"), ("lazy.sigma2=.nan", "lazy.sigma2"),
    ("time.K=[2,2]", "time.K"), ("privacy.epsilon=.nan", "privacy.epsilon"),
])
def test_values_the_paper_needs_finite_or_distinct_are_refused_with_the_field_named(override, field):
    with pytest.raises(RunConfigError, match=field.replace(".", r"\.")):
        load_config(None, [override])


def test_numbers_in_scientific_notation_are_numbers_where_the_field_is_a_number():
    cfg = load_config(None, ["train.eta=1e-2", "time.t_sum=1E2", "lazy.sigma2=5e-3", "privacy.epsilon=inf"])
    assert cfg.train.eta == 0.01 and cfg.time.t_sum == 100.0 and cfg.lazy.sigma2 == 0.005
    assert cfg.privacy.epsilon == float("inf")
    assert load_config(None, ["data_dir=1e-2"]).data_dir == "1e-2"  # a string field stays a string


def test_a_key_given_twice_is_refused_naming_it_and_its_lines(tmp_path):
    """Plain YAML keeps the last of two equal keys silently; run and workflow configs refuse it."""
    from bladefl.experiments.plan.config_files import config_file_errors
    from bladefl.fl.run_config import load_config

    path = tmp_path / "dup.yaml"
    path.write_text("seed: 0\ntrain:\n  eta: 0.01\n  eta: 0.1\n")
    with pytest.raises(RunConfigError, match=r"dup.yaml: key 'eta' given twice \(lines 3 and 4\)"):
        load_config(path)
    assert config_file_errors([path]) == [f"{path}: key 'eta' given twice (lines 3 and 4)"]
    path.write_text("seed: 3\npartition:\n  seed: 1\n")  # one key in two mappings is no repeat
    assert config_file_errors([path]) == []
    assert (load_config(path).seed, load_config(path).partition.seed) == (3, 1)


def test_a_file_is_read_again_once_it_changes_and_not_before(tmp_path):
    path = tmp_path / "engine.yaml"
    path.write_text("time: {beta: 6}\n")
    first = load_config(path)
    assert load_config(path) is first  # unchanged: the config read before (frozen, shared)
    assert load_config(path, ["time.beta=8"]).time.beta == 8 and load_config(path).time.beta == 6
    path.write_text("time: {beta: 12}\n")  # another size
    assert load_config(path).time.beta == 12
    stat = path.stat()
    path.write_text("time: {beta: 14}\n")  # the same size: the modification time tells
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert load_config(path).time.beta == 14
    path.write_text("time: [")
    with pytest.raises(RunConfigError, match="not YAML"):
        load_config(path)
    path.unlink()
    with pytest.raises(RunConfigError, match="cannot read it"):
        load_config(path)


def test_an_error_names_the_file_as_given(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("bad.yaml").write_text("time: [")
    with pytest.raises(RunConfigError, match=r"^--config bad\.yaml: not YAML"):
        load_config("bad.yaml")
