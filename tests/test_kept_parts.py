"""The 10-draw design's parts kept in git (reference/runs/paper-10draws/part-seed<i>.tar.xz, made by
scripts/grid_part.sh on the 2-core CPU): each holds exactly its seed's runs of the design, every run's
summary holds the run config the workflow would give it here, and every part comes from one code version,
so the bundle kept from them is re-derivable from what is in git."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

import pytest

from bladefl.experiments.bundles import run_import
from bladefl.experiments.plan.grid import Cell

ROOT = Path(__file__).resolve().parents[1]
# Each 10-draw bundle and its design: the same draws under the paper engine's reading and the calibrated one.
DESIGNS = {"paper-10draws": [ROOT / "config/paper.yaml", ROOT / "config/paper_part10.yaml"],
           "calibrated-10draws": [ROOT / "config/paper.yaml", ROOT / "config/calibrated_part10.yaml"]}


def parts(name: str) -> list[Path]:
    return sorted((ROOT / "reference/runs" / name).glob("part-seed*.tar.xz"))


@pytest.mark.parametrize("name", DESIGNS)
def test_the_kept_parts_are_parts_of_one_design_from_one_code_version(name):
    design = DESIGNS[name]
    if not parts(name):
        pytest.skip(f"no part of {name} is kept yet")
    abouts = []
    for archive in parts(name):
        seed = int(re.fullmatch(r"part-seed(\d+)\.tar\.xz", archive.name).group(1))  # type: ignore[union-attr]
        config = run_import.read_config(design, [seed])
        expected = run_import.expected_configs(config, "grid")
        with tarfile.open(archive) as tar:
            members = {m.name: m for m in tar.getmembers() if m.isfile()}
            about = json.loads(tar.extractfile(members.pop("grid/ABOUT.json")).read())  # type: ignore[union-attr]
            ledgers = {m for m in members if run_import.LEDGER.fullmatch(m.split("/", 4)[-1])}
            runs = {m.rsplit("/", 1)[0] for m in members if m not in ledgers}
            assert runs == set(expected), f"{archive.name}: {sorted(runs ^ set(expected))[:3]}"
            assert {m.rsplit("/", 1)[1] for m in members if m not in ledgers} <= set(run_import.RUN_FILES)
            for run in sorted(runs)[:: max(1, len(runs) // 6)]:  # a sample of its runs' summaries
                summary = json.loads(tar.extractfile(members[f"{run}/summary.json"]).read())  # type: ignore[union-attr]
                given = {k: v for k, v in summary["config"].items() if k not in run_import.EXECUTION_FIELDS}
                assert run_import.differences(given, json.loads(json.dumps(expected[run]))) == [], run
        assert about["grid_seeds"] == str(seed) and about["finished"] and about["device"] == "cpu"
        assert about["runs"] == len(expected)
        abouts.append(about)
    assert len({a["code_version"] for a in abouts}) == 1 and "dirty" not in abouts[0]["code_version"]


@pytest.mark.parametrize("name", DESIGNS)
def test_the_bundle_names_every_part_and_a_parts_runs_are_its_rows_byte_for_byte(tmp_path, name):
    """The 10-draw bundle's manifest names each part by its path in git and its SHA-256 (the import
    records), and part seed 0's run tables, summarised by this code, are the bundle's summary rows of
    seed 0 to the byte: the kept tables are re-derivable from the archives in git."""
    import csv

    from bladefl.data.datasets import sha256_file
    from bladefl.experiments.plan import workflow_config as wc
    from bladefl.experiments.tables.tidy import collect

    bundle = ROOT / "reference" / name
    if not (bundle / "MANIFEST.json").is_file():
        pytest.skip(f"reference/{name} is not kept yet")
    imported = json.loads((bundle / "MANIFEST.json").read_text())["about"]["imported"]
    records = [*imported.get("earlier_imports", []), {k: v for k, v in imported.items() if k != "earlier_imports"}]
    assert sorted(r["seeds"] for r in records) == [[i] for i in range(10)]
    for record in records:
        assert record["archive"] == f"reference/runs/{name}/part-seed{record['seeds'][0]}.tar.xz", record
        assert sha256_file(ROOT / record["archive"]) == record["sha256"], record["archive"]
    with tarfile.open(ROOT / f"reference/runs/{name}/part-seed0.tar.xz") as tar:
        tar.extractall(tmp_path, filter="data")
    config = run_import.read_config([bundle / "config.yaml"])
    for dataset in config["datasets"]:
        ours = collect(sorted((tmp_path / "grid" / dataset).rglob("summary.json")), wc.members(config))
        kept = (bundle / f"results/summary/{dataset}.csv").read_text().splitlines()
        seed = next(csv.reader(kept[:1])).index("seed")
        rows = [kept[0], *(line for line in kept[1:] if next(csv.reader([line]))[seed] == "0")]
        assert ours.to_csv(index=False).splitlines() == rows, dataset


@pytest.mark.parametrize("name", DESIGNS)
def test_the_bundles_verdicts_on_the_runs_are_what_this_code_derives_from_its_tables(name):
    """The rest of the chain from the archives in git to the verdicts: judged again from the bundle's own
    tables (`kept_results.judge`, as `make rejudge` does), its verdict rows on the runs and on the fitted
    bound are the kept ones (every text, and numbers to 1e-9; the mathematics' rows rest on a scan of 2,000
    settings, judged again in full by hand: docs/measurements.md; here 20)."""
    import io

    import pandas as pd

    from bladefl.experiments.bundles import kept_results

    bundle = ROOT / "reference" / name
    if not (bundle / "MANIFEST.json").is_file():
        pytest.skip(f"reference/{name} is not kept yet")
    frames = kept_results.judge(bundle, ROOT / "config/paper_statements.yaml", ROOT / "config/paper_values.yaml",
                                scan_settings=20, log=lambda m: None)
    for dataset, frame in frames.items():
        kept = pd.read_csv(bundle / f"results/verdicts/{dataset}.csv")
        ours = pd.read_csv(io.StringIO(frame.to_csv(index=False)))
        for basis in ("experiment", "bound"):  # every text the same; numbers to 1e-9 (a p-value's last
            # digit differs between machines' floating-point libraries)
            pd.testing.assert_frame_equal(ours[ours.basis == basis].reset_index(drop=True),
                                          kept[kept.basis == basis].reset_index(drop=True),
                                          check_exact=False, rtol=1e-9, obj=f"{dataset} {basis}")


@pytest.mark.parametrize("name", DESIGNS)
def test_the_kept_optima_are_the_bundles_own_the_ones_its_bound_tables_read(tmp_path, name):
    """The bundle's reference optima (reference/runs/<name>/optima.tar.xz) install against its design and its
    kept partitions (each trained on the draw the bundle holds), and every F* of its bound tables is the F* of
    that seed's optimum, to the last digit: a re-derivation that installs them reads what the tables read."""
    import csv

    from bladefl.experiments.bundles import optima_archive
    from bladefl.experiments.plan import workflow_config as wc
    from bladefl.theory import reference

    bundle = ROOT / "reference" / name
    config = {**run_import.read_config(DESIGNS[name]), "data_dir": str(bundle / "data"),
              "results_dir": str(tmp_path)}
    done = optima_archive.install(ROOT / "reference/runs" / name / "optima.tar.xz", config)
    assert done.written == len(wc.reference_keys(config)) == 20
    for dataset in config["datasets"]:
        with open(bundle / "results/bound" / dataset / "constants.csv") as f:
            rows = list(csv.DictReader(f))
        assert rows
        for row in rows:
            seed = int(row["seed"])
            key = wc.partition_spec(config, Cell.from_key(row["cell"]).N, seed, dataset).key
            ref = reference.load(optima_archive.references_root(config) / dataset / f"{key}.npz")
            assert float(row["f_star"]) == ref.f_star, (dataset, row["cell"], seed)
