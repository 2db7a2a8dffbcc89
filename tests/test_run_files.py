"""The one strict reader of run files (bladefl.core.run_files), the time-model check on top of it
(bladefl.experiments.runs.run_checks), and diverged runs: marked by the engine, read by the analyses,
shown on the front page."""

from __future__ import annotations

import json
import math
import os

import pytest

from bladefl.core import run_files as rf
from bladefl.experiments.runs import run_checks
from bladefl.report.index_inputs import read_verdicts

HEADER = "K,round,tau,status,train_loss,test_loss,test_accuracy"


def write_run(folder, per_k=None, rows=None, time=None):
    """A run folder as the engine writes one: K = 1..3 at alpha 1, beta 10, t_sum 30 (tau 20, 5,
    infeasible), or the given per_K entries and rows."""
    time = time or {"alpha": 1, "beta": 10, "t_sum": 30, "K": [1, 2, 3]}
    if per_k is None:
        per_k = [{"K": 1, "tau": 20, "status": "ok", "blocks": 1, "tip": "a" * 64, "train_loss": 0.5,
                  "test_loss": 0.6, "test_accuracy": 0.7},
                 {"K": 2, "tau": 5, "status": "ok", "blocks": 2, "tip": "b" * 64, "train_loss": 0.4,
                  "test_loss": 0.5, "test_accuracy": 0.8},
                 {"K": 3, "tau": 0, "status": "infeasible"}]
    if rows is None:
        rows = [HEADER, "1,1,20,ok,0.5,0.6,0.7", "2,1,5,ok,0.9,0.9,0.5", "2,2,5,ok,0.4,0.5,0.8", "3,0,0,infeasible,,,"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps({"config": {"seed": 0, "time": time}, "per_K": per_k}))
    (folder / "rounds.csv").write_text("\n".join(rows) + "\n")
    return folder / "summary.json"


def test_a_run_as_the_engine_writes_it_is_read(tmp_path):
    run = run_checks.read_checked_run(write_run(tmp_path / "r"))
    assert sorted(run.rows) == [1, 2, 3] and sorted(run.rows[2]) == [1, 2] and list(run.rows[3]) == [0]
    assert run.per_k[2]["train_loss"] == 0.4


ROUNDS = {
    "a byte-order mark": (lambda rows: ["\ufeff" + rows[0], *rows[1:]], "byte-order mark"),
    "K as 2.0": (lambda rows: [*rows[:2], "2.0" + rows[2][1:], *rows[3:]], "plain integer"),
    "round with a space": (lambda rows: [*rows[:2], rows[2].replace("2,1,", "2, 1,"), *rows[3:]], "plain integer"),
    "tau as 5.5": (lambda rows: [*rows[:2], rows[2].replace(",5,", ",5.5,"), *rows[3:]], "plain integer"),
    "a row twice": (lambda rows: [*rows, rows[2]], "a second row for K=2, round 1"),
    "an unknown status": (lambda rows: [*rows[:2], rows[2].replace(",ok,", ",done,"), *rows[3:]],
                          "status must be one of"),
    "a loss that is text": (lambda rows: [*rows[:2], rows[2].replace("0.9,0.9", "x,0.9"), *rows[3:]],
                            "train_loss = 'x' is not a number"),
    "a missing tau column": (lambda rows: [r.replace(",tau", "") for r in rows[:1]] + rows[1:], "tau and status"),
    "a field too many": (lambda rows: [*rows[:2], rows[2] + ",7", *rows[3:]], "fields expected"),
    "an extra round": (lambda rows: [*rows, "2,3,5,ok,0.4,0.5,0.8"], "rounds [1, 2, 3] of K=2"),
    "K=2's rows deleted": (lambda rows: [r for r in rows if not r.startswith("2,")], "rounds.csv holds K [1, 3]"),
    "another tau": (lambda rows: [*rows[:3], rows[3].replace(",5,", ",6,"), *rows[4:]], "tau = 6 in K=2, round 2"),
    "an ok row turned diverged": (lambda rows: [*rows[:2], rows[2].replace(",ok,", ",diverged,"), *rows[3:]],
                                  "status 'diverged' in K=2, round 1"),
    "a last row's loss edited": (lambda rows: [*rows[:3], rows[3].replace("0.4,", "0.41,"), *rows[4:]],
                                 "train_loss = 0.4 for K=2, its last round in rounds.csv 0.41"),
}


