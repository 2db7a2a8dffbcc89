"""Command-line entry point ``bladefl``: thin wrappers over the library."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _cmd_fetch(args: argparse.Namespace) -> int:
    from .fetch import FetchError, fetch

    try:
        fetch(args.dataset, args.root, sources=args.sources, log=lambda m: print(m, flush=True))
    except FetchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _cmd_partition(args: argparse.Namespace) -> int:
    from .partition import PartitionSpec
    from .partition_store import PartitionPaths, write_partition

    spec = PartitionSpec.from_key(args.key)
    paths = PartitionPaths.under(args.out, args.dataset, spec)
    info = write_partition(args.dataset, spec, args.root, paths)
    print(f"wrote {paths.indices} ({info['shape'][0]} clients x {info['shape'][1]} samples), "
          f"{paths.manifest}, {paths.figure}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bladefl", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("fetch", help="fetch and verify a dataset's raw IDX files")
    p.add_argument("--dataset", required=True, choices=["mnist", "fashion_mnist"])
    p.add_argument("--root", default="data/raw", help="torchvision root (default: data/raw)")
    p.add_argument("--sources", nargs="+", default=["existing", "torchvision", "registry"],
                   help="sources in the order to try them")
    p.set_defaults(func=_cmd_fetch)

    p = sub.add_parser("partition", help="write a non-IID partition (indices, manifest, heatmap)")
    p.add_argument("--dataset", required=True, choices=["mnist", "fashion_mnist"])
    p.add_argument("--key", required=True, help="partition key, e.g. shards2_N20_n512_seed0")
    p.add_argument("--root", default="data/raw")
    p.add_argument("--out", default="data/partitions")
    p.set_defaults(func=_cmd_partition)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
