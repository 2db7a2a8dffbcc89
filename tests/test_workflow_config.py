"""Bad workflow configs are rejected at parse time (before any job), naming the field."""

from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from bladefl.experiments.plan.config_checks import check
from bladefl.experiments.plan.workflow_config import ConfigError
from conftest import HANG_S, copy_workflow, snakemake

REPO = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def dry_run(workdir: Path, config: dict) -> subprocess.CompletedProcess:
    (workdir / "bad.yaml").write_text(yaml.safe_dump(config))
    return snakemake(workdir, "-n", "--cores", "1", "--configfile", "bad.yaml", timeout=HANG_S)


def with_change(path: list, value) -> dict:
    config = copy.deepcopy(BASE)
    node = config
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return config


@pytest.mark.parametrize(
    "path, value, message",
    [
        (["datasets"], ["svhn"], "svhn"),
        (["engine"], "fast", "engine must be one of ['authors-code', 'calibrated', 'calibrated-fashion_mnist', "
                             "'calibrated-mnist', 'paper']"),
        (["partition", "scheme"], "random", "random"),
        (["partition", "n"], 513, "partition.n must be divisible by partition.shards_per_client=2"),
        (["partition", "n"], 2600, "partition.N * partition.n must be at most the training set size 60000"),
        (["sweeps", 3, "values"], [10, -15], "-15"),
        (["sweeps", 1, "values"], [1, 2, 200], "no feasible K"),
        (["sweeps", 5, "values"], [0.0, 1.5], "1.5"),
        (["sweeps", 4, "vary"], "gamma", "gamma"),
        (["base", "eta"], 0, "eta"),
        # M = lazy_ratio x N lazy clients, once silently rounded (0, 0, 1, 1 for the M/N sweep)
        (["base", "N"], 3, "sweeps[lazy_ratio]: lazy_ratio 0.1 x N 3 = 0.3 lazy clients (N from base.N"),
    ],
)
def test_snakemake_rejects_bad_config_before_any_job(tmp_path, path, value, message):
    proc = dry_run(copy_workflow(tmp_path), with_change(path, value))
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert message in out, out[-2000:]
    assert not (tmp_path / "data").exists() and not (tmp_path / "logs").exists()


