"""Each rule's jobs sized from the workflow's own benchmark files (`bladefl resources`): the largest
measured wall and peak memory times a margin, as a Snakemake workflow profile."""

from __future__ import annotations

import json

import pytest
import yaml

from bladefl.cli import main
from bladefl.experiments.runs import job_resources as jr
from conftest import HANG_S

REPO = __import__("pathlib").Path(__file__).resolve().parents[1]
HEAD = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def bench(path, seconds, rss):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEAD + f"{seconds}\t0:00:00\t{rss}\t1\t1\t1\t0\t0\t50\t1\n")


@pytest.fixture
def benchmarks(tmp_path):
    root = tmp_path / "benchmarks"
    bench(root / "run_cell/paper/mnist/c1/seed~0.tsv", 100.0, 900.0)
    bench(root / "run_cell/paper/mnist/c2/seed~0.tsv", 250.5, 1500.0)
    bench(root / "notebook/mnist/02_sweeps.tsv", 6.0, "NA")
    bench(root / "members/members.tsv", 0.2, "NA")
    bench(root / "summarize.tsv", 3.0, 400.0)
    return root


def test_each_rules_largest_need_times_the_margin(benchmarks):
    found = {n.rule: n for n in jr.needs(benchmarks)}
    assert set(found) == {"run_cell", "notebook", "members", "summarize"}
    assert (found["run_cell"].jobs, found["run_cell"].seconds, found["run_cell"].mem_mb) == (2, 250.5, 1500.0)
    assert found["notebook"].mem_mb is None  # too short to be sampled: no memory asked for
    sized = jr.profile(list(found.values()), margin=1.5)["set-resources"]
    assert sized["run_cell"] == {"runtime": 7, "mem_mb": 2250}  # ceil(250.5 x 1.5 / 60), ceil(1500 x 1.5)
    assert sized["notebook"] == {"runtime": 1}
    assert sized["summarize"] == {"runtime": 1, "mem_mb": 600}
    assert sized["members"] == {"runtime": 1}


def test_the_command_writes_a_workflow_profile_that_reads_back(benchmarks, tmp_path, capsys):
    assert main(["resources", "--benchmarks", str(benchmarks), "--out", str(tmp_path / "measured")]) == 0
    profile = yaml.safe_load((tmp_path / "measured/config.yaml").read_text())
    assert profile["set-resources"]["run_cell"] == {"runtime": 7, "mem_mb": 2250}
    assert "4 rules from 5 jobs" in capsys.readouterr().out


