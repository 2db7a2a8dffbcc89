"""Results kept for good (bladefl.experiments.bundles.kept_results): a bundle with a manifest, checked
whole before it is laid out again for the report."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path

import pandas as pd
import pytest

from bladefl.experiments.bundles import kept_results as kr


@pytest.fixture
def workflow(tmp_path) -> dict[str, Path]:
    """A results folder, a data folder and a config, as a finished workflow leaves them."""
    results, data = tmp_path / "results", tmp_path / "data"
    (results / "summary").mkdir(parents=True)
    (results / "summary/mnist.csv").write_text("sweep,cell\nbeta,c1\n")
    (results / "provenance").mkdir()
    pd.DataFrame({"run": ["c1/seed~0", "c1/seed~1"], "code_version": ["0.1.0+abc", "0.1.0+abc"],
                  "device": ["NVIDIA H100 80GB HBM3", None], "host": ["gpu1", "gpu1"],
                  "seconds": [1.5, 2.0]}).to_csv(results / "provenance/mnist.csv", index=False)
    (data / "partitions/mnist").mkdir(parents=True)
    (data / "partitions/mnist/p.json").write_text('{"N": 4}')
    config = results / "report/config.yaml"
    config.parent.mkdir()
    config.write_text("seeds: [0, 1]\n")
    return {"results": results, "data": data, "config": config,
            "files": [results / "summary/mnist.csv", data / "partitions/mnist/p.json",
                      results / "provenance/mnist.csv"]}


def keep(workflow: dict, out: Path) -> dict:
    about = kr.about_runs([workflow["results"] / "provenance/mnist.csv"])
    return kr.keep(workflow["files"], workflow["results"], workflow["data"], workflow["config"], out, about)


def test_a_bundle_holds_the_files_the_config_and_a_manifest_that_matches(tmp_path, workflow):
    out = tmp_path / "reference/x"
    manifest = keep(workflow, out)
    assert sorted(manifest["files"]) == ["config.yaml", "data/partitions/mnist/p.json",
                                         "results/provenance/mnist.csv", "results/summary/mnist.csv"]
    from bladefl.experiments.runs.provenance import code_version
    from bladefl.report.bundle_design import verdicts_code

    assert manifest["about"] == {"runs": 2, "code_versions": ["0.1.0+abc"], "devices": ["NVIDIA H100 80GB HBM3"],
                                 "hosts": ["gpu1"], "run_seconds": 3.5, "kept_by": code_version()}
    assert json.loads((out / kr.MANIFEST).read_text()) == manifest
    assert verdicts_code(out) == code_version()  # the code that kept it derived its verdicts (no rejudge yet)
    assert kr.problems(out) == []
    assert not list(out.parent.glob(".*partial"))  # assembled beside it, renamed into place
    modes = {stat.S_IMODE(p.stat().st_mode) for p in out.rglob("*") if p.is_file()}
    assert modes == {0o644}


def test_a_changed_missing_or_added_file_is_named(tmp_path, workflow):
    out = tmp_path / "b"
    keep(workflow, out)
    (out / "results/summary/mnist.csv").write_text("sweep,cell\nbeta,c2\n")
    (out / "data/partitions/mnist/p.json").unlink()
    (out / "results/extra.csv").write_text("x\n")
    assert kr.problems(out) == ["data/partitions/mnist/p.json: listed in the manifest, missing",
                                "results/extra.csv: not listed in the manifest",
                                "results/summary/mnist.csv: changed since it was kept (SHA-256 differs)"]
    with pytest.raises(ValueError, match="changed since it was kept"):
        kr.lay_out(out, tmp_path / "r", tmp_path / "d")
    assert not (tmp_path / "r").exists()
    (out / kr.MANIFEST).write_text("[1, 2")
    assert kr.problems(out)[0].endswith("not a readable manifest (Expecting ',' delimiter: line 1 column 6 (char 5))")


def test_laid_out_files_are_where_the_workflow_reads_them(tmp_path, workflow):
    out = tmp_path / "b"
    keep(workflow, out)
    assert kr.lay_out(out, tmp_path / "r", tmp_path / "d") == 3
    assert (tmp_path / "r/summary/mnist.csv").read_text() == "sweep,cell\nbeta,c1\n"
    assert (tmp_path / "d/partitions/mnist/p.json").read_text() == '{"N": 4}'
    assert not (tmp_path / "r/config.yaml").exists()  # the config is given to Snakemake, not laid out


def test_an_existing_folder_that_is_no_bundle_is_not_replaced(tmp_path, workflow):
    out = tmp_path / "notes"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not provably a kept bundle"):
        keep(workflow, out)
    assert (out / "mine.txt").read_text() == "keep me"
    keep(workflow, tmp_path / "again")
    keep(workflow, tmp_path / "again")  # an older bundle is replaced
    assert kr.problems(tmp_path / "again") == []


def test_files_outside_both_folders_and_missing_files_are_refused(tmp_path, workflow):
    with pytest.raises(ValueError, match="neither in the results folder"):
        kr.bundle_path(tmp_path / "elsewhere.csv", workflow["results"], workflow["data"])
    workflow["files"].append(workflow["results"] / "verdicts/mnist.csv")
    with pytest.raises(ValueError, match="verdicts/mnist.csv: missing"):
        keep(workflow, tmp_path / "c")
    assert not (tmp_path / "c").exists() and not list(tmp_path.glob(".c*"))  # nothing half-written


def test_a_linked_data_folder_is_still_the_data_folder(tmp_path, workflow):
    os.symlink(workflow["data"] / "partitions", tmp_path / "linked")
    data = tmp_path / "d2"
    data.mkdir()
    (data / "partitions").symlink_to(tmp_path / "linked")
    assert kr.bundle_path(data / "partitions/mnist/p.json", workflow["results"], data) == "data/partitions/mnist/p.json"


def test_the_imported_archive_is_kept_checked_and_not_laid_out(tmp_path, workflow):
    archive = tmp_path / "grid-tables.tar.gz"
    archive.write_bytes(b"run tables")
    record = {"archive": str(archive), "sha256": kr.sha256_file(archive)}
    assert kr.imported_archive(record) == archive
    assert kr.imported_archive({"archive": str(tmp_path / "gone.tar.gz")}) is None
    about = kr.about_runs([workflow["results"] / "provenance/mnist.csv"])
    out = tmp_path / "reference/x"
    manifest = kr.keep(workflow["files"], workflow["results"], workflow["data"], workflow["config"], out, about,
                       kr.imported_archive(record))
    assert manifest["files"]["runs/grid-tables.tar.gz"]["sha256"] == record["sha256"]
    laid = tmp_path / "laid"
    kr.lay_out(out, laid / "results", laid / "data")
    assert not (laid / "runs").exists() and not list(laid.rglob("grid-tables.tar.gz"))
    (out / "runs/grid-tables.tar.gz").write_bytes(b"other tables")
    assert kr.problems(out) == ["runs/grid-tables.tar.gz: changed since it was kept (SHA-256 differs)"]
    archive.write_bytes(b"changed after the import")
    with pytest.raises(ValueError, match="not the archive that was imported"):
        kr.imported_archive(record)


def test_a_bundle_whose_manifest_snakemake_removed_is_kept_again(tmp_path, workflow):
    out = tmp_path / "reference/x"
    keep(workflow, out)
    (out / kr.MANIFEST).unlink()  # what Snakemake does to a job's output before the job runs again
    assert sorted(keep(workflow, out)["files"]) == sorted(keep(workflow, tmp_path / "reference/y")["files"])
    assert kr.problems(out) == []


def test_a_bundle_kept_again_keeps_the_archive_it_holds_when_the_original_is_gone(tmp_path, workflow):
    archive = tmp_path / "grid-tables.tar.xz"
    archive.write_bytes(b"run tables")
    record = {"archive": str(archive), "sha256": kr.sha256_file(archive)}
    about = kr.about_runs([workflow["results"] / "provenance/mnist.csv"])
    out = tmp_path / "reference/x"
    kr.keep(workflow["files"], workflow["results"], workflow["data"], workflow["config"], out, about,
            kr.imported_archive(record, out))
    archive.unlink()  # the archive now lives in the bundle only
    again = kr.imported_archive(record, out)
    assert again == out / "runs/grid-tables.tar.xz"
    manifest = kr.keep(workflow["files"], workflow["results"], workflow["data"], workflow["config"], out, about, again)
    assert manifest["files"]["runs/grid-tables.tar.xz"]["sha256"] == record["sha256"] and kr.problems(out) == []


def test_the_keep_command_leaves_the_archive_out_unless_asked(tmp_path, workflow, capsys):
    """`bladefl keep` names an imported archive by its SHA-256 only (megabytes stay out of git);
    `--with-archive` copies it into the bundle's runs/."""
    from bladefl.cli import main

    archive = tmp_path / "grid-tables.tar.xz"
    archive.write_bytes(b"run tables")
    record = tmp_path / "imported.json"
    record.write_text(json.dumps({"archive": str(archive), "sha256": kr.sha256_file(archive)}))
    base = ["keep", "--files", *map(str, workflow["files"][:2]), "--provenance", str(workflow["files"][2]),
            "--imported", str(record), "--results-dir", str(workflow["results"]), "--data-dir", str(workflow["data"]),
            "--config-file", str(workflow["config"])]
    assert main([*base, "--out", str(tmp_path / "plain")]) == 0
    plain = kr.read_manifest(tmp_path / "plain")
    assert not any(f.startswith("runs/") for f in plain["files"])
    assert plain["about"]["imported"]["sha256"] == kr.sha256_file(archive)
    assert "--with-archive" in capsys.readouterr().out
    assert main([*base, "--out", str(tmp_path / "with"), "--with-archive"]) == 0
    kept = kr.read_manifest(tmp_path / "with")["files"]
    assert kept["runs/grid-tables.tar.xz"]["sha256"] == kr.sha256_file(archive)


