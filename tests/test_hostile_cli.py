"""Every command guarded by construction (issue "Every command guarded by construction"): the suite walks
the CLI's parser, finds every subcommand (and `chain`'s) and every argument, and feeds each argument that
names a file or folder, a number or a name the same hostile corpus: FIFOs and devices, a file over any
size bound, deep and aliased YAML, a key given twice, NaN, infinities, 1e308, negative and huge numbers,
wrong types, path traversal and links, names with newlines, U+2028, quotes, `$( )` and `;`, HTML and
script text. Each answer is an exit the command documents (2: bad input, one line naming it; 1 and 3
where a verifier's verdict means it), never a traceback, never a hang, nothing executed, nothing written
outside the command's own outputs, nothing half-written.

A command or argument added without an entry in :data:`TABLE` (how its inputs are read) fails the suite
until someone states it."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import signal
from pathlib import Path

import pytest

from bladefl.cli import build_parser, main

REPO = Path(__file__).resolve().parents[1]

# How an argument is read. IN: a file (or files) read; DIR: a folder read; OUT: a file or folder written;
# LINK: a path written into a page as a link, never opened (it may not exist yet); NUM: a number; NAME: a
# word of a closed set or a name; TEXT: free text that lands in an output; FLAG: a switch (nothing to feed);
# SKIP: not fed here, with the reason.
IN, DIR, OUT, LINK, NUM, NAME, TEXT, FLAG = "in", "dir", "out", "link", "num", "name", "text", "flag"

PWNED = "PWNED"
CORPUS_IN = ["{fifo}", "/dev/zero", "{w}", "{w}/missing", "{big}", "{deep}", "{aliases}", "{twice}", "{nan}",
             "{html}", "{w}/a\nb", "{w}/a\u2028b", f"$(touch {{w}}/{PWNED})", f"x;touch {{w}}/{PWNED};",
             "{w}/q'\"q", "../../../../../../etc/passwd", "{link}"]
CORPUS_DIR = ["{fifo}", "/dev/zero", "{w}/missing", "{big}", "{w}/a\nb", f"$(touch {{w}}/{PWNED})", "{link}",
              "../../../../../../etc"]

# Per command: the base arguments (placeholders {w}: the sandbox; {engine}: the tiny engine config) that a
# hostile value replaces one at a time, the exits it documents, and each argument's kind. A command that
# trains or measures (heavy) lists what it feeds and says where the rest is covered.
TABLE: dict[str, dict] = {
    "fetch": {"base": ["--dataset", "mnist", "--root", "{data}", "--sources", "existing"], "exits": {1},
              "args": {"--dataset": NAME, "--root": OUT, "--sources": NAME}},
    "partition": {"base": ["--dataset", "mnist", "--key", "shards2_N4_n8_seed0", "--root", "{data}", "--out",
                           "{w}/part.npy"],
                  "args": {"--dataset": NAME, "--key": NAME, "--root": DIR, "--out": OUT}},
    # --computed-in: where the run's group computed it, read only when the group's mark says it computed its runs;
    # the workflow passes it to every run job (one command under both groupings), so a folder that is not there
    # (or any other) is the ordinary case of a run that trains itself: accepted
    "run": {"base": ["--config", "{engine}", "--out", "{w}/run", "--quiet", "--set", "data_dir={data}"],
            "accepts": {"--computed-in": tuple(CORPUS_DIR)},
            "args": {"--config": IN, "--set": TEXT, "--out": OUT, "--quiet": FLAG, "--partition": IN,
                     "--threads": NUM, "--reference": IN, "--group": IN, "--computed-in": DIR}},
    # checks the plan, trains nothing: with --compute 0 (grouping: cell) the group reads none of the inputs the
    # workflow gives it alike under both groupings, its runs' own jobs read them (and refuse these)
    "run-group": {"base": ["--config", "{engine}", "--plan", "@{v}/plan.json", "--partition", "{v}/p.npy", "--compute",
                           "0", "--done", "{w}/g.done"],
                  "accepts": {"--partition": tuple(CORPUS_IN), "--reference": tuple(CORPUS_IN)},
                  "args": {"--config": IN, "--set": TEXT, "--plan": IN, "--partition": IN, "--reference": IN,
                           "--threads": NUM, "--chain-processes": NUM, "--max-rows": NUM, "--quiet": FLAG,
                           "--done": OUT, "--compute": NUM}},
    "reference": {"base": ["--config", "{engine}", "--partition", "{v}/p.npy", "--out", "{w}/ref.npz", "--max-epochs",
                           "2", "--set", "data_dir={data}"], "twins": [".json"],
                  "args": {"--config": IN, "--set": TEXT, "--partition": IN, "--out": OUT, "--eta": NUM,
                           "--max-epochs": NUM}},
    "bound": {"base": ["--runs", "{measured}/summary.json", "--members", "@{v}/run_members.json", "--references",
                       "{reference}", "--out-dir", "{w}/b"],
              "args": {"--runs": IN, "--members": IN, "--references": IN, "--out-dir": OUT}},
    "detection": {"base": ["--runs", "{lazy}/summary.json", "--members", "@{v}/lazy_members.json", "--out-dir",
                           "{w}/d"],
                  "args": {"--runs": IN, "--members": IN, "--exclude-sweeps": NAME, "--out-dir": OUT}},
    "summarize": {"base": ["--runs", "{run}/summary.json", "--members", "@{v}/run_members.json", "--table",
                           "{w}/t.csv", "--optimum", "{w}/o.csv"],
                  "args": {"--runs": IN, "--members": IN, "--table": OUT, "--optimum": OUT}},
    "sensitivity": {"base": ["--dataset", "mnist", "--readings", "stated", "--axes", "baseline", "--summaries",
                             "{v}/mnist.csv", "--optima", "{v}/mnist_optimum.csv", "--verdicts",
                             "{v}/bundle/results/verdicts/mnist.csv", "--paper-values",
                             "{repo}/config/paper_values.yaml", "--t-sum", "100", "--sweeps", "alpha", "--out-dir",
                             "{w}/sens"],
                    "args": {"--dataset": NAME, "--readings": NAME, "--axes": NAME, "--summaries": IN, "--optima": IN,
                             "--verdicts": IN, "--paper-values": IN, "--t-sum": NUM, "--sweeps": NAME,
                             "--out-dir": OUT}},
    "sensitivity-index": {"base": ["--rankings", "{v}/ranking.csv", "--pages", "{v}/p.html", "--out", "{w}/i.html"],
                          "args": {"--rankings": IN, "--pages": LINK, "--out": OUT}},
    "calibration-index": {"base": ["--outcomes", "{repo}/reference/calibration-cpu/results/calibration/mnist/"
                                   "outcome.json", "--pages", "{v}/p.html", "--out", "{w}/i.html"],
                          "args": {"--outcomes": IN, "--pages": LINK, "--out": OUT}},
    # a kept bundle's tables, its summary and comparison cut to one sweep (one panel: the figure in a second)
    "report-index": {"base": ["--verdicts", "{v}/bundle/results/verdicts/mnist.csv", "--provenance",
                              "{v}/bundle/results/provenance/mnist.csv", "--pages", "{v}/p.html", "--summaries",
                              "{v}/ri/mnist.csv", "--comparisons", "{v}/ri/mnist_paper_comparison.csv", "--configfiles",
                              "{v}/bundle/config.yaml", "--seeds", "0", "1", "--figures", "{w}/fig", "--calibration",
                              "{repo}/reference/calibration-cpu/results/calibration/mnist/outcome.json",
                              "--calibration-page", "{v}/p.html", "--engine", "paper", "--paper-values",
                              "{repo}/config/paper_values.yaml", "--out", "{w}/index.html"],
                     "args": {"--verdicts": IN, "--provenance": IN, "--pages": LINK, "--summaries": IN,
                              "--comparisons": IN, "--configfiles": IN, "--seeds": NUM, "--figures": OUT,
                              "--calibration": IN, "--calibration-page": LINK, "--engine": NAME, "--out": OUT,
                              "--paper-values": IN, "--beside": DIR}},
    "verdicts": {"base": ["--dataset", "mnist", "--summary", "{v}/mnist.csv", "--members", "@{v}/members.json",
                          "--t-sum", "100", "--out", "{w}/v.csv"],
                 "args": {"--dataset": NAME, "--summary": IN, "--members": IN, "--t-sum": NUM, "--engine": IN,
                          "--bound-sweep": NAME, "--gaps": IN, "--constants": IN, "--margins": TEXT,
                          "--resamples": NUM, "--bound-resamples": NUM, "--statements": IN, "--paper-values": IN,
                          "--out": OUT}},
    "findings": {"base": ["{repo}/reference/default-2seeds", "--out", "{w}/findings.md"],
                 "args": {"bundles": DIR, "--out": OUT, "--calibration": DIR}},
    # a registry of one kept bundle (rejudge's, below) in a folder of its own: rejudged, then both pages written
    "regenerate": {"base": [], "cwd": "{v}/regen", "args": {"--no-rejudge": FLAG}},
    "ro-crate": {"base": ["{v}/bundle"], "args": {"bundle": DIR}},
    "summary": {"base": ["{repo}/reference/default-2seeds", "--out", "{w}/summary.md"],
                "args": {"bundles": DIR, "--out": OUT, "--calibration": DIR}},
    "diff": {"base": ["{repo}/reference/default-2seeds", "{repo}/reference/default-2seeds", "--out", "{w}/d.md"],
             "args": {"a": DIR, "b": DIR, "--out": OUT, "--csv-dir": OUT}},
    "conventions": {"base": ["--summary", "{v}/mnist.csv", "--dataset", "mnist", "--paper-values",
                             "{repo}/config/paper_values.yaml", "--csv", "{w}/c.csv"],
                    "args": {"runs": DIR, "--summary": IN, "--dataset": NAME, "--paper-values": IN, "--csv": OUT,
                             "--bundle": DIR, "--k-star-from": NAME, "--accuracy-on": NAME, "--statements": IN}},
    "paper-comparison": {"base": ["--dataset", "mnist", "--summary", "{v}/mnist.csv", "--optimum",
                                  "{v}/mnist_optimum.csv",
                                  "--paper-values", "{repo}/config/paper_values.yaml", "--t-sum", "100", "--out",
                                  "{w}/c.csv"], "twins": [".md"],
                         "args": {"--dataset": NAME, "--summary": IN, "--optimum": IN, "--paper-values": IN,
                                  "--t-sum": NUM, "--out": OUT}},
    "provenance": {"base": ["--runs", "{run}/summary.json", "--out", "{w}/prov.csv"],
                   "args": {"--runs": IN, "--out": OUT}},
    "render-page": {"base": ["{v}/nb.ipynb", "--out", "{w}/page.html", "--index", "{v}/p.html"],
                    "args": {"notebook": IN, "--out": OUT, "--index": LINK}},
    # a page of three cells whose parameters name a path in the results folder and one in the data folder
    "run-page": {"base": ["{v}/rp/nb.ipynb", "--parameters", "{v}/rp/p.yaml", "--executed", "{w}/e.ipynb", "--out",
                          "{w}/page.html", "--index", "{w}/index.html", "--results-dir", "{v}/rp/results",
                          "--data-dir", "{v}/rp/data"],
                 "args": {"notebook": IN, "--parameters": IN, "--executed": OUT, "--out": OUT, "--index": LINK,
                          "--results-dir": DIR, "--data-dir": DIR}},
    # --data-dir: the folder a kept file's name is taken under; a folder that holds none of --files (/etc here) names
    # none of them, and a file under neither folder is refused by its own name
    "keep": {"base": ["--files", "{v}/bundle/results/summary/mnist.csv", "--provenance",
                      "{v}/bundle/results/provenance/mnist.csv", "--results-dir", "{v}/bundle/results", "--data-dir",
                      "{v}/bundle/data", "--config-file", "{v}/bundle/config.yaml", "--out", "{w}/kept"],
             "accepts": {"--data-dir": ("../../../../../../etc",), "--results-dir": ("../../../../../../etc",)},
             "args": {"--files": IN, "--provenance": IN, "--imported": IN, "--results-dir": DIR, "--data-dir": DIR,
                      "--config-file": IN, "--out": OUT, "--with-archive": FLAG}},
    "import-runs": {"base": ["--archive", "{v}/a.tar.gz", "--configfile", "{repo}/config/config.yaml",
                             "{repo}/config/smoke.yaml", "--results-dir", "{w}/imported"],
                    "exits": {1, 2}, "cwd": "{w}",  # the smoke grid's runs, as the GPU script packs
                    "args": {"--archive": IN, "--configfile": IN, "--seeds": NUM, "--results-dir": OUT,
                             "--replace": FLAG, "--key-secret": IN}},
    # the smoke grid's optima (synthetic) and its partitions' manifests under {v}/opt, its data_dir from the cwd
    "pack-optima": {"base": ["--configfile", "{repo}/config/config.yaml", "{repo}/config/smoke.yaml", "--results-dir",
                             "{v}/opt/results", "--out", "{w}/optima.tar.xz"], "exits": {1, 2}, "cwd": "{v}/opt",
                    "args": {"--configfile": IN, "--seeds": NUM, "--results-dir": DIR, "--out": OUT}},
    "import-optima": {"base": ["--archive", "{v}/optima.tar.xz", "--configfile", "{repo}/config/config.yaml",
                               "{repo}/config/smoke.yaml", "--results-dir", "{w}/installed"],
                      "exits": {1, 2}, "cwd": "{v}/opt",
                      "args": {"--archive": IN, "--configfile": IN, "--seeds": NUM, "--results-dir": OUT,
                               "--replace": FLAG}},
    "lay-out": {"base": ["{repo}/reference/default-2seeds", "--results-dir", "{w}/laid", "--data-dir", "{w}/laid/d"],
                "exits": {1},  # 1: the bundle is not what its manifest says (nothing laid out)
                "args": {"bundle": DIR, "--results-dir": OUT, "--data-dir": OUT}},
    # a bundle of one dataset with no measured constants, kept from a kept bundle's tables: a second a call
    "rejudge": {"base": ["{v}/rj", "--statements", "{repo}/config/paper_statements.yaml", "--paper-values",
                         "{repo}/config/paper_values.yaml"],
                "args": {"bundle": DIR, "--statements": IN, "--paper-values": IN, "--check": FLAG}},
    "chain verify": {"base": ["{run}/chains/K1.json", "--summary", "{run}/summary.json", "--anchor",
                              "{v}/anchor.json"], "exits": {1, 2, 3},
                     "args": {"path": IN, "--store": DIR, "--summary": IN, "--key-secret": IN, "--anchor": IN}},
    "chain anchor": {"base": ["--summary", "{run}/summary.json", "--out", "{w}/anchor.json"],
                     "args": {"--summary": IN, "--out": OUT}},
    "device-check": {"base": ["--tables", "{v}/mnist.csv", "{v}/mnist.csv", "--out", "{w}/dc.csv"],
                     "args": {"--device": NAME, "--out": OUT, "--tables": IN}},  # the mixed group: its own tests
    # the smoke grid's draws alone (a second): every input is checked before anything is measured, so each
    # hostile value is refused by its own check whatever the measurement
    "bench": {"base": ["--draws", "{repo}/config/smoke.yaml"], "cwd": "{w}",
              "args": {"--config": IN, "--data-dir": "skip: read by the measurements that train (minutes); the "
                                                     "bench's own tests",
                       "--quick": FLAG, "--device": NAME, "--seeds": NUM, "--grid": IN, "--grid-seeds": TEXT,
                       "--grid-only": FLAG, "--out": "skip: written by --grid, --bookkeeping and --peer only (minutes)",
                       "--host-copy-compare": FLAG, "--bookkeeping": IN, "--cores": NUM, "--chain-drag": FLAG,
                       "--draws": IN, "--threads": NUM, "--peer": NAME, "--peer-rounds": NUM,
                       "--fixed-work": FLAG, "--workflow": IN, "--grouping": NAME, "--baseline-cpu": NUM}},
    "resources": {"base": ["--benchmarks", "{v}/benchmarks", "--out", "{w}/profile"],
                  "args": {"--benchmarks": DIR, "--out": OUT, "--margin": NUM, "--measured": IN, "--for": IN}},
    # the smoke calibration study ({study}: a copy of conftest's, run through the workflow once for the test run)
    "calibrate": {"base": ["--spec", "{study}/spec.json", "--storage", "{study}/study.journal", "--trials-dir",
                           "{study}/trials"], "cwd": "{w}",  # its rule has stopped it: no trial
                  "args": {"--spec": IN, "--storage": "skip: another journal is another study, which trains its "
                                                      "trials (tests/test_calibration.py)",
                           "--trials-dir": OUT, "--worker": NAME, "--threads": NUM, "--done": OUT}},
    "calibration-pick": {"base": ["--spec", "{v}/cal/spec.json", "--storage", "{v}/cal/study.journal", "--out",
                                  "{w}/picked.json"],
                         "cwd": "{w}",  # the kept spec names its engine by a path from the study's folder
                         "args": {"--spec": IN, "--storage": IN, "--out": OUT}},
    "calibration-rerun": {"base": ["--spec", "{study}/spec.json", "--picked", "{study}/picked.json", "--role",
                                   "stated", "--out-dir", "{w}/rerun", "--trials-dir", "{study}/trials"],
                          "cwd": "{w}",  # the search's runs taken: nothing trained
                          "args": {"--spec": IN, "--picked": IN, "--role": NAME, "--out-dir": OUT,
                                   "--trials-dir": "skip: without the search's runs the reading's rows are trained "
                                                   "(tests/test_calibration.py)", "--threads": NUM}},
    "calibration-tables": {"base": ["--spec", "{study}/spec.json", "--storage", "{study}/study.journal", "--picked",
                                    "{study}/picked.json", "--roots", "stated={study}/rerun/stated",
                                    "best1={study}/rerun/best1", "--trials-dir", "{study}/trials", "--out-dir",
                                    "{w}/tables"], "cwd": "{w}",
                           "args": {"--spec": IN, "--storage": IN, "--picked": IN, "--roots": TEXT,
                                    "--trials-dir": DIR, "--out-dir": OUT}},
    "calibration-conventions": {"base": ["--spec", "{study}/spec.json", "--roots", "stated={study}/rerun/stated",
                                         "best1={study}/rerun/best1", "--out", "{w}/c.csv"],
                                "cwd": "{w}", "args": {"--spec": IN, "--roots": TEXT, "--out": OUT}},
}

# The corpus, by kind ({w}: the sandbox). Shell text would create {w}/PWNED if anything ran it.
CORPUS = {
    IN: CORPUS_IN,
    DIR: CORPUS_DIR,
    OUT: ["{fifo}", "{big}/under-a-file", "{w}/o\nb", "{w}/o\u2028b", f"{{w}}/$(touch {{w}}/{PWNED})",
          f"{{w}}/o;touch {{w}}/{PWNED};", "{w}/q'\"q", ""],
    # a link is never opened: what could break out of the page's HTML, or run
    LINK: ["{fifo}", "{w}/q'\"q", "<script>alert(1)</script>", "{w}/javascript:alert(1)", "{w}/a\nb",
           "{w}/a\u2028b", f"$(touch {{w}}/{PWNED})"],  # {w}: where the pages are written, so a link is relative
    NUM: ["nan", "inf", "-inf", "1e308", "-5", "9" * 40, "x", "0x10"],
    NAME: ["", "a\nb", "\u2028", f"$(touch {{w}}/{PWNED})", "<script>alert(1)</script>", "../x", "x" * 5000],
    TEXT: ["a\nb", "\u2028", f"$(touch {{w}}/{PWNED})", "<script>alert(1)</script>", "x" * 5000, "=", "k=[[[[[["],
}


# The kinds whose every corpus value is wrong for its argument, so a valid base must refuse each (exit 0 is a
# silent acceptance); a TABLE entry's "accepts" names a value an argument may take (and why, beside it).
MUST_REFUSE = (IN, DIR, NUM, NAME)
SHARED = ("{w}/q'\"q",)  # an IN value that is also an OUT value: another command's case may have written it
NEVER_VALID = {OUT: ("",)}  # of the other kinds, the values no argument may take (an empty path names the cwd)


def discovered() -> dict[str, list[str]]:
    """Every subcommand (``chain``'s by ``chain <name>``) and its arguments, from the parser itself."""
    def args_of(parser: argparse.ArgumentParser) -> list[str]:
        return [a.option_strings[0] if a.option_strings else a.dest for a in parser._actions
                if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))]

    out: dict[str, list[str]] = {}
    top = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in top.choices.items():
        nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if nested:
            for sub, subparser in nested[0].choices.items():
                out[f"{name} {sub}"] = args_of(subparser)
        else:
            out[name] = args_of(parser)
    return out


