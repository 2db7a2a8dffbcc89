"""The report rendered from the smoke run: every table and figure is there and is built from
the smoke results; a notebook with a missing or malformed input fails with the path and reason."""

from __future__ import annotations

import base64
import html
import re
import zipfile

import numpy as np
import pandas as pd
import papermill
import pytest

from bladefl.report.execution import execute_notebook
from conftest import HANG_S, REPO, snakemake

pytestmark = pytest.mark.slow

FIGURES = {
    "01_data": ["partitions_N4"],
    "02_sweeps": ["sweep_beta", "sweep_lazy_ratio", "sweep_epsilon"],
    "03_bound": ["fig3_bound_vs_experiment"],
    "04_privacy": ["privacy"],
}
TABLES = {
    "00_verdicts": ["provenance"],
    "01_data": ["partitions"],
    "02_sweeps": ["Table_III", "Table_VI", "curves_beta", "curves_lazy_ratio", "curves_epsilon"],
    "03_bound": ["constants", "kstar", "fig3_gaps"],
    "04_privacy": ["privacy"],
}


def test_every_figure_and_table_is_written(smoke):
    for nb, names in FIGURES.items():
        for name in names:
            for ext in ("png", "svg"):
                path = smoke / f"results/smoke/figures/mnist/{nb}/{name}.{ext}"
                assert path.is_file() and path.stat().st_size > 2000, path
    for nb, names in TABLES.items():
        for name in names:
            for ext in ("csv", "md"):
                assert (smoke / f"results/smoke/tables/mnist/{nb}/{name}.{ext}").is_file(), (nb, name, ext)
    for nb in ("00_verdicts", "01_data", "02_sweeps", "03_bound", "04_privacy"):
        page = (smoke / f"results/smoke/report/mnist/{nb}.html").read_text()
        assert "<html" in page and "Traceback" not in page


def test_tables_are_built_from_the_smoke_results(smoke):
    optimum = pd.read_csv(smoke / "results/smoke/summary/mnist_optimum.csv")
    summary = pd.read_csv(smoke / "results/smoke/summary/mnist.csv")
    t3 = pd.read_csv(smoke / "results/smoke/tables/mnist/02_sweeps/Table_III.csv").set_index("beta")
    ours = optimum[optimum.sweep == "beta"].set_index("value")
    for beta in (10.0, 12.0):
        assert t3.loc[beta, "K* ours"] == ours.loc[beta, "K_star_loss"]
        assert t3.loc[beta, "β·K* (time) ours"] == pytest.approx(beta * ours.loc[beta, "K_star_loss"])
        assert t3.loc[beta, "max accuracy % ours"] == pytest.approx(100 * ours.loc[beta, "max_accuracy"])
    assert t3.loc[12.0, "β·K* (time) paper"] == 72 and t3.loc[6.0, "max accuracy % paper"] == 87.47
    assert t3.loc[12.0, "K* paper"] == 6 and t3.loc[8.0, "K* paper"] == 8
    curves = pd.read_csv(smoke / "results/smoke/tables/mnist/02_sweeps/curves_beta.csv")
    mine = summary[summary.sweep == "beta"].groupby(["value", "K"]).train_loss.mean()
    assert np.allclose(curves.set_index(["value", "K"]).loss.sort_index(), mine.sort_index())
    privacy = pd.read_csv(smoke / "results/smoke/tables/mnist/04_privacy/privacy.csv")
    eps = optimum[optimum.sweep == "epsilon"].sort_values("value")
    assert privacy.K_star_loss.tolist() == eps.K_star_loss.tolist()
    assert np.isinf(privacy.epsilon.iloc[-1])
    kstar = pd.read_csv(smoke / "results/smoke/tables/mnist/03_bound/kstar.csv")
    bound = pd.read_csv(smoke / "results/smoke/bound/mnist/kstar.csv")
    assert kstar.K_experiment.tolist() == bound.K_experiment.tolist()
    verdicts = pd.read_csv(smoke / "results/smoke/verdicts/mnist.csv")
    assert {"K* falls as beta grows", "K* does not depend on epsilon",
            "the bound's K* is the experiment's K*"} <= set(verdicts.claim)
    comparison = pd.read_csv(smoke / "results/smoke/tables/mnist_paper_comparison.csv")
    iv = comparison[(comparison.table == "Table IV") & (comparison.value == 10)].iloc[0]
    assert np.isnan(iv.paper_K_star) and "inconclusive" not in iv.note and "inconsistent" in iv.note
    assert "K* = 7" in iv.note  # the second reading: beta = 10
    partitions = pd.read_csv(smoke / "results/smoke/tables/mnist/01_data/partitions.csv")
    assert partitions["mean classes per client"].iloc[0] == 4


