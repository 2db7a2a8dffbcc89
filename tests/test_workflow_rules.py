"""Every rule of the workflow declares a log and a benchmark, and a rule that runs Python (``run:``)
writes the log it declares; the analyses read the sweep members from a file, not the shell line; the rule
graph in the docs is the workflow's."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from conftest import HANG_S, venv_env

RULES = Path(__file__).resolve().parents[1] / "workflow" / "rules"


def rule_blocks() -> dict[str, str]:
    """Each rule's text, by name (``rule:`` with a ``name:`` directive is named by it; ``use rule A as
    B with:`` by B, its own directives)."""
    blocks: dict[str, str] = {}
    for path in sorted(RULES.glob("*.smk")):
        text = path.read_text()
        starts = [m for m in re.finditer(r"^(\s*)(?:use )?rule(?: (\w+))?(?: as (\w+) with)?:\s*$", text, re.M)]
        for m, nxt in zip(starts, [*starts[1:], None][: len(starts)], strict=True):
            body = text[m.end(): nxt.start() if nxt else len(text)]
            name = m.group(3) or m.group(2) or re.search(r"name:\s*\n\s*(.+)", body).group(1).strip()
            name = re.sub(r'^f?"(.*)"$', r"\1", name)  # a rule named in a loop: its f-string's text
            blocks[f"{path.name}:{name}"] = body
    return blocks


def test_every_rule_declares_a_log_and_a_benchmark():
    blocks = rule_blocks()
    assert len(blocks) >= 20
    missing = [name for name, body in blocks.items() if not ("log:" in body and "benchmark:" in body)]
    assert missing == []


def test_each_rules_benchmark_files_lie_under_its_name():
    """benchmarks/<rule>/... (or benchmarks/<rule>.tsv): what `bladefl resources` reads each job's
    measured wall and memory by."""
    wrong = []
    for key, body in rule_blocks().items():
        name = key.split(":")[1]
        bench = body.split("benchmark:", 1)[1].split(":", 1)[0] if "benchmark:" in body else ""
        if f"{{BENCHMARKS}}/{name}/" not in bench and f"{{BENCHMARKS}}/{name}.tsv" not in bench:
            wrong.append(key)
    assert wrong == []


def test_a_rule_running_python_writes_its_log():
    for name, body in rule_blocks().items():
        if re.search(r"^\s*run:", body, re.M):
            call = body.split("run:", 1)[1]
            assert "log[0]" in call, f"{name} declares a log its run: block never writes"


def test_members_reach_the_analyses_as_a_file():
    text = "".join(p.read_text() for p in RULES.glob("*.smk"))
    # 4: the sensitivity readings reuse summarize and verdicts (`use rule ... with:`)
    assert "--members {params.members" not in text and text.count("--members @{input.members:q}") == 4


# Values a shell command may hold unquoted: numbers by construction (threads, the gpu resource) and the
# fetch sources, a resource (so that changing them replans nothing) whose schema allows source names only.
UNQUOTED = {"threads", "resources.gpu", "resources.fetch_sources"}


def shell_commands() -> dict[str, str]:
    """Each rule's shell command as written (its string literals joined), by rule."""
    out = {}
    for name, body in rule_blocks().items():
        m = re.search(r"^\s*shell:\s*\n((?:\s*f?\"[^\n]*\"\s*\n)+)", body, re.M)
        if m:
            out[name] = "".join(re.findall(r"\"((?:[^\"\\]|\\.)*)\"", m.group(1)))
    return out


def test_every_value_in_a_rules_shell_command_is_quoted():
    """A config- or wildcard-derived value reaches the shell quoted (Snakemake's :q; a list quoted
    element by element), so a path with a space, a quote, `$( )` or `;` is one argument, never code."""
    commands = shell_commands()
    assert len(commands) >= 20 and "grid.smk:run_cell" in commands
    unquoted = {name: bad for name, text in commands.items()
                if (bad := [p for p in re.findall(r"(?<!\{)\{([^{}]+)\}(?!\})", text)
                            if not p.endswith(":q") and p not in UNQUOTED])}
    assert unquoted == {}


def test_the_fetch_sources_left_unquoted_are_names_only():
    import yaml

    schema = yaml.safe_load((RULES.parent / "schemas/config.schema.yaml").read_text())
    items = schema["properties"]["fetch_sources"]["items"]
    assert set(items["enum"]) <= {"existing", "torchvision", "registry"}


@pytest.mark.snakemake
def test_the_rule_graph_in_the_docs_draws_every_rule_of_the_default_workflow():
    """docs/images/rulegraph.svg (`make rulegraph`) names the rules `snakemake --rulegraph` gives today."""
    root = Path(__file__).resolve().parents[1]
    graph = subprocess.run(["snakemake", "--rulegraph", "--cores", "1"], cwd=root, env=venv_env(),
                           capture_output=True, text=True, timeout=HANG_S, check=True).stdout
    rules = set(re.findall(r'label = "(\w+)"', graph))
    drawn = set(re.findall(r"<text[^>]*>(\w+)</text>", (root / "docs/images/rulegraph.svg").read_text()))
    assert rules and rules == drawn, (rules ^ drawn)


def test_the_workflow_has_the_catalogs_layout():
    """The Snakemake catalog reads `workflow/Snakefile` whenever a `workflow/` folder exists (and skips a
    repository without one); `snakemake` at the root finds it there as well, so there is no root Snakefile
    (a root one that includes it would be read first, and its default target would be the wrong one)."""
    root = RULES.parents[1]
    text = (root / "workflow/Snakefile").read_text()
    assert not (root / "Snakefile").exists() and not (root / "snakefile").exists()
    included = re.findall(r'^include: "([^"]+)"', text, re.M)
    assert sorted(included) == sorted(f"rules/{p.name}" for p in RULES.glob("*.smk"))
    assert "default_target: True" in text and 'configfile: "config/config.yaml"' in text