def test_every_command_and_argument_says_how_its_input_is_read():
    """A command, or an argument, added without an entry here fails until its reading is stated."""
    found = discovered()
    assert sorted(found) == sorted(TABLE), (sorted(set(found) - set(TABLE)), sorted(set(TABLE) - set(found)))
    for name, args in found.items():
        assert sorted(args) == sorted(TABLE[name]["args"]), (name, sorted(set(args) ^ set(TABLE[name]["args"])))
        for arg, kind in TABLE[name]["args"].items():
            assert kind in CORPUS or kind == FLAG or kind.startswith("skip: "), (name, arg, kind)


def test_every_base_is_a_valid_call_that_succeeds_on_its_own(world, tmp_path, monkeypatch, request):
    """A hostile value replaces one argument of a base call that succeeds on its own, so each refusal is the
    value's, never the base's: checked first, for every subcommand."""
    monkeypatch.chdir(tmp_path)
    world = _with_study(world, request)
    for name, spec in sorted(TABLE.items()):
        os.chdir(_fill(spec.get("cwd", str(tmp_path)), world))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*name.split(), *(_fill(a, world) for a in spec["base"])])
        assert code == 0, (name, err.getvalue()[-500:])


@pytest.fixture(scope="module")
def world(tmp_path_factory, data_root) -> dict[str, str]:
    """The sandbox's hostile files, a tiny engine config, and the valid inputs of the bases that succeed:
    a kept bundle's tables, and a tiny run (N = 2, 8 samples each, K = 1: seconds) in a run folder with
    its anchor."""
    w = tmp_path_factory.mktemp("hostile")
    os.mkfifo(w / "fifo")
    with open(w / "big", "wb") as f:
        f.truncate(300 << 20)  # sparse: 300 MB by its size, nothing on disk
    (w / "deep.yaml").write_text("a: " + "[" * 100_000)
    (w / "aliases.yaml").write_text("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)))
    (w / "twice.json").write_text('{"a": 1, "a": 2}')
    (w / "nan.json").write_text('{"a": NaN, "b": 1e999, "c": -1e308, "d": 99999999999999999999999999999999}')
    (w / "html.csv").write_text("claim,verdict\n<script>alert(1)</script>,javascript:alert(1)\n")
    (w / "link").symlink_to("/etc/passwd")
    engine = w / "engine.yaml"
    engine.write_text((REPO / "config/engines/authors-code.yaml").read_text().replace(
        "N: 20, n: 512", "N: 2, n: 8").replace("K: [1, 2, 3, 4, 5, 6, 7, 8, 9]", "K: [1]"))
    v = w / "valid"  # real tables of a kept bundle, for the bases that succeed on their own
    v.mkdir()
    bundle = REPO / "reference/default-2seeds"
    for name in ("mnist.csv", "mnist_optimum.csv"):
        (v / name).write_bytes((bundle / "results/summary" / name).read_bytes())
    from bladefl.experiments.plan import config_files, workflow_config

    (v / "members.json").write_text(workflow_config.members_json(
        config_files.read_configs([bundle / "config.yaml"], default=None)))
    import shutil

    shutil.copytree(bundle, v / "bundle")
    for path in (v / "bundle").rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    from bladefl.experiments.plan.grid import Cell, Member, members_to_json

    cell = Cell(alpha=1, beta=10, N=2, eta=0.01)  # the tiny engine's own settings
    run = w / "runs/mnist" / cell.key / "seed~0"
    assert main(["run", "--config", str(engine), "--out", str(run), "--quiet", "--set", f"data_dir={data_root}"]) == 0
    (v / "run_members.json").write_text(members_to_json([Member("base", "", None, None, cell)]))
    assert main(["chain", "anchor", "--summary", str(run / "summary.json"), "--out", str(v / "anchor.json")]) == 0
    lazy_cell = Cell(alpha=1, beta=10, N=2, eta=0.01, lazy_ratio=0.5, sigma2=0.01)  # one lazy client, detected
    lazy = w / "runs/mnist" / lazy_cell.key / "seed~0"
    assert main(["run", "--config", str(engine), "--out", str(lazy), "--quiet", "--set", f"data_dir={data_root}",
                 "--set", "lazy.ratio=0.5", "--set", "lazy.sigma2=0.01", "--set",
                 "lazy.detectors=[gaussian_difference]"]) == 0
    (v / "lazy_members.json").write_text(members_to_json([Member("lazy_ratio", "", "lazy_ratio", 0.5, lazy_cell)]))
    (v / "p.html").write_text("<html><body><h1>a page</h1></body></html>")
    _group_and_bound_inputs(v, run, engine, data_root)
    _report_page_and_bundle_inputs(v, bundle)
    measured = w / "runs-measured/mnist" / cell.key / "seed~0"  # a run that measured the bound's constants
    from bladefl.fl.run_config import load_config

    reference = v / f"{load_config(str(engine), []).partition.key}.npz"  # named for the draw, as the bound reads it
    assert main(["reference", "--config", str(engine), "--partition", str(v / "p.npy"), "--out", str(reference),
                 "--max-epochs", "2", "--set", f"data_dir={data_root}"]) == 0
    assert main(["run", "--config", str(engine), "--out", str(measured), "--quiet", "--set", f"data_dir={data_root}",
                 "--set", "measure.constants=true", "--reference", str(reference)]) == 0
    import nbformat

    page = nbformat.v4.new_notebook()  # an executed page: a markdown cell and a code cell with its output
    page.cells = [nbformat.v4.new_markdown_cell("# A page"), nbformat.v4.new_code_cell(
        "print(1)", execution_count=1, outputs=[nbformat.v4.new_output("stream", name="stdout", text="1\n")])]
    nbformat.write(page, v / "nb.ipynb")
    kept = REPO / "reference/calibration-cpu/results/calibration/mnist"  # the kept study, copied: a lock or a
    (v / "cal").mkdir()  # stray write lands in the sandbox, never in the repository
    for name in ("spec.json", "study.journal"):
        (v / "cal" / name).write_bytes((kept / name).read_bytes())
    (w / "config/engines").mkdir(parents=True)  # a config names its engine and default config from its folder
    for name in ("config.yaml", *(f"engines/{p.name}" for p in (REPO / "config/engines").glob("*.yaml"))):
        (w / "config" / name).write_bytes((REPO / "config" / name).read_bytes())
    bench = v / "benchmarks/run_cell/paper/mnist" / cell.key / "seed~0.tsv"  # one job's Snakemake benchmark file
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
                     "12.5\t0:00:12\t900.0\t1\t1\t1\t0\t0\t50\t1\n")
    return {"v": str(v), "run": str(run), "measured": str(measured), "reference": str(reference),
            "lazy": str(lazy), "data": str(data_root), "w": str(w),
            "fifo": str(w / "fifo"), "big": str(w / "big"), "deep": str(w / "deep.yaml"),
            "aliases": str(w / "aliases.yaml"), "twice": str(w / "twice.json"), "nan": str(w / "nan.json"),
            "html": str(w / "html.csv"), "link": str(w / "link"), "engine": str(engine), "repo": str(REPO)}


