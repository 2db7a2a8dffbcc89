"""The verdict path on synthetic curves built to be reproduced, refuted or inconclusive; every
claim of the paper gets a row; the paper comparison derives K* by each table's formula."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from bladefl.experiments.plan.grid import expand
from bladefl.experiments.verdicts import trend
from bladefl.experiments.verdicts.experiment import EXPERIMENT_VERDICTS, experiment_verdicts, per_draw
from bladefl.experiments.verdicts.table import VERDICTS, all_verdicts
from bladefl.experiments.verdicts.trend import Margins, min_p, parse_margins, trend_test, units_needed
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
    assert loss.effect > 0 and "seed 0: [" in loss.evidence and "tie-aware exact Page test, 5 units" in loss.evidence
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
    assert k.verdict == "too few runs" and "cannot reach p < 0.05 after adjustment" in k.evidence and k.units == 2
    assert k.decided_by.startswith("too few runs") and "every run (2) in the claimed direction" in k.decided_by
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
    derived = out[out.role == "derived"]
    assert set(derived.claim) == {"τ·α·K* rises with alpha", "τ·α·K* rises with M/N", "τ·α·K* rises with sigma2"}
    for r in derived.itertuples():
        base = row(out, r.derived_from)
        assert r.verdict == base.verdict and r.p_claim == base.p_claim and r.statement == base.statement
    tally = verdict_tally(out.assign(dataset="mnist"))
    primary = out[(out.role == "claim") & (out.basis == "experiment")]
    assert f"experiment {len(primary)} statements" in tally
    assert primary.statement.is_unique  # one counted row per statement; the proof's reading under its paper error
    assert set(out[out.basis == "experiment"].statement) - set(primary.statement) == {"cor4-proof"}


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
    counted = without[without.role == "claim"]
    assert f"experiment {len(counted)} statements" in tally


CLAIMS = [
    "K* falls as alpha grows", "τ·α·K* rises with alpha", "K* falls as beta grows", "β·K* rises with beta",
    "K* falls as N grows", "K* settles for N >= 20", "the loss falls as N grows", "K* rises with eta",
    "K* falls as eta grows (Corollary 4's proof, on the experiment)", "the loss falls as eta grows below 0.1",
    "the loss rises again at eta = 0.1", "K* falls as M/N grows", "τ·α·K* rises with M/N",
    "K* falls as sigma2 grows", "τ·α·K* rises with sigma2", "the loss grows with alpha", "the loss grows with beta",
    "the loss rises and the accuracy falls as M/N grows", "the loss rises and the accuracy falls as sigma2 grows",
    "accuracy rises with epsilon", "the loss falls and the accuracy rises as epsilon grows",
    "K* does not depend on epsilon", "the training loss is convex in K (every cell of the grid)",
]


def test_every_claim_has_a_verdict_row():
    members = expand(GRID)
    rng = np.random.default_rng(1)
    curves = {m.cell.key: [bowl(rng.integers(3, 8)) + rng.normal(0, 0.1, 14) for _ in range(3)] for m in members}
    out = all_verdicts(table_from(curves, members), members, 100.0, [], None, None)
    assert set(CLAIMS) <= set(out.claim)
    assert set(out.verdict) <= set(EXPERIMENT_VERDICTS)
    assert (out.seeds == 3).all() and out.evidence.str.len().gt(0).all()
    tested = out[~out.claim.str.startswith("the training loss is convex in K")]
    assert tested.p_claim.between(0, 1).all()


def test_identical_units_show_no_equivalence_until_a_sign_test_could():
    """Two units with the very same change have a zero-width t-interval: that shows nothing, so a
    claim of change is not refuted as negligible on it; five identical units inside the margin
    (0.5^5 < 0.05) do show it."""
    from bladefl.experiments.verdicts.trend import effect

    assert not effect(np.array([[10, 10, 10], [10, 10, 10]]), margin=1.0).equivalent
    assert effect(np.array([[10, 10, 10]] * 5), margin=1.0).equivalent
    assert not effect(np.array([[10, 10, 12]] * 5), margin=1.0).equivalent
    spread = np.array([[10, 10.02, 10.1], [10, 9.97, 9.9], [10, 10.01, 10.05]])
    assert effect(spread, margin=1.0).equivalent  # a real interval inside the margin, at every step


def test_no_change_needs_every_step_inside_the_margin_not_the_endpoints():
    """beta K* 60, 56, 70, 60: last minus first is 0, but a step is +25%: not "unchanged"; a steady fall
    of small steps is no "no change" either."""
    from bladefl.experiments.verdicts.trend import effect

    path = np.array([[60, 56, 70, 60], [61, 57, 71, 60], [59, 55, 69, 61], [60, 56, 70, 59], [60, 57, 70, 60]],
                    dtype=float)
    e = effect(path, margin=0.10, relative=True)
    assert abs(e.mean) < 0.02 and not e.equivalent  # the endpoints agree, a step does not
    assert e.pair == (1, 2) and e.high90 > 0.10  # the change named is 56 -> 70
    steady = np.array([[10, 9.6, 9.2, 8.8]] * 3 + [[10, 9.5, 9.1, 8.7], [10, 9.7, 9.3, 8.9]], dtype=float)
    assert not effect(steady, margin=1.0).equivalent  # each step -0.4, the sweep -1.2
    flat = np.array([[60, 59, 61, 60], [61, 60, 61, 60], [59, 60, 60, 61], [60, 61, 60, 59], [60, 60, 61, 60]],
                    dtype=float)
    assert effect(flat, margin=0.10, relative=True).equivalent


def test_pages_test_is_exact_for_tied_data():
    """One unit with values 1, 1, 2 (mid-ranks 1.5, 1.5, 3): of its 3 distinct orders one is as high as
    observed, so p = 1/3; scipy's exact Page null assumes untied ranks and says otherwise."""
    from scipy import stats

    from bladefl.experiments.verdicts.trend import page_exact

    tied = np.array([[1, 1, 2]], dtype=float)
    assert page_exact(tied) == (13.5, pytest.approx(1 / 3), 1.0)
    # two units, a fully tied one adds nothing: the other's exact p (1/6 of the orders: 1, 2, 3 rising)
    assert page_exact(np.array([[5, 5, 5], [1, 2, 3]], dtype=float))[1] == pytest.approx(1 / 6)
    # untied: the same as scipy's exact null
    untied = np.array([[1, 2, 3, 4], [1, 3, 2, 4], [2, 1, 3, 4], [1, 2, 4, 3]], dtype=float)
    assert page_exact(untied)[1] == pytest.approx(stats.page_trend_test(untied, method="exact").pvalue)
    # heavy ties (integer K* over 4 values, 20 units): brute force over every order of 3 units agrees
    rng = np.random.default_rng(0)
    small = rng.integers(1, 3, size=(3, 4)).astype(float)
    ranks = stats.rankdata(small, axis=1)
    observed = (ranks * np.arange(1, 5)).sum()
    import itertools

    orders = [list(itertools.permutations(r)) for r in ranks]
    hits = sum(sum(np.dot(o, np.arange(1, 5)) for o in combo) >= observed - 1e-9
               for combo in itertools.product(*orders))
    assert page_exact(small)[1] == pytest.approx(hits / np.prod([len(o) for o in orders]))


