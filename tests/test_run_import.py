"""Run folders computed elsewhere brought into a results folder: every member checked before
anything is written (bladefl.experiments.bundles.run_import)."""

from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path

import pytest

from bladefl.experiments.bundles import run_import as ri
from bladefl.experiments.plan import config_files, run_id
from bladefl.experiments.plan import workflow_config as wc
from bladefl.experiments.tables import detection_analysis as da
from conftest import HANG_S

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def config() -> dict:
    return ri.read_config([REPO / "config/config.yaml", REPO / "config/smoke.yaml"])


def run_files(cfg: dict, device: str = "cuda") -> dict[str, bytes]:
    """A finished run's files whose summary holds ``cfg`` (as computed on ``device``): per K the time
    model's tau and status, K blocks and rows for a feasible K, one round-0 row for an infeasible one."""
    from bladefl.fl.timemodel import allocate

    per_k, rows = [], ["K,round,tau,status,train_loss,test_loss,test_accuracy"]
    t = cfg["time"]
    for k in t["K"]:
        a = allocate(k, t["alpha"], t["beta"], t["t_sum"])
        if not a.feasible:
            per_k.append({"K": k, "tau": a.tau, "status": "infeasible"})
            rows.append(f"{k},0,{a.tau},infeasible,,,")
            continue
        per_k.append({"K": k, "tau": a.tau, "status": "ok", "blocks": k, "tip": "ab" * 32, "train_loss": 0.5,
                      "test_loss": 0.6, "test_accuracy": 0.7})
        rows += [f"{k},{r},{a.tau},ok,0.5,0.6,0.7" for r in range(1, k + 1)]
    summary = {"config": {**cfg, "device": device, "data_dir": "elsewhere/raw"}, "per_K": per_k}
    files = {"summary.json": json.dumps(summary).encode(), "rounds.csv": ("\n".join(rows) + "\n").encode()}
    if da.expects_detections(summary):  # the validators ran detectors on lazy clients: one row per client
        ks = [k["K"] for k in per_k if k["status"] == "ok"]
        detectors, clients = cfg["lazy"]["detectors"], range(cfg["partition"]["N"])
        lines = [",".join(da.DETECTION_COLUMNS)] + [f"{ks[0]},1,{c},{c == 0},{d},0.5,False,False"
                                                      for c in clients for d in detectors]
        files["detections.csv"] = ("\n".join(lines) + "\n").encode()
    return files


def edit_summary(data: bytes, field: tuple[str, str], value: object) -> bytes:
    summary = json.loads(data)
    summary["config"][field[0]][field[1]] = value
    return json.dumps(summary).encode()


def archive(path: Path, members: dict[str, bytes], about: dict | None = None) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in [*members.items(), *([("grid/ABOUT.json", json.dumps(about).encode())] if about else [])]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def complete(config: dict, root: str = "grid") -> dict[str, bytes]:
    """Every run of the config, as the GPU script packs them (``grid/<dataset>/<cell>/seed~<s>/``)."""
    members = {}
    for folder, cfg in ri.expected_configs(config, root).items():
        for name, data in run_files(cfg).items():
            members[f"{folder}/{name}"] = data
    return members