def _with_study(world: dict[str, str], request: pytest.FixtureRequest) -> dict[str, str]:
    """``world`` with ``{study}``: a copy of the smoke calibration study (its spec, journal, picked points, the
    search's and the second pass's runs; ``smoke_study``, made once for the test run), each study base called
    once on it first so the locks it leaves beside the journal are there before any case looks."""
    study = Path(world["v"]) / "study"
    if not study.exists():
        import shutil

        source = request.getfixturevalue("smoke_study") / "results/calibration-smoke/calibration/mnist"
        part = study.with_name("study.part")
        shutil.rmtree(part, ignore_errors=True)
        part.mkdir()
        for name in ("spec.json", "study.journal", "picked.json"):
            shutil.copy(source / name, part / name)
        for name in ("trials", "rerun"):
            shutil.copytree(source / name, part / name, symlinks=False)
        (Path(world["w"]) / "data").mkdir(exist_ok=True)  # the spec's data folder, from the cwd {w}
        if not (Path(world["w"]) / "data/raw").exists():
            (Path(world["w"]) / "data/raw").symlink_to(world["data"], target_is_directory=True)
        part.rename(study)
        filled = {**world, "study": str(study)}
        for name in STUDY_COMMANDS:  # from {w}, the cwd their cases run in; the caller's cwd kept
            with contextlib.chdir(world["w"]), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                main([name, *(_fill(a, filled) for a in TABLE[name]["base"])])
    return {**world, "study": str(study)}