def test_margins_are_read_with_the_field_named():
    assert parse_margins(["K=2", "min_loss=0.05"]) == Margins(K=2.0, min_loss=0.05)
    with pytest.raises(ValueError, match="unknown quantity 'speed'.*allowed: K, mining_time"):
        parse_margins(["speed=1"])
    with pytest.raises(ValueError, match="verdicts.margins.K"):
        parse_margins(["K=-1"])


def test_the_trend_test_is_pages_with_exact_p_values():
    perfect = np.array([[1, 2, 3, 4], [1, 2, 3, 4]], dtype=float)
    t = trend_test(perfect)
    assert t.test == trend.PAGE and t.p_rises == pytest.approx(1 / 576) and t.p_falls > 0.9
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

    from bladefl.experiments.verdicts.bound import bound_claims
    from bladefl.experiments.verdicts.bound_fit import BoundCell, cell_fit
    from bladefl.experiments.verdicts.vocabulary import Replicates

    cell = BoundCell("fig3a", alpha=1, beta=6, eta=0.005, t_sum=100, M=0, N=20, sigma2=0.0)
    Ks = np.arange(1, 15)
    gaps = pd.DataFrame([{"cell": "fig3a", "seed": s, "K": int(k), "gap": 0.2 + 0.01 * (k - 8) ** 2 + 0.001 * s}
                         for s in (0, 1) for k in Ks])
    # xi delta / eps2 large: the measured bracket is negative where tau is large (small K)
    constants = pd.DataFrame([{"cell": "fig3a", "seed": s, "L": 20.0, "xi": 5.0, "delta": 5.0, "theta": 0.0,
                               "phi_measured": 0.2, "eps2_measured": 1e-2} for s in (0, 1)])
    fit = cell_fit(gaps, constants, cell, [0, 1])
    out = bound_claims([[fit]], [[8.0]], Replicates(2, "run", 2, "2 runs")).set_index("claim")
    some = out.loc["the bound is within 5% of the experiment at some K (the other reading)"]
    assert "smallest relative excess" in some.evidence and some.verdict == "vacuous" and some.role == "reading"
    above = out.loc["the bound is above the experiment at every K"]
    assert above.verdict == "not applicable" and np.isnan(above.support)
    assert "fig3a at K = [1, 2" in above.evidence
    k_row = out.loc["the bound's K* is the experiment's K*"]
    assert "no choice of constants puts its minimiser above K = 4" in k_row.evidence
    assert "undefined at K = 1..4" in k_row.evidence
    assert "at the measured eta L = 0.1, no constants give K* > " in k_row.evidence
    assert set(out.verdict) <= set(VERDICTS)


