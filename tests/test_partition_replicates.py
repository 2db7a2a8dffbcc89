"""Partition replicates: run seeds paired with draws of the same non-IID scheme, every draw's
partition file and reference, groups that share one draw, K*'s spread split into run seeds and
draws, and verdicts that say whether they hold on each draw alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from tests.test_verdicts import GRID, bowl, table_from

from bladefl.experiments.plan import config_checks, config_files
from bladefl.experiments.plan import readings as rd
from bladefl.experiments.plan import workflow_config as wc
from bladefl.experiments.plan.grid import expand
from bladefl.experiments.tables.tidy import k_star_spread
from bladefl.experiments.verdicts.table import all_verdicts
from bladefl.report.index_inputs import read_verdicts
from bladefl.report.pages import write_index

ROOT = Path(__file__).resolve().parents[1]


def config(**changes) -> dict:
    base = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    return {**base, **changes}


def test_run_seeds_are_paired_with_draws_in_turn():
    cfg = config(seeds=[0, 1, 2, 3, 4, 5], partition={"n": 512, "seeds": [7, 8, 9]})
    assert [wc.partition_draw(cfg, s) for s in cfg["seeds"]] == [7, 8, 9, 7, 8, 9]
    cell = wc.cells(cfg)[0]
    assert "partition.seed=8" in wc.run_sets(cfg, cell, "mnist", 4)
    assert not any(s.startswith("partition.seeds") for s in wc.run_sets(cfg, cell, "mnist", 4))
    keys = {wc.partition_spec(cfg, 20, s).key for s in cfg["seeds"]}
    assert keys == {f"shards2_N20_n512_seed{d}" for d in (7, 8, 9)}
    one = config(partition={"n": 512, "seed": 3})  # the single-draw form
    assert wc.partition_draws(one) == [3] and wc.partition_spec(one, 20, 1).seed == 3
    with pytest.raises(wc.ConfigError, match="not one of the config's seeds"):
        wc.partition_draw(cfg, 99)


def test_a_group_stacks_the_runs_of_its_seeds_draws_and_holds_every_run_once():
    """(dataset, N, block of seeds) whatever draws the seeds train on: at N = 20 (24 cells) blocks of
    seeds_per_job seeds, 0-1 (draws 0, 1), 2-3 (draws 0, 1), 4 (draw 0); at the N of one cell every
    seed in one group (no group holds more runs than seeds_per_job x the most cells); each group
    names the draws it stacks."""
    cfg = config(seeds=[0, 1, 2, 3, 4], seeds_per_job=2, partition={"n": 512, "seeds": [0, 1]})
    groups = wc.partition_jobs(cfg)
    for g in groups:
        assert g.draws == tuple(dict.fromkeys(wc.partition_draw(cfg, s) for s in g.seeds))
        assert "draw" not in g.name and g.name.endswith(f"_block{g.block}")
    runs = [(g.dataset, c, s) for g in groups for c in g.cells for s in g.seeds]
    assert len(runs) == len(set(runs)) == len(cfg["datasets"]) * len(wc.all_cells(cfg)) * 5
    assert sorted({g.seeds for g in groups if g.N == 20}) == [(0, 1), (2, 3), (4,)]
    assert {g.seeds for g in groups if g.N != 20} == {(0, 1, 2, 3, 4)}
    assert {g.draws for g in groups} == {(0, 1), (0,)}
    most = max(len(g.cells) for g in groups)
    assert most == 24 and all(len(g.cells) * len(g.seeds) <= 2 * most for g in groups)
    twenty = config(seeds=list(range(20)), seeds_per_job=5, partition={"n": 512, "seeds": list(range(20))})
    stacked = wc.partition_jobs(twenty)  # 20 draws x 1 seed: N = 20 in 4 groups of 5 draws, the others in one
    assert sorted(len(g.draws) for g in stacked if g.dataset == "mnist") == [5, 5, 5, 5, 20, 20, 20]
    assert len(stacked) == len(twenty["datasets"]) * (4 + 3)


def test_a_part_of_the_grid_plans_only_its_own_runs_in_groups_named_as_in_the_whole_design():
    """A part (run_seeds) trains its seeds' runs and no other: every group holds only the part's
    seeds (and their draws), a block with none of them is no job, and each group keeps the name
    and number its block has in the whole design, so a run is in the same-named group in every part."""
    design = config(seeds=list(range(10)), seeds_per_job=5, partition={"n": 512, "seeds": list(range(10))})
    whole = {g.name: g for g in wc.partition_jobs(design)}
    runs_per_seed = len(design["datasets"]) * len(wc.all_cells(design))
    for part in ([1], [0, 4], [5, 6, 7, 8, 9], [3, 7]):
        groups = wc.partition_jobs({**design, "run_seeds": part})
        trained = [(g.dataset, c, s) for g in groups for c in g.cells for s in g.seeds]
        assert len(trained) == len(set(trained)) == runs_per_seed * len(part)
        assert {s for *_, s in trained} == set(part)
        for g in groups:
            assert g.seeds and set(g.seeds) <= set(part) and g.draws == tuple(g.seeds)  # seed i on draw i
            assert set(g.seeds) == set(whole[g.name].seeds) & set(part)  # the block's name and members
            assert (g.N, g.block, g.cells) == (whole[g.name].N, whole[g.name].block, whole[g.name].cells)
    later = {g.name for g in wc.partition_jobs({**design, "run_seeds": [5, 6]})}
    assert "mnist_N20_block1" in later and "mnist_N20_block0" not in later  # block 0 holds none of 5, 6


def test_the_config_check_names_both_forms_and_draws_without_runs():
    with pytest.raises(wc.ConfigError, match="give `seed`"):
        config_checks.check(config(partition={"n": 512, "seed": 0, "seeds": [0, 1]}))
    with pytest.raises(wc.ConfigError, match="at most one draw per run seed"):
        config_checks.check(config(seeds=[0], partition={"n": 512, "seeds": [0, 1]}))
    config_checks.check(config())  # the default: two seeds on two draws


def test_a_reading_that_sets_the_partition_seed_replaces_the_draws():
    reading = rd.Reading("fixed", "baseline", "paper", {"partition.seed": 5})
    seen = rd.reading_config(config(), reading)
    assert seen["partition"] == {"n": 512, "seed": 5}


def spread_table(per_draw_k: dict[int, list[int]]) -> pd.DataFrame:
    """Runs of one cell: draw d's seeds have their loss minimum at the listed K."""
    rows, seed = [], 0
    for draw, ks in per_draw_k.items():
        for k_star in ks:
            for k, loss in enumerate(bowl(k_star, 12), start=1):
                rows.append({"K": k, "seed": seed, "partition": draw, "train_loss": loss})
            seed += 1
    return pd.DataFrame(rows)


