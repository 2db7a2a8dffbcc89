"""The verdict path on synthetic curves built to be reproduced, refuted or inconclusive; every
claim of the paper gets a row; the paper comparison derives K* by each table's formula."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from bladefl.experiments.experiment_verdicts import EXPERIMENT_VERDICTS, experiment_verdicts, per_draw
from bladefl.experiments.grid import expand
from bladefl.experiments.trend import Margins, min_p, parse_margins, trend_test, units_needed
from bladefl.experiments.verdicts import VERDICTS, all_verdicts
from bladefl.report.pages import verdict_tally
from bladefl.report.paper import paper_comparison, paper_k_star

GRID = {
    "base": {"alpha": 1, "beta": 10, "N": 20, "eta": 0.01, "lazy_ratio": 0.0, "sigma2": 0.0},
    "sweeps": [
        {"name": "alpha", "vary": "alpha", "values": [1, 2, 5], "with": {"beta": 6}},
        {"name": "beta", "vary": "beta", "values": [6, 8, 10, 12]},
        {"name": "N", "vary": "N", "values": [10, 15, 20, 25], "with": {"beta": 6}},
        {"name": "eta", "vary": "eta", "values": [0.005, 0.01, 0.05, 0.1], "with": {"beta": 6}},
        {"name": "lazy_ratio", "vary": "lazy_ratio", "values": [0.0, 0.1, 0.2, 0.3], "with": {"sigma2": 0.01}},
        {"name": "sigma2", "vary": "sigma2", "values": [0.01, 0.1, 0.2, 0.3], "with": {"lazy_ratio": 0.2}},
        {"name": "epsilon", "vary": "epsilon", "values": [10, 100, math.inf]},
    ],
}


def table_from(curves: dict[str, list[np.ndarray]], members, draws: list[int] | None = None) -> pd.DataFrame:
    """A tidy run table: one row per (sweep member, K, seed) from per-cell, per-seed loss curves;
    ``draws``: each seed's partition draw (default: seed i on draw i)."""
    rows = []
    for m in members:
        for seed, loss in enumerate(curves[m.cell.key]):
            for k, value in enumerate(loss, start=1):
                rows.append({"sweep": m.sweep, "vary": m.vary, "value": m.value, "cell": m.cell.key, "K": k,
                             "seed": seed, "partition": seed if draws is None else draws[seed],
                             "beta": m.cell.beta, "train_loss": value, "test_accuracy": 1 - value / 100,
                             "status": "ok"})
    return pd.DataFrame(rows)


def bowl(k_star: float, Ks: int = 14, depth: float = 1.0) -> np.ndarray:
    return depth * (np.arange(1, Ks + 1) - k_star) ** 2 + 5


def beta_members():
    return [m for m in expand(GRID) if m.sweep == "beta"]


def row(out: pd.DataFrame, claim: str) -> pd.Series:
    return out[out.claim == claim].iloc[0]


def judged(curves, members, draws=None, margins=None) -> pd.DataFrame:
    return experiment_verdicts(table_from(curves, members, draws), members, 100.0, margins)


def test_an_effect_in_every_unit_is_reproduced_whatever_the_offset_between_units():
    """The README's old "refuted" case: the minimal loss rises with beta in every run by less than
    the level offset between partition draws; paired within units, it is reproduced."""
    members = beta_members()
    rise = {6: 0.0, 8: 0.1, 10: 0.17, 12: 0.23}
    offsets = [0.0, 0.2, -0.15, 0.35, 0.05]  # each draw's level, larger than the effect
    curves = {m.cell.key: [bowl(12 - m.value / 2) + rise[m.value] + offsets[s] for s in range(5)] for m in members}
    out = judged(curves, members)
    loss = row(out, "the loss grows with beta")
    assert loss.verdict == "reproduced" and loss.p_claim < 0.05 and loss.p_opposite > 0.5 and loss.units == 5
    assert loss.effect > 0 and "seed 0: [" in loss.evidence and "Page test, 5 units" in loss.evidence
    k = row(out, "K* falls as beta grows")
    assert k.verdict == "reproduced" and k.effect == pytest.approx(-3.0)
    # the opposite trend in every unit: refuted on evidence, not on noise
    rising = {m.cell.key: [bowl(2 + m.value / 2) + offsets[s] for s in range(5)] for m in members}
    k = row(judged(rising, members), "K* falls as beta grows")
    assert k.verdict == "refuted" and k.p_opposite < 0.05 and "opposite direction" in k.evidence


