"""A partition scheme added as docs/extending.md says: one entry in `bladefl.data.schemes.SCHEME_REGISTRY`
(and, in the workflow schema, its name and its parameter's property). A throw-away scheme with a parameter no
scheme had (`throwaway`, owning `throwaway_weight`) is registered for the test alone; everything else must
follow from the entry: the key and its parsing, the config fields, their checks and the run's record, the
calibration's axis, the schema guard, a tiny grid's plan and one of its runs on real data, and the report's
wording."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from bladefl.data import schemes

REPO = Path(__file__).resolve().parents[1]
WEIGHT = schemes.Parameter("throwaway_weight", float, 0.8, 0, 1, low_open=True)


def throwaway(labels: np.ndarray, N: int, n: int, rng: np.random.Generator, weight: float) -> np.ndarray:
    """Dirichlet proportions whose concentration is the parameter (a throw-away scheme, not a model of one)."""
    return schemes.dirichlet(labels, N, n, rng, a=weight)


@pytest.fixture
def registered(monkeypatch):
    """The throw-away scheme as its one registry entry, for this test alone."""
    entry = schemes.Scheme("throwaway", WEIGHT, throwaway, "skewed by {:g}")
    monkeypatch.setitem(schemes.SCHEME_REGISTRY, "throwaway", entry)


def schema_with_the_entry(tmp_path: Path) -> Path:
    """The workflow schema with the scheme's enum entry and its parameter's property, the two lines
    docs/extending.md names there."""
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    part = schema["properties"]["partition"]["properties"]
    part["scheme"]["enum"].append("throwaway")
    part["throwaway_weight"] = {"type": "number", "exclusiveMinimum": 0, "maximum": 1}
    path = tmp_path / "config.schema.yaml"
    path.write_text(yaml.safe_dump(schema))
    return path


def test_a_new_scheme_is_its_registry_entry_keys_checks_and_records_follow(registered):
    from bladefl.data.partition import PartitionSpec, config_fields, partition_errors
    from bladefl.experiments.calibration import space
    from bladefl.fl.run_config import from_dict

    spec = PartitionSpec.of(scheme="throwaway", N=4, n=64, throwaway_weight=0.3)
    assert spec.key == "throwaway0.3_N4_n64_seed0" and PartitionSpec.from_key(spec.key) == spec
    assert PartitionSpec(scheme="throwaway").value == 0.8 and "throwaway_weight" in config_fields()
    assert partition_errors({"scheme": "throwaway", "throwaway_weight": 2}) == [
        "partition.throwaway_weight must be a number in (0, 1] (got 2)"]
    cfg = from_dict({"partition": {"scheme": "throwaway", "N": 4, "n": 64, "throwaway_weight": 0.3}})
    assert cfg.partition == spec and cfg.to_dict()["partition"]["throwaway_weight"] == 0.3
    assert from_dict(cfg.to_dict()) == cfg
    # a run recorded before the scheme existed records no `throwaway_weight`, and still reads as the same config
    default = from_dict({})
    assert "throwaway_weight" not in default.to_dict()["partition"] and from_dict(default.to_dict()) == default
    at_default = from_dict({"partition": {"scheme": "throwaway"}})
    assert "throwaway_weight" not in at_default.to_dict()["partition"]
    assert space.value_error("partition", "throwaway0.3") is None
    assert space.overrides("partition", "throwaway0.3") == {"partition.scheme": "throwaway",
                                                              "partition.throwaway_weight": 0.3}


def test_the_schema_guard_names_the_entry_a_new_scheme_needs_and_passes_with_it(registered, tmp_path):
    from bladefl.data import partition
    from bladefl.experiments.plan import config_checks

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    given = schema["properties"]["partition"]["properties"]
    assert set(partition.config_fields()) - {"N"} - set(given) == {"throwaway_weight"}  # the registry test fails on it
    assert "throwaway" not in given["scheme"]["enum"]
    config = {**yaml.safe_load((REPO / "config/smoke.yaml").read_text()),
              "partition": {"n": 64, "seeds": [0], "scheme": "throwaway", "throwaway_weight": 0.3}}
    assert any("throwaway_weight" in line for line in config_checks.schema_errors(config, config_checks.SCHEMA))
    assert config_checks.schema_errors(config, schema_with_the_entry(tmp_path)) == []


def test_a_tiny_grid_plans_runs_and_words_the_new_scheme(registered, tmp_path, data_root):
    """The smoke grid's config with the scheme: its checks pass, its partitions are keyed by it, one of its
    runs is drawn and trained on MNIST through the CLI, recording the parameter, and the report's reading
    words it."""
    from bladefl.cli import main
    from bladefl.experiments.plan import config_checks
    from bladefl.experiments.plan import workflow_config as wc
    from bladefl.experiments.plan.grid import Cell
    from bladefl.report.bundle_design import reading

    partition = {"n": 64, "seeds": [0], "scheme": "throwaway", "throwaway_weight": 0.3}
    config = config_checks.with_defaults({**yaml.safe_load((REPO / "config/smoke.yaml").read_text()),
                                          "partition": partition})
    config_checks.check(config)
    group = wc.partition_jobs(config)[0]
    key = wc.partition_spec(config, group.N, group.seeds[0]).key
    assert key == f"throwaway0.3_N{group.N}_n64_seed0"
    parts, out = tmp_path / "partitions", tmp_path / "run"
    assert main(["partition", "--dataset", "mnist", "--key", key, "--root", str(data_root), "--out", str(parts)]) == 0
    manifest = json.loads((parts / "mnist" / f"{key}.json").read_text())
    assert manifest["spec"]["scheme"] == "throwaway" and manifest["spec"]["throwaway_weight"] == 0.3
    sets = wc.run_sets(config, Cell.from_key(group.cells[0]), "mnist", group.seeds[0])
    assert "partition.scheme=throwaway" in sets and "partition.throwaway_weight=0.3" in sets
    assert main(["run", "--out", str(out), "--partition", str(parts / "mnist" / f"{key}.npy"), "--quiet",
                 "--set", f"data_dir={data_root}", "--set", "time.K=[1]", "--set", "model.hidden=8",
                 "--set", "chain.difficulty_bits=4", "--set", "device=cpu",
                 *[x for s in sets if not s.startswith("measure.") for x in ("--set", s)]]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["partition"]["throwaway_weight"] == 0.3 and summary["per_K"][0]["status"] == "ok"
    engine = {"partition": {"scheme": "throwaway", "throwaway_weight": 0.3}, "model": {"hidden": 8}}
    assert "skewed by 0.3" in reading(engine, "throw-away", ["mnist"])
