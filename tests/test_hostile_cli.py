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
import signal
from pathlib import Path

import pytest

from bladefl.cli import build_parser, main

REPO = Path(__file__).resolve().parents[1]

# How an argument is read. IN: a file (or files) read; DIR: a folder read; OUT: a file or folder written;
# NUM: a number; NAME: a word of a closed set or a name; TEXT: free text that lands in an output; FLAG:
# a switch (nothing to feed); SKIP: not fed here, with the reason.
IN, DIR, OUT, NUM, NAME, TEXT, FLAG = "in", "dir", "out", "num", "name", "text", "flag"

# Per command: the base arguments (placeholders {w}: the sandbox; {engine}: the tiny engine config) that a
# hostile value replaces one at a time, the exits it documents, and each argument's kind. A command that
# trains or measures (heavy) lists what it feeds and says where the rest is covered.
TABLE: dict[str, dict] = {
    "fetch": {"base": ["--dataset", "mnist", "--root", "{data}", "--sources", "existing"], "exits": {1}, "valid": True,
              "args": {"--dataset": NAME, "--root": OUT, "--sources": NAME}},
    "partition": {"base": ["--dataset", "mnist", "--key", "shards2_N4_n8_seed0", "--root", "{data}", "--out",
                           "{w}/part.npy"], "valid": True,
                  "args": {"--dataset": NAME, "--key": NAME, "--root": DIR, "--out": OUT}},
    "run": {"base": ["--config", "{engine}", "--out", "{w}/run", "--quiet", "--set", "data_dir={data}"], "valid": True,
            "args": {"--config": IN, "--set": TEXT, "--out": OUT, "--quiet": FLAG, "--partition": IN,
                     "--threads": NUM, "--reference": IN, "--group": IN, "--computed-in": DIR}},
    "run-group": {"base": ["--config", "{engine}", "--plan", "@{v}/plan.json", "--partition", "{v}/p.npy", "--compute",
                           "0", "--done", "{w}/g.done"], "valid": True,  # checks the plan, trains nothing
                  "args": {"--config": IN, "--set": TEXT, "--plan": IN, "--partition": IN, "--reference": IN,
                           "--threads": NUM, "--chain-processes": NUM, "--max-rows": NUM, "--quiet": FLAG,
                           "--done": OUT, "--compute": NUM}},
    "reference": {"base": ["--config", "{engine}", "--partition", "{v}/p.npy", "--out", "{w}/ref.npz", "--max-epochs",
                           "2", "--set", "data_dir={data}"], "valid": True, "twins": [".json"],
                  "args": {"--config": IN, "--set": TEXT, "--partition": IN, "--out": OUT, "--eta": NUM,
                           "--max-epochs": NUM}},
    "bound": {"base": ["--runs", "{measured}/summary.json", "--members", "@{v}/run_members.json", "--references",
                       "{reference}", "--out-dir", "{w}/b"], "valid": True,
              "args": {"--runs": IN, "--members": IN, "--references": IN, "--out-dir": OUT}},
    "detection": {"base": ["--runs", "{lazy}/summary.json", "--members", "@{v}/lazy_members.json", "--out-dir",
                           "{w}/d"], "valid": True,
                  "args": {"--runs": IN, "--members": IN, "--exclude-sweeps": NAME, "--out-dir": OUT}},
    "summarize": {"base": ["--runs", "{run}/summary.json", "--members", "@{v}/run_members.json", "--table",
                           "{w}/t.csv", "--optimum", "{w}/o.csv"], "valid": True,
                  "args": {"--runs": IN, "--members": IN, "--table": OUT, "--optimum": OUT}},
    "sensitivity": {"base": ["--dataset", "mnist", "--readings", "stated", "--axes", "stated", "--summaries",
                             "{v}/mnist.csv", "--optima", "{v}/mnist_optimum.csv", "--verdicts",
                             "{v}/bundle/results/verdicts/mnist.csv", "--paper-values",
                             "{repo}/config/paper_values.yaml", "--t-sum", "100", "--sweeps", "alpha", "--out-dir",
                             "{w}/sens"], "valid": True,
                    "args": {"--dataset": NAME, "--readings": NAME, "--axes": NAME, "--summaries": IN, "--optima": IN,
                             "--verdicts": IN, "--paper-values": IN, "--t-sum": NUM, "--sweeps": NAME,
                             "--out-dir": OUT}},
    "sensitivity-index": {"base": ["--rankings", "{v}/ranking.csv", "--pages", "{v}/p.html", "--out", "{w}/i.html"],
                          "valid": True,
                          "args": {"--rankings": IN, "--pages": IN, "--out": OUT}},
    "calibration-index": {"base": ["--outcomes", "{repo}/reference/calibration-cpu/results/calibration/mnist/"
                                   "outcome.json", "--pages", "{v}/p.html", "--out", "{w}/i.html"], "valid": True,
                          "args": {"--outcomes": IN, "--pages": IN, "--out": OUT}},
    "report-index": {"base": ["--verdicts", "{w}/v.csv", "--provenance", "{w}/p.csv", "--pages", "{w}/p.html",
                              "--summaries", "{w}/s.csv", "--comparisons", "{w}/c.csv", "--seeds", "0", "--figures",
                              "{w}/fig", "--out", "{w}/index.html"],
                     "args": {"--verdicts": IN, "--provenance": IN, "--pages": IN, "--summaries": IN,
                              "--comparisons": IN, "--configfiles": IN, "--seeds": NUM, "--figures": OUT,
                              "--calibration": IN, "--calibration-page": IN, "--engine": NAME, "--out": OUT,
                              "--paper-values": IN}},
    "verdicts": {"base": ["--dataset", "mnist", "--summary", "{v}/mnist.csv", "--members", "@{v}/members.json",
                          "--t-sum", "100", "--out", "{w}/v.csv"], "valid": True,
                 "args": {"--dataset": NAME, "--summary": IN, "--members": IN, "--t-sum": NUM, "--engine": IN,
                          "--bound-sweep": NAME, "--gaps": IN, "--constants": IN, "--margins": TEXT,
                          "--resamples": NUM, "--bound-resamples": NUM, "--statements": IN, "--paper-values": IN,
                          "--out": OUT}},
    "findings": {"base": ["{repo}/reference/default-2seeds", "--out", "{w}/findings.md"], "valid": True,
                 "args": {"bundles": DIR, "--out": OUT}},
    "ro-crate": {"base": ["{v}/bundle"], "valid": True, "args": {"bundle": DIR}},
    "summary": {"base": ["{repo}/reference/default-2seeds", "--out", "{w}/summary.md"], "valid": True,
                "args": {"bundles": DIR, "--out": OUT}},
    "diff": {"base": ["{repo}/reference/default-2seeds", "{repo}/reference/default-2seeds", "--out", "{w}/d.md"],
             "valid": True,
             "args": {"a": DIR, "b": DIR, "--out": OUT, "--csv-dir": OUT}},
    "conventions": {"base": ["--summary", "{v}/mnist.csv", "--dataset", "mnist", "--paper-values",
                             "{repo}/config/paper_values.yaml", "--csv", "{w}/c.csv"], "valid": True,
                    "args": {"runs": DIR, "--summary": IN, "--dataset": NAME, "--paper-values": IN, "--csv": OUT,
                             "--bundle": DIR, "--k-star-from": NAME, "--accuracy-on": NAME, "--statements": IN}},
    "paper-comparison": {"base": ["--dataset", "mnist", "--summary", "{v}/mnist.csv", "--optimum",
                                  "{v}/mnist_optimum.csv",
                                  "--paper-values", "{repo}/config/paper_values.yaml", "--t-sum", "100", "--out",
                                  "{w}/c.csv"], "valid": True, "twins": [".md"],
                         "args": {"--dataset": NAME, "--summary": IN, "--optimum": IN, "--paper-values": IN,
                                  "--t-sum": NUM, "--out": OUT}},
    "provenance": {"base": ["--runs", "{run}/summary.json", "--out", "{w}/prov.csv"], "valid": True,
                   "args": {"--runs": IN, "--out": OUT}},
    "render-page": {"base": ["{v}/nb.ipynb", "--out", "{w}/page.html", "--index", "{v}/p.html"], "valid": True,
                    "args": {"notebook": IN, "--out": OUT, "--index": IN}},
    "run-page": {"base": ["{w}/nb.ipynb", "--parameters", "{w}/p.yaml", "--executed", "{w}/e.ipynb", "--out",
                          "{w}/page.html"],
                 "args": {"notebook": IN, "--parameters": IN, "--executed": OUT, "--out": OUT, "--index": IN,
                          "--results-dir": DIR, "--data-dir": DIR}},
    "keep": {"base": ["--files", "{v}/bundle/results/summary/mnist.csv", "--provenance",
                      "{v}/bundle/results/provenance/mnist.csv", "--results-dir", "{v}/bundle/results", "--data-dir",
                      "{v}/bundle/data", "--config-file", "{v}/bundle/config.yaml", "--out", "{w}/kept"], "valid": True,
             "args": {"--files": IN, "--provenance": IN, "--imported": IN, "--results-dir": DIR, "--data-dir": DIR,
                      "--config-file": IN, "--out": OUT, "--with-archive": FLAG}},
    "import-runs": {"base": ["--archive", "{v}/a.tar.gz", "--configfile", "{repo}/config/config.yaml",
                             "{repo}/config/smoke.yaml", "--results-dir", "{w}/imported"],
                    "exits": {1, 2}, "valid": True, "cwd": "{w}",  # the smoke grid's runs, as the GPU script packs
                    "args": {"--archive": IN, "--configfile": IN, "--seeds": NUM, "--results-dir": OUT,
                             "--replace": FLAG, "--key-secret": IN}},
    "lay-out": {"base": ["{repo}/reference/default-2seeds", "--results-dir", "{w}/laid", "--data-dir", "{w}/laid/d"],
                "valid": True,
                "exits": {1},  # 1: the bundle is not what its manifest says (nothing laid out)
                "args": {"bundle": DIR, "--results-dir": OUT, "--data-dir": OUT}},
    "rejudge": {"base": ["{w}/nobundle"], "args": {"bundle": DIR, "--statements": IN, "--paper-values": IN}},
    "chain verify": {"base": ["{run}/chains/K1.json", "--summary", "{run}/summary.json", "--anchor",
                              "{v}/anchor.json"], "exits": {1, 2, 3}, "valid": True,
                     "args": {"path": IN, "--store": DIR, "--summary": IN, "--key-secret": IN, "--anchor": IN}},
    "chain anchor": {"base": ["--summary", "{run}/summary.json", "--out", "{w}/anchor.json"], "valid": True,
                     "args": {"--summary": IN, "--out": OUT}},
    "device-check": {"base": ["--tables", "{v}/mnist.csv", "{v}/mnist.csv", "--out", "{w}/dc.csv"], "valid": True,
                     "args": {"--device": NAME, "--out": OUT, "--tables": IN}},  # the mixed group: its own tests
    "bench": {"base": ["--config", "{w}/none.yaml"],
              "args": {"--config": IN, "--data-dir": "skip: measures the engine (minutes); the bench's own tests",
                       "--quick": FLAG, "--device": NAME, "--seeds": NUM, "--grid": IN, "--grid-seeds": TEXT,
                       "--grid-only": FLAG, "--out": "skip: with --grid only (minutes)", "--host-copy-compare": FLAG,
                       "--bookkeeping": "skip: runs Snakemake (minutes); bladefl.experiments.runs.bookkeeping",
                       "--cores": NUM, "--chain-drag": FLAG, "--draws": IN}},
    "resources": {"base": ["--benchmarks", "{v}/benchmarks", "--out", "{w}/profile"], "valid": True,
                  "args": {"--benchmarks": DIR, "--out": OUT, "--margin": NUM, "--measured": IN, "--for": IN}},
    # the smoke calibration study ({study}: a copy of conftest's, run through the workflow once for the test run)
    "calibrate": {"base": ["--spec", "{study}/spec.json", "--storage", "{study}/study.journal", "--trials-dir",
                           "{study}/trials"], "valid": True, "cwd": "{w}",  # its rule has stopped it: no trial
                  "args": {"--spec": IN, "--storage": "skip: another journal is another study, which trains its "
                                                      "trials (tests/test_calibration.py)",
                           "--trials-dir": OUT, "--worker": NAME, "--threads": NUM, "--done": OUT}},
    "calibration-pick": {"base": ["--spec", "{v}/cal/spec.json", "--storage", "{v}/cal/study.journal", "--out",
                                  "{w}/picked.json"], "valid": True,
                         "cwd": "{w}",  # the kept spec names its engine by a path from the study's folder
                         "args": {"--spec": IN, "--storage": IN, "--out": OUT}},
    "calibration-rerun": {"base": ["--spec", "{study}/spec.json", "--picked", "{study}/picked.json", "--role",
                                   "stated", "--out-dir", "{w}/rerun", "--trials-dir", "{study}/trials"],
                          "valid": True, "cwd": "{w}",  # the search's runs taken: nothing trained
                          "args": {"--spec": IN, "--picked": IN, "--role": NAME, "--out-dir": OUT,
                                   "--trials-dir": "skip: without the search's runs the reading's rows are trained "
                                                   "(tests/test_calibration.py)", "--threads": NUM}},
    "calibration-tables": {"base": ["--spec", "{study}/spec.json", "--storage", "{study}/study.journal", "--picked",
                                    "{study}/picked.json", "--roots", "stated={study}/rerun/stated",
                                    "best1={study}/rerun/best1", "--trials-dir", "{study}/trials", "--out-dir",
                                    "{w}/tables"], "valid": True, "cwd": "{w}",
                           "args": {"--spec": IN, "--storage": IN, "--picked": IN, "--roots": TEXT,
                                    "--trials-dir": DIR, "--out-dir": OUT}},
    "calibration-conventions": {"base": ["--spec", "{study}/spec.json", "--roots", "stated={study}/rerun/stated",
                                         "best1={study}/rerun/best1", "--out", "{w}/c.csv"], "valid": True,
                                "cwd": "{w}", "args": {"--spec": IN, "--roots": TEXT, "--out": OUT}},
}

