"""What a front page says its verdicts rest on, computed from the files behind it: the design of
the runs (seeds, draws, units), the engine's reading, the three code versions, the headline bundle."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import yaml

from bladefl.experiments.runs.provenance import code_version
from bladefl.report import bundle_design as bd
from bladefl.report import front_page as fp
from bladefl.report.index_inputs import read_verdicts

ROOT = Path(__file__).resolve().parents[1]


def test_the_design_names_seeds_draws_and_units_from_the_config_or_the_runs():
    paired = {"seeds": list(range(10)), "partition": {"n": 512, "seeds": list(range(10))}}
    assert bd.design(paired) == "10 run seeds, each on its own partition draw: 10 independent units"
    crossed = {"seeds": list(range(20)), "partition": {"n": 512, "seeds": [0, 1, 2, 3, 4]}}
    assert bd.design(crossed) == "20 run seeds on 5 partition draws (4 seeds each): 5 independent units, the draws"
    one = {"seeds": [0, 1, 2], "partition": {"n": 512, "seed": 7}}
    assert bd.design(one).startswith("3 run seeds on 1 partition draw: the runs are the units")
    runs = pd.DataFrame({"seed": [0, 1, 2, 3, 0], "partition": [0, 1, 0, 1, 0], "status": ["ok"] * 4 + ["diverged"]})
    assert bd.design_of_runs({"mnist": runs}) == ("4 run seeds on 2 partition draws (2 seeds each): 2 independent "
                                                   "units, the draws")


def test_the_reading_is_the_engine_files_settings():
    line = bd.engine_reading("paper")
    engine = yaml.safe_load((ROOT / "config/engines/paper.yaml").read_text())
    assert f"784-{engine['model']['hidden']}-10" in line and f"batch {engine['train']['batch_size']}" in line
    assert "shards, 2 per client" in line and "standardised pixels" in line
    assert "no activation" in bd.engine_reading("authors-code") and "4 classes per client" in bd.engine_reading(
        "authors-code")
    raw = bd.reading({"partition": {"scheme": "iid", "n": 64}, "model": {"hidden": 8, "activation": "relu"},
                      "train": {"iteration": "full_batch"}, "normalize": False}, "x")
    assert "cannot be read" in bd.engine_reading("no-such-engine")  # a page still renders, saying so
    assert "cannot be read" in bd.engine_reading("../engines/paper")  # a name, never a path
    assert "IID, 64 samples" in raw and "non-IID" not in raw and "raw pixels" in raw
    assert "one full-batch gradient step" in raw


def test_the_verdicts_code_is_the_last_rejudge_else_the_keeper_else_not_recorded(tmp_path):
    def bundle(about: dict) -> Path:
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        (folder / "MANIFEST.json").write_text(json.dumps({"about": about, "files": {}}))
        (folder / "config.yaml").write_text("seeds: [0]\n")
        return folder

    rejudged = bundle({"kept_by": "0.1.0+a", "rejudged": [{"code_version": "0.1.0+b"}, {"code_version": "0.1.0+c"}]})
    assert bd.verdicts_code(rejudged) == "0.1.0+c"
    assert bd.verdicts_code(bundle({"kept_by": "0.1.0+a"})) == "0.1.0+a"
    assert bd.verdicts_code(bundle({})) == "not recorded"
    assert bd.verdicts_code(None) == code_version()  # a workflow's own results: this code derives them
    assert bd.bundle_of(["config/config.yaml", str(rejudged / "config.yaml")]) == rejudged
    assert bd.bundle_of(["config/config.yaml"]) is None
    line = bd.code_line(["0.1.0+r", "0.1.0+r", "0.1.0+q"], "0.1.0+v", "0.1.0+p")
    assert line == "code: runs 0.1.0+q, 0.1.0+r · verdicts 0.1.0+v · this page 0.1.0+p"
    # the code that made a kept bundle's tables from its runs (its manifest's kept_by) is named too
    assert bd.tables_code(rejudged) == "0.1.0+a" and bd.tables_code(bundle({})) == "not recorded"
    # tables derived again since (a record naming files other than verdicts) are named with their code
    rederived = bundle({"kept_by": "0.1.0+a", "rejudged": [
        {"code_version": "0.1.0+b", "files": ["results/bound/mnist/fit.csv", "results/verdicts/mnist.csv"]},
        {"code_version": "0.1.0+c", "files": ["results/verdicts/mnist.csv"]}]})
    assert bd.tables_code(rederived) == "0.1.0+a (bound: 0.1.0+b)" and bd.verdicts_code(rederived) == "0.1.0+c"
    assert bd.code_line(["r"], "v", "p", tables="t") == "code: runs r · tables t · verdicts v · this page p"


def test_the_headline_bundle_is_makes_default_and_the_banner_states_its_design():
    default = re.search(r"^REF \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert default and default.group(1) == bd.HEADLINE_BUNDLE
    config = yaml.safe_load((ROOT / bd.HEADLINE_BUNDLE / "config.yaml").read_text())
    two = pd.DataFrame({"basis": ["experiment"], "units": [2], "replication": ["2 draws"]})
    banner = fp.banner(two)
    assert bd.HEADLINE_BUNDLE in banner and bd.design(config) in banner and "config/paper.yaml" not in banner
    basis = fp.basis_line("2 run seeds", bd.engine_reading("paper"), "../docs/sensitivity.md")
    assert "<b>Design</b>: 2 run seeds." in basis and "784-256-10" in basis and "sensitivity.md" in basis


def visible_words(page: str) -> int:
    """The words a reader sees without unfolding anything: text outside <style> and outside a closed
    <details> (its <summary> shown), as a browser's innerText counts them."""
    from html.parser import HTMLParser

    class Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.words, self.hidden, self.folded = 0, 0, []

        def handle_starttag(self, tag: str, attrs: list) -> None:
            if tag == "style":
                self.hidden += 1
            elif tag == "details":
                self.folded.append(dict(attrs).get("open") is None)
                self.hidden += self.folded[-1]
            elif tag == "summary" and self.folded and self.folded[-1]:
                self.hidden -= 1

        def handle_endtag(self, tag: str) -> None:
            if tag == "style":
                self.hidden -= 1
            elif tag == "summary" and self.folded and self.folded[-1]:
                self.hidden += 1
            elif tag == "details" and self.folded:
                self.hidden -= self.folded.pop()

        def handle_data(self, data: str) -> None:
            if not self.hidden:
                self.words += len(data.split())

    parser = Text()
    parser.feed(page)
    return parser.words


