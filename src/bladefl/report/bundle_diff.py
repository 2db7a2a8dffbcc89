"""What changed between two bundles (kept ``reference/<name>`` folders, or two results folders): per
statement and dataset, the verdict; per row of the paper's Tables II-VII, K*, the maximal accuracy and
their distances to the paper. Rows that changed come first. Both bundles' files are read as hostile
(bounded CSVs with the columns named; :mod:`bladefl.report.inputs`)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from bladefl.report.bundle_read import check_verdicts
from bladefl.report.bundle_read import md as _md
from bladefl.report.inputs import read_csv

VERDICT_KEYS = ("dataset", "statement", "claim")  # a statement holds one or more claims
ROW_KEYS = ("dataset", "table", "value")
COMPARED = ("K_star", "max_accuracy")


def _results(bundle: Path) -> Path:
    """A bundle's results folder: ``<bundle>/results`` for a kept bundle (held to its manifest first, as
    ``rejudge`` holds it: a file changed, added or linked is refused), the folder itself otherwise."""
    if (bundle / "MANIFEST.json").exists() or (bundle / "MANIFEST.json").is_symlink():
        from bladefl.experiments.bundles import kept_results

        found = kept_results.problems(bundle)
        if found:
            raise ValueError(f"{bundle}: {found[0]}")
    return bundle / "results" if (bundle / "results" / "verdicts").is_dir() else bundle


def _datasets(results: Path) -> list[str]:
    folder = results / "verdicts"
    if not folder.is_dir() or folder.is_symlink():
        raise ValueError(f"{results}: no verdicts/ folder (not a kept bundle or a results folder)")
    odd = [p for p in folder.glob("*.csv") if p.is_symlink() or not p.is_file()]
    if odd:  # never followed, never dropped without a word
        raise ValueError(f"{odd[0]}: a link, FIFO or folder, not a verdict table")
    return sorted(p.stem for p in folder.glob("*.csv"))


def _numbers(frame: pd.DataFrame, columns: list[str], path: Path) -> pd.DataFrame:
    """``columns`` of a table read from elsewhere as numbers, or ValueError naming the file and column."""
    for column in columns:
        try:
            frame[column] = pd.to_numeric(frame[column], errors="raise").astype(float)
        except (ValueError, TypeError):
            raise ValueError(f"{path}: column {column} holds something other than numbers") from None
    return frame


def verdicts(bundle: Path) -> pd.DataFrame:
    """Every (dataset, statement, claim)'s verdict in ``bundle``."""
    results = _results(bundle)
    frames = [check_verdicts(read_csv(path, ["statement", "claim", "verdict"]).assign(dataset=d), path)
              for d in _datasets(results) for path in [results / "verdicts" / f"{d}.csv"]]
    if not frames:
        raise ValueError(f"{bundle}: its verdicts/ folder holds no verdict table")
    return pd.concat(frames, ignore_index=True)[[*VERDICT_KEYS, "verdict"]]


def comparisons(bundle: Path) -> pd.DataFrame:
    """Every row of the paper's tables in ``bundle`` (where it has the comparison tables), with distances."""
    results = _results(bundle)
    frames = []
    for d in _datasets(results):
        path = results / "tables" / f"{d}_paper_comparison.csv"
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise ValueError(f"{path}: a link, FIFO or folder, not a comparison table")
        if path.is_file():
            numbers = ["value", "K_star", "paper_K_star", "max_accuracy", "paper_max_accuracy"]
            frame = _numbers(read_csv(path, ["table", *numbers]), numbers, path)
            frames.append(frame.assign(dataset=d))
    if not frames:
        return pd.DataFrame(columns=[*ROW_KEYS, *COMPARED, "K_star_distance", "accuracy_distance"])
    out = pd.concat(frames, ignore_index=True)
    out = out.assign(K_star_distance=(out.K_star - out.paper_K_star).abs(),
                     accuracy_distance=(out.max_accuracy - out.paper_max_accuracy).abs())
    return out[[*ROW_KEYS, *COMPARED, "K_star_distance", "accuracy_distance"]]


