"""What is fixed about a set of runs ending a round together, planned once per set: the rows
gathered, where each upload goes, the lazy clients and their noise, local DP, the detectors, the
runs that measure the bound's constants, the reference optima, the FedAvg weights, and the runs
evaluated per partition draw (:class:`EndPlan`, made by :func:`plan`); and a set's noise draws
(:func:`noise_job`). :mod:`bladefl.fl.round_end` carries a round end out on a plan."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from bladefl.fl.lazy import lazy_scale, noise_draws
from bladefl.fl.prefetch import NoiseJob
from bladefl.fl.stacked import RunState


def as_index(values: list[int] | np.ndarray, device: torch.device) -> torch.Tensor:
    """Positions as an int64 index tensor on ``device``."""
    return torch.as_tensor(np.asarray(values, dtype=np.int64), device=device)


@dataclass(frozen=True)
class EndPlan:
    """What is fixed about a set of runs (in the group's order) ending a round together:
    positions are into the gathered training rows [T] ("trained") or the uploads [R * N]."""

    runs: tuple[RunState, ...]
    index: torch.Tensor  # [R] the runs' rows in the table of global models
    trained_rows: torch.Tensor  # [T] their training rows in the stacked parameters
    row_run: torch.Tensor  # [T] which run (0..R-1) each training row belongs to
    placed: torch.Tensor | None  # [U] upload positions of the honest trained rows (None: uploads = trained)
    taken: torch.Tensor | None  # [U] their positions among the trained rows
    lazy: tuple[int, ...]  # runs with lazy clients
    lazy_dst: torch.Tensor | None  # upload positions of their lazy clients, run after run
    noisy: tuple[int, ...]  # lazy runs whose lazy clients add noise (sigma2 > 0)
    noise_rows: torch.Tensor | None  # per noise draw, its lazy row (None: none, or an authors' run among them)
    noise_scale: torch.Tensor | None  # [noise draws, 1] each draw's standard deviation (lazy.lazy_scale)
    own: torch.Tensor | None  # trained positions of the counterfactual runs' lazy clients
    own_rows: torch.Tensor | None  # and their positions among the lazy rows
    dp: tuple[int, ...]  # runs with local DP
    dp_index: torch.Tensor | None  # the same, as an index tensor
    dp_std: torch.Tensor | None  # [DP runs, 1, 1]
    dp_clip: torch.Tensor | None  # [DP runs, 1, 1]
    detecting: dict[tuple[str, ...], tuple[tuple[int, ...], torch.Tensor]]  # detectors -> runs (and index)
    measuring: tuple[int, ...]  # runs that measure the bound's constants
    honest_rows: tuple[torch.Tensor, ...]  # per measuring run, its honest clients' trained positions
    honest_clients: tuple[torch.Tensor, ...]  # per measuring run, its honest clients (rows of the group's data)
    measure_draws: tuple[int, ...]  # per measuring run, its partition draw
    referenced: tuple[int, ...]  # runs with a reference optimum
    referenced_index: torch.Tensor | None  # the same, as an index tensor
    references: torch.Tensor | None  # [those runs, P]
    weights: np.ndarray = field(repr=False)  # [R, N] every client's sample count (FedAvg, nothing excluded)
    eval_groups: tuple[tuple[int, torch.Tensor], ...] = ()  # per partition draw, its runs' positions
    authors_noise: tuple[tuple[int, int, int], ...] = ()  # lazy.noise authors: (run, first lazy row, first draw)
    plain_noise: tuple[np.ndarray, np.ndarray] = (np.empty(0, np.int64),) * 2  # the others' (lazy row, draw)

    @property
    def N(self) -> int:
        return self.runs[0].N


def _reference(run: RunState) -> torch.Tensor:
    if run.spec.reference is None:
        raise ValueError("a referenced run without its reference optimum")
    return run.spec.reference


def _lazy_plan(runs: list[RunState], lazy_runs: tuple[int, ...], noisy: tuple[int, ...], starts: list[int]
               ) -> tuple[list[int], list[float], list[int], list[int], list[tuple[int, int, int]], list[int]]:
    """The lazy runs' rows: per plain noise draw its lazy row (and its draw), each draw's standard
    deviation, the counterfactual runs' own trained rows and their lazy rows, and the authors'-noise runs
    (run, first lazy row, first draw), whose draws' rows are drawn each round."""
    noise_rows: list[int] = []
    scale: list[float] = []
    own: list[int] = []
    own_rows: list[int] = []
    authors: list[tuple[int, int, int]] = []
    plain_src: list[int] = []
    offset = 0
    for i in lazy_runs:
        M = len(runs[i].roles.lazy)
        if i in noisy:
            if runs[i].cfg.lazy.noise == "authors":
                authors.append((i, offset, len(scale)))
            else:
                plain_src += range(len(scale), len(scale) + M)
                noise_rows += range(offset, offset + M)
            scale += [lazy_scale(runs[i].cfg.lazy, runs[i].cfg.parameters)] * noise_draws(runs[i].cfg.lazy, M)
        if runs[i].cfg.lazy.counterfactual:  # its rows are all N clients, in client order
            own += (starts[i] + runs[i].roles.lazy).tolist()
            own_rows += range(offset, offset + M)
        offset += M
    return noise_rows, scale, own, own_rows, authors, plain_src


def plan(runs: list[RunState], device: torch.device) -> EndPlan:
    """Plan the round end of ``runs`` (sharing N: one group)."""
    N = runs[0].N
    trained_rows = np.concatenate([np.arange(r.rows.start, r.rows.stop) for r in runs])
    row_run = np.concatenate([np.full(len(r.trainers), i) for i, r in enumerate(runs)])
    everyone = all(len(r.trainers) == N for r in runs)
    placed, taken, starts, start = [], [], [], 0
    for i, r in enumerate(runs):
        where = {c: start + j for j, c in enumerate(r.trainers.tolist())}
        placed += [i * N + c for c in r.roles.honest.tolist()]
        taken.append([where[c] for c in r.roles.honest.tolist()])
        starts.append(start)
        start += len(r.trainers)
    lazy_runs = tuple(i for i, r in enumerate(runs) if len(r.roles.lazy))
    lazy_dst = [i * N + c for i in lazy_runs for c in runs[i].roles.lazy.tolist()]
    noisy = tuple(i for i in lazy_runs if runs[i].cfg.lazy.sigma2 > 0)
    noise_rows, scale, own, own_rows, authors, plain_src = _lazy_plan(runs, lazy_runs, noisy, starts)
    dp = tuple(i for i, r in enumerate(runs) if r.sigma_dp > 0)
    by_detectors: dict[tuple[str, ...], tuple[int, ...]] = {}
    for i, r in enumerate(runs):
        if r.cfg.lazy.detectors:
            by_detectors[r.cfg.lazy.detectors] = (*by_detectors.get(r.cfg.lazy.detectors, ()), i)
    detecting = {names: (which, as_index(list(which), device)) for names, which in by_detectors.items()}
    referenced = tuple(i for i, r in enumerate(runs) if r.spec.reference is not None)
    measuring = tuple(i for i, r in enumerate(runs) if r.cfg.measure.constants)

    def per_run(values: list[float]) -> torch.Tensor | None:
        return torch.tensor(values, dtype=torch.float32, device=device).view(-1, 1, 1) if values else None

    return EndPlan(
        runs=tuple(runs), index=as_index([r.index for r in runs], device), trained_rows=as_index(trained_rows, device),
        row_run=as_index(row_run, device), placed=None if everyone else as_index(placed, device),
        taken=None if everyone else as_index(np.concatenate(taken), device), lazy=lazy_runs,
        lazy_dst=as_index(lazy_dst, device) if lazy_dst else None, noisy=noisy,
        noise_rows=as_index(noise_rows, device) if noise_rows and not authors else None, authors_noise=tuple(authors),
        plain_noise=(np.asarray(noise_rows, dtype=np.int64), np.asarray(plain_src, dtype=np.int64)),
        noise_scale=torch.tensor(scale, dtype=torch.float32, device=device).view(-1, 1) if scale else None,
        own=as_index(own, device) if own else None, own_rows=as_index(own_rows, device) if own_rows else None,
        dp=dp, dp_index=as_index(list(dp), device) if dp else None,
        dp_std=per_run([runs[i].sigma_dp for i in dp]), dp_clip=per_run([runs[i].cfg.privacy.clip for i in dp]),
        detecting=detecting, measuring=measuring, honest_rows=tuple(as_index(taken[i], device) for i in measuring),
        honest_clients=tuple(as_index(runs[i].base + runs[i].roles.honest, device) for i in measuring),
        measure_draws=tuple(runs[i].draw for i in measuring), referenced=referenced,
        referenced_index=as_index(list(referenced), device) if referenced else None,
        references=torch.stack([_reference(runs[i]) for i in referenced]).to(device) if referenced else None,
        weights=np.full((len(runs), N), float(runs[0].n)),
        eval_groups=tuple((d, as_index([i for i, r in enumerate(runs) if r.draw == d], device))
                          for d in dict.fromkeys(r.draw for r in runs)))


def noise_job(end: EndPlan, ks: list[int], P: int) -> NoiseJob:
    """The noise the round end of ``end`` needs, the runs ending rounds ``ks``."""
    runs = end.runs
    draws = [noise_draws(runs[i].cfg.lazy, len(runs[i].roles.lazy)) for i in end.noisy]
    return NoiseJob(lazy=tuple((runs[i].cfg.seed, runs[i].K, ks[i], d) for i, d in zip(end.noisy, draws, strict=True)),
                    dp=tuple((runs[i].cfg.seed, runs[i].K, ks[i]) for i in end.dp), N=end.N, P=P)