def test_a_tau_forged_in_both_files_is_held_to_the_time_model(config, tmp_path):
    """rounds.csv and summary.json agree with each other, but not with the config's time model."""
    members = complete(config)
    forged = {}
    for name, data in members.items():
        if name.endswith("summary.json"):
            summary = json.loads(data)
            summary["per_K"][0]["tau"] += 1
            data = json.dumps(summary).encode()
        elif name.endswith("rounds.csv"):
            lines = data.decode().splitlines()
            first = lines[1].split(",")
            lines = [lines[0], *[",".join([*ln.split(",")[:2], str(int(first[2]) + 1), *ln.split(",")[3:]])
                                 if ln.split(",")[0] == first[0] else ln for ln in lines[1:]]]
            data = ("\n".join(lines) + "\n").encode()
        forged[name] = data
    with pytest.raises(ri.ArchiveError, match=r"K=1: tau = \d+, the time model gives \d+"):
        ri.import_runs(archive(tmp_path / "a.tar.gz", forged), config, tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def test_expected_runs_are_every_dataset_cell_and_seed(config):
    expected = ri.expected_configs(config, "r")
    assert len(expected) == 6  # smoke: 6 cells (one with exclusion), one seed, one dataset
    ids = {run_id.from_path(f) for f in expected}
    assert {i.seed for i in ids} == {0} and {i.dataset for i in ids} == {"mnist"}
    assert all("device" not in c and "data_dir" not in c for c in expected.values())


def test_a_complete_archive_is_imported_with_its_about(tmp_path, config):
    path = archive(tmp_path / "a.tar.gz", complete(config), about={"device": "NVIDIA H100", "wall_s": 300})
    imported = ri.import_runs(path, config, tmp_path / "runs")
    assert imported.runs == {"mnist": 6} and imported.about["device"] == "NVIDIA H100"
    written = sorted(p.relative_to(tmp_path / "runs").as_posix() for p in (tmp_path / "runs").rglob("*") if p.is_file())
    assert len(written) == 14 and all(w.startswith("mnist/") for w in written)  # 6 x 2 files, 2 detections.csv
    record = ri.record(path, "config/smoke.yaml", config, imported)
    assert record["runs"] == {"mnist": 6} and len(record["sha256"]) == 64 and record["seeds"] == [0]


@pytest.mark.parametrize("change, reason", [
    (lambda m: {**m, "grid/../../etc/summary.json": b"{}"}, "outside the archive"),
    (lambda m: {**m, "grid/mnist/notes.txt": b"x"}, "not a run file"),
    (lambda m: {**m, "grid/mnist/alpha~9_beta~99_N~4_eta~0.5_lazy~0_sigma2~0_eps~inf/seed~0/rounds.csv": b"x"},
     "not a run of this workflow config"),
    (lambda m: {k: v for k, v in m.items() if "eps~1000" not in k}, "1 of the config's 6 runs are not in the archive"),
    (lambda m: {k: (edit_summary(v, ("train", "eta"), 0.2) if k.endswith("summary.json") else v)
                for k, v in m.items()}, "differs from this workflow's in train.eta"),
    (lambda m: {k: (v.replace(b'"status": "ok"', b'"status": "running"', 1) if k.endswith("summary.json") else v)
                for k, v in m.items()}, "status must be one of ['ok', 'infeasible', 'diverged']"),
    (lambda m: {k: (v.replace(b'"status": "ok"', b'"status": "infeasible"', 1) if k.endswith("summary.json") else v)
                for k, v in m.items()}, "the summary calls it infeasible (rounds [0])"),
    (lambda m: {k: (v.replace(b'"test_accuracy": 0.7', b'"test_accuracy": NaN', 1) if k.endswith("summary.json")
                    else v) for k, v in m.items()}, "non-finite metrics"),
    (lambda m: {k: (v.replace(b"1,1,", b"1,1.0,", 1) if k.endswith("rounds.csv") else v) for k, v in m.items()},
     "each must be a plain integer"),
    (lambda m: {k: v for k, v in m.items() if not (k.endswith("rounds.csv") and "eta~0.1" in k)},
     "rounds.csv or summary.json missing"),
])
def test_a_bad_archive_is_refused_naming_why_and_nothing_is_written(tmp_path, config, change, reason):
    path = archive(tmp_path / "a.tar.gz", change(complete(config)))
    with pytest.raises(ri.ArchiveError, match="nothing imported") as err:
        ri.import_runs(path, config, tmp_path / "runs")
    assert reason in str(err.value)
    assert not (tmp_path / "runs").exists()


def test_links_and_non_archives_are_refused(tmp_path, config):
    path = tmp_path / "link.tar"
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo("grid/mnist/c/seed~0/summary.json")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(info)
    with pytest.raises(ri.ArchiveError, match="not a regular file"):
        ri.import_runs(path, config, tmp_path / "runs")
    (tmp_path / "text.tar.gz").write_text("not an archive")
    with pytest.raises(ri.ArchiveError, match=r"text.tar.gz: nothing imported: not a readable tar archive \("):
        ri.import_runs(tmp_path / "text.tar.gz", config, tmp_path / "runs")
    with pytest.raises(ri.ArchiveError, match="nothing imported: no such file"):
        ri.import_runs(tmp_path / "missing.tar.gz", config, tmp_path / "runs")
    with open(tmp_path / "zeros.tar.xz", "wb") as f:  # xz reads zeros as stream padding: an empty archive, slowly
        f.truncate(8 << 20)
    with pytest.raises(ri.ArchiveError, match=r"zeros.tar.xz: nothing imported: not a readable tar archive \("):
        ri.import_runs(tmp_path / "zeros.tar.xz", config, tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def test_existing_run_folders_are_kept_unless_replaced(tmp_path, config):
    path = archive(tmp_path / "a.tar.gz", complete(config))
    ri.import_runs(path, config, tmp_path / "runs")
    with pytest.raises(ri.ArchiveError, match="exists already"):
        ri.import_runs(path, config, tmp_path / "runs")
    assert ri.import_runs(path, config, tmp_path / "runs", replace=True).total == 6


def test_a_partial_grid_is_imported_as_a_config_with_its_first_seeds(tmp_path, config):
    """A grid cut short: seed 1's runs half-finished (one summary missing). Imported as the config
    with seed 0 alone, seed 1's runs are skipped and counted; as the whole config, refused."""
    two = {**config, "seeds": [0, 1], "partition": {**config["partition"], "seeds": [0, 1]}}
    members = complete(two)
    cut = {k: v for k, v in members.items() if not (k.endswith("summary.json") and "/seed~1/" in k and "eps~1000" in k)}
    with pytest.raises(ri.ArchiveError, match="rounds.csv or summary.json missing"):
        ri.import_runs(archive(tmp_path / "a.tar.gz", cut), two, tmp_path / "runs")
    imported = ri.import_runs(archive(tmp_path / "a.tar.gz", cut), ri.with_seeds(two, [0]), tmp_path / "runs")
    assert (imported.total, imported.skipped) == (6, 6)
    assert sorted({p.name for p in (tmp_path / "runs").rglob("seed~*")}) == ["seed~0"]


def test_an_import_marks_the_whole_designs_groups_of_its_runs_as_computing_none(tmp_path, config):
    """A part imported (seed 1 of two seeds, one group each N in blocks of one seed) writes the mark of
    each whole-design group holding its runs, and no other: `runs: 0`, so a run still missing trains in
    its own job and the group's job plans none of the imported runs again (workflow/rules/helpers/grid.smk).
    A computing group's own mark is kept; an empty one is rewritten (newer than the part's inputs)."""
    from bladefl.experiments.runs import run_source

    two = {**config, "seeds": [0, 1], "seeds_per_job": 1, "partition": {**config["partition"], "seeds": [0, 1]}}
    groups = tmp_path / "res/groups" / config["engine"]
    part = ri.with_seeds(two, [1])
    names = {g.name for g in wc.partition_jobs(part)}
    assert names and not names & {g.name for g in wc.partition_jobs(ri.with_seeds(two, [0]))}  # a group per seed
    computing = groups / f"{sorted(names)[0]}.done"
    run_source.write_group_mark(computing, 3, (1.0, 2.0))
    runs = tmp_path / "res/runs" / config["engine"]
    imported = ri.import_runs(archive(tmp_path / "a.tar.gz", complete(two)), part, runs)
    assert imported.total == 6 and imported.marks == len(names) - 1
    assert {p.stem for p in groups.glob("*.done")} == names
    assert run_source.group_computed(computing)  # kept as its group wrote it
    assert all(not run_source.group_computed(m) for m in groups.glob("*.done") if m != computing)


def test_config_files_merge_as_snakemake_merges_them():
    base = {"a": 1, "partition": {"n": 512, "seeds": [0]}, "datasets": ["mnist", "fashion_mnist"]}
    over = {"partition": {"seeds": [0, 1]}, "datasets": ["mnist"]}
    assert config_files.merged(base, over) == {"a": 1, "partition": {"n": 512, "seeds": [0, 1]}, "datasets": ["mnist"]}


def test_a_config_with_a_key_the_workflow_does_not_know_is_refused_naming_it(tmp_path):
    """The workflow's schema refuses a key it does not know (a typo of a field); import-runs read the same
    config past it (only `config_checks.check`), importing runs under a config Snakemake would refuse."""
    typo = tmp_path / "typo.yaml"
    typo.write_text((REPO / "config/smoke.yaml").read_text() + "measure_constant: false\n")
    with pytest.raises(wc.ConfigError, match="unknown key 'measure_constant' \\(did you mean 'measure_constants'"):
        ri.read_config([REPO / "config/config.yaml", typo])


def test_a_run_trained_on_another_draw_is_refused(config, tmp_path):
    """The summary names its partition's indices by digest: against the partition made here (the
    manifest `bladefl partition` writes) a run of another draw is refused; one of this draw imports;
    with no partition made here the draw cannot be checked and the import says so."""
    members = complete(config)
    stamped = {}
    for name, data in members.items():
        if name.endswith("summary.json"):
            summary = json.loads(data)
            summary["provenance"] = {"partition_sha256": "ab" * 32}
            data = json.dumps(summary).encode()
        stamped[name] = data
    config = {**config, "data_dir": str(tmp_path / "data")}
    with pytest.raises(ri.ArchiveError, match=r"its partition \S+ is not made here"):
        ri.import_runs(archive(tmp_path / "a.tar.gz", stamped), config, tmp_path / "runs")
    key = wc.partition_spec(config, 4, 0).key
    manifest = tmp_path / "data" / "partitions" / "mnist" / f"{key}.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"indices_sha256": "cd" * 32}))
    with pytest.raises(ri.ArchiveError, match=f"it trained on another draw of partition {key}"):
        ri.import_runs(archive(tmp_path / "a.tar.gz", stamped), config, tmp_path / "runs")
    manifest.write_text(json.dumps({"indices_sha256": "ab" * 32}))
    imported = ri.import_runs(archive(tmp_path / "a.tar.gz", stamped), config, tmp_path / "runs")
    assert (imported.total, imported.undigested) == (6, 0)


def test_runs_without_a_partition_digest_are_counted_and_said_not_passed_silently(config, tmp_path):
    """A stripped (or never written) digest cannot be told from an old run's: the import takes the
    run unchecked for its draw, but counts it, and the record says how many."""
    members = complete(config)
    stripped = dict(members)
    first = next(n for n in members if n.endswith("summary.json"))
    summary = json.loads(members[first])
    summary["provenance"] = {"partition_sha256": ""}
    stripped[first] = json.dumps(summary).encode()
    path = archive(tmp_path / "a.tar.gz", stripped)
    imported = ri.import_runs(path, config, tmp_path / "runs")
    assert (imported.total, imported.undigested) == (6, 6)
    assert ri.record(path, "config.yaml", config, imported)["without_partition_digest"] == 6


def test_a_run_file_given_twice_in_the_archive_is_refused(config, tmp_path):
    """tar keeps both members of one name; which one a reader takes is arbitrary: refused."""
    members = complete(config)
    name = next(n for n in members if n.endswith("summary.json"))
    path = tmp_path / "a.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for member, data in [*members.items(), (name, members[name])]:
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(ri.ArchiveError, match="holds this run file twice"):
        ri.import_runs(path, config, tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("forge, said", [
    (lambda text: None, "detections.csv missing, though the run's validators ran detectors"),
    (lambda text: b"any bytes at all\n", "detections.csv: the header must be"),
    (lambda text: text.replace(b",0.5,", b",high,", 1), "score a number"),
    (lambda text: text.replace(b"False,False\n", b"False,maybe\n", 1), "must be True or False"),
    (lambda text: text.replace(b",gaussian_difference,", b",made_up,", 1), "is not one the run ran"),
    (lambda text: text.replace(b"\n1,1,0,", b"\n1,1,99,", 1), "client 99 is not one of the run's 4"),
    (lambda text: text.replace(b"\n1,1,0,", b"\n7,1,0,", 1), "K=7, round 1 is no round of a K that trained"),
    (lambda text: text + b"1,1\n", "a row of another length than the header"),
    (lambda text: b"\xff" + text, "not UTF-8 CSV"),
])
def test_a_lazy_runs_detections_are_held_to_the_run_not_read_leniently(tmp_path, config, forge, said):
    """detections.csv (what the detection tables are made of, covered by no key) must be there exactly
    when the run's validators ran detectors on lazy clients, and each row be a round, client and
    detector of that run: any other bytes were imported and read leniently."""
    members = complete(config)
    name = next(n for n in members if n.endswith("detections.csv"))
    forged = forge(members[name])
    members = {n: d for n, d in members.items() if n != name} | ({name: forged} if forged is not None else {})
    with pytest.raises(ri.ArchiveError, match=said):
        ri.import_runs(archive(tmp_path / "a.tar.gz", members), config, tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


def test_an_unreadable_earlier_import_record_is_refused_before_any_run_is_written(tmp_path, config, capsys):
    """A part imported beside an imported.json that cannot be read: one line, and no run folder written
    (was: the part's runs written, then the refusal: half-applied)."""
    from bladefl.cli import main

    path = archive(tmp_path / "a.tar.gz", complete(config))
    results = tmp_path / "results"
    results.mkdir()
    (results / "imported.json").write_text("{not json")
    rc = main(["import-runs", "--archive", str(path), "--configfile", str(REPO / "config/config.yaml"),
               str(REPO / "config/smoke.yaml"), "--results-dir", str(results)])
    assert rc == 2 and "not an import record" in capsys.readouterr().err
    assert not (results / "runs").exists() and (results / "imported.json").read_text() == "{not json"


def test_replace_refuses_a_symlinked_run_folder_and_writes_nothing_through_it(tmp_path, config):
    """--replace over a run folder that is a link elsewhere: refused, the link's target untouched
    (was: the run's files written through the link)."""
    path = archive(tmp_path / "a.tar.gz", complete(config))
    ri.import_runs(path, config, tmp_path / "runs")
    run = next((tmp_path / "runs").rglob("seed~0"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    import shutil
    shutil.rmtree(run)
    run.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ri.ArchiveError, match="a symbolic link"):
        ri.import_runs(path, config, tmp_path / "runs", replace=True)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize("about, said", [
    ([1, 2], "a JSON object expected, got list"),
    ({"runs": 5}, "says runs=5, the archive holds 6"),
    ({"run_seeds": [3]}, "run_seeds [3], but the archive holds runs of seed 0"),
    ({"run_seeds": "0"}, "run_seeds must be a list"),
    ({"code_version": "abcdef1"}, "code_version 'abcdef1', but runs record '0.2.0+e17af3c'"),
])
def test_an_about_that_contradicts_its_runs_is_refused(tmp_path, config, about, said):
    """ABOUT.json is held to the runs it ships with (was: recorded as given)."""
    members = {}
    for name, data in complete(config).items():
        if name.endswith("summary.json"):
            summary = json.loads(data)
            summary["provenance"] = {"code_version": "0.2.0+e17af3c"}
            data = json.dumps(summary).encode()
        members[name] = data
    with pytest.raises(ri.ArchiveError, match="nothing imported") as err:
        ri.import_runs(archive(tmp_path / "a.tar.gz", members, about=about), config, tmp_path / "runs")
    assert said in str(err.value) and not (tmp_path / "runs").exists()
    agreeing = {"runs": 6, "run_seeds": [0], "code_version": "v0.2.0-3-ge17af3c"}
    imported = ri.import_runs(archive(tmp_path / "b.tar.gz", members, about=agreeing), config, tmp_path / "runs")
    assert imported.total == 6 and imported.about == agreeing


def test_an_archive_without_about_is_recorded_as_such(tmp_path, config):
    path = archive(tmp_path / "a.tar.gz", complete(config))
    imported = ri.import_runs(path, config, tmp_path / "runs")
    assert imported.about is None and ri.record(path, "c.yaml", config, imported)["about"] is None


def test_a_failed_move_puts_back_every_run_folder_and_leaves_no_stage(tmp_path, config, monkeypatch):
    """The runs are staged beside their place and renamed in; a rename that fails part-way puts
    the replaced folders back: the results folder is as it was, nothing half-imported."""
    path = archive(tmp_path / "a.tar.gz", complete(config))
    ri.import_runs(path, config, tmp_path / "runs")
    before = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in (tmp_path / "runs").rglob("*") if p.is_file()}
    marker = next((tmp_path / "runs").rglob("summary.json"))
    marker.write_bytes(b"{}")  # the old run's files, told apart from the archive's
    before[marker.relative_to(tmp_path).as_posix()] = b"{}"
    calls = {"n": 0}
    real = Path.rename

    def failing(self, target):
        calls["n"] += 1
        if calls["n"] == 7:
            raise OSError("disk full")
        return real(self, target)

    monkeypatch.setattr(Path, "rename", failing)
    with pytest.raises(OSError, match="disk full"):
        ri.import_runs(path, config, tmp_path / "runs", replace=True)
    monkeypatch.undo()
    after = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in (tmp_path / "runs").rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tar.gz", "runs"]


@pytest.mark.snakemake
def test_parts_imported_one_by_one_leave_no_training_job_to_plan(tmp_path, data_root, monkeypatch):
    """The documented re-derivation: each part of a design imported alone (a run seed each) with its reference
    optima (packed where they were trained, removed here as a stranger's clone lacks them), then the dry run of
    the whole design plans no run, group or reference job. The design's groups hold 5 seeds (the schema's
    default `seeds_per_job`, which the workflow applies and the import must too), more than a part holds, so
    each import marks its seed's whole-design group, whichever part came first."""
    import shutil

    import yaml

    from bladefl.experiments.bundles import optima_archive
    from conftest import copy_workflow, snakemake

    work = copy_workflow(tmp_path / "w")
    (work / "data/raw").mkdir(parents=True)
    (work / "data/raw/MNIST").symlink_to(data_root / "MNIST")
    seeds = list(range(7))  # two groups: seeds 0-4 and 5-6
    overlay = {"seeds": seeds, "partition": {"n": 64, "seeds": seeds}, "sweeps": [{"name": "fig3", "cells": [{}]}],
               "detection": {"detectors": [], "exclude_sweeps": []}, "results_dir": "results/parts"}
    (work / "parts.yaml").write_text(yaml.safe_dump(overlay))
    files = ["config/smoke.yaml", "parts.yaml"]
    made = snakemake(work, "run_inputs", "--cores", "1", "--configfile", *files, timeout=3600)
    assert made.returncode == 0, made.stderr[-2000:]
    monkeypatch.chdir(work)  # the config's folders are relative to the workflow's
    paths = [work / "config/config.yaml", *(work / f for f in files)]
    design = ri.read_config(paths)
    assert design["seeds_per_job"] == 5  # the schema's default, as Snakemake fills it
    assert optima_archive.pack(design, tmp_path / "optima.tar.xz") == len(seeds)
    shutil.rmtree(optima_archive.references_root(design))
    shutil.rmtree(work / ".snakemake/metadata")  # a clone that never trained them
    runs = work / "results/parts/runs" / design["engine"]
    for seed in (6, 0, 3, 5, 1, 4, 2):  # parts in any order
        part = ri.read_config(paths, [seed])
        assert optima_archive.install(tmp_path / "optima.tar.xz", part).written == 1
        ri.import_runs(archive(tmp_path / f"part{seed}.tar.gz", complete(part)), part, runs)
    plan = snakemake(work, "-n", "run_folders", "--configfile", *files, timeout=3600)
    assert plan.returncode == 0, plan.stderr[-2000:]
    planned = plan.stdout + plan.stderr
    jobs = re.findall(r"^(?:local)?rule (\w+):", planned, re.M)  # every job the dry run would run, local ones too
    assert not {"run_cell", "run_group", "reference"} & set(jobs), planned[-3000:]


KILLER = """
import os, pathlib, signal, sys
from bladefl.core import atomic
from bladefl.experiments.bundles import run_import as ri

where, at = sys.argv[3], int(sys.argv[4])
calls = [0]

def killing(real):
    def call(*args, **kwargs):
        if calls[0] == at:
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no finally: what a kill leaves
        calls[0] += 1
        return real(*args, **kwargs)
    return call

if where == "rename":
    pathlib.Path.rename = killing(pathlib.Path.rename)
else:
    atomic.write_bytes = killing(atomic.write_bytes)
repo = pathlib.Path(sys.argv[5])
config = ri.read_config([repo / "config/config.yaml", repo / "config/smoke.yaml"])
ri.import_runs(pathlib.Path(sys.argv[1]), config, pathlib.Path(sys.argv[2]))
"""


@pytest.mark.parametrize("where, at", [("stage", 2), ("rename", 0), ("rename", 2), ("rename", 5)])  # 6 runs
def test_an_import_killed_at_any_point_is_finished_by_the_same_import_again(tmp_path, config, where, at):
    """SIGKILL while staging (nothing moved yet) or while moving the runs in (some in place, the rest staged):
    the same import run again finishes it, saying so where it resumed, with every run in place byte for byte,
    nothing stale left beside them and every group marked (once: runs in place with no record, the same
    import refused as "exists already" and the staging folder left for good)."""
    import subprocess
    import sys

    members = complete(config)
    arch = archive(tmp_path / "a.tar.gz", members)
    runs = tmp_path / "res/runs" / config["engine"]
    killed = subprocess.run([sys.executable, "-c", KILLER, str(arch), str(runs), where, str(at), str(REPO)],
                            capture_output=True, text=True, timeout=HANG_S)
    assert killed.returncode == -9, killed.stderr[-2000:]
    imported = ri.import_runs(arch, config, runs)
    assert imported.resumed == (where == "rename") and imported.total == len(ri.expected_configs(config, "grid"))
    for name, data in members.items():
        assert (runs / name.removeprefix("grid/")).read_bytes() == data, name
    assert [p.name for p in runs.parent.iterdir() if p.name.startswith(".")] == []  # no stage left
    assert imported.marks > 0 and list((tmp_path / "res/groups" / config["engine"]).glob("*.done"))
    again = ri.import_runs(arch, config, runs, replace=True)  # a later import is a fresh one
    assert not again.resumed
