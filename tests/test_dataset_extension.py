"""A dataset added as docs/extending.md says: one `DatasetSpec` in `bladefl.data.datasets.SPECS` (and its name in
the workflow schema's `datasets` enum). A copy of the library gets a throw-away IDX dataset (`tiny`, stand-in
files written here) by that one edit of `datasets.py`, and a fresh interpreter on the copy fetches it, partitions
it and trains a run on it through the CLI, and finds it in every list of names derived from the registry; the
schema guard names the enum entry it still needs, and passes with it."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml

from bladefl.data import idx
from bladefl.data.datasets import IDX_FILES, DatasetSpec
from conftest import HANG_S

REPO = Path(__file__).resolve().parents[1]
TRAIN, TEST = 1200, 200

SCRIPT = '''
import json, sys
from bladefl.cli import main
from bladefl.data import datasets
from bladefl.experiments.verdicts import statements
from bladefl.report import calibration_outcome, page_html
root, parts, out = sys.argv[1:4]
key = "shards2_N4_n64_seed0"
codes = [main(["fetch", "--dataset", "tiny", "--root", root, "--sources", "existing"]),
         main(["partition", "--dataset", "tiny", "--key", key, "--root", root, "--out", parts]),
         main(["run", "--out", out, "--partition", f"{parts}/tiny/{key}.npy", "--quiet", "--set", "dataset=tiny",
               "--set", f"data_dir={root}", "--set", "partition.N=4", "--set", "partition.n=64", "--set", "time.K=[1]",
               "--set", "model.hidden=8", "--set", "chain.difficulty_bits=4", "--set", "device=cpu"])]
print(json.dumps({"codes": codes, "names": list(datasets.NAMES), "statements": list(statements.DATASETS),
                  "titles": page_html.DATASET_TITLES,
                  "outcome": calibration_outcome.OUTCOME_SCHEMA["properties"]["dataset"]["enum"]}))
'''


def entry(pins: dict[str, str]) -> DatasetSpec:
    """The throw-away dataset's spec (its repr is the entry's source)."""
    return DatasetSpec(name="tiny", title="Tiny", torchvision_name="MNIST", folder="Tiny/raw",
                       train_files=IDX_FILES[:2], test_files=IDX_FILES[2:], mean=0.5, std=0.29, sha256=pins,
                       train_size=TRAIN, test_size=TEST)


def write_stand_in(raw: Path) -> dict[str, str]:
    """Four IDX files of the MNIST layout (every class equally often), and their SHA-256 pins."""
    rng = np.random.default_rng(0)
    arrays = {"train-images-idx3-ubyte": rng.integers(0, 256, (TRAIN, 28, 28), dtype=np.uint8),
              "train-labels-idx1-ubyte": np.arange(TRAIN, dtype=np.uint8) % 10,
              "t10k-images-idx3-ubyte": rng.integers(0, 256, (TEST, 28, 28), dtype=np.uint8),
              "t10k-labels-idx1-ubyte": np.arange(TEST, dtype=np.uint8) % 10}
    raw.mkdir(parents=True)
    pins = {}
    for name, array in arrays.items():
        data = idx.encode(array)
        (raw / name).write_bytes(data)
        pins[name] = hashlib.sha256(data).hexdigest()
    return pins


def test_a_new_dataset_is_its_registry_entry_fetch_partition_run_and_names_follow(tmp_path):
    from bladefl.experiments.plan import config_checks

    copy = tmp_path / "copy"
    shutil.copytree(REPO / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("config", "workflow"):
        shutil.copytree(REPO / folder, copy / folder)
    pins = write_stand_in(tmp_path / "raw" / "Tiny" / "raw")
    module = copy / "src/bladefl/data/datasets.py"
    # the entry before the registry, and its name last in the registry's tuple (whatever it holds by then)
    text, found = re.subn(r"^(SPECS: dict\[str, DatasetSpec\] = \{s\.name: s for s in \()([^)]*)\)\}",
                          lambda m: f"TINY = {entry(pins)!r}\n\n{m[1]}{m[2]}, TINY)}}",
                          module.read_text(), flags=re.M)
    assert found == 1
    module.write_text(text)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "raw"), str(tmp_path / "parts"),
                           str(tmp_path / "run")], cwd=copy, capture_output=True, text=True, timeout=HANG_S,
                          env={**os.environ, "PYTHONPATH": str(copy / "src"), "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["codes"] == [0, 0, 0], done.stderr[-3000:]
    assert found["names"][-1] == "tiny" and found["statements"] == found["names"] == found["outcome"]
    assert found["titles"]["tiny"] == "Tiny"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["config"]["dataset"] == "tiny" and summary["per_K"][0]["status"] == "ok"
    assert summary["provenance"]["data_sha256"] == pins
    # the workflow schema's enum is the one other line: the guard names it, and the copy passes with it
    schema_path = copy / "workflow/schemas/config.schema.yaml"
    config = {**yaml.safe_load((REPO / "config/smoke.yaml").read_text()), "datasets": ["tiny"]}
    assert any(line.startswith("datasets.0:") for line in config_checks.schema_errors(config, schema_path))
    schema = yaml.safe_load(schema_path.read_text())
    schema["properties"]["datasets"]["items"]["enum"].append("tiny")
    schema_path.write_text(yaml.safe_dump(schema))
    assert config_checks.schema_errors(config, schema_path) == []
