"""The workflow end to end on real data with the smoke config; interruption and restart;
the paper grid's dry run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from bladefl.experiments.plan.config_files import read_configs
from bladefl.experiments.plan.grid import expand, unique_cells
from bladefl.experiments.plan.workflow_config import detection_cells
from conftest import HANG_S, copy_workflow, dry_run_once, snakemake, venv_env

REPO = Path(__file__).resolve().parents[1]


def smoke_dir(tmp_path: Path, data_root: Path) -> Path:
    copy_workflow(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "raw").symlink_to(data_root.resolve(), target_is_directory=True)
    return tmp_path


@pytest.mark.slow
def test_smoke_workflow_summary_tables(smoke):
    work = smoke
    log = (work / "logs/smoke/fetch/mnist.log").read_text()
    assert "source registry: installed" in log and "all 4 files verified" in log
    indices = np.load(work / "data/partitions/mnist/classes4_N4_n64_seed0.npy")
    assert indices.shape == (4, 64) and len(np.unique(indices)) == 256
    manifest = json.loads((work / "data/partitions/mnist/classes4_N4_n64_seed0.json").read_text())
    assert (np.sort(np.asarray(manifest["label_histogram"]), axis=1)[:, -4:] == 16).all()

    # intermediate files (temp): the pages' parameter files are gone once the pages are made
    assert (work / "results/smoke/report/mnist/02_sweeps.html").is_file()
    assert not list((work / "results/smoke/report").glob("parameters/*/*.yaml"))

    table = pd.read_csv(work / "results/smoke/summary/mnist.csv")
    required = {"sweep", "cell", "K", "tau", "seed", "train_loss", "test_loss", "test_accuracy", "status"}
    assert required <= set(table.columns)
    assert set(table.sweep) == {"fig3", "beta", "lazy_ratio", "epsilon"}
    # t_sum = 30: beta=10 -> K 1..2 (tau 20, 5); beta=12 -> K 1..2 (tau 18, 3)
    beta = table[table.sweep == "beta"]
    assert sorted(zip(beta.value, beta.K, beta.tau, strict=True)) == [(10, 1, 20), (10, 2, 5), (12, 1, 18), (12, 2, 3)]
    assert (table.status == "ok").all() and table.test_accuracy.between(0, 1).all()
    # the base cell is shared by both sweeps: same numbers, one run
    shared = table[table.cell == "alpha~1_beta~10_N~4_eta~0.05_lazy~0_sigma2~0_eps~inf"]
    assert set(shared.sweep) == {"beta", "lazy_ratio", "epsilon"}
    assert shared.groupby("K").train_loss.nunique().eq(1).all()
    # 8 members in 5 unique cells, plus the lazy_ratio sweep's lazy cell run again with exclusion
    assert len(list((work / "results/smoke/runs/authors-code/mnist").iterdir())) == 6
    # the table is built from the runs' own outputs
    run = work / "results/smoke/runs/authors-code/mnist" / shared.cell.iloc[0] / "seed~0" / "rounds.csv"
    rounds = pd.read_csv(run)
    last = rounds[rounds.K == 2].iloc[-1]
    assert shared[shared.K == 2].train_loss.iloc[0] == pytest.approx(last.train_loss)

    optimum = pd.read_csv(work / "results/smoke/summary/mnist_optimum.csv")
    assert len(optimum) == 8 and {"K_star_loss", "K_star_accuracy", "training_time", "mining_time",
                                  "max_accuracy", "max_accuracy_std"} <= set(optimum.columns)
    assert (optimum.mining_time == optimum.K_star_loss
            * optimum.cell.str.extract(r"beta~(\d+)")[0].astype(float)).all()

    # the bound: constants measured in the bound sweep's runs only, a reference optimum, fits, gaps, K*
    bound = work / "results/smoke/bound/mnist"
    consts = pd.read_csv(bound / "constants.csv")
    assert len(consts) == 2 and (consts.L > 0).all() and (consts.delta > 0).all() and (consts.f_star > 0).all()
    lazy = consts[consts.cell.str.contains("lazy~0.25")]
    assert (lazy.M == 1).all() and (lazy.theta > 0).all() and (consts[consts.M == 0].theta == 0).all()
    assert (lazy.noise_norm > 0).all()
    other = pd.read_csv(work / "results/smoke/runs/authors-code/mnist"
                        / "alpha~1_beta~12_N~4_eta~0.05_lazy~0_sigma2~0_eps~inf/seed~0/rounds.csv")
    assert other.L_mean.isna().all()  # cells outside the bound sweep do not measure
    ref = json.loads((work / "results/smoke/reference/authors-code/mnist/classes4_N4_n64_seed0.json").read_text())
    assert consts.f_star.iloc[0] == pytest.approx(ref["f_star"])
    gaps = pd.read_csv(bound / "gaps.csv")
    merged = gaps.merge(table[table.sweep == "fig3"][["cell", "K", "train_loss"]], on=["cell", "K"])
    assert len(merged) == len(gaps) > 0 and np.allclose(merged.gap, merged.train_loss - ref["f_star"])
    assert {"eta_L_below_1", "bracket_measured_positive", "bracket_fit_positive"} <= set(gaps.columns)
    kstar = pd.read_csv(bound / "kstar.csv")
    assert {"K_closed_form", "K_exact_fit", "K_exact_measured", "K_experiment", "max_rel_gap_fit",
            "fit_above_everywhere"} <= set(kstar.columns)
    verdicts = pd.read_csv(work / "results/smoke/verdicts/mnist.csv")
    assert "K* falls as beta grows" in set(verdicts.claim)
    assert set(verdicts.basis) == {"bound", "experiment", "mathematics", "paper"}
    # the smoke grid has one seed: nothing on the runs is tested (the formula's statements need no runs);
    # a claim whose preconditions fail is not applicable, not tested
    runs = verdicts[verdicts.basis.isin(["bound", "experiment"])]
    assert set(runs.verdict) <= {"too few runs", "not applicable", "vacuous"}
    counted = runs[runs.role == "claim"]
    assert set(counted[counted.verdict == "not applicable"].claim) <= {"the bound is above the experiment at every K"}
    assert {"the bound is within 5% of the experiment at every K", "the bound is above the experiment at every K",
            "the bound's K* is the experiment's K*"} <= set(verdicts.claim)

    # lazy-client detection: every lazy run records it; the exclusion run leaves the flagged upload out
    lazy_cell = (work / "results/smoke/runs/authors-code/mnist"
                 / "alpha~1_beta~10_N~4_eta~0.05_lazy~0.25_sigma2~0.01_eps~inf")
    det = pd.read_csv(lazy_cell / "seed~0/detections.csv")
    assert set(det.detector) == {"gaussian_difference", "gaussian_update", "near_duplicate"} and not det.excluded.any()
    cut = pd.read_csv(f"{lazy_cell}_exclude~1/seed~0/rounds.csv")
    assert (cut.n_excluded == 1).all() and (cut.n_in_block == 3).all()  # the one lazy client, every round
    quality = pd.read_csv(work / "results/smoke/detection/mnist/quality.csv")
    assert set(quality.detector) == set(det.detector) and quality.auc.between(0, 1).all()
    exclusion = pd.read_csv(work / "results/smoke/detection/mnist/exclusion.csv")
    assert list(exclusion.condition) == ["no lazy clients", "lazy clients", "lazy, flagged excluded"]
    assert (work / "results/smoke/report/mnist/05_lazy.html").is_file()


@pytest.mark.slow
def test_killed_run_restarts_without_redoing_finished_jobs(tmp_path, data_root):
    work = smoke_dir(tmp_path, data_root)
    # the grid up to its summary table (the report's pages add nothing to what a restart must keep)
    args = ["snakemake", "results/smoke/summary/mnist.csv", "--cores", "1", "--configfile", "config/smoke.yaml"]
    proc = subprocess.Popen(args, cwd=work, env=venv_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    runs = work / "results/smoke/runs/authors-code/mnist"
    logs = work / "logs/smoke/run/authors-code/mnist"
    deadline = time.time() + 300
    # Wait until one run job is done and Snakemake has started the next (its log exists).
    while time.time() < deadline and not (list(runs.glob("*/seed~0/summary.json"))
                                          and len(list(logs.glob("*/seed~0.log"))) >= 2):
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_dirs = [p.parent for p in runs.glob("*/seed~0/summary.json")]  # both outputs of a job are written
    finished = {p: p.stat().st_mtime_ns for d in done_dirs for p in (d / "rounds.csv", d / "summary.json")}
    assert finished, "no job finished before the kill"
    assert not (work / "results/smoke/summary/mnist.csv").exists()
    for p in runs.rglob("*"):  # nothing half-written under a final name
        if p.name == "summary.json":
            json.loads(p.read_text())
        elif p.name == "rounds.csv":
            pd.read_csv(p)
    # SIGKILL (like a power loss) leaves Snakemake's lock behind: unlock, then restart.
    assert snakemake(work, "--unlock", "--configfile", "config/smoke.yaml").returncode == 0
    restart = snakemake(work, "results/smoke/summary/mnist.csv", "--cores", "2", "--configfile", "config/smoke.yaml",
                        "--rerun-incomplete")
    assert restart.returncode == 0, restart.stderr[-3000:]
    redone = [str(p.relative_to(work)) for p, t in finished.items() if p.stat().st_mtime_ns != t]
    assert not redone, f"finished jobs were redone: {redone}\n{restart.stderr[-3000:]}"
    assert len(pd.read_csv(work / "results/smoke/summary/mnist.csv")) == 16  # 8 sweep members x K 1..2
    assert not list(work.rglob("*.tmp"))


@pytest.mark.slow
def test_the_readmes_re_verify_command_passes_on_every_ledger_the_workflow_writes(smoke, capsys, tmp_path):
    """README: `bladefl chain verify <run>/chains/K5.json --summary <run>/summary.json` on any run
    folder the workflow writes (no models kept: no --store)."""
    from bladefl.cli import main

    ledgers = sorted((smoke / "results/smoke/runs").rglob("chains/K*.json"))
    assert len(ledgers) == 12  # 6 runs x K 1..2
    for ledger in ledgers:  # the keys derive from the seed: consistent, not valid, without an anchor
        assert main(["chain", "verify", str(ledger), "--summary", str(ledger.parents[1] / "summary.json")]) == 3
    assert capsys.readouterr().out.count("consistent, its tip is the run's") == 12
    anchor = tmp_path / "anchors.json"  # a record kept outside the run folders (a kept bundle keeps one)
    summaries = sorted(str(p) for p in (smoke / "results/smoke/runs").rglob("summary.json"))
    assert main(["chain", "anchor", "--summary", *summaries, "--out", str(anchor)]) == 0
    for ledger in ledgers:
        assert main(["chain", "verify", str(ledger), "--summary", str(ledger.parents[1] / "summary.json"),
                     "--anchor", str(anchor)]) == 0
    assert capsys.readouterr().out.count("chain valid, its tip is the run's") == 12


@pytest.mark.snakemake
def test_paper_grid_dry_run_is_complete_and_a_reading_kept_beside_is_never_kept_again(tmp_path):
    """The paper grid's DAG (about 2,000 jobs), here the calibrated 10-draw design's, builds and holds every
    run once (the plain paper grid's dry run is the SLURM profile's test). Its report reads the paper engine's
    kept bundle beside it (config readings_beside) and no `keep` job is planned: the beside bundle was once an
    input of the report, so the keep rule, whose output pattern it matches, was planned to write this run's
    tables over it. (Not timed: HANG_S only stops a hang.)"""
    configs = ["config/paper.yaml", "config/calibrated_part10.yaml"]
    work = copy_workflow(tmp_path, ("reference/paper-10draws", "reference/calibration-cpu"))
    proc = snakemake(work, "-n", "--configfile", *configs, "--quiet", "rules", timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = dict(line.split()[:2] for line in proc.stdout.splitlines() if len(line.split()) == 2)
    config = read_configs([REPO / c for c in configs], default=REPO / "config/config.yaml")
    cells = len(unique_cells(expand(config)))  # shared cells run once
    assert 20 <= cells < len(expand(config))
    extra = len(detection_cells(config))  # the lazy_ratio sweep's lazy cells again, with exclusion
    assert extra == 3
    assert int(counts["run_cell"]) == (cells + extra) * 2 * len(config["seeds"]) == 540  # x datasets x seeds
    assert counts["summarize"] == "2" and counts["report_index"] == "1"
    assert "keep" not in counts, counts


@pytest.mark.snakemake
def test_paper_grid_dry_run_with_the_slurm_profile_shows_the_batches(tmp_path_factory):
    """The SLURM profile's job grouping: the paper grid's 1,080 runs go to the scheduler as
    batches of 16 (group `grid`), each one cluster job; the dry run prints each batch (the dry run
    docs/hpc.md gives, run once for this test and the docs' test)."""
    import math

    proc = dry_run_once(tmp_path_factory, "-n", "--profile", "profiles/slurm", "--configfile", "config/paper.yaml")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    runs = int(re.search(r"^run_cell\s+(\d+)$", out, re.M).group(1))
    assert runs == 1080
    assert out.count("Group job grid") == math.ceil(runs / 16) == 68
    partitions = int(re.search(r"^partition\s+(\d+)$", out, re.M).group(1))
    assert out.count("Group job prep") == math.ceil(partitions / 40) == 4  # the 4 s jobs batched too
    assert "runtime=15" in out and "mem_mb=2000" in out  # a run's request follows its measured 1-3 min, 1.5 GB
    # docs/hpc.md's counts are this dry run's
    count = {rule: int(re.search(rf"^{rule}\s+(\d+)$", out, re.M).group(1))
             for rule in ("total", "partition", "reference")}
    doc = " ".join((REPO / "docs/hpc.md").read_text().split())
    batches = out.count("Group job grid")
    for said in (f"is {runs:,} grid jobs", f"plus {count['partition']} partitions",
                 f"{count['reference']} reference optima", f"lists {count['total']:,} jobs", f"as {batches} batches",
                 f"runs become {batches} cluster jobs"):
        assert said in doc, said


@pytest.mark.slow
def test_report_renders_without_measured_constants(smoke, tmp_path):
    """measure_constants: false drops the bound page; every other page renders (papermill reads its
    parameters from a YAML file, so an absent bound is null, not an empty command-line word). From a
    copy of the smoke without its bound, reference optima and report: the runs that measured the
    constants run again without measuring them, the others are kept."""
    import shutil

    work = tmp_path / "work"
    shutil.copytree(smoke, work, symlinks=True)
    for made in ("report", "bound", "reference", "verdicts", "figures", "tables"):
        shutil.rmtree(work / "results/smoke" / made)
    proc = snakemake(work, "--cores", "2", "--configfile", "config/smoke.yaml", "--config", "measure_constants=False",
                     "--notemp")  # keeps the pages' parameter files (temp) to read them
    assert proc.returncode == 0, proc.stderr[-3000:]
    pages = sorted(p.name for p in (work / "results/smoke/report/mnist").glob("*.html"))
    assert pages == ["00_verdicts.html", "01_data.html", "02_sweeps.html", "04_privacy.html", "05_lazy.html"]
    params = yaml.safe_load((work / "results/smoke/report/parameters/mnist/00_verdicts.yaml").read_text())
    assert params["verdicts"] == "results/smoke/verdicts/mnist.csv" and "gaps" not in params
    assert not (work / "results/smoke/bound").exists() and not (work / "results/smoke/reference").exists()
    verdicts = pd.read_csv(work / "results/smoke/verdicts/mnist.csv")
    assert set(verdicts.basis) <= {"experiment", "paper"}  # no bound claims without measured constants
    assert set(verdicts[verdicts.basis == "paper"].statement) <= {"tab4-mnist", "tab-training-time",
                                                                 "tab-repeated-cell",  # need no runs
                                                                 "tab2-tau-rule"}  # the alpha sweep's own runs
    assert "mnist/04_privacy.html" in (work / "results/smoke/report/index.html").read_text()


@pytest.mark.slow
def test_stale_runs_and_partitions_do_not_leak_into_the_report(smoke, tmp_path):
    """A run folder or partition left by an older grid is not a notebook input: the report lists
    exactly the grid's runs and partitions."""
    import shutil

    work = tmp_path / "work"
    shutil.copytree(smoke, work, symlinks=True)
    runs = work / "results/smoke/runs/authors-code/mnist"
    real = sorted(p.name for p in runs.iterdir())
    stale_cell = "alpha~9_beta~99_N~4_eta~0.5_lazy~0_sigma2~0_eps~inf"
    shutil.copytree(runs / real[0], runs / stale_cell)
    parts = work / "data/partitions/mnist"
    shutil.copy(parts / "classes4_N4_n64_seed0.json", parts / "classes4_N99_n64_seed0.json")
    targets = ["results/smoke/report/mnist/00_verdicts.html", "results/smoke/report/mnist/01_data.html"]
    proc = snakemake(work, "--cores", "2", "--configfile", "config/smoke.yaml", "--forcerun", *targets)
    assert proc.returncode == 0, proc.stderr[-3000:]
    prov = pd.read_csv(work / "results/smoke/tables/mnist/00_verdicts/provenance.csv")
    assert sorted(r.split("/")[0] for r in prov.run) == real
    assert stale_cell not in (work / "results/smoke/report/mnist/00_verdicts.html").read_text()
    page = (work / "results/smoke/report/mnist/01_data.html").read_text()
    page = re.sub(r"data:image/[a-z+]+;base64,[A-Za-z0-9+/=]+", "", page)
    assert "N99" not in page  # (an embedded image's base64 may spell anything)


@pytest.mark.slow
def test_result_files_are_readable_by_others_under_umask_022(tmp_path, smoke):
    from bladefl.core import atomic

    old = os.umask(0o022)
    try:
        atomic.write_text(tmp_path / "a.csv", "x\n")
        atomic.write_json(tmp_path / "b.json", {"x": 1})
        assert (tmp_path / "a.csv").stat().st_mode & 0o777 == 0o644
        assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o644
        os.umask(0o027)
        atomic.write_text(tmp_path / "c.csv", "x\n")
        assert (tmp_path / "c.csv").stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)
    if old == 0o022:  # the smoke workflow ran under this process's umask
        for rel in ("results/smoke/summary/mnist.csv", "results/smoke/report/index.html",
                    "results/smoke/report/mnist/02_sweeps.html",
                    "results/smoke/figures/mnist/02_sweeps/sweep_beta.png",
                    "data/partitions/mnist/classes4_N4_n64_seed0.npy"):
            assert (smoke / rel).stat().st_mode & 0o044 == 0o044, rel


