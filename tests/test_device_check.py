"""bladefl device-check's comparisons can tell a device's results from the CPU's (on the CPU)."""

from __future__ import annotations

import dataclasses

import pandas as pd

from bladefl.experiments.runs import device_check as dc
from bladefl.fl.engine import run_group
from bladefl.fl.execution import resolve


def test_a_run_that_differs_is_outside_tolerance_and_an_identical_one_within():
    data = dc.synthetic_data()
    specs = dc.mixed_specs("cpu", "epoch")[:4]
    a = run_group(specs, data, resolve("cpu", chain_processes=0)).results
    b = run_group(specs, data, resolve("cpu", chain_processes=0)).results
    same = dc.compare_results("x", a[3], b[3])
    assert dc.within(same) and same["model_max_abs"] == 0 and same["same_hashes"] == same["rounds"]
    moved = dataclasses.replace(b[3], model=b[3].model + 1e-2)
    assert not dc.within(dc.compare_results("x", a[3], moved))
    other_miner = dataclasses.replace(b[3], rounds=[dataclasses.replace(r, miner=r.miner + 1) for r in b[3].rounds])
    assert not dc.within(dc.compare_results("x", a[3], other_miner))


def test_two_run_tables_are_compared_run_by_run():
    rows = [{"sweep": "beta", "cell": "c", "seed": s, "K": k, "status": "ok", "train_loss": (k - 3) ** 2 + s,
             "test_accuracy": 0.5 - 0.01 * (k - 3) ** 2} for s in (0, 1) for k in range(1, 6)]
    ref = pd.DataFrame(rows)
    check = dc.summary_check(ref, ref)
    assert check.compared == 2 and check.k_star_loss_same == 2 and check.accuracy_max_abs == 0
    other = ref.copy()
    other.loc[(other.seed == 1) & (other.K == 4), "train_loss"] = -1.0  # seed 1's K* by loss moves to 4
    check = dc.summary_check(ref, other)
    assert check.k_star_loss_same == 1 and check.k_star_accuracy_same == 2 and check.loss_max_abs == 3.0