def test_pure_noise_is_inconclusive_never_refuted():
    """No effect of beta and noise far above the margin: "refuted" would need the opposite trend
    to be significant, which pure noise gives at the test's false-positive rate at most."""
    members = beta_members()
    verdicts = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        levels = {m.cell.key: rng.normal(0, 1, 6) for m in members}
        curves = {m.cell.key: [bowl(7) + levels[m.cell.key][s] for s in range(6)] for m in members}
        loss = row(judged(curves, members), "the loss grows with beta")
        assert "no change: the change is inside the margin" not in loss.evidence  # noise is not "no change"
        verdicts.append(loss.verdict)
    assert verdicts.count("inconclusive") >= 36 and verdicts.count("refuted") <= 2, verdicts


def test_an_effect_inside_the_margin_refutes_only_a_claim_of_change():
    members = [m for m in expand(GRID) if m.sweep == "epsilon"]
    # K* identical at every epsilon in all 6 units: "K* does not depend on epsilon" is reproduced;
    # "accuracy rises with epsilon" (a claimed change) with a 0.1-point change is refuted
    curves = {m.cell.key: [bowl(7) - (0.001 * (m.value if math.isfinite(m.value) else 200) / 200) + 0.01 * s
                           for s in range(6)] for m in members}
    out = judged(curves, members)
    same = row(out, "K* does not depend on epsilon")
    assert same.verdict == "reproduced" and "inside the margin" in same.evidence
    acc = row(out, "accuracy rises with epsilon")
    assert abs(acc.effect) < 0.01
    assert acc.verdict == "refuted"  # a tiny, consistent rise: inside the margin, not the claimed change
    flat = {m.cell.key: [bowl(7) + 0.01 * s for s in range(6)] for m in members}
    acc = row(judged(flat, members), "accuracy rises with epsilon")
    assert acc.verdict == "refuted" and "inside the margin" in acc.evidence


def test_two_units_and_two_values_say_too_few_runs():
    members = [m for m in beta_members() if m.value in (6, 8)]
    curves = {m.cell.key: [bowl(12 - m.value / 2) + 0.3 * s for s in range(2)] for m in members}
    k = row(judged(curves, members), "K* falls as beta grows")
    assert k.verdict == "too few runs" and "at least" in k.evidence and k.units == 2
    assert min_p(2, 2) == 0.25 and units_needed(2) == 5 and units_needed(4) == 2


def test_draws_with_several_seeds_are_the_units_and_are_tested_inside():
    members = beta_members()
    draws = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    rng = np.random.default_rng(3)
    curves = {m.cell.key: [bowl(12 - m.value / 2) + 0.2 * draws[s] + rng.normal(0, 0.01, 14) for s in range(9)]
              for m in members}
    table = table_from(curves, members, draws)
    out = per_draw(experiment_verdicts(table, members, 100.0), table, members, 100.0)
    k = row(out, "K* falls as beta grows")
    assert k.unit == "draw" and k.units == 3 and "draw 0: [" in k.evidence
    assert k.draws_holding == "3/3" and k.across_partitions == "holds on every draw"
    paired = table_from(curves, members)  # one seed per draw: no per-draw view
    out = per_draw(experiment_verdicts(paired, members, 100.0), paired, members, 100.0)
    assert set(out.across_partitions) == {"one seed per draw: seed and draw not separable"}


def test_derived_claims_carry_their_source_verdict_and_are_not_counted():
    members = expand(GRID)
    rng = np.random.default_rng(1)
    curves = {m.cell.key: [bowl(rng.integers(3, 8)) + rng.normal(0, 0.1, 14) for _ in range(4)] for m in members}
    out = all_verdicts(table_from(curves, members), members, 100.0, [], None, None)
    derived = out[out.derived_from.fillna("") != ""]
    assert set(derived.claim) == {"τ·α·K* rises with alpha", "τ·α·K* rises with M/N", "τ·α·K* rises with sigma2"}
    for r in derived.itertuples():
        assert r.verdict == row(out, r.derived_from).verdict
    tally = verdict_tally(out.assign(dataset="mnist"))
    readings = out[out.reading_of.fillna("") != ""]
    primary = out[(out.derived_from.fillna("") == "") & (out.reading_of.fillna("") == "")]
    assert f"experiment {len(primary)} claims" in tally and len(primary) == len(out) - 3 - len(readings)