def test_index_opens_with_the_verdicts_and_links_every_notebook(smoke):
    index = (smoke / "results/smoke/report/index.html").read_text()
    verdicts = pd.read_csv(smoke / "results/smoke/verdicts/mnist.csv")
    for claim in verdicts[verdicts.role.isin(["claim", "paper error", "reading"])].claim:
        assert html.escape(claim) in index, claim
    assert index.index("<h2>Findings") < index.index("How far our numbers are from the paper") < index.index(
        "<h2>Pages") < index.index("judged once")
    assert "no calibration outcome was given" in index or "the calibration study</strong>" in index
    # one seed: nothing can be judged, and the page says where the verdicts are (before any table)
    assert index.index("No verdicts here") < index.index("<table") and "make reference-report" in index
    for nb in ("00_verdicts", "01_data", "02_sweeps", "03_bound", "04_privacy"):
        assert f"href='mnist/{nb}.html'" in index
    assert "href='mnist/02_sweeps.html'>sweeps</a>" in index
    assert "data:image/png;base64," in index
    prov = index[index.index("class=\"prov\""):]
    from bladefl import __version__

    for part in (f"code: runs {__version__}", f" · verdicts {__version__}", f" · this page {__version__}",
                 "config config/smoke.yaml",
                 "seeds [0]", "MNIST train images ba891046e650", "UTC on", "run time"):
        assert part in prov, part


