"""The generated pages as one command (``bladefl regenerate``, ``make regenerate``): every kept bundle the
registry names (``reference/bundles.yaml``) re-judged by this code, then docs/findings.md and docs/summary.md
written from them. The tests regenerate both pages the same way and compare, so a change that moves a verdict
is one command and a diff to read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REGISTRY = Path("reference/bundles.yaml")


@dataclass(frozen=True)
class Registry:
    """The kept bundles, the headline first, and the kept calibration bundle ("" for none)."""

    bundles: tuple[str, ...]
    calibration: str = ""


def read_registry(path: str | Path = REGISTRY) -> Registry:
    """``reference/bundles.yaml`` read strictly: ``bundles`` a non-empty list of distinct folder names under
    reference/, ``calibration`` one more (or absent); ValueError naming the field otherwise."""
    from bladefl.core import strict_yaml

    doc = strict_yaml.read_file(path)
    if not isinstance(doc, dict) or set(doc) - {"bundles", "calibration"}:
        raise ValueError(f"{path}: a mapping of `bundles` (a list) and `calibration` is needed")
    bundles, calibration = doc.get("bundles"), doc.get("calibration", "")
    folders = [*(bundles if isinstance(bundles, list) else [None]), *([calibration] if calibration else [])]
    if not bundles or any(not isinstance(b, str) or not b.startswith("reference/") or "/." in b or
                          b.count("/") != 1 for b in folders) or len(set(folders)) != len(folders):
        raise ValueError(f"{path}: bundles and calibration must be distinct folders reference/<name> (got "
                         f"{str(folders)[:200]})")
    return Registry(tuple(bundles), str(calibration))


def regenerate(root: str | Path = ".", rejudge: bool = True, log: Callable[[str], Any] = print) -> list[Path]:
    """Every kept bundle of the registry re-judged (``rejudge``), then docs/findings.md and docs/summary.md
    written from them; the pages' paths."""
    import contextlib

    from bladefl.core import atomic
    from bladefl.experiments.bundles import kept_results
    from bladefl.report.findings_doc import findings_markdown
    from bladefl.report.summary_doc import summary_markdown

    with contextlib.chdir(root):
        registry = read_registry()
        from bladefl.experiments.runs import provenance

        version = provenance.code_version()  # before any bundle changes: the tree the verdicts come from
        if rejudge and version.endswith("-dirty"):
            raise ValueError(f"the checkout has uncommitted changes ({version}): commit first, so the rejudged "
                             "bundles record the code that derived them")
        for bundle in registry.bundles if rejudge else ():
            log(f"rejudging {bundle}")
            kept_results.rejudge(bundle, "config/paper_statements.yaml", "config/paper_values.yaml", log=log,
                                 code_version=version)
        calibration = registry.calibration or None
        pages = {Path("docs/findings.md"): findings_markdown(registry.bundles, calibration),
                 Path("docs/summary.md"): summary_markdown(registry.bundles, calibration)}
        for path, text in pages.items():
            atomic.write_text(path, text)
            log(f"wrote {path}")
    return [Path(root) / p for p in pages]


__all__ = ["REGISTRY", "Registry", "read_registry", "regenerate"]