def code_versions(bundle: Path) -> tuple[list[str], str]:
    """The code versions of a bundle's runs (from its provenance tables) and of its verdicts (the last
    rejudge's, else the code that kept it; a results folder: "as computed there")."""
    results = _results(bundle)
    runs: set[str] = set()
    for path in sorted((results / "provenance").glob("*.csv")) if (results / "provenance").is_dir() else []:
        if path.is_symlink() or not path.is_file():
            raise ValueError(f"{path}: a link, FIFO or folder, not a provenance table")
        runs |= set(read_csv(path, ["code_version"]).code_version.astype(str))
    verdicts = "as computed there"
    manifest = bundle / "MANIFEST.json"
    if manifest.is_file():
        from bladefl.experiments.bundles import kept_results

        about = kept_results.read_manifest(bundle).get("about", {})
        rejudged = about.get("rejudged") if isinstance(about, dict) else None
        last = rejudged[-1] if isinstance(rejudged, list) and rejudged and isinstance(rejudged[-1], dict) else {}
        found = last.get("code_version")
        verdicts = str(found)[:100] if isinstance(found, str) and found else "the code that kept it"
    return sorted(runs), verdicts


def _changed(a: object, b: object, tolerance: float = 1e-9) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) != math.isnan(b)
        return abs(a - b) > tolerance * max(1.0, abs(a), abs(b))
    return a != b


def diff(a: Path, b: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(verdicts side by side, table rows side by side), each with a ``changed`` column, changed rows first;
    a row one bundle lacks is changed and shows NaN on that side."""
    va, vb = verdicts(a), verdicts(b)
    v = va.merge(vb, on=list(VERDICT_KEYS), how="outer", suffixes=("_a", "_b"))
    v["changed"] = [_changed(x, y) for x, y in zip(v.verdict_a.fillna("(absent)"), v.verdict_b.fillna("(absent)"),
                                                   strict=True)]
    ca, cb = comparisons(a), comparisons(b)
    c = ca.merge(cb, on=list(ROW_KEYS), how="outer", suffixes=("_a", "_b"))
    names = [*COMPARED, "K_star_distance", "accuracy_distance"]
    c["changed"] = [any(_changed(float(row[f"{n}_a"]), float(row[f"{n}_b"])) for n in names)
                    for _, row in c.iterrows()]
    return (v.sort_values(["changed", *VERDICT_KEYS], ascending=[False, True, True, True], kind="stable",
                          ignore_index=True),
            c.sort_values(["changed", *ROW_KEYS], ascending=[False, True, True, True], kind="stable",
                          ignore_index=True))


def _cell(value: object) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    return _md(value).replace("|", "\\|")  # others' text: no tag, no link, no formula, one line


def _markdown(frame: pd.DataFrame) -> str:
    head = "| " + " | ".join(frame.columns) + " |\n| " + " | ".join("---" for _ in frame.columns) + " |\n"
    return head + "".join("| " + " | ".join(_cell(v) for v in row) + " |\n" for row in frame.itertuples(index=False))


def markdown(a: Path, b: Path, verdict_rows: pd.DataFrame, table_rows: pd.DataFrame) -> str:
    """The diff as a Markdown page: a count line, then the changed verdicts and the changed table rows
    (every row, changed first)."""
    nv, nc = int(verdict_rows.changed.sum()), int(table_rows.changed.sum())
    (runs_a, judged_a), (runs_b, judged_b) = code_versions(a), code_versions(b)
    same = "runs of one code version" if runs_a == runs_b else "runs of different code versions"
    code = (f"Code: a's runs {_md(', '.join(runs_a) or 'unrecorded')}, its verdicts {_md(judged_a)}; b's runs "
            f"{_md(', '.join(runs_b) or 'unrecorded')}, its verdicts {_md(judged_b)} ({same}).\n\n")
    return (f"# {_md(a)} (a) against {_md(b)} (b)\n\n{nv} of {len(verdict_rows)} verdicts and {nc} of "
            f"{len(table_rows)} rows "
            "of the paper's tables differ (changed rows first).\n\n" + code + "## Verdicts\n\n" +
            _markdown(verdict_rows) +
            "\n## The paper's Tables II-VII\n\nK* in rounds, accuracy in percent; distances to the paper's.\n\n" +
            _markdown(table_rows))
