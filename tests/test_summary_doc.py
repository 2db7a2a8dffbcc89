"""docs/summary.md is what `bladefl summary` computes from the kept bundles, never typed: regenerated and compared,
and its counts are the verdict tables' own."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from bladefl.report.regenerate import read_registry
from bladefl.report.summary_doc import summary_markdown

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = read_registry(ROOT / "reference/bundles.yaml")  # the kept bundles the pages are computed from
BUNDLES = [Path(name) for name in REGISTRY.bundles]


def test_the_summary_page_is_what_the_kept_bundles_say(monkeypatch):
    monkeypatch.chdir(ROOT)  # the bundles named as the registry names them, relative to the checkout
    text = summary_markdown(BUNDLES, REGISTRY.calibration or None)
    assert (ROOT / "docs/summary.md").read_text() == text, "docs/summary.md is stale: run `make regenerate`"
    head = pd.read_csv(ROOT / BUNDLES[0] / "results/verdicts/mnist.csv")
    heads = head[head.role.isin(["claim", "paper error"])].drop_duplicates("statement")
    said = re.search(r"`reference/paper-10draws`, MNIST: (\d+) statements judged \(([^)]*)\)", text)
    assert said and int(said.group(1)) == len(heads)
    assert f"{int((heads.verdict == 'reproduced').sum())} reproduced" in said.group(2)
    # the ML Reproducibility Challenge's layout, each count said with what it counts, results in words
    for section in ("## Scope of reproducibility", "## Methodology", "### Computational requirements", "## Results",
                    "**Conclusion.**", "## What was easy", "## What was difficult",
                    "## Communication with the original authors"):
        assert section in text
    assert "statements; " in text and "claims: " in text and "The report's front page counts the claims" in text
    assert re.search(r"per row \(mean, 95% percentile bootstrap over the independent units\): paper engine "
                     r"[\d.]+ \[[\d.]+, [\d.]+\] rounds", text)
    assert "`tab2-tau-rule`" not in text.split("## What was difficult")[1].split("an error of the paper")[0] or \
        "an ambiguity of the paper's own" in text  # the tau rule is never listed among the paper's errors


def test_a_bundle_whose_files_disagree_with_its_manifest_is_refused(tmp_path):
    bundle = tmp_path / "b"
    shutil.copytree(ROOT / BUNDLES[1], bundle)
    target = bundle / "results/verdicts/mnist.csv"
    target.chmod(0o644)
    target.write_text(target.read_text().replace("reproduced", "refuted", 1))
    with pytest.raises(ValueError, match="SHA-256 differs"):
        summary_markdown([bundle])