@pytest.mark.parametrize("name", list(ROUNDS))
def test_rounds_csv_edits_are_refused_naming_the_line_or_field(tmp_path, name):
    change, message = ROUNDS[name]
    rows = [HEADER, "1,1,20,ok,0.5,0.6,0.7", "2,1,5,ok,0.9,0.9,0.5", "2,2,5,ok,0.4,0.5,0.8", "3,0,0,infeasible,,,"]
    path = write_run(tmp_path / "r", rows=change(rows))
    with pytest.raises(rf.RunFileError, match=message.replace("[", r"\[").replace("]", r"\]")):
        rf.read_run(path)


def _summary_edit(edit):
    def apply(folder):
        data = json.loads((folder / "summary.json").read_text())
        edit(data)
        (folder / "summary.json").write_text(json.dumps(data))
    return apply


SUMMARIES = {
    "K=2 given twice": (_summary_edit(lambda d: d["per_K"].insert(1, dict(d["per_K"][1]))), "K=2 given twice"),
    "an ok K turned infeasible": (_summary_edit(lambda d: d["per_K"][1].update(status="infeasible")),
                                  "the summary calls it infeasible"),
    "two blocks for K = 1": (_summary_edit(lambda d: d["per_K"][0].update(blocks=2)), "a run of K rounds mines"),
    "an accuracy of NaN called ok": (_summary_edit(lambda d: d["per_K"][0].update(test_accuracy=math.nan)),
                                     "a non-finite loss or accuracy is 'diverged'"),
    "a finite run called diverged": (_summary_edit(lambda d: d["per_K"][0].update(status="diverged")),
                                     "status 'diverged' with finite metrics"),
    "a tau that is text": (_summary_edit(lambda d: d["per_K"][0].update(tau="20")), "tau must be an integer"),
    "a 400-digit accuracy": (_summary_edit(lambda d: d["per_K"][0].update(test_accuracy=int("9" * 400))),
                             "an integer of 400 digits"),
    "no per_K": (_summary_edit(lambda d: d.pop("per_K")), "'per_K' \\(a list\\) are required"),
}


@pytest.mark.parametrize("name", list(SUMMARIES))
def test_summary_edits_are_refused_naming_the_field(tmp_path, name):
    edit, message = SUMMARIES[name]
    path = write_run(tmp_path / "r")
    edit(tmp_path / "r")
    with pytest.raises(rf.RunFileError, match=message):
        rf.read_run(path)


def test_a_key_given_twice_in_the_summary_is_refused(tmp_path):
    path = write_run(tmp_path / "r")
    text = path.read_text()
    path.write_text(text.replace('{"config": ', '{"per_K": [], "config": ', 1))
    with pytest.raises(rf.RunFileError, match="key 'per_K' given twice"):
        rf.read_summary(path)


def test_a_fifo_or_an_oversized_file_is_refused_before_reading(tmp_path):
    path = write_run(tmp_path / "r")
    (tmp_path / "r" / "rounds.csv").unlink()
    os.mkfifo(tmp_path / "r" / "rounds.csv")
    with pytest.raises(rf.RunFileError, match="not a regular file"):
        rf.read_run(path)
    with open(path, "ab") as f:
        f.truncate(rf.SUMMARY_LIMIT + 1)
    with pytest.raises(rf.RunFileError, match="more than the"):
        rf.read_summary(path)


def test_tau_and_status_are_held_to_the_time_model(tmp_path):
    """Both files agree with each other, but K = 2's tau is not the time model's (t_sum 30: 5)."""
    per_k = [{"K": 1, "tau": 20, "status": "ok", "blocks": 1, "tip": "a" * 64, "train_loss": 0.5, "test_loss": 0.6,
              "test_accuracy": 0.7},
             {"K": 2, "tau": 6, "status": "ok", "blocks": 2, "tip": "b" * 64, "train_loss": 0.4, "test_loss": 0.5,
              "test_accuracy": 0.8},
             {"K": 3, "tau": 0, "status": "infeasible"}]
    rows = [HEADER, "1,1,20,ok,0.5,0.6,0.7", "2,1,6,ok,0.9,0.9,0.5", "2,2,6,ok,0.4,0.5,0.8", "3,0,0,infeasible,,,"]
    path = write_run(tmp_path / "r", per_k=per_k, rows=rows)
    rf.read_run(path)  # consistent on their own
    with pytest.raises(rf.RunFileError, match="K=2: tau = 6, the time model gives 5"):
        run_checks.read_checked_run(path)
    feasible_called_infeasible = write_run(tmp_path / "s", time={"alpha": 1, "beta": 10, "t_sum": 60, "K": [1, 2, 3]})
    with pytest.raises(rf.RunFileError, match="K=1: tau = 20, the time model gives 50"):
        run_checks.read_checked_run(feasible_called_infeasible)