def test_k_star_spread_separates_run_seeds_from_draws():
    same_draws = k_star_spread(spread_table({0: [4, 6], 1: [4, 6]}))  # seeds differ, draws agree
    assert same_draws["partitions"] == 2
    assert same_draws["K_star_loss_std_seeds"] == pytest.approx(np.sqrt(2))
    assert same_draws["K_star_loss_std_partitions"] == pytest.approx(0.0)
    apart = k_star_spread(spread_table({0: [3, 3], 1: [9, 9]}))  # seeds agree, draws differ
    assert apart["K_star_loss_std_seeds"] == pytest.approx(0.0)
    assert apart["K_star_loss_std_partitions"] == pytest.approx(np.std([3, 9], ddof=1))
    single = k_star_spread(spread_table({0: [5], 1: [7]}))  # one seed per draw: no within-draw spread
    assert np.isnan(single["K_star_loss_std_seeds"]) and single["K_star_loss_std_partitions"] > 0


def beta_table(falls_on: dict[int, bool], seeds_per_draw: int = 3) -> pd.DataFrame:
    """The beta sweep's runs, draw by draw: on a draw where ``falls_on`` is true K* falls with beta
    (the claim holds), else it rises."""
    members = [m for m in expand(GRID) if m.sweep == "beta"]
    frames = []
    for i, (draw, falls) in enumerate(falls_on.items()):
        curves = {m.cell.key: [bowl(12 - m.value / 2 if falls else 2 + m.value / 3)] * seeds_per_draw
                  for m in members}
        part = table_from(curves, members)
        frames.append(part.assign(seed=part.seed + i * seeds_per_draw, partition=draw))
    return pd.concat(frames, ignore_index=True), members


def verdict_row(table: pd.DataFrame, members, claim: str = "K* falls as beta grows") -> pd.Series:
    out = all_verdicts(table, members, 100.0, [], None, None, resamples=100)
    return out.set_index("claim").loc[claim]