def test_each_k_star_claim_is_read_again_by_accuracy_on_its_own_test_and_not_counted():
    """K* by loss and K* by accuracy side by side: where the accuracy peaks at a K that falls with
    beta in every unit while the loss's K* stays, the accuracy reading is reproduced and the loss
    reading is not; the readings' p-values do not enter the claims' FDR family."""
    members = expand(GRID)
    rng = np.random.default_rng(5)
    curves = {m.cell.key: [bowl(6) + rng.normal(0, 0.002, 14) for _ in range(6)] for m in members}
    table = table_from(curves, members)
    peak = {m.cell.key: 12 - m.value / 2 for m in members if m.sweep == "beta"}
    table["test_accuracy"] = [0.9 - 0.01 * abs(k - peak.get(c, 6)) + 0.001 * s
                              for c, k, s in zip(table.cell, table.K, table.seed, strict=True)]
    out = experiment_verdicts(table, members, 100.0)
    by_accuracy = row(out, "K* falls as beta grows (K* by accuracy)")
    assert by_accuracy.reading_of == "K* falls as beta grows" and by_accuracy.verdict == "reproduced"
    assert "K* by accuracy per run" in by_accuracy.evidence
    assert row(out, "K* falls as beta grows").verdict != "reproduced"
    without = out[out.reading_of.fillna("") == ""]
    alone = experiment_verdicts(table.assign(test_accuracy=0.5), members, 100.0)
    np.testing.assert_array_equal(alone[alone.reading_of.fillna("") == ""].p_claim, without.p_claim)  # apart
    tally = verdict_tally(out.assign(dataset="mnist", seeds=6, support=np.nan))
    counted = without[without.derived_from.fillna("") == ""]
    assert f"experiment {len(counted)} claims" in tally


CLAIMS = [
    "K* falls as alpha grows", "τ·α·K* rises with alpha", "K* falls as beta grows", "β·K* rises with beta",
    "K* falls as N grows", "K* settles for N >= 20", "the loss falls as N grows", "K* rises with eta",
    "K* falls as eta grows (Corollary 4's proof)", "the loss falls as eta grows below 0.1",
    "the loss rises again at eta = 0.1", "K* falls as M/N grows", "τ·α·K* rises with M/N",
    "K* falls as sigma2 grows", "τ·α·K* rises with sigma2", "the loss grows with alpha", "the loss grows with beta",
    "the loss grows with M/N", "the loss grows with sigma2", "accuracy rises with epsilon",
    "K* does not depend on epsilon", "the training loss is convex in K",
]


def test_every_claim_has_a_verdict_row():
    members = expand(GRID)
    rng = np.random.default_rng(1)
    curves = {m.cell.key: [bowl(rng.integers(3, 8)) + rng.normal(0, 0.1, 14) for _ in range(3)] for m in members}
    out = all_verdicts(table_from(curves, members), members, 100.0, [], None, None)
    assert set(CLAIMS) <= set(out.claim)
    assert set(out.verdict) <= set(EXPERIMENT_VERDICTS)
    assert (out.seeds == 3).all() and out.evidence.str.len().gt(0).all()
    tested = out[out.claim != "the training loss is convex in K"]
    assert tested.p_claim.between(0, 1).all()


def test_identical_units_show_no_equivalence_until_a_sign_test_could():
    """Two units with the very same change have a zero-width t-interval: that shows nothing, so a
    claim of change is not refuted as negligible on it; five identical units inside the margin
    (0.5^5 < 0.05) do show it."""
    from bladefl.experiments.trend import effect

    assert not effect(np.array([[10, 10, 10], [10, 10, 10]]), margin=1.0).equivalent
    assert effect(np.array([[10, 10, 10]] * 5), margin=1.0).equivalent
    assert not effect(np.array([[10, 10, 12]] * 5), margin=1.0).equivalent
    spread = np.array([[10, 10, 10.1], [10, 10, 9.9], [10, 10, 10.05]])
    assert effect(spread, margin=1.0).equivalent  # a real interval inside the margin