STUDY_COMMANDS = [name for name, spec in TABLE.items() if any("{study}" in a for a in spec["base"])]


def _group_and_bound_inputs(v: Path, run: Path, engine: Path, data_root: Path) -> None:
    """A group plan of one run (checked, not computed), a partition of two clients, a sensitivity ranking and
    an archive of the smoke grid's runs (tests/test_run_import.py's, made without training)."""
    import numpy as np

    np.save(v / "p.npy", np.arange(16).reshape(2, 8))
    from bladefl.experiments.bundles.run_import import read_config
    from test_run_import import archive, complete

    archive(v / "a.tar.gz", complete(read_config([REPO / "config/config.yaml", REPO / "config/smoke.yaml"])),
            about={"device": "a test", "wall_s": 1})
    _optima(v)
    (v / "plan.json").write_text(json.dumps([{"out": str(v / "g/mnist/c/seed~0"), "set": ["seed=0"]}]))
    (v / "ranking.csv").write_text(
        "reading,axis,dataset,rank,K_star_distance,K_star_distance_seeds,K_star_distance_sd,accuracy_distance,"
        "accuracy_distance_seeds,accuracy_distance_sd,max_accuracy\nstated,partition,mnist,1,2,2.5,0.5,3,3.5,1,88\n")


def _optima(v: Path) -> None:
    """The smoke grid's reference optima (zeros: checked, never trained) and its partitions' manifests under
    ``opt/`` (with the config folder a config names its engine from), packed into ``optima.tar.xz``."""
    import shutil

    import torch

    from bladefl.experiments.bundles import optima_archive
    from bladefl.experiments.bundles.run_import import read_config
    from bladefl.experiments.plan import workflow_config as wc
    from bladefl.theory import reference

    config = read_config([REPO / "config/config.yaml", REPO / "config/smoke.yaml"])
    config = {**config, "data_dir": str(v / "opt/data"), "results_dir": str(v / "opt/results")}
    shutil.copytree(REPO / "config", v / "opt/config", ignore=shutil.ignore_patterns("*.md"))
    for dataset, key in wc.reference_keys(config):
        manifest = v / "opt/data/partitions" / dataset / f"{key}.json"
        manifest.parent.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps({"indices_sha256": "0" * 64}))
        reference.save(reference.Reference(torch.zeros(wc.model_size(config, dataset)), 0.1, 1, [0.1]),
                       optima_archive.references_root(config) / dataset / f"{key}.npz",
                       {"dataset": dataset, "model": wc.engine(config, dataset).to_dict()["model"]})
    optima_archive.pack(config, v / "optima.tar.xz")


