"""The engine on small synthetic data: batched training against a per-client reference,
determinism, the attack paths (forged signatures, wrong payloads), lazy clients, DP, chain."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from bladefl.chain.pow import meets_target
from bladefl.chain.transactions import derive_key
from bladefl.chain.verify import verify_chain
from bladefl.experiments.runs.device_check import small_config, synthetic_data
from bladefl.experiments.runs.runner import run_cell
from bladefl.fl import lazy, mlp, privacy, trainer
from bladefl.fl.engine import ClientData, run_k


def synthetic(N=4, n=48, d=30, c=10, T=64, seed=0) -> ClientData:
    """Gaussian class clusters (:func:`bladefl.experiments.runs.device_check.synthetic_data`)."""
    return synthetic_data(N=N, n=n, d=d, classes=c, T=T, seed=seed)


def reference_train(model0: torch.Tensor, x, y, tau, eta, iteration, batch, shape, generator):
    """Typical FL code: one nn.Module + optimizer per client, a Python loop over clients."""
    N, n, d = x.shape
    orders = [trainer.epoch_order(generator, N, n) for _ in range(tau)] if iteration == "epoch" else None
    out = []
    for i in range(N):
        net = torch.nn.Sequential(torch.nn.Linear(d, shape.h),
                                  torch.nn.ReLU() if shape.activation == "relu" else torch.nn.Identity(),
                                  torch.nn.Linear(shape.h, shape.c))
        v = mlp.views(model0.unsqueeze(0), shape)
        with torch.no_grad():
            net[0].weight.copy_(v.W1[0].T)
            net[0].bias.copy_(v.b1[0])
            net[2].weight.copy_(v.W2[0].T)
            net[2].bias.copy_(v.b2[0])
        opt = torch.optim.SGD(net.parameters(), lr=eta)
        for t in range(tau):
            batches = [slice(None)] if iteration == "full_batch" else \
                [orders[t][i, s:s + batch] for s in range(0, n, batch)]
            for b in batches:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(x[i][b]), y[i][b]).backward()
                opt.step()
        out.append(torch.cat([net[0].weight.T.reshape(-1), net[0].bias, net[2].weight.T.reshape(-1),
                              net[2].bias]).detach())
    return torch.stack(out)


@pytest.mark.parametrize("iteration", ["full_batch", "epoch"])
@pytest.mark.parametrize("activation", ["relu", "none"])
def test_batched_trainer_matches_per_client_reference(iteration, activation):
    data = synthetic()
    shape = mlp.Shape(d=30, h=16, activation=activation)
    w0 = mlp.init(shape, torch.Generator().manual_seed(3))
    local = w0.expand(data.N, -1).clone()
    trainer.train_local(local, data.x, data.y, 5, eta=0.05, iteration=iteration, batch_size=10, shape=shape,
                        generator=torch.Generator().manual_seed(11))
    ref = reference_train(w0, data.x, data.y, 5, 0.05, iteration, 10, shape, torch.Generator().manual_seed(11))
    assert (local - w0).abs().max() > 1e-2  # it trained
    assert torch.allclose(local, ref, atol=1e-5, rtol=0), (local - ref).abs().max()


def small_cfg(**over):
    """A small run config on the CPU (:func:`bladefl.experiments.runs.device_check.small_config`)."""
    return small_config(over.pop("device", "cpu"), **over)


def test_same_config_and_seed_give_identical_results():
    data = synthetic()
    a, b = run_k(small_cfg(), data, 3), run_k(small_cfg(), data, 3)
    assert [r.block_hash for r in a.rounds] == [r.block_hash for r in b.rounds]
    assert torch.equal(a.model, b.model)
    c = run_k(small_cfg(seed=1), data, 3)
    assert not torch.equal(a.model, c.model)


def test_every_appended_block_has_valid_pow_and_the_chain_verifies(tmp_path):
    result = run_k(small_cfg(chain={"save_models": True}), synthetic(), 3, store=tmp_path / "models")
    assert len(result.ledger.blocks) == 3
    assert all(meets_target(b.header) for b in result.ledger.blocks)
    assert all(r.votes == 4 and r.n_in_block == 4 for r in result.rounds)
    result.ledger.save(tmp_path / "chain.json")
    assert verify_chain(tmp_path / "chain.json", store=tmp_path / "models") is None


def test_forged_signature_and_wrong_payload_are_excluded_from_aggregation():
    seen = {}

    def attacker(k, txs, payloads):
        forged = derive_key(999, 1).sign(txs[1].message()).hex()
        txs = [t if t.client != 1 else type(t)(t.round, t.client, t.n_samples, t.model_sha256, forged) for t in txs]
        payloads = dict(payloads)
        payloads[2] = payloads[2][:-4] + b"\x00\x00\x80\x3f"  # last parameter replaced by 1.0
        seen[k] = payloads
        return txs, payloads

    cfg = small_cfg(time={"K": [1]})
    result = run_k(cfg, synthetic(), 1, tamper=attacker)
    block = result.ledger.blocks[0]
    assert sorted(tx.client for tx in block.transactions) == [0, 3]
    assert result.rounds[0].n_rejected == 2
    kept = [torch.from_numpy(np.frombuffer(seen[1][c], dtype="<f4").copy()) for c in (0, 3)]
    assert torch.allclose(result.model, torch.stack(kept).mean(dim=0), atol=1e-7)


def test_lazy_uploads_are_a_peer_plus_noise_of_the_configured_variance():
    g = torch.Generator().manual_seed(0)
    honest = torch.randn(5, 20000, generator=g)
    copied = lazy.plagiarize(honest, 3, 0.04, np.random.default_rng(1), torch.Generator().manual_seed(2))
    assert torch.equal(copied.copies, honest[torch.as_tensor(copied.victims)])
    for row, v in zip(copied.uploads, copied.victims, strict=True):
        noise = row - honest[v]
        assert noise.mean().abs() < 0.01
        assert noise.var().item() == pytest.approx(0.04, rel=0.05)
    roles = lazy.choose_lazy(np.random.default_rng(0), 10, 3)
    assert len(roles.lazy) == 3 and set(roles.lazy).isdisjoint(roles.honest) and len(roles.honest) == 7


def test_engine_with_lazy_clients_records_them_and_theta():
    result = run_k(small_cfg(lazy={"ratio": 0.5, "sigma2": 0.01, "counterfactual": True}), synthetic(), 3)
    assert all(r.n_lazy == 2 and r.n_in_block == 4 for r in result.rounds)
    assert all(math.isfinite(r.theta) and r.theta > 0 for r in result.rounds)
    assert all(math.isfinite(r.noise_norm) and r.noise_norm > 0 for r in result.rounds)


def test_theta_is_the_plagiarism_distance_not_the_noise():
    """Same seed, only sigma2 changes: the first round's theta (trained vs copied, before noise) is
    the same; the noise norm grows as sqrt(P sigma2)."""
    data = synthetic()
    rounds = {s2: run_k(small_cfg(lazy={"ratio": 0.5, "sigma2": s2, "counterfactual": True}), data, 1).rounds[0]
              for s2 in (1e-6, 1e-2, 0.3)}
    thetas = [r.theta for r in rounds.values()]
    assert thetas[0] > 0 and max(thetas) - min(thetas) < 1e-6 * thetas[0]
    P = 30 * 16 + 16 + 16 * 10 + 10  # d=30, hidden 16, 10 classes (small_cfg)
    for s2, r in rounds.items():
        assert r.noise_norm == pytest.approx(math.sqrt(P * s2), rel=0.15)


def test_counterfactual_changes_no_honest_client_and_no_result():
    data = synthetic()
    runs = [run_k(small_cfg(lazy={"ratio": 0.5, "sigma2": 0.01, "counterfactual": cf}), data, 3)
            for cf in (False, True)]
    assert torch.allclose(runs[0].model, runs[1].model, atol=1e-6, rtol=0)
    for a, b in zip(runs[0].rounds, runs[1].rounds, strict=True):
        assert a.train_loss == pytest.approx(b.train_loss, abs=1e-7) and a.miner == b.miner
    digests = [[tx.model_sha256 for tx in blk.transactions] for r in runs for blk in r.ledger.blocks]
    assert digests[:3] == digests[3:]  # the same uploads (only the chain id, from the config, differs)
    assert math.isnan(runs[0].rounds[0].theta) and runs[1].rounds[0].theta > 0


def test_dp_sigma_matches_the_formula_and_noise_has_that_std():
    eps, delta, clip, n, K = 10.0, 1e-5, 5.0, 512, 4
    expected = math.sqrt(2 * math.log(1.25 / delta)) * K * (2 * clip / n) / eps
    assert privacy.noise_std(eps, delta, clip, n, K) == pytest.approx(expected, rel=1e-12)
    assert privacy.noise_std(math.inf, delta, clip, n, K) == 0.0
    models = torch.randn(3, 50000) * 0.1
    assert (privacy.clip_rows(models, clip).norm(dim=1) <= clip + 1e-4).all()
    out = privacy.privatize(models, 0.5, clip, torch.Generator().manual_seed(0))
    assert (out - privacy.clip_rows(models, clip)).std().item() == pytest.approx(0.5, rel=0.02)
    result = run_k(small_cfg(privacy={"epsilon": 50.0, "clip": 5.0}), synthetic(), 3)
    assert result.sigma_dp == pytest.approx(privacy.noise_std(50.0, 1e-5, 5.0, 48, 3))


def test_infeasible_K_is_a_status_and_a_row(tmp_path):
    data = synthetic()
    assert run_k(small_cfg(), data, 10).status == "infeasible"
    summary = run_cell(small_cfg(time={"K": [9, 10]}), tmp_path, data=data, progress=False)
    assert [s["status"] for s in summary["per_K"]] == ["ok", "infeasible"]
    import pandas as pd

    rows = pd.read_csv(tmp_path / "rounds.csv")
    assert rows[rows.K == 10].status.tolist() == ["infeasible"]
    assert (rows[rows.K == 9].status == "ok").sum() == 9
    assert (tmp_path / "chains" / "K9.json").exists() and not (tmp_path / "chains" / "K10.json").exists()
    # the saved ledger verifies and ends at the tip the run recorded
    assert verify_chain(tmp_path / "chains" / "K9.json", summary=tmp_path / "summary.json") is None


def test_faulty_validators_vote_and_the_votes_are_recorded():
    data = synthetic(N=8)
    rejecting = run_k(small_cfg(partition={"N": 8}, chain={"faulty_fraction": 0.375, "fault": "reject"}), data, 3)
    assert [r.votes for r in rejecting.rounds] == [5, 5, 5]  # 3 of 8 always vote no; the block still passes
    random = run_k(small_cfg(partition={"N": 8}, chain={"faulty_fraction": 0.375, "fault": "random"}), data, 3)
    assert all(5 <= r.votes <= 8 for r in random.rounds)
    honest = run_k(small_cfg(partition={"N": 8}), data, 3)
    assert torch.equal(honest.model, rejecting.model) and [r.votes for r in honest.rounds] == [8, 8, 8]


def test_exponential_block_time_has_mean_beta():
    result = run_k(small_cfg(chain={"block_time": "exponential"}, time={"K": [9]}), synthetic(), 9)
    times = [r.block_time for r in result.rounds]
    assert len(set(times)) == 9 and 1 < np.mean(times) < 30


def test_excluding_flagged_uploads_changes_the_block_and_the_aggregate(tmp_path):
    data = synthetic(N=8)
    lazy_cfg = {"ratio": 0.25, "sigma2": 0.01, "detectors": ["gaussian_difference"]}
    seen = run_k(small_cfg(partition={"N": 8}, lazy=lazy_cfg), data, 3)
    cut = run_k(small_cfg(partition={"N": 8}, lazy={**lazy_cfg, "exclude": True}), data, 3)
    assert [r.n_in_block for r in seen.rounds] == [8, 8, 8] and [r.n_excluded for r in seen.rounds] == [0, 0, 0]
    assert [r.n_in_block for r in cut.rounds] == [6, 6, 6] and [r.n_excluded for r in cut.rounds] == [2, 2, 2]
    block = cut.ledger.blocks[0]
    lazy_ids = {d["client"] for d in cut.detections if d["lazy"]}
    assert {e.client for e in block.excluded} == lazy_ids
    assert all(e.reason == "flagged by gaussian_difference" for e in block.excluded)
    assert not lazy_ids & {tx.client for tx in block.transactions}
    assert not torch.allclose(seen.model, cut.model)  # FedAvg ran on the remaining models
    assert cut.rounds[-1].train_loss < seen.rounds[-1].train_loss  # without the noisy copies
    path = tmp_path / "K3.json"
    cut.ledger.save(path)
    assert verify_chain(path) is None  # the exclusion records are committed by the Merkle root
    import json

    data_ = json.loads(path.read_text())
    data_["blocks"][0]["excluded"][0]["reason"] = "no reason"
    path.write_text(json.dumps(data_))
    assert "Merkle root" in verify_chain(path).reason
