"""One table of a cell's allowed values (fl.ranges): the workflow's schema says the same, and the
run config and the grid refuse a value just outside each range, naming the field, and accept one
just inside."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from bladefl.experiments.plan.grid import Cell, cell_errors
from bladefl.fl.ranges import RANGES
from bladefl.fl.run_config import RunConfigError, from_dict

SCHEMA = Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml"


def schema_bounds(prop: dict) -> dict:
    """The numeric branch of a schema property (epsilon's oneOf has a number and the string inf)."""
    for branch in prop.get("oneOf", [prop]):
        if branch.get("type") in ("number", "integer"):
            return branch
    raise AssertionError(prop)


@pytest.mark.parametrize("r", RANGES, ids=[r.cell for r in RANGES])
def test_the_schema_says_what_the_table_says(r):
    prop = schema_bounds(yaml.safe_load(SCHEMA.read_text())["definitions"]["cell"]["properties"][r.cell])
    assert prop["type"] == ("integer" if r.integer else "number")
    assert prop.get("exclusiveMinimum" if r.low_open else "minimum") == r.low
    if math.isinf(r.high):
        assert "maximum" not in prop and "exclusiveMaximum" not in prop
    else:
        assert prop.get("exclusiveMaximum" if r.high_open else "maximum") == r.high


def outside(r):
    return r.low if r.low_open else (r.low - 1 if r.integer else r.low - 1e-9)


def inside(r):
    return r.low + (1 if r.integer else 1e-3) if r.low_open else r.low


def run_config(key, value):
    section, name = key.split(".")
    return from_dict({section: {name: value}, "partition": {"N": 20, "n": 64} if section != "partition" else
                      {"N": value, "n": 64}})


@pytest.mark.parametrize("r", RANGES, ids=[r.cell for r in RANGES])
def test_the_run_config_and_the_grid_refuse_just_outside_and_accept_just_inside(r):
    with pytest.raises(RunConfigError, match=r.run.replace(".", r"\.")):
        run_config(r.run, outside(r))
    run_config(r.run, inside(r))
    assert any(r.cell in e for e in cell_errors(Cell(**{r.cell: outside(r)}), 64, 100.0))
    assert cell_errors(Cell(**{r.cell: inside(r)}), 64, 100.0) == []
    if r.finite:
        with pytest.raises(RunConfigError, match=r.run.replace(".", r"\.")):
            run_config(r.run, math.inf)