def test_a_verdict_says_whether_it_holds_on_every_partition_draw():
    table, members = beta_table({0: True, 1: True})
    row = verdict_row(table, members)
    assert row.across_partitions == "holds on every draw" and row.draws_holding == "2/2"
    table, members = beta_table({0: True, 1: False, 2: True})
    row = verdict_row(table, members)
    assert row.across_partitions == "differs between draws" and row.draws_holding == "2/3"
    table, members = beta_table({0: False, 1: False})
    row = verdict_row(table, members)
    # two draws (two units): a direction, never tallied; the row says what the test would decide
    assert row.verdict == "too few runs" and "would say refuted" in row.evidence
    assert row.across_partitions == "fails on every draw"
    table, members = beta_table({0: True})
    assert verdict_row(table, members).across_partitions == "one draw"


def test_the_front_page_shows_the_draws_and_links_each_claim_to_its_page(tmp_path):
    table, members = beta_table({0: True, 1: False})
    out = all_verdicts(table, members, 100.0, [], None, None, resamples=20)
    out.insert(0, "dataset", "mnist")
    out.to_csv(tmp_path / "mnist.csv", index=False)
    page = write_index(tmp_path / "index.html", read_verdicts([tmp_path / "mnist.csv"]), [])
    text = page.read_text()
    assert "draws: differs between draws (holds on 1/2)" in text
    assert "href='mnist/02_sweeps.html'" in text


def test_a_draw_is_judged_by_the_pooled_rule_for_noise():
    """A rise of the loss with beta far inside the spread between draws but the same on each draw is
    compared within draws (the offset cancels); a rise of 0.1% is inside the equivalence margin:
    no change, so "the loss grows" is refuted whatever its consistency; one seed per draw gives
    no per-draw view."""
    members = [m for m in expand(GRID) if m.sweep == "beta"]
    frames = []
    for draw, level in ((0, 0.0), (1, 5.0)):
        curves = {m.cell.key: [bowl(5) + level + 0.001 * m.value] for m in members}
        frames.append(table_from(curves, members).assign(seed=draw, partition=draw))
    row = verdict_row(pd.concat(frames, ignore_index=True), members, "the loss grows with beta")
    assert row.verdict == "too few runs" and "would say refuted" in row.evidence  # two draws: not tallied
    assert "no change: the change is inside the margin" in row.evidence
    assert row.across_partitions == "one seed per draw: seed and draw not separable"


@pytest.mark.parametrize("part, seeds", [("2", [0, 1]), (2, [0, 1]), ("10-19", list(range(10, 20))),
                                         ("3,7", [3, 7])])
def test_a_part_of_the_grid_keeps_each_seeds_draw(part, seeds):
    """A part of the paper grid (config run_seeds: its first seeds, seeds i to j, or a list) passes the
    config's checks as the whole grid does (where cutting `seeds` left 20 draws for fewer seeds) and
    keeps every seed on the draw it has in the whole grid."""
    from bladefl.experiments.runs.timing import grid_part

    paper = config_files.read_configs([ROOT / "config/paper.yaml"], default=ROOT / "config/config.yaml")
    cut = grid_part(paper, part)
    config_checks.check(cut)
    assert wc.run_seeds(cut) == seeds and cut["seeds"] == paper["seeds"]
    assert [wc.partition_draw(cut, s) for s in seeds] == [wc.partition_draw(paper, s) for s in seeds] == seeds


@pytest.mark.parametrize("bad", ["20-30", "x", [0, 99], [1, 1], "5-2", True])
def test_a_part_that_is_not_of_the_grid_is_refused_naming_the_field(bad):
    paper = config_files.read_configs([ROOT / "config/paper.yaml"], default=ROOT / "config/config.yaml")
    with pytest.raises(wc.ConfigError, match=r"run_seeds"):
        config_checks.check({**paper, "run_seeds": bad})


def test_a_group_asks_for_its_share_of_the_threads_by_runs_and_at_least_the_chains():
    twenty = config(seeds=list(range(20)), seeds_per_job=5, partition={"n": 512, "seeds": list(range(20))})
    groups = wc.partition_jobs(twenty)
    asked = {g.name: wc.group_threads(groups, g, 16) for g in groups}
    assert {asked[g.name] for g in groups if g.N == 20} == {16}  # 24 cells x 5 seeds: the most runs
    assert {asked[g.name] for g in groups if g.N != 20} == {wc.MIN_GROUP_THREADS}  # 20 runs: 16 x 20 / 120 < 4
    assert wc.group_threads(groups, groups[0], 2) == 2  # never more than threads_per_group
    half = [wc.PartitionJob("mnist", 20, 0, (0, 1), ("a",) * 24), wc.PartitionJob("mnist", 10, 0, (0,), ("b",) * 12)]
    assert [wc.group_threads(half, g, 32) for g in half] == [32, 8]
