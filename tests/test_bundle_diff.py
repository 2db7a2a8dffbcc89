"""`bladefl diff`: two bundles side by side, per verdict and per row of the paper's tables, changed first."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from bladefl.report import bundle_diff
from conftest import HANG_S

REPO = Path(__file__).resolve().parents[1]
A, B = REPO / "reference/default-2seeds", REPO / "reference/paper-20seeds"


def test_a_bundle_against_itself_differs_nowhere():
    verdicts, rows = bundle_diff.diff(A, A)
    assert len(verdicts) > 0 and len(rows) > 0
    assert not verdicts.changed.any() and not rows.changed.any()


def test_the_kept_bundles_differ_where_their_tables_do_and_changed_rows_come_first():
    verdicts, rows = bundle_diff.diff(A, B)
    va = pd.read_csv(A / "results/verdicts/mnist.csv").set_index(["statement", "claim"]).verdict
    vb = pd.read_csv(B / "results/verdicts/mnist.csv").set_index(["statement", "claim"]).verdict
    want = {k for k in va.index if va[k] != vb.get(k)}
    mnist = verdicts[verdicts.dataset == "mnist"]
    assert {(s, c) for s, c in zip(mnist[mnist.changed].statement, mnist[mnist.changed].claim, strict=True)} == want
    assert verdicts.changed.tolist() == sorted(verdicts.changed.tolist(), reverse=True)
    first = rows.iloc[0]
    assert first.K_star_distance_a == pytest.approx(abs(first.K_star_a - _paper_k(A, first)), nan_ok=True)


def _paper_k(bundle, row):
    c = pd.read_csv(bundle / f"results/tables/{row.dataset}_paper_comparison.csv")
    return float(c[(c.table == row.table) & (c.value == row.value)].paper_K_star.iloc[0])


def test_the_cli_prints_the_page_and_writes_the_tables(tmp_path):
    out = subprocess.run([sys.executable, "-m", "bladefl", "diff", str(A), str(B), "--csv-dir", str(tmp_path / "d")],
                         capture_output=True, text=True, check=False, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("# ") and "## Verdicts" in out.stdout
    verdict_part, table_part = out.stdout.split("## The paper's Tables II-VII")
    rows = [line for line in verdict_part.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    assert len(pd.read_csv(tmp_path / "d/verdicts.csv")) == len(rows) - 1  # less the header
    table_rows = [line for line in table_part.splitlines() if line.startswith("| ")]
    assert len(pd.read_csv(tmp_path / "d/tables.csv")) == len(table_rows) - 2
    bad = subprocess.run([sys.executable, "-m", "bladefl", "diff", str(A), str(tmp_path)], capture_output=True,
                         text=True, check=False)
    assert bad.returncode == 2 and "no verdicts/ folder" in bad.stderr


def test_others_text_reaches_the_page_and_the_csv_as_text(tmp_path):
    """A bundle's claim holding a tag, a javascript: link and a spreadsheet formula: the page shows it as
    text (no tag, no link), the CSV with a leading apostrophe (no formula), and a verdict outside the
    vocabulary is refused (was: every one printed as given)."""
    import shutil

    bundle = tmp_path / "b"
    shutil.copytree(A / "results/verdicts", bundle / "results/verdicts")
    path = bundle / "results/verdicts/mnist.csv"
    table = pd.read_csv(path)
    table.loc[0, "claim"] = '=HYPERLINK("http://x","y") <script>alert(1)</script> [c](javascript:alert(1))'
    table.to_csv(path, index=False)
    out = subprocess.run([sys.executable, "-m", "bladefl", "diff", str(A), str(bundle), "--csv-dir",
                          str(tmp_path / "d")], capture_output=True, text=True, check=False, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert "<script>" not in out.stdout and not re.search(r"(?<!\\)\]\(javascript:", out.stdout)
    assert "\\=HYPERLINK" in out.stdout
    cells = pd.read_csv(tmp_path / "d/verdicts.csv").claim
    assert not cells.str.startswith("=").any() and cells.str.startswith("'=HYPERLINK").any()
    table.loc[0, "verdict"] = "proven beyond doubt"
    table.to_csv(path, index=False)
    bad = subprocess.run([sys.executable, "-m", "bladefl", "diff", str(A), str(bundle)], capture_output=True,
                         text=True, check=False, cwd=REPO)
    assert bad.returncode == 2 and "is not one of" in bad.stderr


def test_the_page_names_each_sides_code_versions():
    """Two bundles, or one bundle against its rejudge by newer code: the page says which code made each
    side's runs and verdicts, and whether the runs are of one code version."""
    runs_a, judged_a = bundle_diff.code_versions(A)
    assert runs_a and all(v.startswith("0.") for v in runs_a) and judged_a
    page = bundle_diff.markdown(A, A, *bundle_diff.diff(A, A))
    assert f"a's runs {', '.join(runs_a)}" in page and "(runs of one code version)" in page


def _results_copy(tmp_path: Path) -> Path:
    import shutil

    folder = tmp_path / "b"
    for part in ("verdicts", "tables", "provenance"):
        shutil.copytree(A / "results" / part, folder / "results" / part)
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder


@pytest.mark.parametrize("hostile", ["escape sequence", "linked table", "fifo table", "K* abc", "kept, changed"])
def test_a_hostile_bundle_is_refused_in_one_line_or_shown_as_text(tmp_path, hostile):
    """Text from a bundle reaches the terminal with its control characters escaped; a linked or FIFO table is
    refused, never followed or dropped without a word; a K* that is no number is one line, not a traceback; a
    kept bundle is held to its manifest first, as `rejudge` holds it."""
    import os
    import shutil

    bundle = _results_copy(tmp_path)
    verdicts = bundle / "results/verdicts/mnist.csv"
    if hostile == "escape sequence":
        table = pd.read_csv(verdicts)
        table.loc[0, "claim"] = "K* \x1b[31mred\x1b]0;title\x07 falls"
        table.to_csv(verdicts, index=False)
    elif hostile == "linked table":
        target = tmp_path / "elsewhere.csv"
        shutil.copy(verdicts, target)
        verdicts.unlink()
        verdicts.symlink_to(target)
    elif hostile == "fifo table":
        os.mkfifo(bundle / "results/verdicts/other.csv")
    elif hostile == "K* abc":
        comparison = bundle / "results/tables/mnist_paper_comparison.csv"
        table = pd.read_csv(comparison)
        table["K_star"] = table.K_star.astype(object)
        table.loc[0, "K_star"] = "abc"
        table.to_csv(comparison, index=False)
    else:
        bundle = tmp_path / "kept"
        shutil.copytree(A, bundle)
        changed = bundle / "results/verdicts/mnist.csv"
        changed.chmod(0o644)
        changed.write_text(changed.read_text().replace("reproduced", "refuted", 1))
    out = subprocess.run([sys.executable, "-m", "bladefl", "diff", str(A), str(bundle)], capture_output=True,
                         text=True, check=False, cwd=REPO, timeout=HANG_S)
    assert "Traceback" not in out.stderr and "\x1b" not in out.stdout + out.stderr
    if hostile == "escape sequence":
        assert out.returncode == 0 and "\\x1b" in out.stdout and "red" in out.stdout  # escaped, shown
    else:
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