@pytest.mark.snakemake
def test_a_config_written_with_the_old_key_profile_is_read_as_engine_with_a_note(tmp_path):
    """`profile` (now `engine`, so as not to be taken for Snakemake's --profile) in an old overlay
    still selects the engine, over the default's `engine: paper`; the user is told once. Readings'
    old key and axis likewise."""
    from bladefl.experiments.plan.config_files import read_configs, renamed_keys

    work = copy_workflow(tmp_path)
    (work / "old.yaml").write_text("profile: authors-code\n")
    proc = snakemake(work, "-n", "--cores", "1", "--configfile", "old.yaml", timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    assert out.count("note: config key 'profile' is now 'engine' (config/engines/): read as engine: authors-code") == 1
    assert "results/runs/authors-code/" in out and "results/runs/paper/" not in out
    assert read_configs([work / "old.yaml"], default=work / "config/config.yaml")["engine"] == "authors-code"
    renamed, notes = renamed_keys({"readings": {"a": {"axis": "profile", "profile": "authors-code"}}})
    assert renamed["readings"]["a"] == {"axis": "engine", "engine": "authors-code"} and len(notes) == 1


def test_library_check_lists_every_problem(monkeypatch):
    monkeypatch.chdir(REPO)
    bad = copy.deepcopy(BASE)
    bad["datasets"] = ["mnist", "svhn"]
    bad["sweeps"][3]["values"] = [10, 200]
    with pytest.raises(ConfigError) as info:
        check(bad)
    msg = str(info.value)
    assert "svhn" in msg and "N must be in 1..117 for n=512 (got 200)" in msg


def test_default_and_paper_configs_are_valid(monkeypatch):
    from bladefl.experiments.plan.config_files import read_configs

    monkeypatch.chdir(REPO)
    for name in ("config.yaml", "paper.yaml", "smoke.yaml"):
        check(read_configs([REPO / "config" / name]))  # on top of config/config.yaml, as Snakemake reads it


def test_paper_config_is_an_overlay_on_the_default(monkeypatch):
    """config/paper.yaml changes the seeds, draws and output folders only; everything else is config/config.yaml's
    (one place to change a sweep), and the layers are read as Snakemake reads them."""
    from bladefl.experiments.plan.config_files import layers, read_configs

    monkeypatch.chdir(REPO)
    overlay = yaml.safe_load((REPO / "config/paper.yaml").read_text())
    assert set(overlay) == {"seeds", "partition", "results_dir", "logs_dir", "benchmarks_dir"}
    assert set(overlay["partition"]) == {"seeds"} and overlay["results_dir"] == "results/paper"  # runs kept apart
    default, paper = read_configs(["config/config.yaml"]), read_configs(["config/paper.yaml"])
    assert paper["sweeps"] == default["sweeps"] and paper["partition"]["n"] == default["partition"]["n"]
    assert len(paper["seeds"]) == 20 and paper["partition"]["seeds"] == paper["seeds"]  # seed i on draw i
    assert layers(["config/config.yaml", "config/paper.yaml"]) == layers(["config/paper.yaml"])


def test_a_config_layer_with_a_repeated_key_or_no_mapping_is_refused(tmp_path):
    from bladefl.experiments.plan.config_files import read_configs

    (tmp_path / "twice.yaml").write_text("seeds: [0]\nseeds: [1]\n")
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(ConfigError, match=r"twice.yaml: key 'seeds' given twice \(lines 1 and 2\)"):
        read_configs([tmp_path / "twice.yaml"], default=None)
    with pytest.raises(ConfigError, match="list.yaml: not a mapping"):
        read_configs([tmp_path / "list.yaml"], default=None)


def test_default_and_paper_grids_run_each_sweep_at_the_papers_settings():

    from bladefl.experiments.plan.config_files import read_configs
    from bladefl.experiments.plan.grid import expand

    for name in ("config/config.yaml", "config/paper.yaml"):
        config = read_configs([REPO / name], default=REPO / "config/config.yaml")
        members = expand(config)
        by_sweep = {}
        for m in members:
            by_sweep.setdefault(m.sweep, []).append(m.cell)
        assert {c.beta for c in by_sweep["eta"]} == {6}, name  # Table V's values are multiples of 6
        assert {c.beta for c in by_sweep["alpha"]} == {6} and {c.beta for c in by_sweep["N"]} == {6}
        assert {c.sigma2 for c in by_sweep["lazy_ratio"] if c.lazy_ratio > 0} == {0.01}
        assert {c.lazy_ratio for c in by_sweep["sigma2"]} == {0.2}
        for sweep in config["sweeps"]:
            assert sweep.get("source"), (name, sweep["name"])  # stated (where) or inferred (from what)
    assert len(read_configs([REPO / "config/paper.yaml"], default=REPO / "config/config.yaml")["seeds"]) == 20


def test_every_value_a_job_will_receive_is_checked_when_the_workflow_is_parsed():
    """A reading's run-config value out of range, an unknown key, and a nan in a sweep: refused
    at parse time with the reading or cell named, as the job itself would refuse them."""
    from bladefl.experiments.plan import config_checks
    from bladefl.experiments.plan import workflow_config as wc

    sens = yaml.safe_load((REPO / "config/sensitivity_smoke.yaml").read_text())
    config_checks.check(sens)
    name = next(iter(sens["readings"]))
    bad = copy.deepcopy(sens)
    bad["readings"][name].setdefault("set", {})["chain.difficulty_bits"] = 64
    with pytest.raises(wc.ConfigError, match=rf"readings\.{name}: chain\.difficulty_bits must be an integer in 0"):
        config_checks.check(bad)
    bad = copy.deepcopy(sens)
    bad["readings"][name].setdefault("set", {})["train.momentum"] = 0.9
    with pytest.raises(wc.ConfigError, match=rf"readings\.{name}: .*unknown field"):
        config_checks.check(bad)
    grid = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    grid = copy.deepcopy(grid)
    grid["base"]["sigma2"] = float("nan")
    grid["base"]["lazy_ratio"] = 0.25
    with pytest.raises(wc.ConfigError, match=r"sigma2"):
        config_checks.check(grid)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda c: c["sweeps"].append({**c["sweeps"][2], "values": [6, 8]}),
         "sweeps: each name once (got ['beta'] more than once"),
        (lambda c: c["sweeps"][2].update(values=[6, 8, 8]), "sweeps[beta].values: each value once (got [8]"),
        (lambda c: c["base"].update(eta=50), "base.eta must be a finite number in (0, 1] (got 50)"),
        (lambda c: c["partition"].update(n=64000), "partition.n must be at most the training set size 60000"),
    ],
    ids=["duplicate sweep name", "duplicate sweep value", "eta 50", "n 64000"],
)
def test_config_mistakes_are_one_line_each_before_any_job(monkeypatch, change, message):
    """Each mistake once, naming the field: not merged sweeps, not a value run twice, not a step
    size of 50, not "N must be in 1..0" once per cell."""
    monkeypatch.chdir(REPO)
    bad = copy.deepcopy(BASE)
    change(bad)
    with pytest.raises(ConfigError) as info:
        check(bad)
    assert message in str(info.value) and str(info.value).count(message) == 1
    assert len(str(info.value).splitlines()) <= 12  # one screen


