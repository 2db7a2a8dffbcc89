"""config/README.md names every key of the workflow's config schema (and no key the schema lacks)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def test_the_config_readme_names_every_schema_key():
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    readme = (REPO / "config/README.md").read_text()
    rows = [line for line in readme.splitlines() if line.startswith("| `")]
    named = {key for row in rows for key in re.findall(r"`([a-z_]+)`", row.split("|")[1])}
    assert set(schema["properties"]) - named == set(), "keys of the schema the README leaves out"
    assert named - set(schema["properties"]) == set(), "keys the README names that the schema lacks"
