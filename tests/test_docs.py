"""The README stays short and every link in the documentation resolves (files and headings)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "config" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]+\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in path.read_text().splitlines() if line.startswith("#")}


def test_the_readme_is_short_and_links_every_moved_section():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 250 and len(readme.split()) <= 1200  # detail belongs in docs/
    opening = " ".join(readme.split("\n\n")[1].split())  # what this is, in its first lines
    assert "BLADE-FL" in opening and "docs/findings.md" in opening and len(opening.split()) < 70
    for doc in DOCS[1:]:
        assert str(doc.relative_to(ROOT)) in readme, f"{doc.relative_to(ROOT)} is not linked from the README"


def test_every_link_in_the_documentation_resolves():
    broken = []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text()):
            if re.match(r"[a-z]+://", target):
                continue
            file_part, _, anchor = target.partition("#")
            path = (doc.parent / file_part).resolve() if file_part else doc
            if not path.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken
    assert slug("Many runs as one computation (`bladefl.fl.engine.run_group`)") == \
        "many-runs-as-one-computation-bladeflflenginerun_group"


LOG = ROOT / "docs" / "measurements.md"
GENERATED = {"findings.md", "summary.md"}  # written by `bladefl findings` / `bladefl summary`, stamped with their date
PAGES_WORDS = 20_000  # docs/ without the log and the generated pages: "at most about 20k words" (issue 70)
ISO_DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")


def test_the_pages_that_describe_stay_near_twenty_thousand_words():
    # the written pages; the generated ones (findings, summary) grow with the kept bundles, not with prose
    pages = [p for p in sorted((ROOT / "docs").glob("*.md")) if p != LOG and p.name not in GENERATED]
    words = {p.name: len(p.read_text().split()) for p in pages}
    assert sum(words.values()) <= PAGES_WORDS, (
        f"docs/ holds {sum(words.values())} words without the log (cap {PAGES_WORDS}); the largest: "
        + ", ".join(f"{n} {w}" for n, w in sorted(words.items(), key=lambda kv: -kv[1])[:3]))


def test_dated_measurements_live_in_the_log_alone_newest_first():
    stray = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page == LOG or page.name in GENERATED:
            continue
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if ISO_DATE.search(re.sub(r"measurements\.md#20\d\d-[01]\d-[0-3]\d", "", line)):
                stray.append(f"{page.name}:{number}")
    assert not stray, f"dated lines outside docs/measurements.md: {stray}"
    headings = [line[3:].strip() for line in LOG.read_text().splitlines() if line.startswith("## ")]
    assert headings and all(ISO_DATE.fullmatch(h) for h in headings), headings
    assert headings == sorted(headings, reverse=True), "the log's sections are not newest first"


def test_no_test_races_the_machine():
    """A timeout in a test guards against a hang, not against slowness: every wait on a subprocess, workflow or
    script is at least 30 minutes (conftest.HANG_S), unless its line says why it is not a workflow's."""
    short = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for value in re.findall(r"(?:timeout\s*(?::\s*\w+\s*)?=\s*|signal\.alarm\()(\d+)", line):
                if 0 < int(value) < 1800 and "not a workflow" not in line:
                    short.append(f"{path.name}:{number}: {line.strip()[:100]}")
    assert short == [], short


def test_the_out_of_sample_table_is_the_kept_bundles():
    """docs/calibration.md's out-of-sample table: each dataset's mean distance per row and its interval, as
    paper_distance computes them from the two kept 10-draw bundles (a bundle rejudged or replaced moves them)."""
    import pandas as pd
    import pytest

    from bladefl.data.datasets import get_spec
    from bladefl.experiments.tables import paper_distance

    text = (ROOT / "docs/calibration.md").read_text()
    for bundle, reading in (("calibrated-10draws", "calibrated"), ("paper-10draws", "paper engine")):
        folder = ROOT / "reference" / bundle / "results"
        if not folder.is_dir():
            pytest.skip(f"reference/{bundle} is not kept in this checkout")
        for dataset in ("mnist", "fashion_mnist"):
            found = paper_distance.distances(pd.read_csv(folder / "summary" / f"{dataset}.csv"),
                                             pd.read_csv(folder / "tables" / f"{dataset}_paper_comparison.csv"),
                                             dataset)
            rows = found[found.scope == "dataset"].set_index("measure")
            cells = [f"{rows.distance[m]:.2f} [{rows.low[m]:.2f}, {rows.high[m]:.2f}]" for m in ("K_star", "accuracy")]
            line = f"| {get_spec(dataset).title} | {reading} | {cells[0]} | {cells[1]} |"
            assert line in text, line