@pytest.mark.slow
def test_grouped_jobs_write_the_same_runs_as_one_job_per_cell(smoke, tmp_path, data_root):
    """grouping: partition (the GPU profile's) runs every cell of a partition as one job and
    writes the same run folders, with the same numbers, as one job per cell."""
    work = smoke_dir(tmp_path, data_root)
    proc = snakemake(work, "--cores", "2", "results/smoke/summary/mnist.csv", "--configfile", "config/smoke.yaml",
                     "--config", "grouping=partition", "seeds_per_job=1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [p.name for p in (work / "logs/smoke/run_group/authors-code").iterdir()] == ["mnist_N4_block0.log"]
    keys = ["sweep", "cell", "K", "seed"]
    grouped = pd.read_csv(work / "results/smoke/summary/mnist.csv").sort_values(keys).reset_index(drop=True)
    single = pd.read_csv(smoke / "results/smoke/summary/mnist.csv").sort_values(keys).reset_index(drop=True)
    assert grouped[keys].equals(single[keys])
    for column in ("train_loss", "test_loss", "test_accuracy"):
        assert np.allclose(grouped[column], single[column], atol=1e-5, rtol=0), column
    # one wildcard rule run_group; each run taken to its place by run_cell, the group's folder and the
    # plans then removed (temp)
    assert sorted(p.name for p in (work / "logs/smoke/run/authors-code/mnist").iterdir()) == sorted(
        p.name for p in (smoke / "logs/smoke/run/authors-code/mnist").iterdir())
    logs = work / "logs/smoke/run/authors-code/mnist"
    assert all(log.read_text().startswith("took ") for log in logs.rglob("*.log"))
    assert not list((work / "results/smoke").glob("groups/*/*"))
    assert not [p for p in (work / "results/smoke/plans").rglob("*") if not p.is_dir()]
    # the run folders are the same output whichever grouping wrote them: one job per cell plans nothing
    dry = snakemake(work, "-n", "--cores", "2", "results/smoke/summary/mnist.csv", "--configfile", "config/smoke.yaml")
    assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout[-3000:]
    # the two fig3 cells (the bound's) record ||w - w*||, the others do not
    recorded = {p.parent.parent.name: pd.read_csv(p)["dist_ref"].notna().any()
                for p in (work / "results/smoke/runs/authors-code/mnist").glob("*/seed~0/rounds.csv")}
    assert sum(recorded.values()) == 2, recorded


@pytest.mark.slow
def test_runs_written_one_job_per_cell_are_not_planned_again_under_the_gpu_profiles_grouping(smoke, tmp_path):
    """The smoke's run folders (one job per cell) stay done under grouping: partition: no group job,
    no run planned again (the run folder is written by the same rule, command, inputs and params)."""
    import shutil

    work = tmp_path / "work"
    shutil.copytree(smoke, work, symlinks=True)
    dry = snakemake(work, "-n", "--cores", "2", "results/smoke/summary/mnist.csv", "--configfile", "config/smoke.yaml",
                    "--config", "grouping=partition", "seeds_per_job=1")
    assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout[-3000:]


@pytest.mark.slow
def test_changing_fetch_sources_replans_nothing_downstream_of_verified_files(tmp_path):
    """The sources cannot change a fetched file (each is verified against its SHA-256): data fetched
    by the workflow from one list of sources stays done under another, and so does all that follows."""
    work = copy_workflow(tmp_path)
    first = snakemake(work, "data/raw/MNIST/raw/train-images-idx3-ubyte", "--cores", "1", "--configfile",
                      "config/smoke.yaml", "--config", "fetch_sources=[registry]", timeout=HANG_S)
    assert first.returncode == 0, first.stderr[-3000:]
    dry = snakemake(work, "-n", "--cores", "1", "--configfile", "config/smoke.yaml", "--config",
                    "fetch_sources=[existing, torchvision, registry]", timeout=HANG_S)
    assert dry.returncode == 0, dry.stderr[-3000:]
    jobs = dry.stdout + dry.stderr
    assert "partition" in jobs and "fetch_data" not in jobs, jobs[-3000:]


@pytest.mark.slow
def test_a_killed_group_keeps_its_finished_runs_and_its_rerun_skips_them(tmp_path, data_root):
    """grouping: partition, the group job stopped midway: the rerun computes only the runs it had not
    finished (the group's folder is not the job's output, so Snakemake does not remove it), and every
    run reaches its place. The stop is made deterministic: the group's six runs end within a fraction
    of a second of each other, too close for a signal to land between them, so the last one's folder
    is taken by a file and its write fails; Snakemake treats a failed job's outputs as a killed one's."""
    work = smoke_dir(tmp_path, data_root)
    args = ["snakemake", "run_folders", "--cores", "2", "--configfile", "config/smoke.yaml", "--config",
            "grouping=partition", "seeds_per_job=1"]
    group = work / "results/smoke/groups/authors-code/mnist_N4_block0"
    last = group / "mnist/alpha~1_beta~10_N~4_eta~0.05_lazy~0.25_sigma2~0.01_eps~inf_exclude~1/seed~0"
    last.parent.mkdir(parents=True)
    last.write_text("in the way")
    stopped = subprocess.run(args, cwd=work, env=venv_env(), capture_output=True, text=True, timeout=HANG_S)
    assert stopped.returncode != 0
    finished = len(list(group.rglob("summary.json")))
    assert finished == 5, finished  # stopped mid-group, its finished runs kept
    last.unlink()
    rerun = subprocess.run(args, cwd=work, env=venv_env(), capture_output=True, text=True, timeout=HANG_S)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    log = (work / "logs/smoke/run_group/authors-code/mnist_N4_block0.log").read_text()
    assert f"{6 - finished} run folders written, {finished} already finished (of 6)" in log, log[-2000:]
    assert len(list((work / "results/smoke/runs/authors-code/mnist").rglob("summary.json"))) == 6
    assert not group.exists()  # each run moved to its place, the emptied folders removed


@pytest.mark.slow
def test_imported_runs_are_analysed_without_running_and_a_kept_bundle_renders_the_report(smoke, tmp_path, data_root):
    """The GPU script's archive of run tables, imported into a fresh copy, gives byte-identical
    analyses without running any run; `keep` bundles the report's inputs; `make reference-report`
    renders the report from the bundle alone, in a copy with no runs and no data, under a results
    folder other than results/ (every page reads the paths it is given)."""
    import sys
    import tarfile

    runs = smoke / "results/smoke/runs/authors-code"
    archive = tmp_path / "grid-tables.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:  # as scripts/gpu/run.sh packs them
        for f in sorted(runs.rglob("*")):
            if f.name in ("rounds.csv", "summary.json", "detections.csv") or f.parent.name == "chains":
                tar.add(f, arcname="grid/" + f.relative_to(runs).as_posix())
    (tmp_path / "work").mkdir()
    work = smoke_dir(tmp_path / "work", data_root)
    args = ("--cores", "2", "--configfile", "config/smoke.yaml")
    assert snakemake(work, "run_inputs", *args).returncode == 0
    proc = subprocess.run(["bladefl", "import-runs", "--archive", str(archive), "--configfile", "config/config.yaml",
                           "config/smoke.yaml"], cwd=work, env=venv_env(), capture_output=True, text=True)
    assert proc.returncode == 0 and "imported 6 run folders (mnist: 6)" in proc.stdout, proc.stderr
    assert "ledgers verified for 6" in proc.stdout  # the same checks as chain verify --summary, per run
    dry = snakemake(work, "-n", *args, "--quiet", "rules")
    jobs = {line.split()[0] for line in dry.stdout.splitlines() if re.match(r"^\w+\s+\d+$", line)}
    assert dry.returncode == 0 and "summarize" in jobs and "run_cell" not in jobs and "reference" not in jobs
    # the same runs as the first part (seed 0) of a 2-seed design, one group for both seeds: completing
    # the design plans seed 1's runs alone, none of the imported ones (their group's mark, written by
    # the import, is ancient)
    (work / "config/two.yaml").write_text("seeds: [0, 1]\nresults_dir: results/two\n")
    two = ("--configfile", "config/config.yaml", "config/smoke.yaml", "config/two.yaml")
    part = snakemake(work, "run_inputs", "--cores", "2", "--configfile", *two[2:], "--config", "run_seeds=[0]")
    assert part.returncode == 0, part.stderr[-2000:]  # as make import-runs SEEDS=0 does first
    proc = subprocess.run(["bladefl", "import-runs", "--archive", str(archive), *two, "--seeds", "0"], cwd=work,
                          env=venv_env(), capture_output=True, text=True)
    assert proc.returncode == 0 and "imported 6 run folders" in proc.stdout, proc.stderr
    dry = snakemake(work, "-n", "--cores", "2", "--configfile", *two[2:], "--quiet", "rules")
    counts = dict(line.split() for line in dry.stdout.splitlines() if re.match(r"^\w+\s+\d+$", line))
    assert dry.returncode == 0 and counts.get("run_cell") == "6", dry.stdout[-3000:]
    tables = ("summary/mnist.csv", "summary/mnist_optimum.csv", "verdicts/mnist.csv", "bound/mnist/fit.csv",
              "detection/mnist/quality.csv", "tables/mnist_paper_comparison.csv")
    # the analyses (the report is rendered once, below, from the kept bundle)
    assert snakemake(work, *(f"results/smoke/{t}" for t in tables), *args).returncode == 0
    for table in tables:
        assert (work / "results/smoke" / table).read_bytes() == (smoke / "results/smoke" / table).read_bytes(), table

    proc = snakemake(work, "reference/smoke/MANIFEST.json", *args, "--config", "keep_archive=True")
    assert proc.returncode == 0, proc.stderr[-2000:]
    manifest = json.loads((work / "reference/smoke/MANIFEST.json").read_text())
    assert (work / "reference/smoke/MANIFEST.json").stat().st_mode & 0o222 == 0  # protected: keep never overwrites
    assert manifest["about"]["imported"]["runs"] == {"mnist": 6} and manifest["about"]["runs"] == 6
    assert "results/verdicts/mnist.csv" in manifest["files"]
    assert not any(f.startswith("results/runs/") for f in manifest["files"])
    # the bundle is an anchor: a run's ledger verifies as valid against it, not only as consistent
    from bladefl.cli import main

    ledger = next((work / "results/smoke/runs").rglob("chains/K2.json"))
    assert main(["chain", "verify", str(ledger), "--summary", str(ledger.parents[1] / "summary.json"), "--anchor",
                 str(work / "reference/smoke/results/anchors/mnist.json")]) == 0
    # the archive the runs came from is kept with them, and imports again from the bundle
    assert manifest["files"]["runs/grid-tables.tar.gz"]["sha256"] == manifest["about"]["imported"]["sha256"]
    proc = subprocess.run(["bladefl", "import-runs", "--archive", "reference/smoke/runs/grid-tables.tar.gz",
                           "--configfile", "config/config.yaml", "config/smoke.yaml", "--results-dir", "again"],
                          cwd=work, env=venv_env(), capture_output=True, text=True)
    assert proc.returncode == 0 and "imported 6 run folders (mnist: 6)" in proc.stdout, proc.stderr

    (tmp_path / "other").mkdir()
    other = copy_workflow(tmp_path / "other", extra=("Makefile",))  # as a user has it
    (other / "reference").mkdir()
    (work / "reference/smoke").rename(other / "reference/smoke")
    # a stranger's bundle, consistent with its own manifest, with markup in its provenance table
    import pandas as pd

    from bladefl.experiments.bundles import kept_results

    table = pd.read_csv(other / "reference/smoke/results/provenance/mnist.csv")
    table["device"], table["host"] = "<img src=x onerror=alert(1)>", "<script>document.title='x'</script>"
    kept_results.replace_files(other / "reference/smoke", {"results/provenance/mnist.csv": table.to_csv(index=False)},
                               {"by": "a stranger"})
    proc = subprocess.run(["make", "reference-report", "REF=reference/smoke", "CORES=2", f"VENV={sys.prefix}",
                           "-o", f"{sys.prefix}/.installed-stamp"], cwd=other, env=venv_env(), capture_output=True,
                          text=True, timeout=HANG_S)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    kept = other / "results/kept/smoke"
    assert "mnist/00_verdicts.html" in (kept / "report/index.html").read_text()
    assert not (other / "results/runs").exists() and not (kept / "runs").exists()  # nothing ran
    assert not (other / "logs").exists() and (kept / "logs/report/index.log").is_file()
    shown = [p.read_text() for p in (kept / "report").rglob("*.html")]
    assert not any("<img src=x" in s or "<script>document" in s for s in shown)  # markup shown as text, never run
    assert any("&lt;img src=x onerror=alert(1)&gt;" in s for s in shown)
    for page in ("00_verdicts", "02_sweeps", "03_bound", "05_lazy"):
        ours = sorted(f for f in (kept / "tables/mnist" / page).glob("*.csv") if f.stem != "provenance")
        theirs = smoke / "results/smoke/tables/mnist" / page  # the pages rendered from the runs themselves
        assert ours and all(f.read_bytes() == (theirs / f.name).read_bytes() for f in ours)


@pytest.mark.snakemake
def test_parsing_and_a_dry_run_need_no_torch(tmp_path):
    """The workflow parses and plans with a `torch` that cannot be imported (a stand-in package that
    raises on import comes first on the path): checking the config and planning the jobs use only
    the library's light part, so the submit host and a dry run do not pay for loading torch."""
    fake = tmp_path / "no_torch" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('torch imported while parsing the workflow')\n")
    (tmp_path / "work").mkdir()
    work = copy_workflow(tmp_path / "work")
    env = {**venv_env(), "PYTHONPATH": os.pathsep.join(filter(None, [str(fake.parent), os.environ.get("PYTHONPATH")]))}
    for configs in (["config/config.yaml"], ["config/config.yaml", "config/paper.yaml"]):
        proc = subprocess.run(["snakemake", "-n", "--quiet", "rules", "--configfile", *configs], cwd=work, env=env,
                              capture_output=True, text=True, timeout=HANG_S)
        assert proc.returncode == 0, (configs, proc.stderr[-2000:])


@pytest.mark.slow
def test_the_smoke_writes_only_into_its_own_folders(smoke):
    """Smoke and default results never mix: the smoke grid's results, logs and benchmarks all lie in
    folders of its own (config/smoke.yaml), so a default run's `results/` tables, report and
    benchmarks are never replaced by one-seed ones; and the configs' folders are pairwise apart."""
    from bladefl.experiments.plan.config_files import read_configs

    for top in ("results", "logs", "benchmarks"):
        assert sorted(p.name for p in (smoke / top).iterdir()) == ["smoke"], top
    folders = {}
    for name in ("config.yaml", "smoke.yaml", "paper.yaml", "calibration.yaml", "calibration_smoke.yaml"):
        config = read_configs([REPO / "config" / name], default=REPO / "config" / "config.yaml")
        folders[name] = tuple(config.get(k, k.removesuffix("_dir")) for k in ("results_dir", "logs_dir",
                                                                              "benchmarks_dir"))
    assert len(set(folders.values())) == len(folders), folders


@pytest.mark.slow
def test_the_smoke_runs_as_a_snakemake_module_from_another_folder(smoke, tmp_path, data_root):
    """`module bladefl: snakefile: <this checkout>/Snakefile` with `use rule * from bladefl`, from a
    folder with none of the workflow's files: every file it reads from its own tree (engines, the
    paper's values and statements, notebooks) comes from there, every file it writes lands here.
    Once: "engine must be one of []", then missing config/paper_*.yaml and notebooks/. From the smoke's
    data and runs less one run and the report: that run (its engine), the analyses and every page run."""
    import shutil

    (tmp_path / "Snakefile").write_text(
        f'configfile: "{REPO}/config/config.yaml"\n\n\nmodule bladefl:\n    snakefile:\n'
        f'        "{REPO}/workflow/Snakefile"\n'
        "    config:\n        config\n\n\nuse rule * from bladefl\n")
    shutil.copytree(smoke / "data/partitions", tmp_path / "data/partitions", symlinks=True)
    (tmp_path / "data" / "raw").symlink_to(data_root.resolve(), target_is_directory=True)
    shutil.copytree(smoke / "results/smoke/runs", tmp_path / "results/smoke/runs", symlinks=True)
    shutil.copytree(smoke / "results/smoke/reference", tmp_path / "results/smoke/reference", symlinks=True)
    from bladefl.experiments.bundles.run_import import read_config
    from bladefl.experiments.runs import run_source

    runs = tmp_path / "results/smoke/runs/authors-code"
    kept = [(p.parent.parent.name, p.parent.name, 0) for p in runs.glob("mnist/*/seed~0")]
    # the group's mark, as an import leaves it: the run left out trains in its own job, the others stay
    run_source.mark_imported_groups(read_config([REPO / "config/config.yaml", REPO / "config/smoke.yaml"]), runs, kept)
    shutil.rmtree(next(runs.glob("mnist/*/seed~0")))  # one run computed again, here (its engine read there)
    before = sorted(p.name for p in REPO.iterdir())
    proc = subprocess.run(["snakemake", "--cores", "2", "--configfile", str(REPO / "config/smoke.yaml")],
                          cwd=tmp_path, env=venv_env(), capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert (tmp_path / "results/smoke/report/index.html").is_file()
    assert len(list((tmp_path / "results/smoke/runs").rglob("summary.json"))) == 6
    assert proc.stdout.count("rule run_cell:") + proc.stderr.count("rule run_cell:") == 1, proc.stderr[-3000:]
    assert sorted(p.name for p in REPO.iterdir()) == before  # nothing written into the workflow's own tree


@pytest.mark.snakemake
def test_the_catalogs_test_folder_plans_the_smoke_grid(tmp_path):
    """`snakemake --directory .test` (the Snakemake catalog's convention) plans the smoke grid from
    .test/config/config.yaml, its files read from the workflow's tree and written under .test/."""
    work = copy_workflow(tmp_path)
    proc = snakemake(work, "-n", "--directory", ".test", "--cores", "2", "--quiet", "rules", timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.search(r"^run_cell\s+6$", proc.stdout + proc.stderr, re.M)

