"""What a user meets first at the command line: one version everywhere (the package, pyproject.toml,
CITATION.cff, ``bladefl --version``), ``--help`` that puts the commands a user types apart from the
workflow's own steps, and Ctrl-C ending a command with one line, not a traceback."""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

import pytest
import yaml

import bladefl
from bladefl import cli

ROOT = Path(__file__).resolve().parents[1]


def test_one_version_in_the_package_pyproject_citation_and_the_cli(capsys):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    citation = str(yaml.safe_load((ROOT / "CITATION.cff").read_text())["version"])
    assert bladefl.__version__ == project == citation
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0
    out = capsys.readouterr().out.strip()
    assert re.fullmatch(rf"bladefl {re.escape(project)}( \(code {re.escape(project)}\+[0-9a-z.+-]+\))?", out), out
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[{re.escape(project)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.M), "no release section"
    assert changelog.index("## [Unreleased]") < changelog.index(f"## [{project}]")
    from bladefl.report.front_page import footer

    assert f"bladefl {project}" in footer()


def test_help_lists_every_command_once_users_first_then_the_workflows_steps(capsys):
    names = [name for name, *_ in cli.commands()]
    assert set(cli.USER_COMMANDS) <= set(names)  # no user command named that does not exist
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    users, steps = out.split("the workflow's own steps")
    for name in names:
        listed = re.compile(rf"^  {re.escape(name)}\s", re.M)
        assert len(listed.findall(out)) == 1, name
        assert bool(listed.search(users)) == (name in cli.USER_COMMANDS), name
    assert "{" not in out.split("\n")[0]  # the usage line names COMMAND, not 31 choices


def test_ctrl_c_during_a_command_ends_with_one_line_and_status_130(monkeypatch, capsys):
    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    parser.set_defaults(func=interrupted)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            action.choices["fetch"].set_defaults(func=interrupted)
    assert cli.main(["fetch", "--dataset", "mnist"]) == 130
    err = capsys.readouterr().err
    assert err == "bladefl fetch: interrupted\n"