def test_margins_are_read_with_the_field_named():
    assert parse_margins(["K=2", "min_loss=0.05"]) == Margins(K=2.0, min_loss=0.05)
    with pytest.raises(ValueError, match="unknown quantity 'speed'.*allowed: K, mining_time"):
        parse_margins(["speed=1"])
    with pytest.raises(ValueError, match="verdicts.margins.K"):
        parse_margins(["K=-1"])


def test_the_trend_test_is_pages_with_exact_p_values():
    perfect = np.array([[1, 2, 3, 4], [1, 2, 3, 4]], dtype=float)
    t = trend_test(perfect)
    assert t.test == "Page" and t.p_rises == pytest.approx(1 / 576) and t.p_falls > 0.9
    assert trend_test(perfect[:, ::-1]).p_falls == pytest.approx(1 / 576)
    sign = trend_test(np.array([[1, 2]] * 5, dtype=float))
    assert sign.test == "sign" and sign.p_rises == pytest.approx(1 / 32)


def test_paper_k_star_by_each_tables_formula():
    assert paper_k_star("training_time", 64, 6, 100) == 6  # Table II, alpha = 5: 100 - 6*6 = 64
    assert paper_k_star("training_time", 58, 6, 100) == 7
    assert paper_k_star("mining_time", 72, 12, 100) == 6  # Table III, beta = 12
    assert math.isnan(paper_k_star("mining_time", 70, 6, 100))  # Table IV MNIST at the stated beta = 6


def test_paper_comparison_has_the_columns_and_both_readings_of_table_iv():
    tables = [{"table": "Table IV", "sweep": "N", "quantity": "mining_time", "beta": 6, "t_sum": 100,
               "beta_source": "stated", "rows": [{"value": 10, "mnist": 70, "accuracy_mnist": 74.52},
                                                 {"value": 20, "mnist": 50, "accuracy_mnist": 82.89}]},
              {"table": "Table II", "sweep": "alpha", "quantity": "training_time", "beta": 6, "t_sum": 100,
               "beta_source": "stated", "rows": [{"value": 5, "mnist": 64, "accuracy_mnist": 66.47}]}]
    optimum = pd.DataFrame([{"sweep": "alpha", "value": 5.0, "K_star_loss": 5, "K_star_loss_std": 0.5, "seeds": 3,
                             "max_accuracy": 0.6, "max_accuracy_std": 0.01}])
    summary = pd.DataFrame([{"sweep": "alpha", "value": 5.0, "beta": 6.0}])
    out = paper_comparison(optimum, summary, tables, "mnist", 100)
    for column in ("table", "dataset", "parameter", "value", "paper_quantity", "paper_value", "paper_K_star", "K_star",
                   "K_star_sd", "seeds", "max_accuracy", "paper_max_accuracy", "setting_source", "note"):
        assert column in out.columns, column
    iv = out[(out.table == "Table IV") & (out.value == 10)].iloc[0]
    assert np.isnan(iv.paper_K_star) and "inconsistent" in iv.note
    assert "reading 1: K* = 11.67" in iv.note and "reading 2: at the default beta=10, K* = 7" in iv.note
    ii = out[out.table == "Table II"].iloc[0]
    assert ii.paper_K_star == 6 and ii.K_star == 5 and ii.quantity == pytest.approx(70)  # 100 - 6*5
    assert ii.max_accuracy == pytest.approx(60) and ii.note == ""


def test_a_bound_that_is_undefined_somewhere_is_not_applicable_not_refuted():
    """With measured constants whose bracket is negative at small K, the bound bounds nothing
    there: the claim "above the experiment at every K" is not applicable (the K are named), and
    the K* claim's evidence says what no choice of constants can do."""
    import pandas as pd

    from bladefl.experiments.verdicts import BoundCell, bound_claims, cell_fit

    cell = BoundCell("fig3a", alpha=1, beta=6, eta=0.005, t_sum=100, M=0, N=20, sigma2=0.0)
    Ks = np.arange(1, 15)
    gaps = pd.DataFrame([{"cell": "fig3a", "seed": s, "K": int(k), "gap": 0.2 + 0.01 * (k - 8) ** 2 + 0.001 * s}
                         for s in (0, 1) for k in Ks])
    # xi delta / eps2 large: the measured bracket is negative where tau is large (small K)
    constants = pd.DataFrame([{"cell": "fig3a", "seed": s, "L": 20.0, "xi": 5.0, "delta": 5.0, "theta": 0.0,
                               "phi_measured": 0.2, "eps2_measured": 1e-2} for s in (0, 1)])
    fit = cell_fit(gaps, constants, cell, [0, 1])
    out = bound_claims([[fit]], [[8.0]], seeds=2).set_index("claim")
    some = out.loc["the bound is within 5% of the experiment at some K (the other reading)"]
    assert "smallest relative excess" in some.evidence and some.verdict in VERDICTS
    above = out.loc["the bound is above the experiment at every K"]
    assert above.verdict == "not applicable" and np.isnan(above.support)
    assert "fig3a at K = [1, 2" in above.evidence
    k_row = out.loc["the bound's K* is the experiment's K*"]
    assert "no choice of constants puts its minimiser above K = 4" in k_row.evidence
    assert "undefined at K = 1..4" in k_row.evidence
    assert "at the measured eta L = 0.1, no constants give K* > " in k_row.evidence
    assert set(out.verdict) <= set(VERDICTS)


