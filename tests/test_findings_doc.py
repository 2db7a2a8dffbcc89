"""docs/findings.md is what `bladefl findings` computes from the kept bundles, never typed: regenerated
and compared, and its tallies are the verdict tables' own."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from bladefl.cli import main
from bladefl.report.findings_doc import findings_markdown
from bladefl.report.pages import verdict_tally
from bladefl.report.regenerate import read_registry

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = read_registry(ROOT / "reference/bundles.yaml")  # the kept bundles the pages are computed from
BUNDLES = [ROOT / name for name in REGISTRY.bundles]


def test_the_findings_page_is_what_the_kept_bundles_say(monkeypatch):
    monkeypatch.chdir(ROOT)  # the bundles named as the registry names them, relative to the checkout
    text = findings_markdown(REGISTRY.bundles, REGISTRY.calibration or None)
    assert (ROOT / "docs" / "findings.md").read_text() == text, (
        "docs/findings.md is stale: run `make regenerate` (bladefl regenerate)")
    tables = {}
    for bundle in BUNDLES:
        files = sorted((bundle / "results" / "verdicts").glob("*.csv"), key=lambda p: (p.stem != "mnist", p.stem))
        tables[bundle] = table = pd.concat([pd.read_csv(p) for p in files], ignore_index=True)
        assert verdict_tally(table).replace("*", "\\*") in text
    # each other bundle beside the headline: the count of its counted verdicts that differ from the headline's
    from bladefl.report.front_page import counted

    head = counted(tables[BUNDLES[0]]).set_index(["statement", "dataset"]).verdict
    paired = [b for b in BUNDLES[1:] if "engine: calibrated" in (b / "config.yaml").read_text()]
    if paired:  # the headline's design under another engine: every claim under both readings, first
        assert text.index("## Under both readings") < text.index(f"## `{REGISTRY.bundles[0]}`")
    for bundle in BUNDLES[1:]:
        ours = counted(tables[bundle]).set_index(["statement", "dataset"]).verdict
        differ = int((ours != head.reindex(ours.index)).sum())
        assert f"**Beside `reference/{BUNDLES[0].name}`**: {differ} of {len(ours)} counted verdicts differ" in text


def test_a_bundle_whose_files_disagree_with_its_manifest_writes_nothing(tmp_path, capsys):
    import shutil

    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLES[1], bundle)
    verdicts = bundle / "results" / "verdicts" / "mnist.csv"
    verdicts.chmod(0o644)
    verdicts.write_text(verdicts.read_text().replace("refuted", "reproduced"))
    out = tmp_path / "findings.md"
    with pytest.raises(ValueError):
        findings_markdown([bundle])
    assert main(["findings", str(bundle), "--out", str(out)]) == 2 and not out.exists()
    assert "bundle" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["bundles: []\n", "bundles: [../etc]\n", "bundles: [reference/a, reference/a]\n",
                                  "bundles: [reference/a]\nextra: 1\n", "bundles: [reference/a/b]\n",
                                  "bundles: [reference/a]\ncalibration: reference/a\n"])
def test_the_bundle_registry_is_read_strictly(tmp_path, text):
    (tmp_path / "bundles.yaml").write_text(text)
    with pytest.raises(ValueError):
        read_registry(tmp_path / "bundles.yaml")
    (tmp_path / "bundles.yaml").write_text("bundles: [reference/a, reference/b]\ncalibration: reference/c\n")
    assert read_registry(tmp_path / "bundles.yaml").bundles == ("reference/a", "reference/b")
