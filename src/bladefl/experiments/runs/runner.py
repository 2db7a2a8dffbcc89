"""Run one experiment cell over its list of K values and write tidy results.

Outputs in the run folder: ``rounds.csv`` (one row per K and round; an infeasible K is one
row with status ``infeasible``), ``summary.json`` (per-K final values, the config, code
version, data checksums, timings) and ``chains/K<K>.json`` (the ledger of each K), plus
``models/`` (content-addressed uploads) when ``chain.save_models`` is on. Every file is
written atomically.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from bladefl.core import atomic
from bladefl.core.run_files import CURVES
from bladefl.experiments.runs import provenance
from bladefl.experiments.runs.run_source import finished_run
from bladefl.fl import constants_against
from bladefl.fl.engine import (
    ClientData,
    GroupTimes,
    KResult,
    RoundRecord,
    RunSpec,
    load_client_data,
    run_group,
    worker_pool,
)
from bladefl.fl.execution import Execution, resolve
from bladefl.fl.run_config import RunConfig

ROUND_COLUMNS = [f.name for f in dataclasses.fields(RoundRecord)]


def infeasible_row(result: KResult) -> dict:
    row: dict[str, Any] = {c: math.nan for c in ROUND_COLUMNS}
    row.update(K=result.K, round=0, tau=result.allocation.tau, block_hash="", status="infeasible")
    return row


def k_summary(result: KResult) -> dict:
    a = result.allocation
    out = {
        "K": result.K, "tau": a.tau, "status": result.status, "training_time": a.training_time,
        "mining_time": a.mining_time, "unused_time": a.unused_time, "sigma_dp": result.sigma_dp,
        "train_seconds": round(result.train_seconds, 4), "chain_seconds": round(result.chain_seconds, 4),
        "eval_seconds": round(result.eval_seconds, 4),
    }
    if result.final is not None:
        f = result.final
        out.update(train_loss=f.train_loss, test_loss=f.test_loss, test_accuracy=f.test_accuracy,
                   tip=f.block_hash, blocks=len(result.rounds))
        out.update({c: getattr(f, c) for c in CURVES if math.isfinite(getattr(f, c))})  # where recorded
    return out


@dataclass(frozen=True)
class CellJob:
    """One run folder to write: a cell's config (all its K), for the bound's cells w*, and which of
    the data's partition draws it trains on."""

    cfg: RunConfig
    out: Path
    reference: torch.Tensor | None = None
    draw: int = 0


def finished(job: CellJob) -> bool:
    """Whether the job's folder already holds a complete run of exactly this config (a damaged
    folder is computed again, not kept): :func:`bladefl.experiments.runs.run_source.finished_run`."""
    return finished_run(job.out, job.cfg)


def batches(jobs: list[CellJob], stack: bool, max_rows: int) -> list[list[tuple[int, RunSpec]]]:
    """How the jobs' runs (job index, spec) are computed: on the CPU one run at a time (stacking
    more rows is slower there: they no longer fit the cache); stacked, whole jobs together up to
    ``max_rows`` training rows (N per run) per computation, so a batch's folders are written as
    soon as it ends."""
    out: list[list[tuple[int, RunSpec]]] = []
    current: list[tuple[int, RunSpec]] = []
    for j, job in enumerate(jobs):
        store = job.out / "models" if job.cfg.chain.save_models else None
        specs = [(j, RunSpec(job.cfg, K, store, job.reference, job.draw)) for K in job.cfg.time.K]
        if not stack:
            out.extend([s] for s in specs)
            continue
        rows = job.cfg.partition.N * len(specs)
        if current and (len(current) + len(specs)) * job.cfg.partition.N > max(max_rows, rows):
            out.append(current)
            current = []
        current.extend(specs)
    if current:
        out.append(current)
    return out


def write_run(job: CellJob, results: list[KResult], seconds: dict, group: dict | None = None,
              started: float | None = None, partition_sha256: str | None = None) -> dict:
    """Write one run folder from the results of its K values (in the order of ``cfg.time.K``);
    ``seconds`` gains ``write``, the seconds since ``started`` (default: now) when the summary,
    written last, is written; the provenance names the partition's indices by their digest."""
    started = time.perf_counter() if started is None else started
    rows: list[dict] = []
    detections: list[dict] = []
    for result in results:
        if result.status == "infeasible":
            rows.append(infeasible_row(result))
        else:
            rows.extend(dataclasses.asdict(r) for r in result.rounds)
            detections.extend(result.detections)
            if result.ledger is None:
                raise ValueError(f"K={result.K}: a run of status {result.status!r} without its ledger")
            result.ledger.save(job.out / "chains" / f"K{result.K}.json")
    atomic.write_csv(job.out / "rounds.csv", pd.DataFrame(rows, columns=ROUND_COLUMNS))
    if detections:  # lazy.detectors: per K, round, client and detector: score, flag, truth, excluded
        atomic.write_csv(job.out / "detections.csv", pd.DataFrame(detections))
    summary = {
        "config": job.cfg.to_dict(),
        "per_K": [k_summary(r) for r in results],
        "provenance": {**provenance.record(job.cfg.dataset, job.cfg.data_dir, job.cfg.device),
                       "partition_sha256": partition_sha256},
        "seconds": {**seconds, "write": round(time.perf_counter() - started, 4)},
        **({"group": group} if group else {}),
        **({"constants_against": constants_against.AGAINST} if job.cfg.measure.constants else {}),
    }
    atomic.write_json(job.out / "summary.json", summary)
    return summary


