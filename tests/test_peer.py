"""``bladefl bench --peer flower``'s parts that need no Flower: the process tree's CPU counts what a program leaves
behind, the peer's model is the engine's model, and without Flower the measurement is refused in one line."""

from __future__ import annotations

import sys

import pytest
import torch

from bladefl.experiments.runs import peer


def test_a_tree_counts_the_cpu_of_a_process_its_program_left_behind(tmp_path):
    """A program that starts a CPU burner in the background and exits at once (as Ray's daemons outlive the
    driver's own work): the burner is reparented to the measuring process and its CPU counted."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5:\n    pass\n"
    # the grace before leftovers are killed set far beyond the burner's 0.5 CPU-s, so a slow, busy machine waits
    # for it rather than killing it early
    result = peer.tree(["bash", "-c", f'( "{sys.executable}" -c "$0" & ); exit 0', burn], tmp_path / "log",
                       grace_s=3600)
    assert result.returncode == 0
    assert result.cpu >= 0.5, result  # the burner's own CPU, counted although its parent never waited for it


def test_a_tree_leaves_the_callers_other_children_alone(tmp_path):
    """The measuring process waits for, and kills after its grace, only what the measured program left: a child of
    the caller's own (a pytest worker's resource tracker, say) is neither reaped nor killed."""
    import subprocess

    mine = subprocess.Popen(["sleep", "600"])
    try:
        result = peer.tree(["true"], tmp_path / "log", grace_s=0.1)
        assert result.returncode == 0
        assert mine.poll() is None  # still running, still this process's to wait for
    finally:
        mine.kill()
        mine.wait()


def test_the_peers_torch_model_is_the_engines_model_from_its_flat_weights():
    """The Flower client's ``torch.nn`` model built from the engine's flat w0 gives the engine's logits (nn.Linear
    holds each weight transposed), so both programs start from the same model."""
    from bladefl.core.rng import torch_generator
    from bladefl.fl import mlp

    for activation in ("relu", "none"):
        shape = mlp.Shape(d=12, h=5, activation=activation)
        w0 = mlp.init(shape, torch_generator(3, "init"))
        x = torch.randn(7, 12, generator=torch.Generator().manual_seed(1))
        _, ours = mlp.forward(mlp.views(w0.unsqueeze(0), shape), x.unsqueeze(0), shape)
        with torch.no_grad():
            theirs = peer._net(shape, w0)(x)
        assert torch.allclose(ours[0], theirs, atol=1e-6), activation


def test_without_flower_the_peer_measurement_is_refused_in_one_line_before_any_work(tmp_path, monkeypatch, capsys):
    import importlib.util

    from bladefl.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("flwr", "ray") else real(name, *a))
    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--peer", "flower", "--out", str(tmp_path / "out")]) == 2
    said = capsys.readouterr().err.strip()
    assert len(said.splitlines()) == 1 and "pip install 'bladefl[peer]'" in said, said
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, says", [
    (["--peer", "flower", "--grid", "config/paper.yaml"], "--grid: --peer does not read it"),
    (["--peer-rounds", "3"], "--peer-rounds: the CPU bench does not read it"),
])
def test_an_option_the_peer_measurement_does_not_read_is_refused(argv, says, capsys):
    from bladefl.cli import main

    assert main(["bench", *argv]) == 2
    said = capsys.readouterr().err.strip()
    assert len(said.splitlines()) == 1 and says in said, said


def test_a_k_with_no_local_iteration_is_refused_naming_the_feasible_ones_before_any_work(tmp_path):
    """The paper engine's budget (alpha 1, beta 10, t_sum 100) leaves tau < 1 from K = 10 on: the peer would train
    nothing where the engine records the K as infeasible, so the call is refused before its folder is made."""
    from conftest import REPO

    with pytest.raises(ValueError, match=r"K = 10 leaves no local iteration .* the feasible K: 1 to 9"):
        peer.measure(str(REPO / "config/engines/paper.yaml"), "data/raw", 10, 1, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_each_measurement_that_writes_has_its_own_folder_unless_out_says():
    """--grid, --bookkeeping and --peer each write under their own default folder (a call naming none never
    writes into another measurement's runs); --out replaces it for whichever runs."""
    import argparse

    from bladefl.bench import out_of
    from bladefl.cli.checks import add_bench

    parser = argparse.ArgumentParser()
    add_bench(parser)
    folders = {str(out_of(parser.parse_args(argv))) for argv in (
        ["--peer", "flower"], ["--bookkeeping", "config/smoke.yaml"], ["--grid", "config/smoke.yaml"])}
    assert folders == {"results/bench-peer", "results/bench-bookkeeping", "results/bench-grid"}
    assert str(out_of(parser.parse_args(["--peer", "flower", "--out", "x/y"]))) == "x/y"
