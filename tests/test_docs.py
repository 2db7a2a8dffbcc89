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
    assert len(readme.splitlines()) < 250
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
