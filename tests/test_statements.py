"""The inventory of the paper's statements (config/paper_statements.yaml) against the verdict table
and the paper's source: one counted row per judged statement on each dataset, every row naming a
statement, the quoted fragments and the figures' order found in the tex where it is at hand."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bladefl.experiments.verdicts.statements import InventoryError, problems, read_inventory
from test_verdicts import full_grid_verdicts

REPO = Path(__file__).resolve().parents[1]
INVENTORY = REPO / "config" / "paper_statements.yaml"
TEX_PLACES = [os.environ.get("BLADEFL_PAPER_TEX", ""), str(REPO.parent / "shared" / "paper" / "blade-fl-paper.tex")]


@pytest.fixture(scope="module")
def verdicts():
    return full_grid_verdicts()[0]


@pytest.mark.parametrize("dataset", ["mnist", "fashion_mnist"])
def test_every_judged_statement_has_exactly_one_counted_row(verdicts, dataset):
    inventory = read_inventory(INVENTORY)
    mine = verdicts[[inventory.applies(str(s), dataset) for s in verdicts.statement]]
    judged = [s.id for s in inventory.statements if s.judged != "none" and dataset in s.datasets]
    assert problems(mine, inventory, dataset, expected=judged) == []
    counted = mine[mine.role.isin(["claim", "paper error"])]
    assert sorted(counted.statement) == sorted(judged)
    assert set(mine.statement) <= {s.id for s in inventory.statements}
    readings = mine[mine.role == "reading"]
    assert (readings.reading_of != "").all() and set(readings.reading_of) <= set(counted.claim)
    assert (mine.quote.str.len() > 0).all()


def test_the_inventory_check_finds_a_statement_counted_twice_and_a_row_of_no_statement(verdicts):
    inventory = read_inventory(INVENTORY)
    twice = verdicts.copy()
    twice.loc[twice.claim == "K* falls as beta grows (K* by accuracy)", "role"] = "claim"
    assert any("'tab3-beta' counted 2 times" in p for p in problems(twice, inventory, "mnist"))
    stray = verdicts.copy()
    stray.loc[0, "statement"] = "fig99"
    assert any("names statement 'fig99'" in p for p in problems(stray, inventory, "mnist"))


def test_every_statement_has_a_row_or_says_why_not():
    inventory = read_inventory(INVENTORY)
    assert len(inventory.statements) >= 50
    for s in inventory.statements:
        assert s.quote and s.tex and s.where
        assert (s.judged == "none") == bool(s.why_no_row), s.id


def test_a_malformed_inventory_is_one_error_naming_the_field(tmp_path):
    cases = {"statements: [{id: a, where: w, quote: q, tex: t, judged: maybe}]": "statements[0].judged: 'maybe'",
             "statements: [{id: a, where: w, quote: q, tex: t, judged: none}]": "statements[0].why_no_row: missing",
             "statements: [{id: a, where: w, quote: q, tex: t, judged: bound, datasets: [cifar]}]":
                 "statements[0].datasets",
             "statements: [{id: a, where: w, quote: q, tex: t, judged: bound, colour: red}]":
                 "statements[0].colour: unknown field",
             "statements:\n  - {id: a, where: w, quote: q, tex: t, judged: bound}\n"
             "  - {id: a, where: w, quote: q, tex: t, judged: bound}": "id 'a' given twice"}
    for text, message in cases.items():
        path = tmp_path / "s.yaml"
        path.write_text(text)
        with pytest.raises(InventoryError, match=re.escape(message)):
            read_inventory(path)


def test_the_inventory_quotes_the_tex_and_numbers_its_figures_in_source_order():
    """Where the paper's LaTeX source is at hand (a developer's checkout beside shared/, or
    BLADEFL_PAPER_TEX), every fragment is found verbatim and the figures' labels run in the source's
    order (the compiled numbering); elsewhere the inventory's own order is checked against the
    numbers the report cites."""
    inventory = read_inventory(INVENTORY)
    labels = [f.label for f in inventory.figures]
    assert [f.number for f in inventory.figures] == list(range(1, 12))
    assert {f.sweep: f.number for f in inventory.figures if f.sweep and f.sweep != "epsilon"} == {
        "fig3": 3, "alpha": 4, "beta": 5, "N": 6, "eta": 7, "lazy_ratio": 8, "sigma2": 9}
    tex_path = next((Path(p) for p in TEX_PLACES if p and Path(p).is_file()), None)
    if tex_path is None:
        return
    tex = tex_path.read_text(encoding="utf-8", errors="replace")
    missing = [s.id for s in inventory.statements if s.tex not in tex]
    assert missing == []
    live = "\n".join(line for line in tex.splitlines() if not line.lstrip().startswith("%"))
    assert re.findall(r"\\label\{(graph_framework|fig_\w+)\}", live) == labels


def test_every_figure_and_table_the_report_cites_is_the_papers_number_for_it():
    """A claim's source names the figure and table of its sweep as the inventory numbers them (the
    tex's order), so the sweeps page, the front page and the verdict table cite one numbering."""
    from bladefl.experiments.verdicts.experiment_claims import claims
    from bladefl.report.paper_figures import heading, sweep_order

    inventory = read_inventory(INVENTORY)
    for claim in claims():
        for number in re.findall(r"Fig\. (\d+)", claim.source):
            figure = inventory.figures[int(number) - 1]
            assert figure.sweep == claim.param, (claim.name, claim.source, figure)
        for table in re.findall(r"(Table [IVX]+)", claim.source):
            assert inventory.figure_of(claim.param).table == table, (claim.name, table)
    assert sweep_order(["N", "sigma2", "alpha", "epsilon", "beta", "eta", "lazy_ratio"], "mnist") == [
        "alpha", "beta", "N", "eta", "lazy_ratio", "sigma2", "epsilon"]
    assert heading("N", [10.0, 15.0], "mnist") == "Fig. 6 (Table IV): N = 10, 15"
    assert heading("epsilon", [10.0, float("inf")], "fashion_mnist") == "Fig. 11: ε = 10, no DP"


def test_the_trend_claims_are_data_and_a_new_one_needs_no_python(tmp_path):
    """The experiment's trend claims come from the statements file's `trends` list: a claim added there
    is judged (with its reading by accuracy), and a malformed entry is refused naming the field."""
    import yaml

    from bladefl.experiments.verdicts.experiment_claims import claims

    doc = yaml.safe_load((REPO / "config/paper_statements.yaml").read_text())
    doc["trends"].append({"claim": "K* rises with beta (a new claim)", "statement": "tab3-beta",
                          "source": "a test", "sweep": "beta", "parts": ["K rises"], "only": ">= 6"})
    path = tmp_path / "statements.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    found = {c.name: c for c in claims(path)}
    new = found["K* rises with beta (a new claim)"]
    assert (new.param, new.quantity, new.direction, new.only(6), new.only(5)) == ("beta", "K", "rises", True, False)
    assert found["K* rises with beta (a new claim) (K* by accuracy)"].reading_of == new.name
    for field, value, said in (("parts", ["K soars"], "parts must be a list"), ("sweep", "gamma", "sweep must be"),
                               ("only", "~ 5", "only must be"), ("role", "boss", "role must be"),
                               ("colour", "red", "unknown field 'colour'")):
        bad = {**doc, "trends": [*doc["trends"][:-1], {**doc["trends"][-1], field: value}]}
        path.write_text(yaml.safe_dump(bad, allow_unicode=True))
        with pytest.raises(ValueError, match=said):
            claims(path)
