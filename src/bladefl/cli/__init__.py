"""Command-line entry point ``bladefl``: thin wrappers over the library (the BLADE-FL reproduction).

One module per command group, each command's arguments beside its handler: ``grid`` (fetch, partition,
run, run-group, reference), ``tables`` (summarize, bound, detection), ``report`` (verdicts, the paper's tables,
provenance, the front page and notebook pages), ``sensitivity`` (the sensitivity study's), ``bundles``
(keep, import-runs, lay-out, rejudge, regenerate), ``chain`` (ledger verification) and ``checks``
(device-check, bench, resources), ``calibration`` (the calibration study's search, pick, second pass and
tables) and ``conventions`` (K* and accuracy under each measurement convention); ``common`` holds what
they share."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bladefl.cli import bundles, calibration, chain, checks, conventions, grid, report, sensitivity, tables
from bladefl.cli.common import Command, error_text


def commands() -> list[Command]:
    """(command, help, its arguments, its handler) of every command, by group."""
    return [*grid.COMMANDS, *tables.COMMANDS, *report.COMMANDS, *bundles.COMMANDS, *chain.COMMANDS, *checks.COMMANDS,
            *calibration.COMMANDS, *conventions.COMMANDS,
            *sensitivity.COMMANDS]


# The commands a user types (docs and README); every other command is a step the workflow's rules call.
USER_COMMANDS = ("fetch", "partition", "run", "chain", "import-runs", "pack-optima", "import-optima", "keep", "lay-out",
                 "rejudge", "diff", "regenerate", "findings", "conventions", "bench", "device-check", "resources")


class _Version(argparse.Action):
    """``--version``: the package version and the code's (``git describe`` where it is a checkout),
    computed only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="the package's and the code's version, then exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from bladefl import __version__
        from bladefl.experiments.runs.provenance import code_version

        code = code_version()
        print(f"bladefl {__version__}" + (f" (code {code})" if code != __version__ else ""))
        parser.exit()


def _listing(entries: Sequence[Command], width: int) -> str:
    return "\n".join(f"  {name:<{width}}  {help_}" for name, help_, *_ in entries)


def build_parser() -> argparse.ArgumentParser:
    entries = commands()
    user = [e for e in entries if e[0] in USER_COMMANDS]
    steps = [e for e in entries if e[0] not in USER_COMMANDS]
    width = max(len(name) for name, *_ in entries)
    parser = argparse.ArgumentParser(
        prog="bladefl", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="bladefl: the BLADE-FL reproduction's library, command by command (README.md).",
        epilog=(f"commands:\n{_listing(user, width)}\n\nthe workflow's own steps (its rules call them; "
                f"docs/workflow.md):\n{_listing(steps, width)}\n\n`bladefl COMMAND --help` for a command's options."))
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help="one of those below")
    for name, help_, add_arguments, handler in entries:
        p = sub.add_parser(name, description=help_)
        add_arguments(p)
        p.set_defaults(func=handler)
    return parser


def special_files(args: argparse.Namespace) -> list[str]:
    """The arguments that name a FIFO, a device or a socket (a path given as ``@file`` too): no command
    reads or writes one (a FIFO would hang a reader, /dev/zero fill its memory), so every command refuses
    them before any work, whatever its own readers do (tests/test_hostile_cli.py)."""
    import os
    import stat

    found = []
    for name, value in vars(args).items():
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str) or not item or "\x00" in item:
                continue
            path = item[1:] if item.startswith("@") else item
            try:
                mode = os.stat(path).st_mode
            except (OSError, ValueError):
                continue  # no such path (a value that is no path, or a file to be written)
            if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
                found.append(f"--{name.replace('_', '-')} {item}")
    return found


def empty_values(args: argparse.Namespace) -> list[str]:
    """The arguments given as an empty text: no command takes one (an empty path would name the current
    folder, an empty name matches nothing), so every command refuses it before any work, never reading it
    as an option left out (an empty ``--out`` once printed the page instead of writing it)."""
    return [f"--{name.replace('_', '-')}" for name, value in vars(args).items() if name != "func"
            for item in (value if isinstance(value, list) else [value]) if isinstance(item, str) and not item.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if empty := empty_values(args):
            raise ValueError(f"{empty[0]}: an empty value (for a path it would name the current folder); give one "
                             "or leave the option out")
        special = special_files(args)
        if special:
            raise ValueError(f"{special[0]}: a FIFO, device or socket, not a file or folder (no command reads or "
                             "writes one)")
        return int(args.func(args) or 0)
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback; what a command writes is atomic (core.atomic)
        print(f"bladefl {args.command}: interrupted", file=sys.stderr)
        return 130
    except (ValueError, RuntimeError, OSError) as exc:  # bad input (a file too, e.g. an empty key secret): one line
        print(f"error: {error_text(exc)}", file=sys.stderr)
        return 2
