"""Every kept bundle holds a Process Run RO-Crate that the `rocrate` package reads back: each file its manifest
lists, with the same SHA-256, an input or a result of the action that made the bundle; `keep` writes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rocrate.rocrate import ROCrate

from bladefl.experiments.bundles import kept_results, ro_crate

REPO = Path(__file__).resolve().parents[1]
BUNDLES = sorted(p.parent for p in (REPO / "reference").glob("*/MANIFEST.json"))


def _check(bundle: Path) -> None:
    manifest = kept_results.read_manifest(bundle)
    crate = ROCrate(bundle)
    files = {e.id: e for e in crate.data_entities}
    assert set(manifest["files"]) <= set(files)
    for rel, entry in manifest["files"].items():
        assert files[rel]["sha256"] == entry["sha256"], rel
    action = crate.get("#keep")
    linked = {e.id for e in action["object"] + action["result"]}
    assert set(manifest["files"]) <= linked
    assert action["instrument"].id == "#bladefl" and action["endTime"].endswith("Z")
    assert ro_crate.PROCESS_RUN in json.dumps(crate.metadata.generate())


@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.name for b in BUNDLES])
def test_every_kept_bundle_holds_a_crate_that_reads_back(bundle):
    assert (bundle / ro_crate.CRATE).is_file()
    _check(bundle)
    assert kept_results.problems(bundle) == []  # the crate sits beside the manifest, not in it


def test_keep_writes_the_crate_and_a_rejudged_file_updates_it(tmp_path):
    results, data = tmp_path / "results", tmp_path / "data"
    (results / "verdicts").mkdir(parents=True)
    (results / "verdicts/mnist.csv").write_text("statement,verdict\nx,reproduced\n")
    (data / "partitions").mkdir(parents=True)
    (data / "partitions/p.json").write_text("{}")
    config = tmp_path / "c.yaml"
    config.write_text("engine: paper\n")
    out = tmp_path / "kept"
    kept_results.keep([results / "verdicts/mnist.csv", data / "partitions/p.json"], results, data, config, out,
                      {"code_versions": ["0.1.0+abc"], "imported": {"archive": "a.tar.xz", "sha256": "f" * 64}})
    _check(out)
    graph = json.loads((out / ro_crate.CRATE).read_text())["@graph"]
    assert any(e.get("sha256") == "f" * 64 for e in graph)  # the runs' archive the bundle does not hold
    assert any(e.get("name") == "config/engines/paper.yaml" for e in graph)
    kept_results.replace_files(out, {"results/verdicts/mnist.csv": "statement,verdict\nx,refuted\n"},
                               {"code_version": "test"})
    _check(out)
    first = (out / ro_crate.CRATE).read_bytes()  # the same manifest writes the same crate (its date the bundle's)
    ro_crate.write_crate(out, kept_results.read_manifest(out), ro_crate.engine_digests(out / "config.yaml"))
    assert (out / ro_crate.CRATE).read_bytes() == first