@pytest.mark.parametrize("content, said", [
    ("", "no measurement"),
    ("a\tb\n1\t2\n", "columns ['s', 'max_rss'] missing"),
    (HEAD + "x\t0\t1\t1\t1\t1\t0\t0\t1\t1\n", "s must be a plain decimal number or NA"),
    (HEAD + "-1\t0\t1\t1\t1\t1\t0\t0\t1\t1\n", "s must be a plain decimal number"),
    (HEAD + "nan\t0\t1\t1\t1\t1\t0\t0\t1\t1\n", "s must be a plain decimal number"),
    (HEAD + "1_000\t0\t1\t1\t1\t1\t0\t0\t1\t1\n", "s must be a plain decimal number"),
    (HEAD + "\u0661\u0662\t0\t1\t1\t1\t1\t0\t0\t1\t1\n", "s must be a plain decimal number"),  # Arabic-Indic 12
    (HEAD + "9" * 300 + "\t0\t1\t1\t1\t1\t0\t0\t1\t1\n", "s must be a plain decimal number"),
    (HEAD + "1e9\t0\t1\t1\t1\t1\t0\t0\t1\t1\n", "more than any job measures"),
    ("max_rss\ts\n1\n", "a line without its s column"),
])
def test_a_file_that_is_no_benchmark_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, content, said):
    (tmp_path / "b/rule").mkdir(parents=True)
    (tmp_path / "b/rule/x.tsv").write_text(content)
    assert main(["resources", "--benchmarks", str(tmp_path / "b"), "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "p").exists()


def test_no_benchmarks_and_a_margin_below_one_are_refused(tmp_path, benchmarks, capsys):
    assert main(["resources", "--benchmarks", str(tmp_path / "none"), "--out", str(tmp_path / "p")]) == 2
    assert "no such folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["resources", "--benchmarks", str(tmp_path / "empty"), "--out", str(tmp_path / "p")]) == 2
    assert "no benchmark files" in capsys.readouterr().err
    for margin in ("0.5", "1e308", "nan"):
        assert main(["resources", "--benchmarks", str(benchmarks), "--out", str(tmp_path / "p"), "--margin",
                     margin]) == 2
        assert "--margin must be a number in 1..100" in capsys.readouterr().err and not (tmp_path / "p").exists()
    assert main(["resources", "--benchmarks", str(benchmarks), "--out", ""]) == 2
    assert "--out: an empty value" in capsys.readouterr().err


@pytest.mark.parametrize("name", ['x\nsnakefile: "evil.smk"\ny', "run cell", "1rule", "a:b", "", "x" * 200,
                                  "r\u00e9gle"])
def test_a_folder_name_that_is_no_rule_name_never_reaches_the_profile(tmp_path, capsys, name):
    """A stranger's benchmark folder named with a newline once added top-level keys (``snakefile:``) to
    the generated profile, and the next dry run ran that file's Python: a name that is not a rule's
    is one line, exit 2, and nothing is written."""
    root = tmp_path / "b"
    if name:
        bench(root / name / "x.tsv", 1.0, 10.0)
    else:
        bench(root / ".tsv", 1.0, 10.0)  # a file whose stem is empty
    assert main(["resources", "--benchmarks", str(root), "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert "is not a rule's name" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "p").exists()


def test_a_benchmark_that_is_no_regular_file_is_refused_without_reading_it(tmp_path, capsys):
    import os

    for target in ("/dev/zero", None):
        root = tmp_path / ("zero" if target else "fifo")
        (root / "rule").mkdir(parents=True)
        if target:
            (root / "rule" / "x.tsv").symlink_to(target)
        else:
            os.mkfifo(root / "rule" / "x.tsv")
        assert main(["resources", "--benchmarks", str(root), "--out", str(tmp_path / "p")]) == 2  # no hang, no OOM
        assert "not a regular file" in capsys.readouterr().err and not (tmp_path / "p").exists()


def test_the_profile_is_what_the_yaml_dumper_writes(benchmarks, tmp_path):
    assert main(["resources", "--benchmarks", str(benchmarks), "--out", str(tmp_path / "m")]) == 0
    profile = yaml.safe_load((tmp_path / "m/config.yaml").read_text())
    assert list(profile) == ["set-resources"]  # no key but the one it writes
    assert set(profile["set-resources"]) == {"run_cell", "notebook", "members", "summarize"}


@pytest.mark.snakemake
def test_snakemake_takes_the_profile_beside_the_slurm_one(tmp_path):
    """The overlay is a workflow profile: `--profile profiles/slurm --workflow-profile <folder>`
    plans the grid with the measured runtime and memory."""
    from conftest import copy_workflow, snakemake

    work = copy_workflow(tmp_path)
    bench(work / "benchmarks/run_cell/authors-code/mnist/c/seed~0.tsv", 200.0, 1000.0)
    assert main(["resources", "--benchmarks", str(work / "benchmarks"), "--out", str(work / "measured")]) == 0
    proc = snakemake(work, "-n", "--profile", "profiles/slurm", "--workflow-profile", "measured", "--configfile",
                     "config/smoke.yaml", timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert out.count("runtime=5, mem_mb=1500") == 6  # the smoke grid's six runs: ceil(200 x 1.5 / 60), 1000 x 1.5


def test_any_folder_name_is_a_rule_key_of_the_profile_or_refused(tmp_path_factory):
    """Hypothesis: whatever a benchmark folder is called, the profile's only top-level key is
    set-resources and its rules are exactly the folders' names, or the command refuses (exit 2)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    names = st.text(st.characters(codec="utf-8", exclude_characters="/\x00"), min_size=1, max_size=40).filter(
        lambda n: n not in (".", ".."))

    @settings(max_examples=60, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(name=names)
    def check(name: str) -> None:
        work = tmp_path_factory.mktemp("names")
        try:
            bench(work / "b" / name / "x.tsv", 1.0, 10.0)
        except OSError:  # a name the file system itself refuses (too long in bytes)
            return
        code = main(["resources", "--benchmarks", str(work / "b"), "--out", str(work / "p")])
        if code == 0:
            profile = yaml.safe_load((work / "p/config.yaml").read_text())
            assert list(profile) == ["set-resources"] and list(profile["set-resources"]) == [name]
            assert jr.RULE.fullmatch(name)
        else:
            assert code == 2 and not (work / "p").exists()

    check()


def test_set_resources_beside_a_profile_that_sizes_rules_is_refused(tmp_path):
    """`--set-resources` on the command line once replaced the measured profile's whole set-resources
    (reference jobs back to their declared 30 min / 3,000 MB) without a word: the mix is one line and
    exit 1 before any job; either alone runs, as does --set-resources beside a profile that sizes nothing."""
    import subprocess
    import sys

    from bladefl.experiments.plan.resource_mix import mixed_resources
    from conftest import copy_workflow

    (tmp_path / "work").mkdir()
    work = copy_workflow(tmp_path / "work")
    measured = tmp_path / "measured"
    measured.mkdir()
    (measured / "config.yaml").write_text("set-resources:\n  run_cell: {mem_mb: 900}\n  reference: {runtime: 3}\n")
    said = mixed_resources(["-n", "--workflow-profile", str(measured), "--set-resources", "run_cell:mem_mb=4000"])
    assert said and "reference, run_cell" in said and "does not merge" in said
    assert mixed_resources([f"--workflow-profile={measured}", "--set-resources=run_cell:mem_mb=1"]) is not None
    assert mixed_resources(["--workflow-profile", str(measured)]) is None  # the profile alone
    assert mixed_resources(["--set-resources", "run_cell:mem_mb=1"]) is None  # the command line alone
    assert mixed_resources(["--profile", "profiles/slurm", "--set-resources", "run_group:gpu=1"], REPO) is None
    snakemake = [sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", "--workflow-profile", str(measured)]
    mixed = subprocess.run([*snakemake, "--set-resources", "run_cell:mem_mb=4000"], cwd=work, capture_output=True,
                           text=True, timeout=HANG_S)
    assert mixed.returncode == 1 and "replaces every size --workflow-profile" in mixed.stdout + mixed.stderr
    alone = subprocess.run(snakemake, cwd=work, capture_output=True, text=True, timeout=HANG_S)
    assert alone.returncode == 0, alone.stderr[-2000:]


def test_a_smoke_benchmark_sizes_the_paper_grids_jobs_by_their_work(tmp_path, capsys):
    """Sizes follow the work: benchmarks of the smoke's jobs whose wall and peak grow with the work
    (a fixed part plus so much per sample trained on and per number held) size every run and
    reference optimum of config/paper.yaml to at least that cost times the margin; once the paper's
    1,080 runs each asked for the smoke's largest (1 minute, 816 MB). The SLURM profile plans the
    default's jobs; the GPU profile's stacked groups, measured as local no-ops, keep their declared size."""
    from bladefl.experiments.plan.config_files import read_configs
    from bladefl.experiments.runs.job_work import grid_jobs

    def cost(job):  # the synthetic truth: what a job of this work took
        return 3.0 + 2e-4 * job.samples, 700.0 + job.held_mb

    root = tmp_path / "benchmarks"
    for job in grid_jobs(read_configs([REPO / "config/smoke.yaml"])):
        seconds, mb = (0.2, 1.0) if job.rule == "run_group" else cost(job)  # groups: no-ops, one job per run
        bench(root / job.rule / f"{job.name}.tsv", seconds, mb)
    bench(root / "summarize" / "mnist.tsv", 0.5, 80.0)
    out = tmp_path / "measured"
    assert main(["resources", "--benchmarks", str(root), "--measured", str(REPO / "config/smoke.yaml"), "--for",
                 str(REPO / "config/paper.yaml"), "--out", str(out)]) == 0
    assert "run_cell, reference sized for" in capsys.readouterr().out
    sized = yaml.safe_load((out / "config.yaml").read_text())["set-resources"]
    target = grid_jobs(read_configs([REPO / "config/paper.yaml"]))
    for job in (j for j in target if j.rule in ("run_cell", "reference")):
        seconds, mb = cost(job)
        assert sized[job.rule]["runtime"] * 60 >= 1.5 * seconds, (job.name, sized[job.rule], seconds)
        assert sized[job.rule]["mem_mb"] >= 1.5 * mb, (job.name, sized[job.rule], mb)
    assert sized["summarize"] == {"runtime": 1, "mem_mb": 256}  # unscaled rules: their measured need, floored
    assert "run_group" not in sized  # a no-op says nothing of a stacked group: its declared resources stand
    assert "measured as a local no-op" in (out / "config.yaml").read_text()
    assert main(["resources", "--benchmarks", str(root), "--for", str(REPO / "config/paper.yaml"), "--out",
                 str(out)]) == 2  # --for without --measured: one line
    assert "--measured and --for go together" in capsys.readouterr().err


def test_a_config_named_to_inject_profile_keys_is_written_escaped(tmp_path):
    """Issue 61, item 1: a --for file named `x.yaml<newline>snakefile: ...<newline>jobs: 1<newline>#` gave a
    profile with top-level `snakefile:` and `jobs:`; a U+2028 in the name, one that was not YAML."""
    import yaml

    from bladefl.experiments.runs.job_resources import Need, Scaled, profile_text

    for name in ('x.yaml\nsnakefile: "/tmp/evil.smk"\njobs: 1\n#', "x\u2028snakefile: evil.yaml", "x\ry: 1"):
        text = profile_text([Need("run_cell", 3, 40.0, 900.0)], 1.5,
                            [Scaled("run_cell", 3, 10.0, 1e-6, 400.0, 8, 60.0, 900.0)], name)
        assert set(yaml.safe_load(text)) == {"set-resources"}, text
        assert "snakefile" not in yaml.safe_load(text) and text.isascii()


def test_sizing_for_an_overflowing_grid_or_from_another_configs_benchmarks_is_one_line(tmp_path, capsys):
    """Issue 61, item 5: `--for` a config overlay with t_sum 1e300 overflowed; `--measured` naming a config its
    benchmarks did not run sized every rule at one minute, silently. Both exit 2 with one line now."""
    from bladefl.experiments.plan.config_files import read_configs
    from bladefl.experiments.runs.job_work import grid_jobs

    root = tmp_path / "benchmarks"
    for job in grid_jobs(read_configs([REPO / "config/smoke.yaml"])):
        bench(root / job.rule / f"{job.name}.tsv", 5.0, 700.0)
    huge = tmp_path / "huge.yaml"
    huge.write_text("t_sum: 1.0e+300\n")
    assert main(["resources", "--benchmarks", str(root), "--measured", str(REPO / "config/smoke.yaml"), "--for",
                 str(huge), "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert "--for: invalid config: t_sum must be a number in (0, 1e+06]" in err and len(err.splitlines()) == 1
    assert main(["resources", "--benchmarks", str(root), "--measured", str(REPO / "config/paper.yaml"), "--for",
                 str(REPO / "config/paper.yaml"), "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert "is a job of that config's grid" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "p").exists()


def test_a_group_mark_path_that_is_empty_is_refused(tmp_path, capsys):
    """Issue 61, item 5: `run-group --done ''` exited 0 without a mark (Snakemake would then wait for none)."""
    plan = json.dumps([{"out": str(tmp_path / "r"), "set": []}])
    assert main(["run-group", "--plan", plan, "--partition", str(tmp_path / "p.npy"), "--compute", "0",
                 "--done", ""]) == 2
    assert "--done: an empty value" in capsys.readouterr().err