def test_corollary_4_is_judged_under_both_of_the_papers_statements():
    """The statement says K* rises with eta, the proof that it falls: a clear rise is reproduced
    under the first and refuted under the second."""
    from bladefl.report.paper import paper_inconsistencies

    members = [m for m in expand(GRID) if m.sweep == "eta"]
    rng = np.random.default_rng(2)
    rising = {m.cell.key: [bowl(3 + 40 * m.value) + rng.normal(0, 0.02, 14) for _ in range(4)] for m in members}
    out = judged(rising, members)
    assert row(out, "K* rises with eta").verdict == "reproduced"
    assert row(out, "K* falls as eta grows (Corollary 4's proof)").verdict == "refuted"
    where = [row["where"] for row in paper_inconsistencies()]
    assert any("Corollary 4" in w for w in where) and any("Definition 1" in w for w in where)


def test_the_verdict_view_reads_at_a_glance():
    from bladefl.report.views import verdict_view

    members = expand(GRID)
    rng = np.random.default_rng(1)
    curves = {m.cell.key: [bowl(rng.integers(3, 8)) + rng.normal(0, 0.1, 14) for _ in range(4)] for m in members}
    out = all_verdicts(table_from(curves, members), members, 100.0, [], None, None)
    view = verdict_view(out)
    assert list(view.columns) == ["claim", "verdict", "test", "effect [95% CI]", "units", "per draw", "evidence"]
    first = view.iloc[0]
    assert first.claim == "K* falls as alpha grows (Corollary 1, Table II)" and first.test.startswith("p = ")
    assert first.units == "4 runs" and "[" in first["effect [95% CI]"]
    derived = view[view.claim.str.startswith("τ·α·K* rises with alpha")].iloc[0]
    assert "derived from “K* falls as alpha grows”, not counted" in derived.verdict
    assert view[view.claim.str.startswith("the training loss is convex")].iloc[0].test.startswith("p (against)")


def test_the_bound_verdicts_use_the_minimax_fit_and_each_ks_theta():
    """The verdict path fits as the README and the bound page report: minimax, and in a lazy cell
    theta at each K's last round (the seeds' median), not one mean theta."""
    from bladefl.experiments.verdicts import BoundCell, cell_fit
    from bladefl.theory.fit import fit_minimax

    cell = BoundCell("lazy", alpha=1, beta=6, eta=0.01, t_sum=100, M=8, N=20, sigma2=0.01)
    Ks = np.arange(1, 15)
    gaps = pd.DataFrame([{"cell": "lazy", "seed": s, "K": int(k), "gap": 0.3 + 0.01 * (k - 8) ** 2,
                          "theta_last": 0.1 * k + s} for s in (0, 1, 2) for k in Ks])
    constants = pd.DataFrame([{"cell": "lazy", "seed": s, "L": 2.0, "xi": 1.0, "delta": 1.0, "theta": 5.0,
                               "phi_measured": 0.2, "eps2_measured": 1.0} for s in (0, 1, 2)])
    fit = cell_fit(gaps, constants, cell, [0, 1, 2])
    assert np.allclose(fit.common["theta"], 0.1 * Ks + 1)  # the median seed's per-K theta
    expected = fit_minimax(Ks.astype(float), fit.gap, **fit.common)
    assert fit.fit.phi == pytest.approx(expected.phi) and fit.fit.residual == pytest.approx(expected.residual)