def test_a_k_whose_loss_went_non_finite_is_marked_diverged():
    from bladefl.fl.records import KResult, RoundRecord
    from bladefl.fl.timemodel import allocate

    def record(r, loss):
        return RoundRecord(K=2, round=r, tau=5, time_used=0.0, train_loss=loss, test_loss=0.5, test_accuracy=0.8,
                           block_hash="", miner=0, block_time=0.0, votes=0, n_in_block=4, n_lazy=0, n_rejected=0,
                           theta=0.0)

    fine = KResult(K=2, allocation=allocate(2, 1, 10, 30), status="ok", rounds=[record(1, 0.9), record(2, 0.4)])
    fine.mark_diverged()
    assert fine.status == "ok" and {r.status for r in fine.rounds} == {"ok"}
    bad = KResult(K=2, allocation=allocate(2, 1, 10, 30), status="ok", rounds=[record(1, 0.9), record(2, math.inf)])
    bad.mark_diverged()
    assert bad.status == "diverged" and [r.status for r in bad.rounds] == ["ok", "diverged"]


def test_a_diverged_k_is_read_left_out_of_k_star_and_shown_on_the_front_page(tmp_path):
    from bladefl.experiments.plan.grid import Cell, Member
    from bladefl.experiments.tables import tidy
    from bladefl.report import pages

    times = {"training_time": 20.0, "mining_time": 10.0}
    per_k = [{"K": 1, "tau": 20, "status": "ok", "blocks": 1, "tip": "a" * 64, "train_loss": 0.5, "test_loss": 0.6,
              "test_accuracy": 0.7, **times},
             {"K": 2, "tau": 5, "status": "diverged", "blocks": 2, "tip": "b" * 64, "train_loss": math.nan,
              "test_loss": math.nan, "test_accuracy": 0.1, **times},
             {"K": 3, "tau": 0, "status": "infeasible", **times}]
    rows = [HEADER, "1,1,20,ok,0.5,0.6,0.7", "2,1,5,ok,0.9,0.9,0.5", "2,2,5,diverged,,,0.1", "3,0,0,infeasible,,,"]
    cell = Cell(alpha=1, beta=10, N=4, eta=0.05)
    summary = write_run(tmp_path / "runs" / "mnist" / cell.key / "seed~0", per_k=per_k, rows=rows)
    table = tidy.collect([summary], [Member("beta", "Table III", "beta", 10, cell)])
    assert list(table.status) == ["ok", "diverged", "infeasible"]
    assert int(tidy.optimum(table).K_star_loss.iloc[0]) == 1  # the diverged K = 2 (loss nan) is no candidate
    counts = pages.diverged_counts({"mnist": table})
    assert (counts.trained.iloc[0], counts.diverged.iloc[0]) == (2, 1)
    from bladefl.experiments.verdicts.table import all_verdicts

    verdicts = tmp_path / "verdicts.csv"
    out = all_verdicts(table, [Member("beta", "Table III", "beta", 10, cell)], 30.0, [], None, None, resamples=20)
    out.insert(0, "dataset", "mnist")
    out.to_csv(verdicts, index=False)
    table_of_verdicts = read_verdicts([verdicts])
    index = pages.write_index(tmp_path / "index.html", table_of_verdicts, [], summaries={"mnist": table})
    text = index.read_text()
    assert "Runs that diverged" in text and "1 of 2 (cell, seed, K)" in text
    quiet = pages.write_index(tmp_path / "quiet.html", table_of_verdicts, [], summaries={"mnist": table[table.K != 2]})
    assert "Runs that diverged" not in quiet.read_text()
