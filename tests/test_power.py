"""What a design can decide (verdicts.power) and Section VI's small-noise scan, against known answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from bladefl.experiments.verdicts.power import design_limits, detectable_change


def test_the_smallest_p_of_each_exact_test_is_its_known_floor():
    five = design_limits(5).set_index("swept values")
    assert five.loc[2, "smallest p, one-sided"] == pytest.approx(1 / 32)  # the sign test over 5 units
    assert five.loc[2, "two-sided p < 0.05 reachable"] == False  # noqa: E712 - 1/16 > 0.05
    two = design_limits(2).set_index("swept values")
    assert two.loc[3, "smallest p, one-sided"] == pytest.approx(1 / 36)  # (1/3!)^2
    assert bool(two.loc[3, "one-sided p < 0.05 reachable"]) and not bool(two.loc[3, "two-sided p < 0.05 reachable"])
    assert two.loc[2, "units a one-sided test needs"] == 5  # 0.5^5 < 0.05 <= 0.5^4


def test_the_detectable_change_has_the_power_it_claims():
    """d for 20 units is the textbook 0.66 (80% power, two-sided 5%), and a simulation of the paired
    t-test at that d rejects in about 80% of draws."""
    d = detectable_change(20)
    assert d == pytest.approx(0.66, abs=0.01)
    rng = np.random.default_rng(0)
    changes = rng.normal(d, 1.0, size=(4000, 20))
    rejected = stats.ttest_1samp(changes, 0.0, axis=1).pvalue < 0.05
    assert rejected.mean() == pytest.approx(0.8, abs=0.03)
    assert detectable_change(5) > d and np.isnan(detectable_change(1))


def test_section_vi_small_noise_holds_for_a_small_sigma2_and_fails_for_a_large_one():
    """The scan of Section VI's "a small noise does not affect K*" on Theorem 4's bound: at sigma2 = 0
    against itself nothing moves; at a sigma2 whose noise term dwarfs the bound K* moves by rounds
    and the witness names both K*; every judged setting has a feasible K*."""
    from bladefl.theory.theorem_scans import small_noise

    base = dict(alpha=1, beta=6, eta=0.01, t_sum=100, L=160, xi=1.0, delta=6.75, phi=1.6, eps2=3000, M=8, N=20,
                theta=0.26)
    none = small_noise(base, 0.0, settings=200)
    assert none.holds and none.judged > 50 and "at most 0 rounds" in none.note
    loud = small_noise(base, 1e3, settings=200)
    assert not loud.holds and "without noise" in loud.witness and "at sigma2 = 1000" in loud.witness


def test_the_training_time_columns_are_t_sum_minus_beta_k_not_tau_alpha_k():
    """Table II's 64 at alpha = 5 is no multiple of 5: no integer tau gives tau alpha K* = 64; it is
    t_sum - beta K* at K* = 6, where the time model trains tau alpha K* = 5 x 2 x 6 = 60."""
    from bladefl.experiments.verdicts.paper_errors import training_time_row

    tables = [{"table": "Table II", "sweep": "alpha", "beta": 6, "quantity": "training_time", "t_sum": 100,
               "rows": [{"value": 5, "mnist": 64}, {"value": 1, "mnist": 40}]}]
    row = training_time_row(tables, "mnist")
    assert row["verdict"] == "paper error" and row["statement"] == "tab-training-time"
    assert "64 = t_sum - beta K* at K* = 6, tau alpha K* = 60 (64 is no multiple of 5)" in row["evidence"]
    assert "alpha = 1" not in row["evidence"]  # 40 = 100 - 6 x 10 = 6 x 1 x 10: the floor leaves nothing
    assert training_time_row([{**tables[0], "rows": [{"value": 1, "mnist": 40}]}], "mnist") is None


def test_a_setting_two_tables_share_with_different_values_is_a_paper_error_with_both_readings():
    """Tables II and III meet at alpha 1, beta 6: Fashion-MNIST's K* there is 46 = 100 - 6 x 9 (Table II)
    and 30 = 6 x 5 (Table III), 4 rounds apart, and the accuracies 59.57% and 61.51%."""
    import yaml

    from bladefl.experiments.plan.grid import expand
    from bladefl.experiments.verdicts.paper_errors import repeated_cell_row

    grid = yaml.safe_load((Path(__file__).resolve().parents[1] / "config/config.yaml").read_text())
    tables = [{"table": "Table II", "sweep": "alpha", "beta": 6, "quantity": "training_time", "t_sum": 100,
               "rows": [{"value": 1, "fashion_mnist": 46, "accuracy_fashion_mnist": 59.57}]},
              {"table": "Table III", "sweep": "beta", "quantity": "mining_time", "t_sum": 100,
               "rows": [{"value": 6, "fashion_mnist": 30, "accuracy_fashion_mnist": 61.51},
                        {"value": 8, "fashion_mnist": 40, "accuracy_fashion_mnist": 60.34}]}]
    row = repeated_cell_row(tables, expand(grid), "fashion_mnist")
    assert row["verdict"] == "paper error" and row["statement"] == "tab-repeated-cell"
    assert "K* 9, 5, accuracy 59.57, 61.51% (spread 4 rounds, 1.94 points)" in row["decided_by"]
    assert "reading 1" in row["evidence"] and "reading 2" in row["evidence"]
    same = [{**tables[1], "rows": [{**tables[1]["rows"][0], "fashion_mnist": 54, "accuracy_fashion_mnist": 59.57}]},
            tables[0]]  # 54 = 6 x 9: the same K* and accuracy in both tables is no error
    assert repeated_cell_row(same, expand(grid), "fashion_mnist") is None


def test_the_authors_tau_rule_is_judged_by_the_alpha_one_runs_against_the_texts_own():
    """The code as published (local_frequence = 1) trains every alpha as alpha = 1: its K* and accuracy at
    alpha = 2 are the alpha = 1 cell's; the text's rule, the alpha = 2 cell's. Two seeds a cell; K* is the
    argmin of the seed-mean F(w), the accuracy the best seed-mean test accuracy."""
    import pandas as pd

    from bladefl.experiments.verdicts.paper_errors import tau_rule_row

    curves = {1.0: {1: (3.0, 0.50), 2: (1.0, 0.80), 3: (2.0, 0.70)}, 2.0: {1: (1.0, 0.60), 2: (2.0, 0.65)}}
    runs = pd.DataFrame([{"sweep": "alpha", "value": a, "K": k, "seed": seed, "partition": seed, "status": "ok",
                          "train_loss": loss + 0.1 * seed, "test_accuracy": acc + 0.02 * seed}
                         for a, ks in curves.items() for k, (loss, acc) in ks.items() for seed in (0, 1)])
    tables = [{"table": "Table II", "sweep": "alpha", "beta": 6, "quantity": "training_time", "t_sum": 100,
               "rows": [{"value": 1, "mnist": 88, "accuracy_mnist": 85.0},  # K* (100 - 88) / 6 = 2
                        {"value": 2, "mnist": 94, "accuracy_mnist": 70.0}]}]  # K* 1
    row = tau_rule_row(tables, runs, "mnist")
    assert row["verdict"] == "ambiguous" and row["statement"] == "tab2-tau-rule"
    said = row["decided_by"]
    assert "our runs K* 2 +- 0, 81.0 +- 1.4% at every alpha, 1.00 rounds and 11.0 points per row" in said
    # read as 1/alpha the code is the text's rule: both readings judged by the runs
    assert "read as 1/alpha it is the text's rule: 0.00 rounds and 4.0 points (alpha = 2: K* 1 +- 0, 66.0 +- 1.4%)" \
        in said  # at K = 2
    assert all(f"({r})" in row["evidence"] for r in "abc") and "1/alpha" in row["evidence"]
    assert "beta at 10" in row["evidence"]
    formulas = tau_rule_row(tables, runs[runs.value == 1.0], "mnist")  # no other alpha's runs: the formulas alone
    assert formulas["verdict"] == "ambiguous" and "(none here)" in formulas["decided_by"]
    assert tau_rule_row(tables, None, "")["decided_by"] == formulas["decided_by"]
    assert tau_rule_row([{**tables[0], "rows": tables[0]["rows"][:1]}], runs, "mnist") is None  # alpha 1 alone
