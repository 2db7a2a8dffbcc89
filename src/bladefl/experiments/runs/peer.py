"""The same federated workload under Flower, beside ``bladefl run`` (``bladefl bench --peer flower``): CPU seconds
of each program's whole process tree and their ratio.

The workload is one run of an engine config at one K (``--peer-rounds``): the same partition (this package's
partitioner, the config's spec), the same samples (normalised as the engine loads them), the same model (MLP
d-h-10, the engine's initial weights w0), tau = floor((t_sum/K - beta)/alpha) local iterations per round (``epoch``:
one pass of minibatch SGD at the config's batch size and eta, each client's order drawn afresh; ``full_batch``: one
gradient step on all its samples), FedAvg of all N clients each round, and each round's evaluation of the global
model (F(w) over every client's samples, the test loss and accuracy). Flower runs it as its users write it: a
``ClientApp`` training a ``torch.nn`` model with autograd and ``torch.optim.SGD``, a ``ServerApp`` with its FedAvg
and a server-side evaluation, in its simulation engine (Ray workers). What differs: Flower has no chain (signing,
mining, validation: this package's run does all of it), and its epoch orders are its own draws, so the two final
accuracies agree in distribution, not bit for bit; both are printed.

Flower is an optional extra (``pip install 'bladefl[peer]'``), never a dependency: without it the measurement is
refused in one line before anything runs. Each program runs as a child process, measured with this process as the
child subreaper (Linux), so the CPU of every process either starts (Ray's daemons and workers) is counted."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ITERATIONS = ("epoch", "full_batch")  # the engine's iterations the peer's client reproduces
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


@dataclass(frozen=True)
class Tree:
    """One program's process tree: its CPU seconds (user + system, every process it started) and wall seconds."""

    cpu: float
    wall: float
    returncode: int


def flower_missing() -> str | None:
    """Why the Flower measurement cannot run here (None: it can): Flower's simulation engine is not importable."""
    import importlib.util

    for module, what in (("flwr", "Flower"), ("ray", "Flower's simulation engine (Ray)")):
        if importlib.util.find_spec(module) is None:
            return f"--peer flower needs {what}: pip install 'bladefl[peer]' (flwr[simulation])"
    return None


