"""The ledger's command: verify a run's ledgers (signatures, proof of work, the models' hashes).

Each command: its arguments (``add_*``) beside its handler (``_cmd_*``)."""

from __future__ import annotations

import argparse

from bladefl.cli.common import Command, key_secret, one_line


def add_chain(p: argparse.ArgumentParser) -> None:
    chain_sub = p.add_subparsers(dest="chain_command", required=True)
    v = chain_sub.add_parser("verify", help="re-check a saved chain from scratch")
    v.add_argument("path", help="a saved chain, e.g. results/run/chains/K5.json")
    v.add_argument("--store", help="content-addressed model store to re-hash (e.g. results/run/models)")
    v.add_argument("--summary", help="the run's summary.json: the ledger must end at the tip the run recorded")
    v.add_argument("--key-secret", metavar="FILE",
                   help="the verifier's own copy of the run's key secret (chain.key_secret_file), with --summary: "
                        "the genesis keys are derived from it, never from the path the summary names")
    v.add_argument("--anchor", metavar="FILE",
                   help="a record of the run's chains kept outside its folder (results/anchors/<dataset>.json, "
                        "kept in the bundles made from a results folder that has them; `bladefl chain anchor`): "
                        "the ledger must be the chain it records")
    a = chain_sub.add_parser("anchor", help="write an anchor file: the chain id, tip and block count of runs' chains")
    a.add_argument("--summary", nargs="+", required=True, help="the runs' summary.json files")
    a.add_argument("--out", required=True, help="the anchor file to write (JSON)")


# Exit statuses of `chain verify`: valid (anchored by the key secret or an anchor file), a problem,
# bad input, and consistent but unanchored (nothing outside the run folder agrees or disagrees).
VALID, PROBLEM, UNANCHORED = 0, 1, 3


def _cmd_chain(args: argparse.Namespace) -> int:
    return _cmd_chain_anchor(args) if args.chain_command == "anchor" else _cmd_chain_verify(args)


def _cmd_chain_anchor(args: argparse.Namespace) -> int:
    from bladefl.chain import anchors
    from bladefl.core import atomic, run_files

    chains = anchors.of_summaries(run_files.read_summary(path) for path in args.summary)
    atomic.write_text(args.out, anchors.text(chains))
    print(f"wrote {args.out}: {len(chains)} chains of {len(args.summary)} runs")
    return 0


def _cmd_chain_verify(args: argparse.Namespace) -> int:
    from bladefl.chain import anchors
    from bladefl.chain.verify import verify_chain

    if args.key_secret is not None and not args.summary:
        raise ValueError("--key-secret needs --summary (the run's seed and clients the keys derive from)")
    secret = key_secret(args.key_secret)
    chains = anchors.read(args.anchor) if args.anchor else None
    problem = verify_chain(args.path, store=args.store, summary=args.summary, secret=secret, anchor=chains)
    if problem is None and args.summary:  # the run's tau and status against its config's time model
        from bladefl.chain.ledger_file import Problem
        from bladefl.core import run_files
        from bladefl.experiments.runs.run_checks import time_model_problems

        wrong = time_model_problems(run_files.read_summary(args.summary))
        problem = Problem(0, f"summary {args.summary}: {wrong[0]}") if wrong else None
    if problem is None:
        tip = f", its tip is the run's ({args.summary})" if args.summary else ""
        by = "the key secret" if secret else f"the anchor {args.anchor}" if chains is not None else None
        if by is None:
            print(f"{args.path}: consistent{tip}, but unanchored: anyone holding the run's seed could have written "
                  f"it (--key-secret FILE or --anchor FILE checks it against a record outside the run folder)")
            return UNANCHORED
        print(f"{args.path}: chain valid{tip}, anchored by {by}")
        return VALID
    where = "genesis/file" if problem.height == 0 else f"block {problem.height}"
    print(one_line(f"{args.path}: {where}: {problem.reason}; last good height {problem.last_good_height}"))
    return PROBLEM


COMMANDS: list[Command] = [
    ("chain", "ledger tools: verify a saved chain, write an anchor file", add_chain, _cmd_chain),
]
