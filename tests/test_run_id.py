"""A run's identity and its folder: one module spells the layout, and reading an identity back from
any path inside a run folder gives what made it."""

from __future__ import annotations

import pytest

from bladefl.experiments.plan import run_id


def test_a_folder_and_its_files_read_back_as_the_run_that_made_them():
    run = run_id.RunId("mnist", "alpha~1_beta~6_N~20", 7, "results/runs/paper")
    assert run.folder == "results/runs/paper/mnist/alpha~1_beta~6_N~20/seed~7"
    for path in (run.folder, run_id.file(run.root, run.dataset, run.cell, run.seed, "summary.json")):
        assert run_id.from_path(path) == run
    assert run.name == "alpha~1_beta~6_N~20/seed~7"


def test_wildcards_pass_through_for_the_workflow():
    assert run_id.folder("r", "{dataset}", "{cell}", "{seed}") == "r/{dataset}/{cell}/seed~{seed}"
    assert run_id.seed_name("{seed}") == "seed~{seed}"


@pytest.mark.parametrize("path", ["results/summary.json", "a/b/seed~x/summary.json", "seed~1"])
def test_a_path_outside_a_run_folder_is_named(path):
    with pytest.raises(ValueError, match="not in a run folder"):
        run_id.from_path(path)


@pytest.mark.parametrize("name", ["seed~٠", "seed~017", "seed~+1", "seed~1_0", "seed~ 1"])
def test_a_run_folder_whose_seed_is_not_plain_decimal_ascii_is_not_a_run_folder(name):
    """int() reads '٠' (an Arabic-Indic zero) as 0 and '017' as 17: a folder named so would be taken
    for another seed's run (an import once laid one out as seed 0)."""
    with pytest.raises(ValueError, match="not in a run folder"):
        run_id.from_path(f"runs/mnist/cell/{name}/summary.json")