def _report_page_and_bundle_inputs(v: Path, bundle: Path) -> None:
    """report-index's summary and comparison cut to one sweep (``ri/``), run-page's notebook of three cells
    with its parameters (``rp/``), and rejudge's bundle (``rj``): a kept bundle's MNIST tables, kept again with
    its config cut to that dataset and no measured constants, rejudged once so its crate is in place."""
    import nbformat
    import pandas as pd
    import yaml

    from bladefl.experiments.bundles import kept_results as kr

    (v / "ri").mkdir()
    summary = pd.read_csv(bundle / "results/summary/mnist.csv")
    summary[summary.sweep == "alpha"].to_csv(v / "ri/mnist.csv", index=False)
    comparison = pd.read_csv(bundle / "results/tables/mnist_paper_comparison.csv")
    comparison[comparison.table == "Table II"].to_csv(v / "ri/mnist_paper_comparison.csv", index=False)
    rp = v / "rp"
    for folder in ("results", "data"):
        (rp / folder).mkdir(parents=True)
    page = nbformat.v4.new_notebook()
    parameters = nbformat.v4.new_code_cell('dataset = "mnist"\nsummary = "results/s.csv"\npartition = "data/p.json"')
    parameters.metadata["tags"] = ["parameters"]
    page.cells = [nbformat.v4.new_markdown_cell("# A page"), parameters, nbformat.v4.new_code_cell("print(dataset)")]
    page.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(page, rp / "nb.ipynb")
    (rp / "p.yaml").write_text(f"dataset: mnist\nsummary: {rp}/results/s.csv\npartition: {rp}/data/p.json\n")
    config = yaml.safe_load((bundle / "config.yaml").read_text())
    (v / "rj-config.yaml").write_text(yaml.safe_dump({**config, "datasets": ["mnist"], "measure_constants": False}))
    tables = [bundle / "results" / name for name in ("summary/mnist.csv", "verdicts/mnist.csv", "provenance/mnist.csv",
                                                     "tables/mnist_paper_comparison.csv")]
    kr.keep(tables, bundle / "results", bundle / "data", v / "rj-config.yaml", v / "rj", kr.about_runs(tables[2:3]))
    kr.rejudge(v / "rj", REPO / "config/paper_statements.yaml", REPO / "config/paper_values.yaml", log=lambda m: None)
    regen = v / "regen"  # regenerate's registry of one bundle, in a folder of its own
    (regen / "reference").mkdir(parents=True)
    (regen / "config").mkdir()
    import shutil

    shutil.copytree(v / "rj", regen / "reference/rj")
    for name in ("paper_statements.yaml", "paper_values.yaml"):
        shutil.copy(REPO / "config" / name, regen / "config" / name)
    (regen / "reference/bundles.yaml").write_text("bundles: [reference/rj]\n")