# Why a base is not a valid call here (each of its refusals may be the base's own, not the value's): what a
# valid one would need, and where that command's valid calls are tested.
REFUSED = {
    "report-index": "draws the front page's figure, seconds a call: its 13 arguments x the corpus from a valid base "
                    "took 16 minutes (tests/test_report.py; its tables' columns: the test below)",
    "run-page": "executes its notebook in a kernel of its own, seconds a call (tests/test_report.py)",
    "rejudge": "re-derives a bundle's verdicts, a minute a call (tests/test_kept_results.py)",
    "bench": "measures the engine (minutes)",
}
for _name, _why in REFUSED.items():
    TABLE[_name]["refused"] = _why

PWNED = "PWNED"
# The corpus, by kind ({w}: the sandbox). Shell text would create {w}/PWNED if anything ran it.
CORPUS = {
    IN: ["{fifo}", "/dev/zero", "{w}", "{w}/missing", "{big}", "{deep}", "{aliases}", "{twice}", "{nan}",
         "{html}", "{w}/a\nb", "{w}/a\u2028b", f"$(touch {{w}}/{PWNED})", f"x;touch {{w}}/{PWNED};",
         "{w}/q'\"q", "../../../../../../etc/passwd", "{link}"],
    DIR: ["{fifo}", "/dev/zero", "{w}/missing", "{big}", "{w}/a\nb", f"$(touch {{w}}/{PWNED})", "{link}",
          "../../../../../../etc"],
    OUT: ["{fifo}", "{big}/under-a-file", "{w}/o\nb", "{w}/o\u2028b", f"{{w}}/$(touch {{w}}/{PWNED})",
          f"{{w}}/o;touch {{w}}/{PWNED};", "{w}/q'\"q", ""],
    NUM: ["nan", "inf", "-inf", "1e308", "-5", "9" * 40, "x", "0x10"],
    NAME: ["", "a\nb", "\u2028", f"$(touch {{w}}/{PWNED})", "<script>alert(1)</script>", "../x", "x" * 5000],
    TEXT: ["a\nb", "\u2028", f"$(touch {{w}}/{PWNED})", "<script>alert(1)</script>", "x" * 5000, "=", "k=[[[[[["],
}


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