def test_replaced_files_keep_the_bundle_matching_its_manifest_and_only_its_results_files(tmp_path, workflow):
    out = tmp_path / "reference/x"
    keep(workflow, out)
    manifest = kr.replace_files(out, {"results/summary/mnist.csv": "sweep,cell\nbeta,c2\n"}, {"by": "test"})
    assert kr.problems(out) == []
    assert (out / "results/summary/mnist.csv").read_text() == "sweep,cell\nbeta,c2\n"
    assert manifest["about"]["rejudged"] == [{"by": "test"}]
    for rel in ("results/verdicts/new.csv", "config.yaml", "results/../config.yaml"):
        with pytest.raises(ValueError, match="not a results file the bundle holds"):
            kr.replace_files(out, {rel: "x"}, {})
    (out / "results/summary/mnist.csv").chmod(0o644)
    (out / "results/summary/mnist.csv").write_text("tampered\n")
    with pytest.raises(ValueError, match="mnist.csv"):
        kr.replace_files(out, {"results/summary/mnist.csv": "x"}, {})


def test_a_rejudge_that_changes_nothing_writes_nothing_and_check_only_says_what_would_change(tmp_path, workflow,
                                                                                             monkeypatch, capsys):
    """Verdicts derived again byte-identical leave the bundle's files, manifest and crate untouched (a clean
    checkout stays clean); one that differs is written with a record of the code; ``--check`` never writes
    and exits 1 where a table would change. The derivation is stood in for (the hostile suite runs it)."""
    from bladefl.cli import main

    verdicts = workflow["results"] / "verdicts/mnist.csv"
    verdicts.parent.mkdir()
    derived = pd.DataFrame({"statement": ["s1"], "verdict": ["supported"], "p": [0.0123456789012]})
    from bladefl.experiments.verdicts.table import verdict_csv

    verdicts.write_text(verdict_csv(derived))
    workflow["files"].append(verdicts)
    out = tmp_path / "reference/x"
    keep(workflow, out)
    monkeypatch.setattr(kr, "judge", lambda *a, **k: {"mnist": derived})
    snapshot = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    manifest, changed = kr.rejudge(out, "s.yaml", "v.yaml", log=lambda m: None, code_version="0.1.0+new")
    assert changed == [] and "rejudged" not in manifest["about"]
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == snapshot
    assert main(["rejudge", str(out), "--check"]) == 0
    assert "as kept: results/verdicts/mnist.csv" in capsys.readouterr().out

    derived = derived.assign(verdict=["refuted"])
    assert main(["rejudge", str(out), "--check"]) == 1
    assert "derived differently by this code: results/verdicts/mnist.csv" in capsys.readouterr().out
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == snapshot  # --check wrote nothing
    manifest, changed = kr.rejudge(out, "s.yaml", "v.yaml", log=lambda m: None, code_version="0.1.0+new")
    assert changed == ["results/verdicts/mnist.csv"]
    assert [r["code_version"] for r in manifest["about"]["rejudged"]] == ["0.1.0+new"]
    assert (out / "results/verdicts/mnist.csv").read_text() == verdict_csv(derived) and kr.problems(out) == []


