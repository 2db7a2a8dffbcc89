"""docs/summary.md is what `bladefl summary` computes from the kept bundles, never typed: regenerated and compared,
and its counts are the verdict tables' own."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from bladefl.report.summary_doc import summary_markdown

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = [Path("reference") / name for name in ("paper-10draws", "paper-20seeds", "default-2seeds")]


def test_the_summary_page_is_what_the_kept_bundles_say(monkeypatch):
    monkeypatch.chdir(ROOT)  # the bundles named as the docs name them, relative to the checkout
    text = summary_markdown(BUNDLES)
    assert (ROOT / "docs/summary.md").read_text() == text, (
        "docs/summary.md is stale: run `bladefl summary reference/paper-10draws reference/paper-20seeds "
        "reference/default-2seeds "
        "--out docs/summary.md`")
    head = pd.read_csv(ROOT / BUNDLES[0] / "results/verdicts/mnist.csv")
    heads = head[head.role.isin(["claim", "paper error"])].drop_duplicates("statement")
    said = re.search(r"`reference/paper-10draws`, MNIST: (\d+) statements judged \(([^)]*)\)", text)
    assert said and int(said.group(1)) == len(heads)
    assert f"{int((heads.verdict == 'reproduced').sum())} reproduced" in said.group(2)
    for section in ("## Scope", "## Methodology", "## Results", "## What was easy", "## What was difficult",
                    "## Cost", "## What the authors' public code does differently"):
        assert section in text


def test_a_bundle_whose_files_disagree_with_its_manifest_is_refused(tmp_path):
    bundle = tmp_path / "b"
    shutil.copytree(ROOT / BUNDLES[1], bundle)
    target = bundle / "results/verdicts/mnist.csv"
    target.chmod(0o644)
    target.write_text(target.read_text().replace("reproduced", "refuted", 1))
    with pytest.raises(ValueError, match="SHA-256 differs"):
        summary_markdown([bundle])