def run_cells(jobs: list[CellJob], data: ClientData, execution: Execution | None = None, *, progress: bool = True,
              resume: bool = False, load_seconds: float | None = None) -> list[dict | None]:
    """Run every K of every job on shared data (one dataset and N, one or several partition draws:
    a job's ``draw``) and write one folder per job; returns the summaries (None for a job skipped
    by ``resume`` because it is finished).
    ``load_seconds``: the time it took to load the data, recorded in each summary and its total.

    ``execution`` (default: :func:`bladefl.fl.execution.resolve` for the data's device): with
    ``stack`` whole jobs' runs are computed as one stacked group of at most ``max_rows`` rows (see
    :func:`bladefl.fl.engine.run_group`), else one run at a time; the chain's worker processes are
    started once for every group. Results depend on none of it."""
    from tqdm.auto import tqdm

    from bladefl.fl.timemodel import allocation

    execution = execution or resolve(data.x.device)
    stack = execution.stack
    todo = [j for j, job in enumerate(jobs) if not (resume and finished(job))]
    plan = batches([jobs[j] for j in todo], stack, execution.max_rows)
    total = sum(allocation(spec.K, spec.cfg.time).iterations
                for batch in plan for _, spec in batch)
    summaries: list[dict | None] = [None] * len(jobs)
    results: dict[int, list[KResult]] = {}
    seconds: dict[int, float] = {}
    engine: dict[int, GroupTimes] = {}
    load = {} if load_seconds is None else {"load": round(load_seconds, 3)}
    desc = (f"{jobs[0].cfg.dataset} N={jobs[0].cfg.partition.N}: {len(todo)} cells"
            + (f" on {data.draws} draws" if data.draws > 1 else "")) if jobs else ""
    with (tqdm(total=total, unit="iter", desc=desc, disable=not progress, mininterval=2.0) as bar,
          worker_pool(execution.chain_processes if plan else 0) as workers):  # started once for every batch
        for number, batch in enumerate(plan):
            group = run_group([spec for _, spec in batch], data, execution, on_round=lambda r: bar.update(r.tau),
                              workers=workers)
            info = {"batch": number, "runs": len(batch), "wall": round(group.times.wall, 3),
                    "chain_share": round(group.times.chain_share, 4), "stacked": stack,
                    "breakdown": group.times.breakdown()}
            for (local, _), result in zip(batch, group.results, strict=True):
                j = todo[local]
                results.setdefault(j, []).append(result)
                seconds[j] = seconds.get(j, 0.0) + group.times.wall / len(batch)
                if not stack:  # the job's own groups (one per K), summed
                    engine[j] = add_times(engine.get(j, GroupTimes()), group.times)
                if len(results[j]) == len(jobs[j].cfg.time.K):
                    t = time.perf_counter()
                    timing: dict[str, Any] = {**load, "total": round(seconds[j] + (load_seconds or 0.0), 3)}
                    if not stack:
                        timing["engine"] = engine.pop(j).breakdown()
                    summaries[j] = write_run(jobs[j], results.pop(j), timing, info if stack else None,
                                             started=t, partition_sha256=data.sha256(jobs[j].draw))
    return summaries


def add_times(a: GroupTimes, b: GroupTimes) -> GroupTimes:
    """Two groups' times, summed part by part."""
    return GroupTimes(**{f.name: getattr(a, f.name) + getattr(b, f.name) for f in dataclasses.fields(GroupTimes)})


def run_cell(cfg: RunConfig, out_dir: str | Path, data: ClientData | None = None, progress: bool = True,
             reference=None, execution: Execution | None = None) -> dict:  # noqa: ANN001 - torch.Tensor | None
    """Run every K of ``cfg`` and write the run folder; returns the summary dict."""
    start = time.perf_counter()
    data = data if data is not None else load_client_data(cfg)
    load_seconds = time.perf_counter() - start
    summary = run_cells([CellJob(cfg, Path(out_dir), reference)], data, execution, progress=progress,
                        load_seconds=load_seconds)[0]
    assert summary is not None  # without resume every job runs
    return summary
