"""Every command the README and docs give, checked the cheapest way that can fail: `bladefl`
commands parse with the CLI's own parser (a mention of a subcommand's option, such as
`bladefl bench --grid`, has its subcommand and options checked), `make` targets through
`make -n`, `snakemake` commands as a dry run (`-n`) in a copy of the workflow. Templates with
placeholders (`...`, `<run>`, `FILE`) stand for the concrete commands beside them, which are run."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import HANG_S, dry_run_once, venv_env

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "config" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOOLS = ("make ", "snakemake ", ".venv/bin/snakemake ", "bladefl ")
PLACEHOLDER = re.compile(r"\.\.\.|<[a-z]+>|\bFILE\b|\$[A-Z]+|\bNAME=\.\.\.|CPU\.csv")
# Commands the docs name that a dry run here cannot take: a report archive of a finished run (the
# README's, after the smoke run, is executed on the smoke by tests/test_report.py), the conda deployment
# (no conda on this machine).
NOT_DRY = ("snakemake --report", "snakemake --configfile config/smoke.yaml --report",
           "snakemake --software-deployment-method conda")
ACTIVATE = "source .venv/bin/activate"


def doc_commands() -> list[tuple[str, str]]:
    """(doc, command) for each command in a fenced shell block or an inline code span that starts
    with one of the project's tools (continuation lines joined, comments and `[optional]` brackets
    dropped), each once."""
    seen: dict[str, str] = {}
    for doc in DOCS:
        text = doc.read_text()
        spans = []
        for block in re.findall(r"```(?:bash|sh|shell|console)\n(.*?)```", text, re.S):
            spans += re.sub(r"\\\n\s*", " ", block).splitlines()
        text_without_blocks = re.sub(r"```.*?```", "", text, flags=re.S)
        spans += re.findall(r"`([^`]+)`", text_without_blocks)
        for span in spans:
            command = " ".join(span.split("#", 1)[0].split())
            command = re.sub(r"\[([^\]]+)\]", r"\1", command)
            if command.startswith(TOOLS) and len(command.split()) > 1:
                seen.setdefault(command, str(doc.relative_to(ROOT)))
    return [(doc, command) for command, doc in seen.items()]


COMMANDS = doc_commands()
COMMANDS_BY_TEXT = [(command, doc) for doc, command in COMMANDS]


def test_the_docs_give_commands_of_every_tool():
    tools = {c.split()[0].removeprefix(".venv/bin/") for _, c in COMMANDS}
    assert tools == {"make", "snakemake", "bladefl"}, tools
    assert len(COMMANDS) >= 30


BARE = re.compile(r"(?:^|`)(?:bladefl|snakemake) ", re.M)


@pytest.mark.parametrize("doc", [d for d in DOCS if BARE.search(d.read_text())], ids=lambda d: d.name)
def test_each_doc_says_how_its_commands_find_the_environment_before_the_first(doc):
    """A reader who opens a doc at its top meets the activation of the project's environment before the
    first bare `bladefl` or `snakemake` command (the tests run the commands with it active)."""
    text = doc.read_text()
    assert ACTIVATE in text[:BARE.search(text).start()], f"{doc.name}: `{ACTIVATE}` comes after its first command"


def runnable(command: str) -> bool:
    return not PLACEHOLDER.search(command) and not command.startswith(NOT_DRY)


def _subparser(parser, words: list[str]):
    """The subparser ``words`` lead to (``chain verify`` -> its parser) and the words left."""
    import argparse

    while words:
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not actions or words[0] not in actions[0].choices:
            break
        parser, words = actions[0].choices[words[0]], words[1:]
    return parser, words


@pytest.mark.parametrize("doc, command", [c for c in COMMANDS if c[1].startswith("bladefl ") and runnable(c[1])])
def test_bladefl_commands_in_the_docs_parse(doc, command, capsys):
    from bladefl.cli import build_parser

    argv = shlex.split(command)[1:]
    parser, rest = _subparser(build_parser(), argv)
    assert parser.prog != "bladefl", f"{doc}: `{command}`: no such subcommand"
    options = {o for a in parser._actions for o in a.option_strings}
    unknown = [w for w in rest if w.startswith("--") and w.split("=")[0] not in options]
    assert not unknown, f"{doc}: `{command}`: {parser.prog} has no option {unknown}"
    try:
        args = build_parser().parse_args(argv)
    except SystemExit:
        error = capsys.readouterr().err
        # a mention of a subcommand's options (`bladefl bench --grid`), not a whole command
        mention = any(m in error for m in ("arguments are required", "expected one argument",
                                           "expected at least one argument"))
        assert mention, f"{doc}: `{command}` does not parse: {error.strip().splitlines()[-1]}"
        return
    assert callable(args.func)


@pytest.mark.parametrize("doc, command", [c for c in COMMANDS if c[1].startswith("make ") and runnable(c[1])])
def test_make_commands_in_the_docs_exist(doc, command):
    argv = shlex.split(command)[1:]
    proc = subprocess.run(["make", "-n", *argv], cwd=ROOT, env=venv_env(), capture_output=True, text=True,
                          timeout=HANG_S)
    assert proc.returncode == 0, f"{doc}: `{command}`: {proc.stderr[-1000:]}"


SNAKEMAKE = sorted({c.removeprefix(".venv/bin/") for _, c in COMMANDS
                    if c.startswith(("snakemake ", ".venv/bin/snakemake ")) and runnable(c)})


@pytest.mark.snakemake
@pytest.mark.parametrize("command", SNAKEMAKE)
def test_snakemake_commands_in_the_docs_dry_run(command, tmp_path_factory):
    proc = dry_run_once(tmp_path_factory, *shlex.split(command)[1:])
    assert proc.returncode == 0, f"`{command}`: {(proc.stdout + proc.stderr)[-2000:]}"


def test_templates_are_few_and_each_has_a_concrete_twin():
    """A template (placeholders) is fine where the docs also give a concrete command of the same
    tool and subcommand, which the tests above run."""
    concrete = {tuple(c.split()[:2]) for _, c in COMMANDS if runnable(c)}
    lonely = [c for _, c in COMMANDS if not runnable(c) and not c.startswith(NOT_DRY)
              and tuple(c.split()[:2]) not in concrete]
    assert not lonely, lonely


# Doc commands that are whole and cheap once the smoke has run, executed as written in a copy of it
# (with the environment active, as the docs say): the others are parsed, planned or dry-run above.
SMOKE_RUN = ("results/smoke/runs/authors-code/mnist/alpha~1_beta~10_N~4_eta~0.05_lazy~0_sigma2~0_eps~inf/"
             "seed~0")
AFTER_THE_SMOKE = {
    ("bladefl resources --benchmarks benchmarks/smoke --measured config/smoke.yaml --for config/paper.yaml "
     "--out profiles/measured"): "profiles/measured/config.yaml",
    ".venv/bin/snakemake --unlock": None,
    "bladefl conventions " + SMOKE_RUN: None,  # the smoke's runs record every convention's curve
    ("bladefl conventions --summary results/smoke/summary/mnist.csv --dataset mnist --csv "
     "results/smoke/conventions_mnist.csv"): "results/smoke/conventions_mnist.csv",
    # the README's re-verify example: the smoke writes the run and (default target) the anchor
    ("bladefl chain verify " + SMOKE_RUN + "/chains/K2.json --summary " + SMOKE_RUN + "/summary.json "
     "--anchor results/smoke/anchors/mnist.json"): None,
}


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(AFTER_THE_SMOKE))
def test_cheap_doc_commands_run_as_written_after_the_smoke(command, smoke, tmp_path):
    import shutil
    import sys

    assert command in dict(COMMANDS_BY_TEXT), f"`{command}` is no longer in the docs"
    work = tmp_path / "work"
    shutil.copytree(smoke, work, symlinks=True)
    (work / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)  # the checkout's environment
    if command.endswith("--unlock"):  # the lock a killed Snakemake leaves behind
        (work / ".snakemake/locks").mkdir(parents=True, exist_ok=True)
        (work / ".snakemake/locks/0.output.lock").write_text(str(work / "results/smoke/summary/mnist.csv") + "\n")
    proc = subprocess.run(command, shell=True, cwd=work, env=venv_env(), capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 0, f"`{command}`: {(proc.stdout + proc.stderr)[-2000:]}"
    made = AFTER_THE_SMOKE[command]
    assert made is None or (work / made).is_file(), made
    if command.endswith("--unlock"):
        locks = work / ".snakemake/locks"
        assert not locks.exists() or not list(locks.iterdir())
