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
from pathlib import Path

import pandas as pd

from bladefl.core import atomic
from bladefl.experiments import provenance
from bladefl.fl.engine import ClientData, KResult, RoundRecord, load_client_data, run_k
from bladefl.fl.run_config import RunConfig

ROUND_COLUMNS = [f.name for f in dataclasses.fields(RoundRecord)]


def infeasible_row(result: KResult) -> dict:
    row = {c: math.nan for c in ROUND_COLUMNS}
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
    return out


def run_cell(cfg: RunConfig, out_dir: str | Path, data: ClientData | None = None, progress: bool = True,
             reference=None) -> dict:  # noqa: ANN001 - torch.Tensor | None
    """Run every K of ``cfg`` and write the run folder; returns the summary dict."""
    from tqdm.auto import tqdm

    from bladefl.fl.timemodel import allocate

    out = Path(out_dir)
    start = time.perf_counter()
    data = data if data is not None else load_client_data(cfg)
    load_seconds = time.perf_counter() - start
    total = sum(K * max(allocate(K, cfg.time.alpha, cfg.time.beta, cfg.time.t_sum).tau, 0) for K in cfg.time.K)
    rows: list[dict] = []
    detections: list[dict] = []
    summaries = []
    store = out / "models" if cfg.chain.save_models else None
    with tqdm(total=total, unit="iter", desc=f"{cfg.dataset} K={list(cfg.time.K)}", disable=not progress,
              mininterval=2.0) as bar:
        for K in cfg.time.K:
            bar.set_postfix(K=K)
            result = run_k(cfg, data, K, store=store, on_round=lambda r: bar.update(r.tau), reference=reference)
            if result.status == "infeasible":
                rows.append(infeasible_row(result))
            else:
                rows.extend(dataclasses.asdict(r) for r in result.rounds)
                detections.extend(result.detections)
                result.ledger.save(out / "chains" / f"K{K}.json")
            summaries.append(k_summary(result))
    atomic.write_csv(out / "rounds.csv", pd.DataFrame(rows, columns=ROUND_COLUMNS))
    if detections:  # lazy.detectors: per K, round, client and detector: score, flag, truth, excluded
        atomic.write_csv(out / "detections.csv", pd.DataFrame(detections))
    summary = {
        "config": cfg.to_dict(),
        "per_K": summaries,
        "provenance": provenance.record(cfg.dataset),
        "seconds": {"load": round(load_seconds, 3), "total": round(time.perf_counter() - start, 3)},
    }
    atomic.write_json(out / "summary.json", summary)
    return summary