def test_the_k_star_statement_leaves_out_a_fit_with_infinite_eps2_whose_minimiser_is_below_one_round():
    """Fig. 3(b)'s fit with eps2 = inf (no xi-delta term) has its real minimiser far below one round: its
    K* over K >= 1 is the boundary K = 1, so the K* statement is judged on the other cell alone (here it
    holds there); with every cell so, it is not applicable."""
    import dataclasses
    import math

    import pandas as pd

    from bladefl.experiments.verdicts.bound import bound_claims
    from bladefl.experiments.verdicts.bound_fit import BoundCell, cell_fit
    from bladefl.experiments.verdicts.vocabulary import Replicates

    def fit_of(name: str, eta: float):  # noqa: ANN202 - a CellFit
        cell = BoundCell(name, alpha=1, beta=6, eta=eta, t_sum=100, M=0, N=20, sigma2=0.0)
        gaps = pd.DataFrame([{"cell": name, "seed": s, "K": k, "gap": 0.2 + 0.01 * (k - 3) ** 2 + 0.001 * s}
                             for s in (0, 1, 2) for k in range(1, 15)])
        constants = pd.DataFrame([{"cell": name, "seed": s, "L": 2.0, "xi": 0.5, "delta": 0.5, "theta": 0.0,
                                   "phi_measured": 0.2, "eps2_measured": 1.0} for s in (0, 1, 2)])
        return cell_fit(gaps, constants, cell, [0, 1, 2])

    a = fit_of("fig3a", 0.005)
    b = fit_of("fig3b", 0.01)
    b = dataclasses.replace(b, fit=dataclasses.replace(b.fit, eps2=math.inf), bound=None)
    reps = Replicates(3, "run", 3, "3 runs")
    claim = "the bound's K* is the experiment's K*"
    out = bound_claims([[a, b]], [[2.0, 3.0]], reps).set_index("claim")  # (a)'s fit has K* = 2; (b)'s 1 against 3
    row = out.loc[claim]
    assert row.verdict == "reproduced", row.evidence
    assert "(b) left out" in row.finding and "below one round in fig3b (0.00" in row.evidence
    wrong = bound_claims([[a, b]], [[5.0, 3.0]], reps).set_index("claim").loc[claim]
    assert wrong.verdict == "refuted"  # judged on (a): 2 against 5
    alone = bound_claims([[b]], [[3.0]], reps).set_index("claim").loc[claim]
    assert alone.verdict == "not applicable" and "below one round" in alone.decided_by


def test_corollary_4_is_judged_under_both_of_the_papers_statements():
    """The statement says K* rises with eta, the proof that it falls: a clear rise is reproduced
    under the statement (counted) and refuted under the proof (a reading of that paper error)."""
    members = [m for m in expand(GRID) if m.sweep == "eta"]
    rng = np.random.default_rng(2)
    rising = {m.cell.key: [bowl(3 + 40 * m.value) + rng.normal(0, 0.02, 14) for _ in range(4)] for m in members}
    out = judged(rising, members)
    stated = row(out, "K* rises with eta")
    assert stated.verdict == "reproduced" and stated.role == "claim" and stated.statement == "tab5-eta"
    proof = row(out, "K* falls as eta grows (Corollary 4's proof, on the experiment)")
    assert proof.verdict == "refuted" and proof.role == "reading" and proof.statement == "cor4-proof"