def test_a_typo_in_a_key_says_which_key_and_what_was_meant(tmp_path):
    """An unknown key: one line naming it, the key it was probably meant to be and the keys allowed,
    instead of the whole schema."""
    from bladefl.experiments.plan.config_checks import schema_errors

    bad = {**copy.deepcopy(BASE), "tsum": 100}
    lines = schema_errors(bad, REPO / "workflow" / "schemas" / "config.schema.yaml")
    assert len(lines) == 1 and lines[0].startswith("(the top level): unknown key 'tsum' (did you mean 't_sum'?)")
    proc = dry_run(copy_workflow(tmp_path), bad)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "unknown key 'tsum' (did you mean 't_sum'?)" in out
    assert len(out.splitlines()) < 40, out  # one screen, not the 360-line schema


@pytest.mark.parametrize(
    "change, message",
    [
        ({"results_dir": ""}, "results_dir: '' does not match"),
        ({"logs_dir": "  "}, "logs_dir: '  ' does not match"),
        ({"engine": "../../config/engines/authors-code"},
         "engine: '../../config/engines/authors-code' does not match"),
        ({"t_sum": float("inf")}, "t_sum: inf is greater than the maximum"),
        ({"partition": {**BASE["partition"], "scheme": "dirichlet", "dirichlet_alpha": float("inf")}},
         "partition.dirichlet_alpha: inf is greater than the maximum"),
    ],
    ids=["empty results_dir", "blank logs_dir", "engine as a path", "infinite t_sum", "infinite dirichlet_alpha"],
)
def test_values_that_would_misplace_or_break_the_runs_are_refused_by_the_schema(change, message):
    """Outputs at `/runs/...` from an empty results_dir, run folders planned under config/ from a
    engine given as a path, an infinite budget or concentration: each refused by name."""
    from bladefl.experiments.plan.config_checks import schema_errors

    lines = schema_errors({**copy.deepcopy(BASE), **change}, REPO / "workflow" / "schemas" / "config.schema.yaml")
    assert any(line.startswith(message) for line in lines), lines