def _twin(path: Path, suffix: str) -> Path | None:
    """The file a command documents beside an output (``reference``'s F* .json beside its .npz)."""
    try:
        return path.with_suffix(suffix)
    except ValueError:  # a path with no name (the corpus's "" or "/") has no twin
        return None


def _fill(value: str, world: dict[str, str]) -> str:
    for key, path in world.items():
        value = value.replace("{" + key + "}", path)
    return value


def _with(base: list[str], arg: str, value: str, kind: str, command: str) -> list[str]:
    """``base`` with ``arg`` set to ``value`` (replacing the value it has there)."""
    argv = list(base)
    if not arg.startswith("-"):  # a positional: the first value that is no option
        position = next((i for i, a in enumerate(argv) if not a.startswith("-")), None)
        if position is None or any(argv[j].startswith("-") for j in range(position)):
            return [value, *argv]
        argv[position] = value
        return argv
    if arg in argv:  # its first value replaced, any others kept (an option of two values stays two)
        i = argv.index(arg)
        has_value = i + 1 < len(argv) and not argv[i + 1].startswith("--")
        return argv[:i] + [arg, value] + argv[i + 1 + has_value:]
    return [*argv, arg, value]


class Hang(Exception):
    pass


def _alarm(signum, frame):  # noqa: ANN001, ANN202 - signal handler
    raise Hang


def _snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")} if root.exists() else set()


CASES = [(name, arg) for name in sorted(TABLE) for arg, kind in TABLE[name]["args"].items()
         if kind in CORPUS]


@pytest.mark.parametrize("command, arg", CASES, ids=[f"{c}:{a}" for c, a in CASES])
def test_every_argument_takes_the_hostile_corpus_in_one_line(world, tmp_path, monkeypatch, request, command, arg):
    world = _with_study(world, request) if command in STUDY_COMMANDS else world
    feed(world, tmp_path, monkeypatch, command, arg)


def _no_op(*args: object, **kwargs: object) -> None:
    return None


# Each guard made a no-op (or the plain thing it guards) in turn, and the case of the suite that must then fail:
# (module, attribute, replacement, command, argument); a guard added to a command goes here with its case.
KNOCKOUTS = [
    ("bladefl.report.pages", "href", os.path.relpath, "sensitivity-index", "--pages"),  # a javascript: link
    ("bladefl.experiments.plan.config_checks", "schema_errors", lambda *a, **k: [], "report-index", "--configfiles"),
    ("bladefl.experiments.tables.table_schema", "bound_problems", lambda *a, **k: [], "verdicts", "--gaps"),
    ("bladefl.cli.tables", "names_in", _no_op, "detection", "--exclude-sweeps"),
    ("bladefl.cli.report", "names_in", _no_op, "verdicts", "--bound-sweep"),
    ("bladefl.cli.conventions", "refuse_unread", _no_op, "conventions", "--k-star-from"),
    ("bladefl.cli", "empty_values", lambda args: [], "findings", "--out"),  # "" printed the page instead
]


@pytest.mark.parametrize("module, name, replacement, command, arg", KNOCKOUTS,
                         ids=[f"{m.rsplit('.', 1)[1]}.{n}" for m, n, *_ in KNOCKOUTS])