def _embedded_pngs(page: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([^"]+)"', page)]


def test_every_page_embeds_exactly_the_figures_it_saved(smoke):
    for nb in ("00_verdicts", "01_data", "02_sweeps", "03_bound", "04_privacy"):
        page = (smoke / f"results/smoke/report/mnist/{nb}.html").read_text()
        saved = sorted(p.read_bytes() for p in (smoke / f"results/smoke/figures/mnist/{nb}").glob("*.png"))
        assert sorted(_embedded_pngs(page)) == saved, nb
        assert "&lt;Figure size" not in page
        assert "<script src=" not in page and "cdnjs" not in page  # stands alone, offline
        assert "from bladefl import" not in page and "read_csv(" not in page  # code linked, not shown
        assert "href=\"../notebooks/mnist/" + nb + ".ipynb\"" in page and "href=\"../index.html\"" in page


def test_snakemake_report_zip(smoke):
    """docs/workflow.md's command for Snakemake's own report after the smoke run, as it gives it."""
    import shlex

    command = ("snakemake --configfile config/smoke.yaml --report results/smoke/report.zip --report-metadata "
               "workflow/report/metadata.yaml")
    assert f"`{command}`" in (REPO / "docs" / "workflow.md").read_text()
    proc = snakemake(smoke, *shlex.split(command)[1:], timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = zipfile.ZipFile(smoke / "results/smoke/report.zip").namelist()
    assert any(n.endswith("sweep_beta.png") for n in names) and any(n.endswith("Table_III.csv") for n in names)
    landing = "".join(zipfile.ZipFile(smoke / "results/smoke/report.zip").read(n).decode("utf-8", "replace")
                      for n in names if n.endswith((".html", ".js", ".json")))
    assert "headline kept bundle" in landing and "code version" in landing  # the metadata's landing page


@pytest.mark.parametrize("content, reason", [(None, "missing"), ("a,b\n1,2\n", "missing column(s)")])
def test_notebook_with_bad_input_fails_with_path_and_reason(tmp_path, content, reason):
    bad = tmp_path / "summary.csv"
    if content is not None:
        bad.write_text(content)
    with pytest.raises(papermill.PapermillExecutionError) as info:  # as the workflow's run-page executes it
        execute_notebook(REPO / "notebooks/02_sweeps.ipynb", tmp_path / "out.ipynb",
                         {"summary": str(bad), "comparison": str(bad), "figures_dir": str(tmp_path / "f"),
                          "tables_dir": str(tmp_path / "t")}, progress_bar=False)
    assert "ReportInputError" in info.value.ename
    assert str(bad) in info.value.evalue and reason in info.value.evalue


def test_every_judged_claim_carries_the_papers_words():
    """Every row of a verdict table carries the words of the statement it judges, from the inventory
    (whose fragments tests/test_statements.py finds in the tex), and every experiment claim, corollary
    and the paper's errors name a statement of the inventory."""
    from bladefl.experiments.verdicts.experiment_claims import claims
    from bladefl.experiments.verdicts.statements import read_inventory
    from bladefl.theory.claims import COROLLARIES

    inventory = read_inventory(REPO / "config" / "paper_statements.yaml")
    named = [c.statement for c in claims()] + [c.statement for c in COROLLARIES]
    assert [s for s in named if inventory.get(s) is None] == []
    assert all(inventory.get(s).quote for s in named)


def test_sweep_units_are_the_verdicts_units_and_accuracy_is_in_percent():
    """The sweep figures' lines are means over the units the verdicts test: partition draws where
    every draw holds two seeds or more (their seeds averaged), else runs; K tau beside K."""
    from bladefl.report.views import sweep_units

    rows = [{"sweep": "beta", "vary": "beta", "value": v, "cell": f"c{v}", "K": k, "tau": 10 // k, "seed": s,
             "partition": s % 2, "train_loss": 1.0 + s, "test_loss": 1.0, "test_accuracy": 0.5, "status": "ok"}
            for v in (6, 8) for k in (1, 2) for s in range(4)]
    drawn = sweep_units(pd.DataFrame(rows), "beta")
    assert set(drawn.unit_kind) == {"draw"} and set(drawn.units) == {2}
    assert sorted(drawn[(drawn.value == 6) & (drawn.K == 1)].loss) == [2.0, 3.0]  # seeds {0, 2}, {1, 3}
    assert set(drawn.accuracy) == {50.0} and list(drawn.steps[drawn.K == 2].unique()) == [10]
    paired = sweep_units(pd.DataFrame([{**r, "partition": r["seed"]} for r in rows]), "beta")
    assert set(paired.unit_kind) == {"run"} and set(paired.units) == {4}


def test_the_accuracy_gap_compares_the_same_row_on_both_sides():
    """Ours at the paper's best row, not each side's best (ours peaks at alpha = 2, the paper at alpha = 1)."""
    from bladefl.report.front_page import accuracy_line
    from bladefl.report.paper import accuracy_gap

    comparison = pd.DataFrame({"table": ["Table II", "Table II", "Table III", "Table IV"],
                               "parameter": ["alpha", "alpha", "beta", "N"], "value": [1.0, 2.0, 6.0, 10.0],
                               "max_accuracy": [70.0, 72.5, 60.0, 55.0], "max_accuracy_sd": [1.0, 2.5, 3.0, 2.0],
                               "paper_max_accuracy": [87.4, 82.2, float("nan"), 74.5]})
    gap = accuracy_gap({"mnist": comparison})
    assert gap.to_dict("records")[0] == {"dataset": "mnist", "table": "Table II", "parameter": "alpha", "value": 1.0,
                                         "ours": 70.0, "sd": 1.0, "paper": 87.4, "difference": 70.0 - 87.4}
    assert list(gap.table) == ["Table II", "Table IV"]  # Table III gives the paper no accuracy
    line = html.unescape(accuracy_line({"mnist": comparison}))
    assert line == ("MNIST at the paper's best row (Table II, α = 1): ours 70.0 ± 1.0% against the paper's 87.4% "
                    "(-17.4 points; at each table's best paper row -19.5 to -17.4).")


def test_the_papers_numbers_stand_beside_ours_for_k_star_and_time_claims_only():
    from bladefl.report.paper import paper_beside

    comparison = pd.DataFrame({"table": "Table III", "parameter": "beta", "value": [8.0, 6.0],
                               "paper_quantity": "mining_time", "paper_value": [64.0, 60.0], "quantity": [56.0, 60.0],
                               "paper_K_star": [8.0, 10.0], "K_star": [7.0, 10.0]})
    assert paper_beside("K* falls as beta grows", comparison) == (
        "β = 6, 8: paper K* 10, 8; ours 10, 7 (Table III; ? = not in the paper or no integer K*)")
    assert "paper β·K* 60, 64; ours 60, 56" in paper_beside("β·K* rises with beta", comparison)
    assert paper_beside("the loss grows with beta", comparison) == ""  # the paper gives a figure, no numbers
    assert paper_beside("K* falls as alpha grows", comparison) == ""  # no alpha table here


def test_a_verdicts_units_read_as_english():
    """"1 run", not "1 runs"; the seeds where a row names no unit."""
    from types import SimpleNamespace

    from bladefl.report.verdict_rows import verdict_units

    assert verdict_units(SimpleNamespace(units=1, unit="run", seeds=1)) == "1 run"
    assert verdict_units(SimpleNamespace(units=5, unit="draw", seeds=20)) == "5 draws"
    assert verdict_units(SimpleNamespace(units=float("nan"), unit="", seeds=1)) == "1 seed"


def test_the_noise_norms_are_explained_over_the_runs_own_model(smoke):
    """The smoke runs the authors' code engine (784-32-10, P = 25,450): the lazy page and the
    verdict table size a lazy upload's noise norm sigma sqrt(P) by that model, not the paper's
    784-256-10 (P = 203,530)."""
    for page in ("05_lazy", "00_verdicts"):
        text = (smoke / f"results/smoke/report/mnist/{page}.html").read_text()
        assert "P = 25,450 parameters" in text and "203,530" not in text, page


def test_the_front_pages_convention_line_names_the_tables_where_another_curve_reads_k_star_nearer():
    """From the same runs: where the test loss's minimum sits at the paper's K* and F(w)'s far from it
    (one table's sweep made so), the line names that table and its two distances; elsewhere F(w) is as
    near or nearer. Without the paper's tables, or with F(w) the only curve, no line."""
    from pathlib import Path

    import pandas as pd

    from bladefl.experiments.tables.paper_tables import read_paper_tables
    from bladefl.report.distance import convention_line

    repo = Path(__file__).resolve().parents[1]
    tables = read_paper_tables(repo / "config/paper_values.yaml")
    summary = pd.read_csv(repo / "reference/paper-10draws/results/summary/mnist.csv")
    first = tables[0]  # Table II, its sweep's rows: F(w) smallest at K = 1, the test loss where F(w) was
    rows = summary.sweep == first["sweep"]
    summary.loc[rows, "test_loss"] = summary.loc[rows, "train_loss"]
    summary.loc[rows, "train_loss"] = summary.loc[rows, "K"].astype(float)
    line = convention_line({"mnist": summary}, tables)
    assert f"MNIST: F(w) nearest or tied in 5 of 6 tables (against test-loss); test-loss nearer in {first['table']}" \
        in line, line
    assert convention_line({"mnist": summary}, []) == ""
    assert convention_line({"mnist": summary.drop(columns=["test_loss", "client_test_loss", "local_train_loss"])},
                           tables) == ""