def test_the_verdict_view_reads_at_a_glance():
    from bladefl.report.verdict_rows import verdict_view

    members = expand(GRID)
    rng = np.random.default_rng(1)
    curves = {m.cell.key: [bowl(rng.integers(3, 8)) + rng.normal(0, 0.1, 14) for _ in range(4)] for m in members}
    out = all_verdicts(table_from(curves, members), members, 100.0, [], None, None)
    view = verdict_view(out)
    assert list(view.columns) == ["claim", "verdict", "decided by", "what the data show", "units", "per draw",
                                  "evidence"]
    first = view.iloc[0]
    assert first.claim == "K* falls as alpha grows (Table II text (Corollary 1))"
    assert first["decided by"].startswith("tie-aware exact Page test over 4 runs: p (")
    assert "FDR-adjusted" in first["decided by"]
    assert first.units == "4 runs" and first["what the data show"].startswith("K* ")
    derived = view[view.claim.str.startswith("τ·α·K* rises with alpha")].iloc[0]
    assert "derived from “K* falls as alpha grows”, not counted" in derived.verdict
    convex = view[view.claim.str.startswith("the training loss is convex")].iloc[0]
    assert "p (against)" in convex["decided by"] or convex["decided by"].startswith("one-sided")


def test_the_bound_verdicts_use_the_minimax_fit_and_each_ks_theta():
    """The verdict path fits as the README and the bound page report: minimax, and in a lazy cell
    theta at each K's last round (the seeds' median), not one mean theta."""
    from bladefl.experiments.verdicts.bound_fit import BoundCell, cell_fit
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


FIG3 = {"name": "fig3", "feeds": "Fig. 3", "cells": [{"beta": 6, "eta": 0.005}, {"beta": 6, "lazy_ratio": 0.4,
                                                                               "sigma2": 0.01}]}


def full_grid_verdicts(units: int = 5, seed: int = 4, **kwargs) -> tuple[pd.DataFrame, list]:
    """A verdict table of the whole paper grid with Fig. 3's cells and their bound files
    (synthetic), scans kept small."""
    from bladefl.experiments.verdicts.table import bound_cells_of

    grid = {**GRID, "sweeps": [*GRID["sweeps"], FIG3]}
    members = expand(grid)
    rng = np.random.default_rng(seed)
    curves = {m.cell.key: [bowl(rng.integers(4, 9)) + rng.normal(0, 0.05, 14) for _ in range(units)] for m in members}
    cells = bound_cells_of(members, "fig3", 100.0)
    gaps = pd.DataFrame([{"cell": c.cell, "seed": s, "K": k, "gap": 0.2 + 0.01 * (k - 8) ** 2 + 0.002 * s,
                          "theta_last": 0.5} for c in cells for s in range(units) for k in range(1, 15)])
    constants = pd.DataFrame([{"cell": c.cell, "seed": s, "L": 16.0, "xi": 3.0, "delta": 6.5, "theta": 0.6,
                               "noise_norm": 45.0, "phi_measured": 0.1, "eps2_measured": 1.0,
                               "against": "honest aggregate"} for c in cells for s in range(units)])
    from bladefl.experiments.verdicts.statements import read_inventory
    from bladefl.report.paper import paper_tables

    inventory = read_inventory(REPO / "config" / "paper_statements.yaml")
    out = all_verdicts(table_from(curves, members), members, 100.0, cells, gaps, constants, bound_resamples=20,
                       inventory=inventory, paper_tables=paper_tables(REPO / "config" / "paper_values.yaml"),
                       scan_settings=300, **kwargs)
    return out, members


REPO = __import__("pathlib").Path(__file__).resolve().parents[1]


def eta_pair_table(change: list[float], units: int = 5) -> tuple[pd.DataFrame, list]:
    """The paper grid with noise everywhere, and the minimal loss at eta = 0.1 changed from eta = 0.05
    by ``change[u]`` (relative) in unit u."""
    members = expand(GRID)
    rng = np.random.default_rng(7)
    curves = {m.cell.key: [bowl(rng.integers(3, 8)) + rng.normal(0, 0.3, 14) for _ in range(units)] for m in members}
    eta = {m.value: m.cell.key for m in members if m.sweep == "eta"}
    curves[eta[0.05]] = [bowl(6) for _ in range(units)]
    curves[eta[0.1]] = [bowl(6) * (1 + change[u]) for u in range(units)]
    return table_from(curves, members), members


