"""The ledger's command: verify a run's ledgers (signatures, proof of work, the models' hashes).

Each command: its arguments (``add_*``) beside its handler (``_cmd_*``)."""

from __future__ import annotations

import argparse

from bladefl.cli.common import Command, key_secret


def add_chain(p: argparse.ArgumentParser) -> None:
    chain_sub = p.add_subparsers(dest="chain_command", required=True)
    v = chain_sub.add_parser("verify", help="re-check a saved chain from scratch")
    v.add_argument("path", help="a saved chain, e.g. results/run/chains/K5.json")
    v.add_argument("--store", help="content-addressed model store to re-hash (e.g. results/run/models)")
    v.add_argument("--summary", help="the run's summary.json: the ledger must end at the tip the run recorded")
    v.add_argument("--key-secret", metavar="FILE",
                   help="the verifier's own copy of the run's key secret (chain.key_secret_file), with --summary: "
                        "the genesis keys are derived from it, never from the path the summary names")


def _cmd_chain_verify(args: argparse.Namespace) -> int:
    from bladefl.chain.verify import verify_chain

    if args.key_secret is not None and not args.summary:
        raise ValueError("--key-secret needs --summary (the run's seed and clients the keys derive from)")
    secret = key_secret(args.key_secret)
    problem = verify_chain(args.path, store=args.store, summary=args.summary, secret=secret)
    if problem is None and args.summary:  # the run's tau and status against its config's time model
        from bladefl.chain.ledger_file import Problem
        from bladefl.core import run_files
        from bladefl.experiments.runs.run_checks import time_model_problems

        wrong = time_model_problems(run_files.read_summary(args.summary))
        problem = Problem(0, f"summary {args.summary}: {wrong[0]}") if wrong else None
    if problem is None:
        print(f"{args.path}: chain valid" + (f", its tip is the run's ({args.summary})" if args.summary else ""))
        return 0
    where = "genesis/file" if problem.height == 0 else f"block {problem.height}"
    print(f"{args.path}: {where}: {problem.reason}; last good height {problem.last_good_height}")
    return 1


COMMANDS: list[Command] = [
    ("chain", "ledger tools", add_chain, _cmd_chain_verify),
]