def test_the_suite_fails_when_a_guard_is_removed(world, tmp_path, monkeypatch, module, name, replacement, command,
                                                 arg):
    """The cases can fail: each registered guard made a no-op in turn (a link kept as the path it is, a config
    file's keys, a bound table's columns, a sweep's name, an option the call never reads, an empty value),
    the case it guards fails: a value accepted that must be refused, or a script URL in a page."""
    import importlib

    monkeypatch.setattr(importlib.import_module(module), name, replacement)
    with pytest.raises(AssertionError):
        feed(world, tmp_path, monkeypatch, command, arg)


def test_the_guards_findings_and_the_owned_guard_fail_their_own_cases_when_removed(tmp_path, monkeypatch):
    """Three guards outside the command table, each knocked out against its own case: the Markdown escaping of
    a bundle's text (a claim's script reaches the page), the owned guard (a folder reached through a link
    is removed) and the journal check (a config file given as a journal is truncated)."""
    import importlib

    from bladefl.core import owned

    kept = importlib.import_module("test_kept_results")
    monkeypatch.setattr(importlib.import_module("bladefl.report.findings_doc"), "_md", lambda text: str(text))
    (tmp_path / "f").mkdir()
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        kept.test_findings_print_a_hostile_bundles_text_as_text(tmp_path / "f")
    monkeypatch.undo()
    owned_tests = importlib.import_module("test_owned")
    monkeypatch.setattr(owned, "removal_problem", _no_op)
    (tmp_path / "o").mkdir()
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        owned_tests.test_a_marked_folder_reached_through_a_linked_parent_is_not_removed(tmp_path / "o", monkeypatch)
    monkeypatch.undo()
    from bladefl.experiments.calibration import journal, search

    journal_case = importlib.import_module("test_calibration").\
        test_a_file_that_is_not_a_journal_is_refused_naming_its_line_and_never_truncated
    for module in (journal, search):
        monkeypatch.setattr(module, "check_records", _no_op)
    (tmp_path / "j").mkdir()
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        journal_case(tmp_path / "j")


def feed(world: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, arg: str) -> None:
    """``command``'s base call with ``arg`` set to each value of its kind's corpus: every answer one the
    command documents, never a traceback or a hang, nothing run, nothing written outside its outputs, nothing
    half-written, a link escaped (AssertionError or pytest's failure otherwise)."""
    spec = TABLE[command]
    kind = spec["args"][arg]
    exits = {0, 2} | spec.get("exits", set())
    w = Path(world["w"])
    monkeypatch.chdir(_fill(spec.get("cwd", str(tmp_path)), world))  # a relative path's writes land here, checked
    outs = [a for a, k in spec["args"].items() if k == OUT]
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for raw in CORPUS[kind]:
            value = _fill(raw, world)
            argv = [*command.split(), *_with([_fill(a, world) for a in spec["base"]], arg, value, kind, command)]
            allowed = [Path(argv[i + 1]).absolute() for i, a in enumerate(argv[:-1]) if a in outs]
            allowed += [twin for a in allowed for suffix in spec.get("twins", []) if (twin := _twin(a, suffix))]
            if kind == OUT and not arg.startswith("-"):
                allowed.append(Path(value).absolute())
            before = _snapshot(w) | {str(tmp_path / p) for p in _snapshot(tmp_path)}
            out, err = io.StringIO(), io.StringIO()
            signal.alarm(600)  # not a workflow: one command on one value; a FIFO read would hang here
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = main(argv)
            except SystemExit as exc:  # argparse's refusal: usage and one error line, exit 2
                code = exc.code
                last = err.getvalue().strip().splitlines()[-1]
                assert code == 2 and last.startswith("bladefl"), (argv, err.getvalue()[-500:])
            except Hang:
                pytest.fail(f"{argv!r} hung for 600 s")
            finally:
                signal.alarm(0)
            said = err.getvalue().strip()
            assert code in exits, (argv, code, said[-500:])
            # every value of a read kind is wrong for the argument (a FIFO, a missing file, NaN, a name with a
            # newline...): accepting one is a guard failing open, unless the table says the argument takes it
            if ((kind in MUST_REFUSE or raw in NEVER_VALID.get(kind, ())) and raw not in SHARED
                    and raw not in spec.get("accepts", {}).get(arg, ())):
                assert code != 0, (command, arg, raw, "accepted a value it must refuse", said[-300:])
            if code == 2 and said and not said.splitlines()[-1].startswith("bladefl"):  # the CLI's own refusal
                assert len(said.splitlines()) == 1 and said.startswith("error: "), (argv, said[-500:])
            assert not (w / PWNED).exists() and not (tmp_path / PWNED).exists(), argv  # nothing ran
            after = _snapshot(w) | {str(tmp_path / p) for p in _snapshot(tmp_path)}
            new = [Path(p if p.startswith("/") else w / p) for p in after - before]
            stray = [str(p) for p in new if not any(p == a or a in p.parents or p in a.parents for a in allowed)]
            assert stray == [], (argv, stray[:5])  # nothing outside the command's own outputs
            assert not [p for p in new if ".tmp" in p.name], argv  # nothing half-written
            if kind == LINK and code == 0:  # a link lands in the page escaped: no markup, no script URL
                pages = [a for a in allowed if a.suffix == ".html" and a.is_file()]
                assert pages, (argv, "a page accepted its link but was not written")
                for page in pages:
                    text = page.read_text(encoding="utf-8")
                    assert "<script>alert" not in text, (argv, page)
                    assert not re.search(r"""(href|src)\s*=\s*['"]?\s*javascript:""", text, re.I), (argv, page)
    finally:
        signal.signal(signal.SIGALRM, old)


def test_report_index_refuses_a_provenance_table_without_its_columns_in_one_line(world, capsys):
    """Found from a valid base (a kept bundle's tables): a provenance table of other columns was an
    AttributeError traceback after the headline figure was drawn; now one line naming the columns, before it."""
    v = world["v"]
    argv = ["report-index", "--verdicts", f"{v}/bundle/results/verdicts/mnist.csv", "--provenance", world["html"],
            "--pages", f"{v}/p.html", "--summaries", f"{v}/mnist.csv", "--comparisons",
            f"{v}/bundle/results/tables/mnist_paper_comparison.csv", "--seeds", "0", "1", "--figures",
            f"{world['w']}/fig-refused", "--engine", "paper", "--out", f"{world['w']}/refused/index.html"]
    assert main(argv) == 2
    said = capsys.readouterr().err.strip()
    assert len(said.splitlines()) == 1 and "missing column(s)" in said and "code_version" in said, said
    assert not Path(f"{world['w']}/fig-refused").exists() and not Path(f"{world['w']}/refused").exists()