def workload_sets(rounds: int) -> list[str]:
    """The ``--set`` values that make an engine config's run the peer's workload: one K, no lazy clients, no noise."""
    return [f"time.K=[{rounds}]", "lazy.ratio=0.0", "lazy.sigma2=0.0", "privacy.epsilon=.inf", "device=cpu"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _reap_orphans(grace_s: float) -> None:
    """Wait for every process reparented to this one (a subreaper); kill what is left after ``grace_s``."""
    import signal

    deadline = time.monotonic() + grace_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            continue
        if time.monotonic() > deadline:
            for pid in _children():
                os.kill(pid, signal.SIGKILL)
            deadline = float("inf")
        time.sleep(0.05)


def _children() -> list[int]:
    """This process's children, from /proc (each ``stat``'s fourth field is the parent's pid)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == os.getpid():
            found.append(int(stat.parent.name))
    return found


def tree(argv: list[str], log: Path, env: dict[str, str] | None = None, grace_s: float = 30.0) -> Tree:
    """Run ``argv`` (output to ``log``) and measure its whole process tree, from a helper process of its own
    (:func:`_tree_here`): the helper is the child subreaper, so a daemon the program leaves (Ray's) is reparented
    to it and its CPU counted when reaped, and the only children it waits for are the program's (never this
    process's other children)."""
    helper = subprocess.run([sys.executable, "-m", "bladefl.experiments.runs.peer", "tree", "--log", str(log),
                             "--grace", repr(grace_s), "--", *argv], env=env, capture_output=True, text=True)
    if helper.returncode != 0:
        raise RuntimeError(f"the measuring helper failed (exit {helper.returncode}): {helper.stderr.strip()[-300:]}")
    return Tree(**json.loads(helper.stdout.strip().splitlines()[-1]))


def _tree_here(argv: list[str], log: Path, grace_s: float) -> Tree:
    """:func:`tree`'s measurement, in the helper process (no children of its own but the program's)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed: the tree's CPU cannot be counted")
    before, start = _children_cpu(), time.monotonic()
    with open(log, "wb") as out:
        code = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - start
    _reap_orphans(grace_s)
    return Tree(_children_cpu() - before, wall, code)


def _client_app(cfg: Any, data: Any, shape: Any, tau: int) -> Any:
    """Flower's ``ClientApp``: client ``partition-id`` trains the global model it is sent on its own samples."""
    import torch
    from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp

    client = ClientApp()

    @client.train()
    def train(msg: Message, context: Context) -> Message:
        c = int(context.node_config["partition-id"])
        net = _net(shape)
        net.load_state_dict(msg.content["arrays"].to_torch_state_dict())
        x, y = data.x[c], data.y[c]
        optimiser = torch.optim.SGD(net.parameters(), lr=cfg.train.eta)
        step = int(msg.content["config"]["server-round"])
        order = torch.Generator().manual_seed(cfg.seed * 1_000_003 + c * 1_009 + step)
        for _ in range(tau):
            batches = [torch.arange(len(y))] if cfg.train.iteration == "full_batch" else \
                torch.randperm(len(y), generator=order).split(cfg.train.batch_size)
            for batch in batches:
                optimiser.zero_grad()
                torch.nn.functional.cross_entropy(net(x[batch]), y[batch]).backward()
                optimiser.step()
        return Message(RecordDict({"arrays": ArrayRecord(net.state_dict()),
                                   "metrics": MetricRecord({"num-examples": len(y)})}), reply_to=msg)

    return client


def _evaluation(data: Any, shape: Any, rounds: list[dict[str, float]]) -> Any:
    """The server-side evaluation of each round's global model, its values appended to ``rounds``."""
    import torch
    from flwr.app import ArrayRecord, MetricRecord

    def evaluate(server_round: int, arrays: ArrayRecord) -> MetricRecord:
        net = _net(shape)
        net.load_state_dict(arrays.to_torch_state_dict())
        with torch.no_grad():
            train_loss = torch.nn.functional.cross_entropy(net(data.x.reshape(-1, shape.d)), data.y.reshape(-1))
            logits = net(data.x_test)
            test_loss = torch.nn.functional.cross_entropy(logits, data.y_test)
            accuracy = (logits.argmax(dim=1) == data.y_test).float().mean()
        row = {"round": server_round, "train_loss": float(train_loss), "test_loss": float(test_loss),
               "test_accuracy": float(accuracy)}
        rounds.append(row)
        return MetricRecord(row)

    return evaluate


def _flower_run(config: str, sets: list[str], out: Path) -> None:
    """The Flower simulation of the workload (in a child process: ``python -m bladefl.experiments.runs.peer``);
    writes ``out``: each round's evaluation of the global model."""
    import torch
    from flwr.app import ArrayRecord, Context
    from flwr.serverapp import Grid, ServerApp
    from flwr.serverapp.strategy import FedAvg
    from flwr.simulation import run_simulation

    from bladefl.fl.run_config import load_config
    from bladefl.fl.timemodel import allocation

    cfg = load_config(config, sets)
    data, shape, w0 = _workload(cfg)
    tau = allocation(cfg.time.K[0], cfg.time).tau  # the engine's own tau (its tau rule included)
    rounds: list[dict[str, float]] = []
    server = ServerApp()

    @server.main()
    def main(grid: Grid, context: Context) -> None:
        strategy = FedAvg(fraction_train=1.0, fraction_evaluate=0.0, min_train_nodes=data.N,
                          min_available_nodes=data.N)
        strategy.start(grid=grid, initial_arrays=ArrayRecord(_net(shape, w0).state_dict()),
                       num_rounds=int(cfg.time.K[0]), evaluate_fn=_evaluation(data, shape, rounds))

    run_simulation(server_app=server, client_app=_client_app(cfg, data, shape, tau), num_supernodes=data.N,
                   backend_config={"client_resources": {"num_cpus": max(1, torch.get_num_threads()),
                                                        "num_gpus": 0.0}})
    out.write_text(json.dumps({"rounds": rounds, "tau": tau, "N": data.N}))


def _workload(cfg: Any) -> tuple[Any, Any, Any]:
    """The workload's data (the engine's partition and samples), model shape and initial weights w0."""
    from bladefl.fl.client_data import load_client_data
    from bladefl.fl.stacked import initial_model, model_shape

    shape = model_shape(cfg)
    return load_client_data(cfg), shape, initial_model(cfg, shape)


def _net(shape: Any, flat: Any = None) -> Any:
    """The model as a Flower user writes it (``torch.nn``); with ``flat``, its weights from the engine's flat
    layout (W1 [d, h], b1, W2 [h, c], b2: nn.Linear holds each weight transposed)."""
    import torch

    from bladefl.fl import mlp

    first, second = torch.nn.Linear(shape.d, shape.h), torch.nn.Linear(shape.h, shape.c)
    if flat is not None:
        v = mlp.views(flat.unsqueeze(0), shape)
        with torch.no_grad():
            for layer, weight, bias in ((first, v.W1[0], v.b1[0]), (second, v.W2[0], v.b2[0])):
                layer.weight.copy_(weight.T)
                layer.bias.copy_(bias)
    return torch.nn.Sequential(first, *([torch.nn.ReLU()] if shape.activation == "relu" else []), second)


def measure(config: str, data_dir: str, rounds: int, threads: int, work: Path) -> list[str]:
    """Run the workload under ``bladefl run`` and under Flower, each a process tree measured alone; the lines to
    print. RuntimeError naming the log where either fails."""
    from bladefl.fl.run_config import load_config

    sets = [*workload_sets(rounds), f"data_dir={data_dir}"]
    cfg = load_config(config, sets)
    if cfg.train.iteration not in ITERATIONS:
        raise ValueError(f"--peer flower: the config's train.iteration must be one of {list(ITERATIONS)} "
                         f"(got {cfg.train.iteration!r})")
    from bladefl.fl.timemodel import allocation

    if not allocation(rounds, cfg.time).feasible:
        feasible = [k for k in range(1, rounds) if allocation(k, cfg.time).feasible]
        raise ValueError(f"--peer-rounds: K = {rounds} leaves no local iteration (tau < 1) under the config's time "
                         f"budget; the feasible K: " + (f"1 to {feasible[-1]}" if feasible else "none"))
    from bladefl.core import owned

    owned.fresh(work, "bench-peer")  # emptied when an earlier call made it, refused when it is someone else's
    env = {**os.environ, **{name: str(threads) for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}}
    set_args = [a for s in sets for a in ("--set", s)]
    ours = tree([sys.executable, "-m", "bladefl", "run", "--config", config, *set_args, "--threads", str(threads),
                 "--out", str(work / "ours"), "--quiet"], work / "ours.log", env)
    theirs = tree([sys.executable, "-m", "bladefl.experiments.runs.peer", "flower", "--config", config, *set_args,
                   "--out", str(work / "flower.json")], work / "flower.log", env)
    for name, result in (("ours", ours), ("flower", theirs)):
        if result.returncode != 0:
            raise RuntimeError(f"the {name} run failed (exit {result.returncode}): see {work / (name + '.log')}")
    summary = json.loads((work / "ours/summary.json").read_text())
    final = summary["per_K"][0]
    flower = json.loads((work / "flower.json").read_text())
    last = flower["rounds"][-1]
    return [f"workload: {config} at K = {rounds} (tau = {flower['tau']}, N = {flower['N']}, {cfg.train.iteration}), "
            f"{threads} thread(s) a process",
            f"  bladefl run: {ours.cpu:.1f} CPU-s, {ours.wall:.1f} s wall; final test accuracy "
            f"{100 * final['test_accuracy']:.2f}%, F(w) {final['train_loss']:.4f} (chain included)",
            f"  Flower {_flower_version()}: {theirs.cpu:.1f} CPU-s, {theirs.wall:.1f} s wall; final test accuracy "
            f"{100 * last['test_accuracy']:.2f}%, F(w) {last['train_loss']:.4f}",
            f"  Flower's CPU / bladefl's: {theirs.cpu / max(ours.cpu, 1e-9):.2f}"]


def bench_main(args: argparse.Namespace, threads: int, out: Path) -> int:
    """``bladefl bench --peer flower``: the measurement printed; the run folders under ``out`` (``--out``,
    default results/bench-peer), ``--config`` the paper engine unless given."""
    if missing := flower_missing():
        raise ValueError(missing)
    from bladefl.experiments.runs.provenance import project_root

    config = args.config or str(project_root() / "config/engines/paper.yaml")
    print("\n".join(measure(config, args.data_dir, args.peer_rounds, threads, out)))
    return 0


def _flower_version() -> str:
    from importlib.metadata import version

    return version("flwr")


def main(argv: list[str] | None = None) -> int:
    """The child processes of :func:`measure`: ``python -m bladefl.experiments.runs.peer flower --config C --set ...
    --out F`` (the Flower side) and ``... tree --log L --grace S -- ARGV`` (one process tree measured, its
    :class:`Tree` printed as JSON)."""
    from dataclasses import asdict

    p = argparse.ArgumentParser(prog="python -m bladefl.experiments.runs.peer")
    sub = p.add_subparsers(dest="what", required=True)
    flower = sub.add_parser("flower")
    flower.add_argument("--config", required=True)
    flower.add_argument("--set", action="append", default=[])
    flower.add_argument("--out", required=True)
    measured = sub.add_parser("tree")
    measured.add_argument("--log", required=True)
    measured.add_argument("--grace", type=float, required=True)
    measured.add_argument("argv", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.what == "tree":
        program = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        print(json.dumps(asdict(_tree_here(program, Path(args.log), args.grace))))
    else:
        _flower_run(args.config, args.set, Path(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