def test_every_base_is_a_valid_call_or_says_why_not():
    """A hostile value replaces one argument of a base call: where the base succeeds on its own, each
    refusal is the value's; a base that cannot be valid in this sandbox (it trains, or needs a run
    folder or a workflow's outputs) says so, so the list of what remains is stated, not hidden."""
    for name, spec in TABLE.items():
        assert spec.get("valid") is True or isinstance(spec.get("refused"), str), name


def test_the_valid_bases_succeed_on_their_own(world, tmp_path, monkeypatch, request):
    monkeypatch.chdir(tmp_path)
    world = _with_study(world, request)
    for name, spec in sorted(TABLE.items()):
        if spec.get("valid"):
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
    (v / "plan.json").write_text(json.dumps([{"out": str(v / "g/mnist/c/seed~0"), "set": ["seed=0"]}]))
    (v / "ranking.csv").write_text(
        "reading,axis,dataset,rank,K_star_distance,K_star_distance_seeds,K_star_distance_sd,accuracy_distance,"
        "accuracy_distance_seeds,accuracy_distance_sd,max_accuracy\nstated,partition,mnist,1,2,2.5,0.5,3,3.5,1,88\n")


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
    spec = TABLE[command]
    world = _with_study(world, request) if command in STUDY_COMMANDS else world
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
            signal.alarm(60)
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    code = main(argv)
            except SystemExit as exc:  # argparse's refusal: usage and one error line, exit 2
                code = exc.code
                last = err.getvalue().strip().splitlines()[-1]
                assert code == 2 and last.startswith("bladefl"), (argv, err.getvalue()[-500:])
            except Hang:
                pytest.fail(f"{argv!r} hung for 60 s")
            finally:
                signal.alarm(0)
            said = err.getvalue().strip()
            assert code in exits, (argv, code, said[-500:])
            if code == 2 and said and not said.splitlines()[-1].startswith("bladefl"):  # the CLI's own refusal
                assert len(said.splitlines()) == 1 and said.startswith("error: "), (argv, said[-500:])
            assert not (w / PWNED).exists() and not (tmp_path / PWNED).exists(), argv  # nothing ran
            after = _snapshot(w) | {str(tmp_path / p) for p in _snapshot(tmp_path)}
            new = [Path(p if p.startswith("/") else w / p) for p in after - before]
            stray = [str(p) for p in new if not any(p == a or a in p.parents or p in a.parents for a in allowed)]
            assert stray == [], (argv, stray[:5])  # nothing outside the command's own outputs
            assert not [p for p in new if ".tmp" in p.name], argv  # nothing half-written
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