def test_a_nan_budget_is_refused_by_the_library_check(monkeypatch):
    """NaN passes JSON schema comparisons (every comparison with NaN is false): the check names it."""
    monkeypatch.chdir(REPO)
    with pytest.raises(ConfigError, match=r"t_sum must be a number in \(0, 1e\+06\] \(got nan\)"):
        check({**copy.deepcopy(BASE), "t_sum": float("nan")})


@pytest.mark.snakemake
def test_an_integer_snakemake_would_read_as_another_number_is_refused_before_any_job(tmp_path):
    """Snakemake reads a config file as YAML 1.1: `017` is 15, `0x10` 16, `1_000` 1000. The workflow
    rereads each config file strictly and names the first such number."""
    work = copy_workflow(tmp_path)
    (work / "bad.yaml").write_text("seeds: [0, 017]\n")
    proc = snakemake(work, "-n", "--cores", "1", "--configfile", "bad.yaml", timeout=HANG_S)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "bad.yaml: seeds[1]: '017' is not a plain decimal integer" in out, out[-2000:]
    assert not (work / "data").exists() and not (work / "logs").exists()


def test_the_engines_model_size_is_what_its_noise_norms_are_over():
    """P of the engine's model (784-h-10): the paper's 784-256-10 and the authors' code's 784-32-10."""
    from bladefl.experiments.plan.workflow_config import model_size

    assert model_size({"engine": "paper"}) == 784 * 256 + 256 + 256 * 10 + 10 == 203_530
    assert model_size({"engine": "authors-code"}) == 784 * 32 + 32 + 32 * 10 + 10 == 25_450


def test_the_catalogs_test_config_is_the_smoke_grid():
    """.test/config/config.yaml (the Snakemake catalog's `snakemake --directory .test`) is
    config/config.yaml with config/smoke.yaml over it, whole: it never drifts from the pair."""
    from bladefl.experiments.plan.config_files import read_configs

    written = yaml.safe_load((REPO / ".test/config/config.yaml").read_text())
    assert written == read_configs([REPO / "config/smoke.yaml"], default=REPO / "config/config.yaml")


@pytest.mark.parametrize("field, value, said", [
    ("results_dir", "r$(touch PWNED)", "no control character or shell metacharacter"),
    ("data_dir", "d;touch PWNED;", "no control character or shell metacharacter"),
    ("logs_dir", "logs\nsnakefile: evil", "no control character or shell metacharacter"),
    ("results_dir", "results\u2028x", "no control character or shell metacharacter"),
    ("benchmarks_dir", "/", "lies outside the working folder"),
    ("results_dir", "../../elsewhere", "lies outside the working folder"),
    ("calibration_bundle", "reference/`id`", "no control character or shell metacharacter"),
])
def test_a_config_path_is_checked_as_a_path_before_any_job(monkeypatch, field, value, said):
    """Issue 61, item 2: config paths reached the rules' shell commands unquoted (`results_dir: r$(touch PWNED)`
    created PWNED when a job ran); now quoted, and refused as paths before any job."""
    monkeypatch.chdir(REPO)
    with pytest.raises(ConfigError, match=re.escape(f"{field}") + ".*" + re.escape(said)):
        check({**copy.deepcopy(BASE), field: value})
    check({**copy.deepcopy(BASE), "benchmarks_dir": "/", "paths_outside_workdir": True})  # when the user says so


@pytest.mark.snakemake
def test_the_workflow_refuses_a_config_path_that_would_run_code_before_any_job(tmp_path):
    from conftest import copy_workflow, snakemake

    work = copy_workflow(tmp_path)
    proc = snakemake(work, "-n", "--configfile", "config/smoke.yaml", "--config", "results_dir=r$(touch PWNED)")
    assert proc.returncode != 0 and "shell metacharacter" in proc.stdout + proc.stderr
    assert not list(work.rglob("PWNED")) and not (tmp_path / "PWNED").exists()
