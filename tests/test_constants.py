"""Estimators of L, xi, delta; the MLP gradient; the reference optimum."""

from __future__ import annotations

import math

import pytest
import torch

from bladefl.fl import measured_constants, mlp
from bladefl.fl.engine import run_k
from bladefl.fl.run_config import from_dict
from bladefl.theory.reference import train_reference
from test_engine import synthetic


def test_estimators_recover_constants_of_quadratic_client_losses():
    """F_i(w) = L/2 ||w - c_i||^2: smoothness L exactly, gradient divergence L ||c_i - mean c||."""
    g = torch.Generator().manual_seed(0)
    L, N, P = 3.0, 6, 50
    centers = torch.randn(N, P, generator=g)
    w = torch.randn(P, generator=g)
    local = w + 0.3 * torch.randn(N, P, generator=g)

    def loss(v, c):
        return 0.5 * L * ((v - c) ** 2).sum(dim=-1)

    def grad(v, c):
        return L * (v - c)

    sizes = torch.full((N,), 100.0)
    m = measured_constants.estimate(loss(w, centers), loss(local, centers), grad(w.expand(N, -1), centers),
                           grad(local, centers), (local - w).norm(dim=1), grad(w.expand(N, -1), centers),
                           sizes, sizes)
    assert m.L_mean == pytest.approx(L, rel=1e-5) and m.L_max == pytest.approx(L, rel=1e-5)
    expected_delta = L * (centers - centers.mean(dim=0)).norm(dim=1)
    assert m.delta_mean == pytest.approx(expected_delta.mean().item(), rel=1e-5)
    assert m.delta_max == pytest.approx(expected_delta.max().item(), rel=1e-5)
    xi = (loss(local, centers) - loss(w, centers)).abs() / (local - w).norm(dim=1)
    assert m.xi_max == pytest.approx(xi.max().item(), rel=1e-5)


def test_mlp_gradient_matches_autograd():
    data = synthetic(N=3, n=20, d=12)
    shape = mlp.Shape(d=12, h=7)
    flat = torch.stack([mlp.init(shape, torch.Generator().manual_seed(i)) for i in range(3)])
    ours = mlp.gradient(flat, data.x, data.y, shape)
    auto = flat.clone().requires_grad_(True)
    mlp.losses(mlp.views(auto, shape), data.x, data.y, shape).sum().backward()
    assert torch.allclose(ours, auto.grad, atol=1e-6)


def test_two_passes_give_what_the_five_passes_gave():
    """measure(): each client's loss and gradient at w from one pass over every client (the trained
    clients' rows taken from it) and at the iterates from another, equal to the five separate passes
    (losses and gradients at w and at the iterates on the trained clients, gradients at w on all)."""
    g = torch.Generator().manual_seed(0)
    shape = mlp.Shape(d=12, h=7, activation="relu")
    N, n, clients = 6, 9, torch.tensor([0, 2, 3, 5])
    x, y = torch.randn(N, n, 12, generator=g), torch.randint(0, 10, (N, n), generator=g)
    w = mlp.init(shape, g)
    local = w + 0.05 * torch.randn(len(clients), w.numel(), generator=g)
    x_local, y_local = x[clients], y[clients]
    at_w = w.expand(len(clients), -1).contiguous()
    loss, grad = mlp.loss_and_gradient(local, x_local, y_local, shape)
    assert torch.equal(loss, mlp.losses(mlp.views(local, shape), x_local, y_local, shape))
    assert torch.equal(grad, mlp.gradient(local, x_local, y_local, shape))
    five = measured_constants.estimate(
        loss_w=mlp.losses(mlp.views(at_w, shape), x_local, y_local, shape),
        loss_i=mlp.losses(mlp.views(local, shape), x_local, y_local, shape),
        grad_w=mlp.gradient(at_w, x_local, y_local, shape), grad_i=mlp.gradient(local, x_local, y_local, shape),
        dist=(local - at_w).norm(dim=1), grad_all=mlp.gradient(w.expand(N, -1).contiguous(), x, y, shape),
        sizes_local=torch.full((len(clients),), float(n)), sizes_all=torch.full((N,), float(n)))
    assert measured_constants.measure(w, local, clients, x, y, shape) == five


