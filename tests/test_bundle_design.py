"""What a front page says its verdicts rest on, computed from the files behind it: the design of
the runs (seeds, draws, units), the engine's reading, the three code versions, the headline bundle."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import yaml

from bladefl.experiments.runs.provenance import code_version
from bladefl.report import bundle_design as bd
from bladefl.report import front_page as fp

ROOT = Path(__file__).resolve().parents[1]


def test_the_design_names_seeds_draws_and_units_from_the_config_or_the_runs():
    paired = {"seeds": list(range(10)), "partition": {"n": 512, "seeds": list(range(10))}}
    assert bd.design(paired) == "10 run seeds, each on its own partition draw: 10 independent units"
    crossed = {"seeds": list(range(20)), "partition": {"n": 512, "seeds": [0, 1, 2, 3, 4]}}
    assert bd.design(crossed) == "20 run seeds on 5 partition draws (4 seeds each): 5 independent units, the draws"
    one = {"seeds": [0, 1, 2], "partition": {"n": 512, "seed": 7}}
    assert bd.design(one).startswith("3 run seeds on 1 partition draw: the runs are the units")
    runs = pd.DataFrame({"seed": [0, 1, 2, 3, 0], "partition": [0, 1, 0, 1, 0], "status": ["ok"] * 4 + ["diverged"]})
    assert bd.design_of_runs({"mnist": runs}) == ("4 run seeds on 2 partition draws (2 seeds each): 2 independent "
                                                   "units, the draws")


def test_the_reading_is_the_engine_files_settings():
    line = bd.engine_reading("paper")
    engine = yaml.safe_load((ROOT / "config/engines/paper.yaml").read_text())
    assert f"784-{engine['model']['hidden']}-10" in line and f"batch {engine['train']['batch_size']}" in line
    assert "shards, 2 per client" in line and "standardised pixels" in line
    assert "no activation" in bd.engine_reading("authors-code") and "4 classes per client" in bd.engine_reading(
        "authors-code")
    raw = bd.reading({"partition": {"scheme": "iid", "n": 64}, "model": {"hidden": 8, "activation": "relu"},
                      "train": {"iteration": "full_batch"}, "normalize": False}, "x")
    assert "IID, 64 samples" in raw and "non-IID" not in raw and "full batch" in raw and "raw pixels" in raw


def test_the_verdicts_code_is_the_last_rejudge_else_the_keeper_else_not_recorded(tmp_path):
    def bundle(about: dict) -> Path:
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        (folder / "MANIFEST.json").write_text(json.dumps({"about": about, "files": {}}))
        (folder / "config.yaml").write_text("seeds: [0]\n")
        return folder

    rejudged = bundle({"kept_by": "0.1.0+a", "rejudged": [{"code_version": "0.1.0+b"}, {"code_version": "0.1.0+c"}]})
    assert bd.verdicts_code(rejudged) == "0.1.0+c"
    assert bd.verdicts_code(bundle({"kept_by": "0.1.0+a"})) == "0.1.0+a"
    assert bd.verdicts_code(bundle({})) == "not recorded"
    assert bd.verdicts_code(None) == code_version()  # a workflow's own results: this code derives them
    assert bd.bundle_of(["config/config.yaml", str(rejudged / "config.yaml")]) == rejudged
    assert bd.bundle_of(["config/config.yaml"]) is None
    line = bd.code_line(["0.1.0+r", "0.1.0+r", "0.1.0+q"], "0.1.0+v", "0.1.0+p")
    assert line == "code: runs 0.1.0+q, 0.1.0+r · verdicts 0.1.0+v · this page 0.1.0+p"


def test_the_headline_bundle_is_makes_default_and_the_banner_states_its_design():
    default = re.search(r"^REF \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert default and default.group(1) == bd.HEADLINE_BUNDLE
    config = yaml.safe_load((ROOT / bd.HEADLINE_BUNDLE / "config.yaml").read_text())
    two = pd.DataFrame({"basis": ["experiment"], "units": [2], "replication": ["2 draws"]})
    banner = fp.banner(two)
    assert bd.HEADLINE_BUNDLE in banner and bd.design(config) in banner and "config/paper.yaml" not in banner
    basis = fp.basis_line("2 run seeds", bd.engine_reading("paper"), "../docs/sensitivity.md")
    assert "<b>Design</b>: 2 run seeds." in basis and "784-256-10" in basis and "sensitivity.md" in basis
