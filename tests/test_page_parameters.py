"""A report page's parameter file is code to papermill: `bladefl run-page` takes only the parameters
its notebook declares, typed, with paths inside the run's folders, from plain YAML; anything else
is one line, exit 2, before a kernel starts and with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bladefl.cli import main
from bladefl.report import page_parameters as pp

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks/02_sweeps.ipynb"
GOOD = {"dataset": "mnist", "summary": "results/summary/mnist.csv", "figures_dir": "results/figures/mnist/02_sweeps",
        "tables_dir": "results/tables/mnist/02_sweeps"}


def run_page(tmp_path: Path, text: str, capsys, notebook: Path = NOTEBOOK) -> tuple[int, str]:
    (tmp_path / "p.yaml").write_text(text)
    code = main(["run-page", str(notebook), "--parameters", str(tmp_path / "p.yaml"), "--executed",
                 str(tmp_path / "out/page.ipynb"), "--out", str(tmp_path / "out/page.html"), "--index", "index.html",
                 "--results-dir", str(tmp_path / "results"), "--data-dir", str(tmp_path / "data")])
    return code, capsys.readouterr().err


def test_the_notebooks_declared_parameters_and_their_kinds():
    kinds = pp.declared(NOTEBOOK)
    assert kinds["dataset"] == "dataset" and kinds["summary"] == "path" and kinds["figures_dir"] == "path"
    assert pp.declared(REPO / "notebooks/01_data.ipynb")["partitions"] == "paths"


def test_the_workflows_own_parameters_pass(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert pp.check(dict(GOOD), pp.declared(NOTEBOOK), "results", "data") == GOOD
    assert pp.check({"partitions": ["data/partitions/mnist/a.json"]}, pp.declared(REPO / "notebooks/01_data.ipynb"),
                    "results", "data")
    bound = pp.declared(REPO / "notebooks/03_bound.ipynb")
    assert pp.check({"gaps": None}, bound, "results", "data") == {"gaps": None}  # an absent bound is null


@pytest.mark.parametrize("text, said", [
    # a key papermill would write as code: it ran, exit 0
    ("\"x = 1; open('MARK', 'w').write('code ran'); y\": 1\n", "unknown parameter"),
    ("\"print(open('MARK','w'))\": 1\n", "unknown parameter"),
    # nine levels of nine aliases: expanded until killed
    ("a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n",
     "anchors and aliases are not allowed"),
    ("dataset: !!python/object/apply:os.system ['touch MARK']\n", "tags are not allowed"),
    ("figures_dir: /tmp/elsewhere\n", "figures_dir must be a path inside the results folder"),
    ("figures_dir: data/figures\n", "figures_dir must be a path inside the results folder"),
    ("summary: ../../etc/passwd\n", "summary must be a path inside the results or data folder"),
    ("summary: [results/a.csv]\n", "summary must be a path inside"),
    ("dataset: svhn\n", "dataset must be one of"),
    ("dataset: [mnist\n", "not valid YAML (line"),
    ("? [a, b]\n: 1\n", "every key must be a parameter name"),
    ("dataset: mnist\ndataset: mnist\n", "given twice"),
    ("- dataset\n", "a mapping of parameter names"),
])
def test_a_hostile_parameter_file_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, monkeypatch, text, said):
    monkeypatch.chdir(tmp_path)
    code, err = run_page(tmp_path, text, capsys)
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and not (tmp_path / "MARK").exists() and not (tmp_path / "out").exists()


def test_a_parameter_file_too_large_or_not_text_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = run_page(tmp_path, "dataset: mnist\n" + "#" * pp.MAX_BYTES, capsys)
    assert code == 2 and "larger than" in err
    (tmp_path / "p.yaml").write_bytes(b"dataset: \xff\n")
    code = main(["run-page", str(NOTEBOOK), "--parameters", str(tmp_path / "p.yaml"), "--executed", "x.ipynb",
                 "--out", "x.html", "--index", "i.html"])
    assert code == 2 and "not UTF-8" in capsys.readouterr().err


def test_a_failing_page_leaves_no_executed_notebook(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    notebook = tmp_path / "fails.ipynb"
    cells = [{"cell_type": "code", "id": "p", "metadata": {"tags": ["parameters"]}, "source": ["dataset = \"mnist\"\n"],
              "outputs": [], "execution_count": None},
             {"cell_type": "code", "id": "x", "metadata": {}, "source": ["raise RuntimeError('page broke')\n"],
              "outputs": [], "execution_count": None}]
    notebook.write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": {"name": "python3", "language": "python",
                                    "display_name": "Python 3"}}, "nbformat": 4, "nbformat_minor": 5}))
    (tmp_path / "out").mkdir()
    code, err = run_page(tmp_path, yaml.safe_dump({"dataset": "mnist"}), capsys, notebook)
    assert code == 1 and "RuntimeError: page broke" in err.strip().splitlines()[-1], err
    assert not (tmp_path / "out/page.ipynb").exists() and not (tmp_path / "out/page.html").exists()


@pytest.mark.parametrize("notebook", sorted((REPO / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_each_notebook_is_valid_nbformat_with_its_own_id_on_every_cell(notebook):
    """nbformat 4.5 gives every cell an id (a missing one is a warning at each page's run today and
    an error in later nbformat versions)."""
    import warnings

    import nbformat

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nb = nbformat.read(notebook, as_version=4)
        nbformat.validate(nb)
    ids = [cell.get("id") for cell in nb.cells]
    assert all(ids) and len(set(ids)) == len(ids), ids


@pytest.mark.parametrize("text, said", [
    ("dataset: mnist\ntables_dir: results/bound/mnist\n", "tables_dir must be the page's own folder"),
    ("dataset: mnist\nfigures_dir: null\n", "figures_dir must be"),
    ("dataset: mnist\nfigures_dir: results/figures/mnist/03_bound\n", "figures_dir must be the page's own folder"),
])
def test_a_page_writes_only_into_its_own_folders(tmp_path, capsys, monkeypatch, text, said):
    """`tables_dir: results/bound/mnist` once overwrote the constants.csv the verdicts read; a null folder
    passed the check: a page's output folders are its own, or nothing runs."""
    monkeypatch.chdir(tmp_path)
    code, err = run_page(tmp_path, text.replace("results/", f"{tmp_path}/results/"), capsys)
    assert code == 2 and said in err and not (tmp_path / "out").exists(), err


def test_a_link_made_after_the_check_sends_nothing_elsewhere(tmp_path):
    """The folders are checked again at each write: a link on their way, made after the page's
    parameters were checked, is refused at the write."""
    from bladefl.core.atomic import NotAFileError
    from bladefl.report.tables import write_table

    own, elsewhere = tmp_path / "results/tables/mnist/02_sweeps", tmp_path / "elsewhere"
    elsewhere.mkdir()
    own.parent.mkdir(parents=True)
    own.symlink_to(elsewhere, target_is_directory=True)  # replaced by a link after the check
    import pandas as pd

    with pytest.raises(NotAFileError, match="a link lies on its way"):
        write_table(pd.DataFrame({"a": [1]}), "t", own)
    assert list(elsewhere.iterdir()) == []