def test_verdicts_refuse_a_summary_of_another_grid_in_one_line(world, capsys):
    """A valid tidy table judged against another grid's members (found from a valid base: another case's
    output read as this case's input) is one line and exit 2, not a KeyError."""
    code = main(["verdicts", "--dataset", "mnist", "--summary", f"{world['v']}/mnist.csv", "--members",
                 f"@{world['v']}/run_members.json", "--t-sum", "100", "--out", f"{world['w']}/other.csv"])
    said = capsys.readouterr().err.strip()
    assert code == 2 and len(said.splitlines()) == 1 and "is not a member of the grid's members" in said, said


@pytest.mark.parametrize("argv, says", [
    (["reference", "--partition", "p.npy", "--out", "r.npz", "--eta", "nan"], "--eta: a number in (0, 10]"),
    (["reference", "--partition", "p.npy", "--out", "r.npz", "--eta", "-5"], "--eta: a number in (0, 10]"),
    (["reference", "--partition", "p.npy", "--out", "r.npz", "--max-epochs", "-5"], "--max-epochs: a whole number"),
    (["run-group", "--plan", "[]", "--partition", "p.npy", "--max-rows", "0"], "--max-rows: a whole number in [1,"),
    (["run", "--out", "r", "--threads", "-5"], "--threads: a whole number in [0, 1024]"),
])
def test_numbers_out_of_range_are_refused_before_any_work(tmp_path, monkeypatch, capsys, argv, says):
    """Found from the valid bases: `reference --eta nan` wrote an optimum of F* = inf, `--max-epochs -5` one of
    0 epochs; now argparse refuses each in one line naming the option and its range, and nothing is written."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and says in err[-1], err[-1]
    assert list(tmp_path.iterdir()) == []


def _report_index_argv(world: dict[str, str], **change: str) -> list[str]:
    """report-index's base with options replaced (``figures="..."``: ``--figures``)."""
    argv = ["report-index", *(_fill(a, world) for a in TABLE["report-index"]["base"])]
    for option, value in change.items():
        argv = _with(argv, "--" + option.replace("_", "-"), value, IN, "report-index")
    return argv


@pytest.mark.parametrize("option, value, says", [
    ("verdicts", "{html}", "missing column(s)"),
    ("engine", "no-such-engine", "--engine must be one of"),
    ("configfiles", "{html}", "not a mapping"),
    ("paper_values", "{w}/missing", "missing"),
    ("out", "{big}/under-a-file", "cannot be written"),
])
def test_report_index_refuses_a_bad_input_before_it_draws_the_figure(world, tmp_path, capsys, option, value, says):
    """Found from the valid base: a bad verdict table was refused only after the headline figure was drawn (its
    folder written), an unknown engine or a file that is no config was named on the page as given, and a
    --paper-values that is not there was passed over in silence; now each is one line, before any figure."""
    figures = tmp_path / "fig"
    argv = _report_index_argv(world, figures=str(figures), **{option: _fill(value, world)})
    assert main(argv) == 2
    said = capsys.readouterr().err.strip()
    assert len(said.splitlines()) == 1 and says in said, said
    assert not figures.exists()


def test_a_link_that_reads_as_a_url_scheme_stays_a_path(tmp_path):
    """A page's link to a file named ``javascript:alert(1)`` beside it was the href ``javascript:alert(1)``,
    which a browser runs; now it is ``./javascript:alert(1)``, a path. Other links are as os.path.relpath gives."""
    from bladefl.report.page_html import href

    assert href(tmp_path / "javascript:alert(1)", tmp_path) == "./javascript:alert(1)"
    assert href(tmp_path / "a/b:c.html", tmp_path) == "a/b:c.html"
    assert href(tmp_path / "mnist/02_sweeps.html", tmp_path / "report") == "../mnist/02_sweeps.html"


def test_run_page_checks_its_notebook_and_outputs_before_the_kernel_starts(world, tmp_path, capsys):
    """Found from the valid base: a parameters cell that does not parse was a SyntaxError traceback, an output
    under a file was refused only after the notebook had run (the kernel's progress lines first), and an executed
    notebook of any name was run (papermill warned of its extension); now each is one line and no kernel starts."""
    executed = tmp_path / "e.ipynb"  # what a started kernel writes first
    base = _with([_fill(a, world) for a in TABLE["run-page"]["base"]], "--executed", str(executed), OUT, "run-page")
    broken = tmp_path / "broken.ipynb"
    import nbformat

    page = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("dataset = (")
    cell.metadata["tags"] = ["parameters"]
    page.cells = [cell]
    nbformat.write(page, broken)
    for argv, says in ((_with(base, "notebook", str(broken), IN, "run-page"), "not a notebook whose parameters"),
                       (_with(base, "--out", _fill("{big}/page.html", world), OUT, "run-page"), "cannot be written"),
                       (_with(base, "--executed", str(tmp_path / "e.txt"), OUT, "run-page"), "must be a .ipynb path")):
        assert main(["run-page", *argv]) == 2
        said = capsys.readouterr().err.strip()
        assert len(said.splitlines()) == 1 and says in said, said
        assert not executed.exists()


@pytest.mark.parametrize("argv, says", [
    (["--draws", "{nan}"], "unknown key 'a'"),
    (["--draws", "{repo}/config/smoke.yaml", "--grid", "{repo}/config/smoke.yaml"], "--grid: --draws does not read"),
    (["--chain-drag", "--cores", "3"], "--cores: --chain-drag does not read"),
    (["--grid-seeds", "0-1"], "--grid-seeds is a part of --grid's or --workflow's grid"),
])
def test_bench_checks_every_input_and_refuses_what_its_measurement_does_not_read(world, monkeypatch, capsys, argv,
                                                                                  says):
    """Found from the valid base: `bench --draws` on a config of unknown keys timed the default config's
    largest group (minutes), and an option the measurement does not read (--grid beside --draws) was ignored
    in silence; now each is one line before anything is measured."""
    monkeypatch.chdir(world["w"])  # its config/config.yaml: the layer a workflow config goes on
    assert main(["bench", *(_fill(a, world) for a in argv)]) == 2
    said = capsys.readouterr().err.strip()
    assert len(said.splitlines()) == 1 and says in said, said