def test_the_headline_front_page_holds_at_most_3000_visible_words_and_states_what_it_rests_on(tmp_path):
    """A referee's page: the kept headline bundle's front page, findings first, within 3,000 words outside
    folded details, naming its design, its reading and the three code versions."""
    from bladefl.experiments.tables.paper_tables import read_paper_tables
    from bladefl.report import pages
    from bladefl.report.inputs import SUMMARY_COLUMNS, read_csv
    from bladefl.report.paper import COMPARISON_COLUMNS

    results = ROOT / bd.HEADLINE_BUNDLE / "results"
    datasets = ("mnist", "fashion_mnist")
    summaries = {d: read_csv(results / f"summary/{d}.csv", SUMMARY_COLUMNS) for d in datasets}
    comparisons = {d: read_csv(results / f"tables/{d}_paper_comparison.csv", COMPARISON_COLUMNS) for d in datasets}
    provenance = {d: pd.read_csv(results / f"provenance/{d}.csv") for d in datasets}
    seeds = yaml.safe_load((ROOT / bd.HEADLINE_BUNDLE / "config.yaml").read_text())["seeds"]
    line = bd.provenance_line(provenance, [str(ROOT / bd.HEADLINE_BUNDLE / "config.yaml")], seeds)
    verdicts = read_verdicts([results / f"verdicts/{d}.csv" for d in datasets])
    from bladefl.report import readings_beside as rb

    # another reading of the same design beside it (the calibrated bundle, or here the GPU bundle standing in)
    other = rb.read_reading(ROOT / "reference/calibrated-10draws") if (
        ROOT / "reference/calibrated-10draws/MANIFEST.json").is_file() else rb.read_reading(
        ROOT / "reference/paper-20seeds")
    other = rb.Reading("calibrated", other.source, other.verdicts, other.summaries, other.comparisons)
    out = pages.write_index(tmp_path / "index.html", verdicts, [], None, line, comparisons=comparisons,
                            summaries=summaries, engine="paper",
                            paper_tables=read_paper_tables(ROOT / "config/paper_values.yaml"), beside=[other])
    page = out.read_text()
    assert "<h2>Under both readings</h2>" in page and "calibrated: <span" in page  # each claim under both
    assert page.index("Under both readings") < page.index("How far our numbers are from the paper")
    assert "K*, rounds" in page and "every row" in page  # both readings' distances, with their intervals
    assert visible_words(page) <= 3000, visible_words(page)
    assert page.index("<h2>Findings</h2>") < page.index("Every statement of the paper")
    assert bd.design_of_runs(summaries) in page and "784-256-10" in page
    assert re.search(r"code: runs \S+ · tables \S+( \(bound: \S+\))? · verdicts \S+ · this page \S+", page)
    assert "verdicts not recorded" not in page and "tables not recorded" not in page  # the bundle records both
    assert "K* read from other curves of this report&#x27;s runs (paper engine, " in page  # the runs it reads named
    assert visible_words("<p>a b</p><details><summary>c</summary>d e f</details><style>g</style>") == 3


def test_a_reading_says_what_one_local_iteration_is_for_every_kind():
    """An engine whose iteration is a number of minibatch steps (Fashion-MNIST's calibrated pick) is named
    as such, with its step size's scale; it was printed as "one local iteration = steps"."""
    said = {kind: bd.reading({"train": {"iteration": kind, "batch_size": 128, "steps": 3, "eta_scale": 2}}, "x")
            for kind in ("epoch", "steps", "full_batch")}
    assert "one local iteration = an epoch of minibatch SGD at batch 128, step size eta x 2;" in said["epoch"]
    assert "one local iteration = 3 minibatch steps at batch 128, step size eta x 2;" in said["steps"]
    assert "one local iteration = one full-batch gradient step, step size eta x 2;" in said["full_batch"]
    assert "step size" not in bd.reading({"train": {"iteration": "epoch", "batch_size": 64}}, "x")


def test_a_front_page_cell_shows_the_deciding_number_and_folds_the_test_that_gave_it():
    """The test's name repeats on every row of the statement table: the cell shows the verdict's number, its
    evidence names the test; a text with no p-value is shown whole."""
    from bladefl.report.front_page import deciding_number

    said = 'as "K* falls as alpha grows": tie-aware exact Page test over 10 runs: p (falls) = 7.8e-06, FDR-adjusted'
    assert deciding_number(said) == ("p (falls) = 7.8e-06, FDR-adjusted",
                                     'as "K* falls as alpha grows": tie-aware exact Page test over 10 runs')
    assert deciding_number("holds in 35% of 100 bootstrap resamples") == ("holds in 35% of 100 bootstrap resamples", "")