def test_rejudge_refuses_a_bundle_whose_config_names_a_dataset_outside_the_allowed_before_any_work(tmp_path,
                                                                                                   workflow):
    from bladefl.experiments.plan import workflow_config as wc
    from conftest import REPO

    workflow["config"].write_text("seeds: [0, 1]\ndatasets: ['../../outside']\n")
    out = tmp_path / "reference/x"
    keep(workflow, out)
    before = (out / kr.MANIFEST).read_bytes()
    with pytest.raises(wc.ConfigError, match="datasets"):
        kr.rejudge(out, REPO / "config/paper_statements.yaml", REPO / "config/paper_values.yaml", log=lambda m: None)
    assert (out / kr.MANIFEST).read_bytes() == before and kr.problems(out) == []


def test_a_listed_file_replaced_by_a_link_and_a_manifest_with_a_key_twice_are_refused(tmp_path, workflow):
    """A link laid out would copy whatever it points to (a file outside the bundle) into results; a
    manifest naming a file twice would be read by its last entry: both are named, nothing laid out."""
    out = tmp_path / "kept"
    keep(workflow, out)
    rel = next(iter(kr.read_manifest(out)["files"]))
    outside = tmp_path / "outside.csv"
    outside.write_text("not what was kept\n")
    kept = out / rel
    os.chmod(kept, stat.S_IWUSR | stat.S_IRUSR)
    kept.unlink()
    kept.symlink_to(outside)
    assert kr.problems(out) == [f"{rel}: a symbolic link (a bundle holds plain files only)"]
    with pytest.raises(ValueError, match="symbolic link"):
        kr.lay_out(out, tmp_path / "laid", tmp_path / "d")
    assert not (tmp_path / "laid").exists()

    other = tmp_path / "kept2"
    keep(workflow, other)
    manifest = other / kr.MANIFEST
    os.chmod(manifest, stat.S_IWUSR | stat.S_IRUSR)
    text = manifest.read_text()
    first = text.index('"files": {') + len('"files": {')
    entry_end = text.index("}", first) + 1
    manifest.write_text(text[:first] + text[first:entry_end] + "," + text[first:entry_end] + text[entry_end:])
    assert any("given twice" in p for p in kr.problems(other)), kr.problems(other)


