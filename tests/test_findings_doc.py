"""docs/findings.md is what `bladefl findings` computes from the kept bundles, never typed: regenerated
and compared, and its tallies are the verdict tables' own."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from bladefl.cli import main
from bladefl.report.findings_doc import findings_markdown
from bladefl.report.pages import verdict_tally

ROOT = Path(__file__).resolve().parents[1]
BUNDLES = [ROOT / "reference" / name for name in ("paper-10draws", "paper-20seeds", "default-2seeds")]


def test_the_findings_page_is_what_the_kept_bundles_say():
    relative = [b.relative_to(ROOT) for b in BUNDLES]
    import os

    here = os.getcwd()
    os.chdir(ROOT)
    try:
        text = findings_markdown(relative)
    finally:
        os.chdir(here)
    assert (ROOT / "docs" / "findings.md").read_text() == text, (
        "docs/findings.md is stale: run `bladefl findings reference/paper-10draws reference/paper-20seeds "
        "reference/default-2seeds "
        "--out docs/findings.md`")
    tables = {}
    for bundle in BUNDLES:
        files = sorted((bundle / "results" / "verdicts").glob("*.csv"), key=lambda p: (p.stem != "mnist", p.stem))
        tables[bundle] = table = pd.concat([pd.read_csv(p) for p in files], ignore_index=True)
        assert verdict_tally(table).replace("*", "\\*") in text
    # each other bundle beside the headline: the count of its counted verdicts that differ from the headline's
    from bladefl.report.front_page import counted

    head = counted(tables[BUNDLES[0]]).set_index(["statement", "dataset"]).verdict
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
