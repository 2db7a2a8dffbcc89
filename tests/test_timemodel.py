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