def test_engine_records_measured_constants_each_round():
    cfg = from_dict({"partition": {"N": 4, "n": 48}, "model": {"hidden": 16}, "device": "cpu",
                     "train": {"eta": 0.05, "batch_size": 16}, "time": {"K": [3]}, "measure": {"constants": True},
                     "chain": {"difficulty_bits": 6}})
    result = run_k(cfg, synthetic(), 3)
    for r in result.rounds:
        assert 0 < r.L_mean <= r.L_max and 0 < r.xi_mean <= r.xi_max and 0 < r.delta_mean <= r.delta_max
    off = run_k(from_dict({**cfg.to_dict(), "measure": {"constants": False}}), synthetic(), 3)
    assert math.isnan(off.rounds[0].L_mean)
    assert [r.train_loss for r in off.rounds] == [r.train_loss for r in result.rounds]  # measuring changes nothing


def test_reference_run_converges_below_federated_loss():
    data = synthetic(N=4, n=48, d=30)
    shape = mlp.Shape(d=30, h=16)
    w0 = mlp.init(shape, torch.Generator().manual_seed(0))
    ref = train_reference(data.x, data.y, shape, w0, eta=0.05, max_epochs=200,
                          generator=torch.Generator().manual_seed(1))
    assert ref.history[0] > ref.f_star and ref.f_star == min(ref.history)
    assert 1 < ref.epochs <= 200
    start = mlp.losses(mlp.views(w0.expand(4, -1), shape), data.x, data.y, shape).mean().item()
    assert ref.f_star < 0.5 * start
    assert measured_constants.phi(0.01, 2.0, w0, ref.w_star) == pytest.approx(0.99 / (w0 - ref.w_star).norm().item())


def test_constants_are_measured_against_the_honest_aggregate_not_the_noisy_block():
    """With lazy clients, L, xi and delta of a round are measured on the honest clients against
    their own aggregate (measured_constants' docstring): at K = 1 (one round from the same start,
    the honest iterates identical) they do not depend on the lazy noise's variance, nor on
    whether the noisy uploads are excluded; measured against the block's aggregate they would
    (its distance grows with sigma)."""
    base = {"partition": {"N": 4, "n": 48}, "model": {"hidden": 16}, "device": "cpu",
            "train": {"eta": 0.05, "batch_size": 16}, "time": {"K": [1]}, "measure": {"constants": True},
            "chain": {"difficulty_bits": 6}}
    data = synthetic()
    rounds = [run_k(from_dict({**base, "lazy": {"ratio": 0.5, "sigma2": s2}}), data, 1).rounds[0]
              for s2 in (1e-4, 1.0)]
    assert rounds[0].test_loss != rounds[1].test_loss  # the noise reached the block
    for name in ("L_mean", "L_max", "xi_mean", "xi_max", "delta_mean", "delta_max"):
        assert getattr(rounds[0], name) == getattr(rounds[1], name), name


def test_the_reference_command_trains_on_the_cpu_whatever_the_configs_device(tmp_path, data_root):
    """`bladefl reference` under a GPU config (the GPU profile's engine) computes on the CPU: on a GPU
    machine its data, model and generator sat on different devices; here `device=cuda` finds no GPU."""
    import json

    import numpy as np

    from bladefl.cli import main

    partition = tmp_path / "p.npy"
    np.save(partition, np.arange(4 * 8).reshape(4, 8))
    out = tmp_path / "ref.npz"
    code = main(["reference", "--partition", str(partition), "--out", str(out), "--max-epochs", "2",
                 "--set", f"data_dir={data_root}", "--set", "device=cuda"])
    assert code == 0 and out.is_file()
    assert json.loads(out.with_suffix(".json").read_text())["dataset"] == "mnist"
