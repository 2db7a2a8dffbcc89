"""Grid expansion, cell keys, shared cells, K ranges, and the summary tables."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from bladefl.experiments.plan.grid import Cell, expand, unique_cells
from bladefl.experiments.tables.tidy import collect, optimum
from conftest import write_run_folder

REPO = Path(__file__).resolve().parents[1]


def test_default_grid_matches_the_paper_and_shares_cells():
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    members = expand(config)
    by_sweep = {}
    for m in members:
        by_sweep.setdefault(m.sweep, []).append(m)
    assert [m.value for m in by_sweep["alpha"]] == [1, 2, 5] and all(m.cell.beta == 6 for m in by_sweep["alpha"])
    assert [m.value for m in by_sweep["beta"]] == [6, 8, 10, 12]
    assert [m.value for m in by_sweep["N"]] == [10, 15, 20, 25]
    assert [m.value for m in by_sweep["eta"]] == [0.005, 0.01, 0.05, 0.1]
    fig3 = [m.cell for m in by_sweep["fig3"]]
    assert (fig3[1].eta, fig3[1].beta, round(fig3[1].lazy_ratio * fig3[1].N)) == (0.01, 6, 8)
    assert all(m.cell.lazy_ratio == 0.2 for m in by_sweep["sigma2"])
    assert math.isinf(by_sweep["epsilon"][-1].value)
    cells = unique_cells(members)
    assert len(cells) < len(members)
    base = Cell()
    # base appears in beta (10), lazy_ratio (0, sigma2 irrelevant) and epsilon (inf); the eta sweep runs at
    # beta = 6 (Table V), so its eta = 0.01 cell is the alpha sweep's alpha = 1 cell instead
    assert sum(m.cell == base for m in members) == 3
    assert sum(m.cell == Cell(beta=6.0) for m in members) == 4  # alpha = 1, beta = 6, N = 20, eta = 0.01


def test_cell_key_roundtrip_and_k_values():
    cell = Cell(alpha=2, beta=6, N=15, eta=0.05, lazy_ratio=0.2, sigma2=0.1, epsilon=300)
    assert Cell.from_key(cell.key) == cell
    assert Cell.from_key(Cell().key) == Cell()
    assert Cell(alpha=1, beta=10).k_values(100) == list(range(1, 10))
    assert Cell(alpha=5, beta=6).k_values(100) == list(range(1, 10))
    assert Cell(alpha=1, beta=6).k_values(100) == list(range(1, 15))
    assert "time.K=[1,2,3,4,5,6,7,8,9]" in Cell().overrides(100)


def test_unknown_sweep_parameter_is_rejected():
    with pytest.raises(ValueError, match="unknown parameter"):
        expand({"sweeps": [{"name": "x", "cells": [{"gamma": 1}]}]})


def fake_run(root: Path, cell: Cell, seed: int, losses: list[float], accs: list[float]) -> Path:
    finals = [{"train_loss": loss, "test_loss": loss + 0.1, "test_accuracy": a, "training_time": k * (10 - k),
               "mining_time": 10.0 * k} for k, (loss, a) in enumerate(zip(losses, accs, strict=True), start=1)]
    return write_run_folder(root / cell.key / f"seed~{seed}", seed, finals)


def test_summary_and_optimum_tables(tmp_path):
    grid = {"base": {}, "sweeps": [{"name": "beta", "feeds": "Table III", "vary": "beta", "values": [10, 12]}]}
    members = expand(grid)
    c10, c12 = members[0].cell, members[1].cell
    paths = [
        fake_run(tmp_path, c10, 0, [1.0, 0.5, 0.7], [0.5, 0.8, 0.7]),
        fake_run(tmp_path, c10, 1, [1.0, 0.6, 0.4], [0.5, 0.7, 0.9]),
        fake_run(tmp_path, c12, 0, [0.3, 0.5, 0.7], [0.9, 0.8, 0.7]),
    ]
    table = collect(paths, members)
    assert len(table) == 9 and set(table.sweep) == {"beta"}
    assert table[table.cell == c10.key].seed.tolist() == [0, 0, 0, 1, 1, 1]
    opt = optimum(table).set_index("value")
    # seed-mean losses for beta=10: [1.0, 0.55, 0.55] -> first minimum at K=2; accuracies [0.5, 0.75, 0.8] -> K=3
    assert opt.loc[10.0, "K_star_loss"] == 2 and opt.loc[10.0, "K_star_accuracy"] == 3
    assert opt.loc[10.0, "mining_time"] == 20.0 and opt.loc[10.0, "training_time"] == 16
    assert opt.loc[10.0, "max_accuracy"] == pytest.approx(0.8)
    assert opt.loc[10.0, "K_star_loss_std"] == pytest.approx(0.5)  # per-seed K*: 2 and 3
    assert opt.loc[12.0, "K_star_loss"] == 1 and opt.loc[12.0, "seeds"] == 1
    assert isinstance(opt, pd.DataFrame)


def test_the_grid_is_worked_out_again_for_another_config_and_its_list_is_the_callers():
    grid = {"base": {"N": 4}, "sweeps": [{"name": "a", "vary": "alpha", "values": [1, 2]}]}
    first = expand(grid)
    first.clear()  # a caller's list: the next call is not affected
    assert [m.cell.alpha for m in expand(grid)] == [1.0, 2.0]
    grid["sweeps"][0]["values"].append(3)
    assert [m.cell.alpha for m in expand(grid)] == [1.0, 2.0, 3.0]
    grid["base"]["N"] = 8
    assert {m.cell.N for m in expand(grid)} == {8}
    with pytest.raises(ValueError, match="vary must be one of"):
        expand({"sweeps": [{"name": "b", "vary": "gamma", "values": [1]}]})