def _hostile(tmp_path, change) -> tuple:
    """The kept 2-seed bundle with its MNIST tidy table changed by ``change`` and the manifest re-hashed
    (a bundle anyone can make self-consistent)."""
    import shutil

    import pandas as pd

    from conftest import REPO

    out = tmp_path / "reference/hostile"
    shutil.copytree(REPO / "reference/default-2seeds", out)
    for path in [out, *out.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    table = pd.read_csv(out / "results/summary/mnist.csv")
    kr.replace_files(out, {"results/summary/mnist.csv": change(table)}, {"by": "forger"})
    return out, (out / kr.MANIFEST).read_bytes()


@pytest.mark.parametrize("change, said", [
    (lambda t: pd.concat([t] + [t.iloc[[0]]] * 2_000).to_csv(index=False), "repeats sweep, cell, K and seed"),
    (lambda t: t.assign(K=t.K.astype(object).where(t.index > 0, "1e400")).to_csv(index=False), "K must be a whole"),
    (lambda t: t.drop(columns="status").to_csv(index=False), "columns ['status'] missing"),
    (lambda t: t.assign(status="weird").to_csv(index=False), "status must be one of"),
    (lambda t: t.assign(cell=t.cell.where(t.index > 0, "alpha~9_beta~9_N~9_eta~0.9_lazy~0_sigma2~0_eps~inf"))
     .to_csv(index=False), "is not a member of the grid's members"),
    (lambda t: t.assign(train_loss=t.train_loss.astype(object).where(t.index > 0, "[1]")).to_csv(index=False),
     "train_loss must be a number"),
    (lambda t: "\x00\x01 not a table", "columns"),
])
def test_rejudge_holds_a_hostile_bundles_tables_to_the_schema_before_any_analysis(tmp_path, change, said):
    """A self-consistent hostile bundle (its manifest re-hashed) once gave KeyError, IndexError and
    OverflowError tracebacks, or re-judged 200,000 repeated rows silently: now one ValueError naming the
    file, and the bundle is not touched. The repeats here are 2,000 (the check reads each row the same way
    at any count; the 200,000 of the report took 20 CPU-s to write and read)."""
    from conftest import REPO

    out, before = _hostile(tmp_path, change)
    with pytest.raises(ValueError, match=re.escape(said)) as caught:
        kr.rejudge(out, REPO / "config/paper_statements.yaml", REPO / "config/paper_values.yaml", log=lambda m: None)
    assert "summary/mnist.csv" in str(caught.value) and "\n" not in str(caught.value)
    assert (out / kr.MANIFEST).read_bytes() == before


def _forged(tmp_path, files: dict, about: dict | None = None):
    """The kept 2-seed bundle with ``files`` (bundle path -> text) replaced and its manifest re-hashed,
    ``about`` merged into its record: a hostile bundle anyone can make self-consistent."""
    import json
    import shutil

    from conftest import REPO

    out = tmp_path / "reference/forged"
    shutil.copytree(REPO / "reference/default-2seeds", out)
    for path in [out, *out.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)
    manifest = json.loads((out / kr.MANIFEST).read_text())
    for rel, text in files.items():
        (out / rel).write_text(text)
        manifest["files"][rel] = {"bytes": (out / rel).stat().st_size, "sha256": kr.sha256_file(out / rel)}
    manifest["about"] = {**manifest.get("about", {}), **(about or {})}
    (out / kr.MANIFEST).write_text(json.dumps(manifest))
    assert kr.problems(out) == []
    return out


def test_rejudge_refuses_a_budget_that_overflows(tmp_path):
    """Issue 61, item 5: a bundle whose config holds t_sum 1e308 overflowed in the time model; one line now."""
    import yaml

    from conftest import REPO

    config = yaml.safe_load((REPO / "reference/default-2seeds/config.yaml").read_text())
    out = _forged(tmp_path, {"config.yaml": yaml.safe_dump({**config, "t_sum": 1e308})})
    with pytest.raises(ValueError, match=r"t_sum must be a number in \(0, 1e\+06\]"):
        kr.rejudge(out, REPO / "config/paper_statements.yaml", REPO / "config/paper_values.yaml", log=lambda m: None)


@pytest.mark.parametrize("edit, about, said", [
    (lambda t: t.assign(verdict=t.verdict.where(t.index > 0, "maybe")), None, "verdict 'maybe' is not one of"),
    (lambda t: pd.concat([t] * 400, ignore_index=True), None, "rows, more than a verdict table holds"),
    (lambda t: t, {"rejudged": "yesterday"}, "about.rejudged is not a list"),
    (lambda t: t, {"runs": "many"}, "about.runs is not a whole number"),
], ids=["unknown-verdict", "repeated-rows", "rejudged-string", "runs-string"])
def test_findings_from_a_hostile_bundle_are_one_line(tmp_path, edit, about, said):
    """Issue 61, item 4: `bladefl findings` read kept bundles with plain readers (tracebacks, a verdict 'maybe'
    and 100,000 repeated rows written into docs/findings.md): each is one ValueError naming the bundle now."""
    from bladefl.report.findings_doc import findings_markdown

    table = pd.read_csv(__import__("conftest").REPO / "reference/default-2seeds/results/verdicts/mnist.csv")
    out = _forged(tmp_path, {"results/verdicts/mnist.csv": edit(table).to_csv(index=False)}, about)
    with pytest.raises(ValueError, match=re.escape(said)) as caught:
        findings_markdown([out])
    assert "\n" not in str(caught.value)


def test_findings_print_a_hostile_bundles_text_as_text(tmp_path):
    """`<script>`, a javascript: link and a spreadsheet formula in a verdict's claim and finding reach
    docs/findings.md as text."""
    from bladefl.report.findings_doc import findings_markdown

    table = pd.read_csv(__import__("conftest").REPO / "reference/default-2seeds/results/verdicts/mnist.csv")
    hit = table.role.isin(["claim"]) & (table.verdict == "reproduced")
    table.loc[hit, "claim"] = "<script>alert(1)</script> [click](javascript:alert(1))"
    table.loc[hit, "finding"] = "<img src=x onerror=alert(1)>"
    table.loc[hit & (table.index == table.index[hit][0]), "claim"] = '=HYPERLINK("http://x","y")'
    page = findings_markdown([_forged(tmp_path, {"results/verdicts/mnist.csv": table.to_csv(index=False)})])
    assert "\\=HYPERLINK" in page and not re.search(r"(^|[\s|])=HYPERLINK", page)
    assert "<script>" not in page and "<img" not in page and not re.search(r"(?<!\\)\]\(javascript:", page)
    assert "&lt;script&gt;" in page and "\\[click\\](javascript:alert(1))" in page


@pytest.mark.parametrize("layout", ["work folder", "config only", "any manifest", "parent of results"])
def test_keep_never_replaces_a_folder_that_only_looks_like_a_bundle(tmp_path, workflow, layout):
    """A folder is replaced only when it is provably a kept bundle (manifest or crate, every file matching),
    never by the names it holds: a work folder's data/ and results/, a user's config.yaml, a MANIFEST.json of
    any content, the parent of the results folder with every run under it (each once lost whole)."""
    out = tmp_path / "out"
    if layout == "parent of results":
        out = workflow["results"].parent
    else:
        for folder in ("data", "results"):
            (out / folder).mkdir(parents=True)
            (out / folder / "mine.csv").write_text("a,b\n1,2\n")
        (out / "config.yaml").write_text("mine: true\n")
        if layout == "config only":
            shutil.rmtree(out / "data")
            shutil.rmtree(out / "results")
        if layout == "any manifest":
            (out / kr.MANIFEST).write_text('{"files": {}}')
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(ValueError, match="not provably a kept bundle"):
        keep(workflow, out)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert not list(out.parent.glob(".*.partial"))


def test_every_kept_bundles_rederivations_name_their_code_and_date():
    """Each record of a kept bundle's ``about.rejudged`` names the code that derived its files again and when, as
    `rejudge` writes them (the readers take the verdicts' code from the last one)."""
    from conftest import REPO

    manifests = sorted((REPO / "reference").glob("*/" + kr.MANIFEST))
    assert manifests
    for path in manifests:
        for record in json.loads(path.read_text())["about"].get("rejudged", []):
            assert {"code_version", "date"} <= set(record), (path, record)
            assert re.fullmatch(r"\d+\.\d+\.\d+\+[0-9a-f]{7,}(-dirty)?", record["code_version"]), (path, record)