def test_a_two_value_claim_every_unit_contradicts_is_refuted():
    """"The loss rises again at eta = 0.1" where it falls by 15-20% in every unit: the paired t-test
    over the units decides it (a sign test over 5 units never could after adjustment)."""
    table, members = eta_pair_table([-0.18, -0.16, -0.2, -0.15, -0.19])
    r = row(experiment_verdicts(table, members, 100.0), "the loss rises again at eta = 0.1")
    assert r.verdict == "refuted" and r.p_opposite < 0.05 and "paired t test over 5 runs" in r.decided_by


def test_a_design_that_cannot_reach_significance_after_adjustment_says_too_few_runs():
    """Identical changes in 5 units leave the t-test undefined; the sign test's floor 1/32, adjusted
    with ~40 other p-values, cannot reach 0.05: too few runs, with the units' directions."""
    table, members = eta_pair_table([-0.18] * 5)
    r = row(experiment_verdicts(table, members, 100.0), "the loss rises again at eta = 0.1")
    assert r.verdict == "too few runs" and "every run (5) opposite" in r.decided_by
    assert "smallest adjusted p this design reaches" in r.decided_by


def test_a_reading_that_holds_for_every_fit_is_not_counted_and_a_false_statement_is_not_reproduced():
    """The 'at some K' reading of "within 5%" cannot fail: listed as vacuous, in no tally. Corollary
    4's second part fails over the scan: refuted (with a witness), whatever the fitted bound shows."""
    out, _ = full_grid_verdicts()
    some = row(out, "the bound is within 5% of the experiment at some K (the other reading)")
    assert some.verdict == "vacuous" and some.role == "reading"
    assert some.reading_of == "the bound is within 5% of the experiment at every K"
    eta = row(out, "the bound falls as eta grows while eta L < 1 (Corollary 4)")
    assert eta.role == "claim" and eta.basis == "mathematics" and eta.verdict == "refuted" and "witness" in eta.evidence
    tally = verdict_tally(out.assign(dataset="mnist"))
    counted = out[out.role == "claim"]
    assert f"bound {len(counted[counted.basis == 'bound'])} statements" in tally and "vacuous" not in tally


def test_the_evidence_states_the_rows_own_p_values():
    """Every experiment row's evidence prints the same adjusted p-values as its columns (the
    derived rows once printed their base claim's, swapped)."""
    out, _ = full_grid_verdicts(seed=9)
    rows = out[(out.basis == "experiment") & out.p_claim.notna()]
    assert len(rows) > 20
    for r in rows.itertuples():
        direction = "either direction" if math.isnan(r.p_opposite) else None
        if direction:
            assert f"BH-adjusted: p (either direction) = {r.p_claim:.3g}" in r.evidence, r.claim
        else:
            tail = r.evidence.split("BH-adjusted")[-1]
            assert f"= {r.p_claim:.3g}, p (opposite) = {r.p_opposite:.3g}" in tail, (r.claim, tail)


def test_a_two_unit_design_shows_directions_and_tallies_nothing():
    """Two runs in which K* falls with beta exactly alike: the tie-aware exact Page test could call it
    significant, but two units show a direction, they are no evidence: "too few runs", the direction
    and what the test would say in its reason, and nothing reproduced or refuted in the tally."""
    members = beta_members()
    curves = {m.cell.key: [bowl(12 - m.value / 2) for _ in range(2)] for m in members}
    out = judged(curves, members)
    falls = row(out, "K* falls as beta grows")
    assert falls.verdict == "too few runs" and falls.units == 2
    assert "a look, not evidence" in falls.decided_by and "would say reproduced" in falls.evidence
    counted = out[(out.role == "claim") & (out.basis == "experiment")]
    assert not counted.verdict.isin(["reproduced", "refuted"]).any()


def test_the_per_draw_label_says_something_on_every_row():
    """A row where no draw decides alone says so in words (once "holds on 0, fails on 0, unresolved
    on 5 draws (0/5)"), and a split label counts every draw."""
    from bladefl.experiments.verdicts.experiment import _across

    assert _across(["unresolved"] * 5) == "unresolved on every draw (5)"
    assert _across(["holds", "unresolved", "unresolved"]) == "holds on 1, fails on 0, unresolved on 2 of 3 draws"
    assert _across(["holds", "fails"]) == "differs between draws" and _across([]) == ""
