"""The distance to the paper with its interval (experiments.tables.paper_distance) and the same design
under two readings side by side (report.readings_beside), on small synthetic tables: the point estimate
is the comparison table's own (tidy.optimum's mean curves), the interval is over the independent units,
"within" needs the interval's upper end, and a claim whose verdicts differ is marked."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import yaml

from bladefl.experiments.tables import paper_distance as pdist
from bladefl.experiments.tables.tidy import optimum
from bladefl.report import readings_beside as rb


def summary(units: int, seeds_per_unit: int = 1, noise: float = 0.0, shift: float = 0.0) -> pd.DataFrame:
    """A sweep `alpha` of two cells (1 and 2), K 1..5; cell 1's loss curve is lowest at K = 3, cell 2's at
    K = 2; accuracies peak at 0.6 and 0.5 (+ ``shift`` per unit index, + noise)."""
    rng = np.random.default_rng(0)
    rows = []
    for u in range(units):
        for s in range(seeds_per_unit):
            seed = u * seeds_per_unit + s
            for value, best, peak in ((1.0, 3, 0.6), (2.0, 2, 0.5)):
                for K in range(1, 6):
                    rows.append({"sweep": "alpha", "value": value, "cell": f"c{value:g}", "K": K, "seed": seed,
                                 "partition": u, "status": "ok",
                                 "train_loss": (K - best) ** 2 + 1 + noise * rng.normal(),
                                 "test_accuracy": peak - 0.01 * abs(K - best) + shift * u + noise * rng.normal() / 10,
                                 "feeds": "Table II", "vary": "alpha", "tau": 1, "training_time": 1.0,
                                 "mining_time": 1.0})
    return pd.DataFrame(rows)


def comparison(k1: float, k2: float, a1: float, a2: float) -> pd.DataFrame:
    return pd.DataFrame({"table": ["Table II", "Table II"], "parameter": ["alpha", "alpha"], "value": [1.0, 2.0],
                         "paper_K_star": [k1, k2], "paper_max_accuracy": [a1, a2]})


def test_the_point_estimate_is_the_comparison_tables_own_and_identical_units_give_no_width():
    table = summary(units=5)
    out = pdist.distances(table, comparison(5, 2, 70.0, 50.0), "mnist", {"K_star": 1.0, "accuracy": 3.0})
    opt = optimum(table).set_index("value")
    rows = out[out.scope == "row"].set_index(["measure", "value"])
    assert rows.loc[("K_star", 1.0), "ours"] == opt.loc[1.0, "K_star_loss"] == 3
    assert rows.loc[("accuracy", 1.0), "ours"] == pytest.approx(100 * opt.loc[1.0, "max_accuracy"])
    assert rows.loc[("K_star", 1.0), "distance"] == 2 and rows.loc[("K_star", 2.0), "distance"] == 0
    whole = out[(out.scope == "table") & (out.measure == "K_star")].iloc[0]
    assert whole.distance == 1.0 and whole.low == whole.high == 1.0  # every unit the same: no width
    assert bool(whole.within)  # 1.0 <= 1 round
    accuracy = out[(out.scope == "table") & (out.measure == "accuracy")].iloc[0]
    assert accuracy.distance == pytest.approx(5.0) and not accuracy.within  # 10 and 0 points: 5 > 3


def test_the_interval_is_over_the_units_and_within_needs_its_upper_end():
    table = summary(units=10, shift=0.02)  # unit u's accuracy is 2u points higher: the units disagree
    out = pdist.distances(table, comparison(3, 2, 69.0, 59.0), "mnist", {"K_star": 1.0, "accuracy": 10.0})
    acc = out[(out.scope == "table") & (out.measure == "accuracy")].iloc[0]
    # the mean accuracy is 60 + 9 = 69 and 59: distance 0, but the units spread it
    assert acc.distance == pytest.approx(0.0, abs=1e-9) and acc.high > 1.0 and acc.low >= 0.0
    assert acc.within == (acc.high <= 10.0)
    again = pdist.distances(table, comparison(3, 2, 69.0, 59.0), "mnist", {"K_star": 1.0, "accuracy": 10.0})
    pd.testing.assert_frame_equal(out, again)  # the same generator: the same interval
    tight = pdist.distances(table, comparison(3, 2, 69.0, 59.0), "mnist", {"K_star": 1.0, "accuracy": 0.5})
    assert not tight[(tight.scope == "table") & (tight.measure == "accuracy")].iloc[0].within


def test_draws_with_several_seeds_are_resampled_whole():
    table = summary(units=4, seeds_per_unit=3)
    assert pdist.unit_column(table) == "partition" and pdist.unit_column(summary(units=4)) == "seed"
    c = pdist.curves(table, comparison(3, 2, 60.0, 50.0))
    assert len(c.units) == 4 and c.count.sum() == 4 * 3 * 2 * 5  # every run of a draw in its unit


def test_a_row_without_a_paper_value_or_runs_is_left_out():
    table = summary(units=3)
    comp = pd.concat([comparison(3, math.nan, 60.0, math.nan),
                      pd.DataFrame({"table": ["Table II"], "parameter": ["alpha"], "value": [5.0],
                                    "paper_K_star": [4.0], "paper_max_accuracy": [40.0]})], ignore_index=True)
    out = pdist.distances(table, comp, "mnist")
    rows = out[out.scope == "row"]
    assert set(rows.value) == {1.0} and set(rows.measure) == {"K_star", "accuracy"}
    assert out.target.isna().all() and not out.within.any()  # no targets: nothing is within


def test_the_slope_is_the_mean_change_per_unit_with_a_t_interval():
    table = summary(units=6, noise=0.01)
    found = pdist.slope(table, "alpha")
    per_unit = []
    for _, part in table.groupby("partition"):
        best = part.groupby(["value", "K"]).test_accuracy.mean().groupby(level=0).max()
        per_unit.append(100 * (best[2.0] - best[1.0]))
    from scipy import stats

    ci = stats.ttest_1samp(per_unit, 0.0).confidence_interval(0.95)
    assert found["change"] == pytest.approx(np.mean(per_unit)) and found["units"] == 6
    assert (found["low"], found["high"]) == pytest.approx((ci.low, ci.high))
    k = pdist.slope(table, "alpha", "K_star")
    assert k["change"] == pytest.approx(-1.0)  # K* 3 -> 2 on every unit


def verdicts(rows: list[tuple[str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame([{"statement": s, "dataset": d, "claim": s.replace("-", " "), "basis": "experiment",
                          "role": "claim", "verdict": v} for s, d, v in rows])


def test_two_readings_side_by_side_mark_the_claims_that_depend_on_the_reading():
    paper = rb.Reading("paper", "", verdicts([("k-falls", "mnist", "reproduced"), ("loss-up", "mnist", "refuted"),
                                              ("k-falls", "fashion_mnist", "inconclusive")]))
    cal = rb.Reading("calibrated", "reference/x", verdicts([("k-falls", "mnist", "reproduced"),
                                                            ("loss-up", "mnist", "reproduced")]))
    frame = rb.side_by_side([paper, cal])
    by = frame.set_index(["statement", "dataset"])
    assert not by.loc[("k-falls", "mnist"), "depends"] and by.loc[("loss-up", "mnist"), "depends"]
    assert by.loc[("k-falls", "fashion_mnist"), "depends"]  # not judged there counts as another verdict
    holds, depends = rb.verdict_lines(frame, ["paper engine", "calibrated"])
    assert holds == ["reproduced under both (1): k falls (MNIST)"]
    assert "loss up: MNIST paper engine refuted / calibrated reproduced" in depends
    page = rb.section([paper, cal])
    assert "2 depend on the reading" in page and "1 get the same verdict" in page
    assert rb.section([paper]) == ""


def test_a_bundle_is_beside_only_where_it_ran_the_same_design_under_another_engine(tmp_path):
    base = {"datasets": ["mnist"], "seeds": [0, 1], "partition": {"seeds": [0, 1], "n": 512}, "t_sum": 100,
            "engine": "paper"}
    for name, changes in {"same": {"engine": "calibrated"}, "other-seeds": {"engine": "calibrated", "seeds": [0]},
                          "same-engine": {}}.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.yaml").write_text(yaml.safe_dump({**base, **changes}))
    found = rb.beside(base, [str(tmp_path / n) for n in ("same", "other-seeds", "same-engine", "absent")])
    assert found == [str(tmp_path / "same")]
    assert rb.beside(base, [str(tmp_path / "same")], own=tmp_path / "same") == []


def test_a_refutation_says_what_decided_it():
    """"refuted" split by what decided it: a change inside the margin is a small effect, not the opposite."""
    from types import SimpleNamespace as Row

    from bladefl.report.verdict_rows import refuted_by

    small = Row(verdict="refuted", basis="experiment", finding="no change inside ±1 round: K* 10.7 → 10.3",
                decided_by="equivalence: K*, ... lies inside ±1 round")
    opposite = Row(verdict="refuted", basis="experiment", finding="K* 10 → 10.7",
                   decided_by="tie-aware exact Page test over 10 runs: p (opposite, rises) = 0.00076, FDR-adjusted")
    trend = Row(verdict="refuted", basis="experiment", finding="K* 2.6 → 6.9",
                decided_by="tie-aware exact Page test over 10 runs: p (either direction) = 7e-15, FDR-adjusted")
    assert refuted_by(small) == "equivalent within the margin"
    assert refuted_by(opposite) == "the opposite is significant"
    assert refuted_by(trend) == "a trend is significant"
    assert refuted_by(Row(verdict="reproduced", basis="experiment", finding="", decided_by="")) == ""
    maths = Row(verdict="refuted", basis="mathematics", finding="", decided_by="")
    assert refuted_by(maths) == "fails at a valid setting"


def test_verdict_tables_are_written_at_a_stated_precision_and_the_scans_counts_ignore_the_last_bits():
    """Another machine's last bits (about 2e-16 relative) change neither a verdict table's bytes nor a count."""
    from bladefl.experiments.verdicts.table import FLOAT_FORMAT, verdict_csv
    from bladefl.theory.constant_scan import quantised

    frame = pd.DataFrame({"p_claim": [0.000761904761904762], "effect": [1.2345678901234567]})
    nudged = frame * (1 + 2e-16)
    assert verdict_csv(frame) == verdict_csv(nudged) and FLOAT_FORMAT == "%.10g"
    assert verdict_csv(frame).splitlines()[1] == "0.0007619047619,1.23456789"
    k = np.array([3.9999999999999996, 4.0, 12.345678912345, np.inf, np.nan, 0.0])
    q = quantised(k)
    assert q[0] == q[1] == 4.0 and q[2] == 12.3456789 and np.isinf(q[3]) and np.isnan(q[4]) and q[5] == 0.0
    assert (quantised(k[:3] * (1 + 2e-16)) == q[:3]).all()
