import pytest

from bladefl.fl.timemodel import allocate, max_feasible_K, tau_for


def test_tau_table_of_the_paper_default():
    assert [tau_for(K, 1, 10, 100) for K in range(1, 10)] == [90, 40, 23, 15, 10, 6, 4, 2, 1]


def test_infeasible_K_is_reported_not_raised():
    a = allocate(10, 1, 10, 100)
    assert not a.feasible and a.tau == 0
    assert max_feasible_K(1, 10, 100) == 9
    assert max_feasible_K(5, 6, 100) == 9 and tau_for(9, 5, 6, 100) == 1 and tau_for(10, 5, 6, 100) < 1


def test_unused_time_and_decimal_exactness():
    a = allocate(3, 1, 10, 100)  # 3 * (23 + 10) = 99
    assert a.unused_time == pytest.approx(1.0) and a.training_time == 69 and a.mining_time == 30
    # 0.1-steps: (1.0/0.1 - 0.3)/0.1 would floor wrongly in binary floating point
    assert tau_for(1, 0.1, 0.3, 1.0) == 7


def test_bad_K():
    with pytest.raises(ValueError, match="K must be an integer >= 1"):
        tau_for(0, 1, 10, 100)


def test_the_authors_tau_rule_is_the_papers_at_alpha_1_and_overspends_past_it():
    """The authors' code (main_FL&BL.py 111-113): tau = floor(alpha (t_sum - beta K) / K)."""
    for t_sum in (30, 100, 250):
        for beta in (0, 6, 10, 12.5):
            for K in range(1, 12):
                assert tau_for(K, 1, beta, t_sum, "authors") == tau_for(K, 1, beta, t_sum)
    assert (tau_for(5, 2, 6, 100, "authors"), tau_for(5, 2, 6, 100)) == (28, 7)  # alpha^2 = 4 times, floored
    spent = allocate(5, 2, 6, 100, "authors")
    assert spent.training_time == 5 * 28 * 2 and spent.unused_time == 100 - 5 * (28 * 2 + 6) < 0
    assert not allocate(17, 2, 6, 100, "authors").feasible  # 100 - 6 K < 0: no iteration left
    with pytest.raises(ValueError, match="tau rule must be one of"):
        tau_for(1, 1, 1, 10, "ours")


def test_a_run_config_reads_the_tau_rule_and_records_it_only_where_it_is_not_the_papers():
    from bladefl.experiments.runs.run_checks import time_model_problems
    from bladefl.fl.run_config import RunConfigError, from_dict

    paper = from_dict({})
    assert paper.time.tau_rule == "paper" and "tau_rule" not in paper.to_dict()["time"]  # old runs: same config
    authors = from_dict({"time": {"tau_rule": "authors", "alpha": 2, "beta": 6}})
    assert authors.to_dict()["time"]["tau_rule"] == "authors"
    with pytest.raises(RunConfigError, match=r"time.tau_rule must be one of \['paper', 'authors'\]"):
        from_dict({"time": {"tau_rule": "code"}})
    with pytest.raises(RunConfigError, match=r"time.t_sum \* time.alpha must be at most"):
        from_dict({"time": {"tau_rule": "authors", "alpha": 1e5, "t_sum": 100}})
    summary = {"config": authors.to_dict(), "per_K": [{"K": 5, "tau": 28, "status": "ok"}]}
    assert time_model_problems(summary) == []
    summary["config"]["time"]["tau_rule"] = "paper"
    assert time_model_problems(summary) == ["K=5: tau = 28, the time model gives 7"]
