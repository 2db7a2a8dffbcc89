"""Property-based fuzzing (Hypothesis) of every input the tool reads: the CLI's `--set` values, the
workflow config, run files, ledgers, archives and kept bundles. Each input is either taken, with
every value in its range, or refused with the input's own error (one line naming the field); never
a traceback of another kind, never a hang (each case runs under an alarm), never a value outside
its range accepted. Seeded (derandomized) and bounded, so CI runs the same cases in seconds."""

from __future__ import annotations

import copy
import io
import json
import math
import signal
import tarfile
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
CASE_SECONDS = 10  # a case that runs longer is a hang
FUZZ = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@contextmanager
def no_hang(seconds: int = CASE_SECONDS):
    """Fail a case that takes longer than ``seconds`` (SIGALRM: the main thread, Unix)."""
    def stop(signum, frame):  # noqa: ARG001
        raise TimeoutError(f"a case ran past {seconds} s (a hang)")
    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def one_line(exc: BaseException) -> str:
    message = str(exc)
    assert message and "Traceback" not in message and "\n" not in message.strip(), message
    return message


# Values as a user types them after `--set key=`: numbers of every form, Unicode digits, YAML
# fragments, huge and tiny magnitudes, nan and inf, empty and blank.
NUMBER_TEXT = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-10**30, max_value=10**30).map(str),
    st.sampled_from(["", " ", "nan", ".nan", "inf", "-inf", ".inf", "1e400", "1e-400", "١", "²", "0x10", "1_000",
                     "[1", "{a: 1}", "[]", "null", "true", "~", "'3'", "3.0", " 3", "1e23", "-0", "0"]),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12),
)
SET_KEYS = ["time.alpha", "time.beta", "time.t_sum", "time.K", "partition.N", "partition.n", "train.eta",
            "train.batch_size", "lazy.ratio", "lazy.sigma2", "privacy.epsilon", "privacy.clip", "seed",
            "partition.dirichlet_alpha", "chain.difficulty_bits", "dataset", "device"]


@FUZZ
@given(key=st.sampled_from(SET_KEYS), value=NUMBER_TEXT)
def test_set_values_are_taken_in_range_or_refused_by_name(key, value):
    from bladefl.fl.ranges import BY_RUN_KEY
    from bladefl.fl.run_config import RunConfigError, load_config

    with no_hang():
        try:
            cfg = load_config(REPO / "config/engines/paper.yaml", [f"{key}={value}"])
        except RunConfigError as exc:
            assert key.split(".")[-1] in one_line(exc) or "--set" in str(exc), (key, value, str(exc))
            return
    taken = cfg.to_dict()
    node = taken
    for part in key.split("."):
        node = node[part]
    for number in (node if isinstance(node, list) else [node]):
        if isinstance(number, float):
            assert not math.isnan(number), (key, value)
    if key in BY_RUN_KEY:
        assert BY_RUN_KEY[key].holds(node), (key, value, node)


DEFAULT = yaml.safe_load((REPO / "config/config.yaml").read_text())
CONFIG_PATHS = [("t_sum",), ("seeds",), ("partition", "n"), ("partition", "seeds"), ("base", "eta"), ("base", "N"),
                ("base", "sigma2"), ("sweeps", 0, "values"), ("sweeps", 1, "values"), ("datasets",), ("engine",),
                ("results_dir",), ("bound_sweep",), ("seeds_per_job",), ("threads_per_run",), ("grouping",)]
JSONISH = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                                 st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8)),
                       lambda inner: st.lists(inner, max_size=4), max_leaves=6)


@FUZZ
@given(path=st.sampled_from(CONFIG_PATHS), value=JSONISH)
def test_workflow_config_values_are_taken_or_refused_by_name(path, value, monkeypatch):
    from bladefl.experiments.plan.config_checks import check, schema_errors
    from bladefl.experiments.plan.workflow_config import ConfigError

    monkeypatch.chdir(REPO)
    config = copy.deepcopy(DEFAULT)
    node = config
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    with no_hang():
        lines = schema_errors(config, REPO / "workflow/schemas/config.schema.yaml")
        if lines:
            assert len(lines) <= 9 and all("\n" not in line for line in lines), lines
            return
        try:
            check(config)
        except ConfigError as exc:  # one line per problem, each naming its field: one screen
            lines = str(exc).splitlines()
            assert lines[0].startswith("invalid config") and len(lines) <= 20, str(exc)
            assert all(":" in line or " must " in line for line in lines), str(exc)


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """A real run of the engine (4 clients, K = 2 and 3) with its ledgers, summary and rounds.csv."""
    from bladefl.experiments.runs.runner import run_cell
    from test_engine import small_cfg, synthetic

    out = tmp_path_factory.mktemp("fuzzrun")
    run_cell(small_cfg(time={"K": [2, 3]}, seed=5), out, data=synthetic(), progress=False)
    return out


def mutate(data: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    """``data`` with bytes replaced, deleted or truncated: (kind, position, value) per edit."""
    out = bytearray(data)
    for kind, pos, value in edits:
        if not out:
            break
        i = pos % len(out)
        if kind == 0:
            out[i] = value
        elif kind == 1:
            del out[i]
        elif kind == 2:
            out.insert(i, value)
        else:
            del out[i:]
    return bytes(out)


EDITS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4)


@FUZZ
@given(edits=EDITS, which=st.sampled_from(["summary.json", "rounds.csv"]))
def test_mutated_run_files_are_read_whole_or_refused_by_name(real_run, edits, which):
    from bladefl.core import run_files as rf

    summary, rounds = (real_run / "summary.json").read_bytes(), (real_run / "rounds.csv").read_bytes()
    if which == "summary.json":
        summary = mutate(summary, edits)
    else:
        rounds = mutate(rounds, edits)
    with no_hang():
        try:
            parsed = rf.parse_summary(summary)
            rows = rf.parse_rounds(rounds)
            rf.check_together(parsed, rows, "fuzzed")
        except rf.RunFileError as exc:
            one_line(exc)
            return
    ks = [e["K"] for e in parsed["per_K"]]
    assert ks == parsed["config"]["time"]["K"] and len(set(ks)) == len(ks)
    for entry in parsed["per_K"]:
        assert entry["status"] in rf.STATUSES
        if entry["status"] == "ok":
            assert all(math.isfinite(entry[m]) for m in rf.METRICS) and entry["blocks"] == entry["K"]


@FUZZ
@given(edits=EDITS)
def test_mutated_ledgers_end_in_a_named_problem_or_verify(real_run, edits, tmp_path_factory):
    from bladefl.chain.verify import verify_chain

    folder = tmp_path_factory.mktemp("ledger")
    for name in ("summary.json", "rounds.csv"):
        (folder / name).write_bytes((real_run / name).read_bytes())
    (folder / "chains").mkdir()
    original = (real_run / "chains/K3.json").read_bytes()
    (folder / "chains/K3.json").write_bytes(mutate(original, edits))
    with no_hang():
        problem = verify_chain(folder / "chains/K3.json", summary=folder / "summary.json")
    if problem is not None:
        assert problem.reason and "\n" not in problem.reason
    else:  # a change that verifies must leave the ledger's meaning as it was
        assert json.loads((folder / "chains/K3.json").read_bytes()) == json.loads(original)


def tar_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@FUZZ
@given(edits=EDITS, names=st.lists(st.sampled_from(["grid/mnist/c/seed~0/summary.json", "grid/mnist/c/seed~0/x",
                                                    "../escape", "/abs", "grid/ABOUT.json", "grid/mnist/c/seed~0"]),
                                   min_size=1, max_size=3))
def test_mutated_archives_are_refused_by_name(edits, names, tmp_path_factory):
    from bladefl.experiments.bundles import run_import as ri

    folder = tmp_path_factory.mktemp("archive")
    archive = folder / "a.tar.gz"
    archive.write_bytes(mutate(tar_bytes({n: b"{}" for n in names}), edits))
    with no_hang():
        try:
            ri.read_archive(archive)
        except ri.ArchiveError as exc:
            one_line(exc.args[0].splitlines()[0] if exc.args else exc)


@FUZZ
@given(manifest=JSONISH | st.dictionaries(st.sampled_from(["files", "about", "config"]), JSONISH, max_size=3))
def test_a_kept_bundle_with_any_manifest_lays_out_or_is_refused_by_name(manifest, tmp_path_factory):
    from bladefl.experiments.bundles import kept_results

    folder = tmp_path_factory.mktemp("bundle")
    (folder / "MANIFEST.json").write_text(json.dumps(manifest))
    with no_hang():
        try:
            kept_results.lay_out(folder, folder / "results", folder / "data")
        except (ValueError, OSError) as exc:
            one_line(exc)


# Report page parameter files (`bladefl run-page --parameters`): keys a notebook declares and keys
# papermill would write as code, values of every type and paths inside and outside the run's
# folders, with YAML's anchors, aliases, tags and flow syntax spliced in.
PAGE_NOTEBOOKS = ["02_sweeps.ipynb", "01_data.ipynb", "03_bound.ipynb"]
PAGE_KEYS = st.sampled_from(["dataset", "summary", "figures_dir", "tables_dir", "partitions", "gaps", "x = 1; y",
                             "__import__('os').system('touch MARK')", "", "dataset "])
PAGE_PATHS = st.sampled_from(["results/a.csv", "data/partitions/mnist/a.json", "results/figures/x", "../x",
                              "/etc/passwd", "results/../../x", "data", "results", "", "results/\x00x", "~/x"])
PAGE_VALUES = st.one_of(JSONISH, PAGE_PATHS, st.lists(PAGE_PATHS, max_size=3), st.sampled_from(["mnist", "cifar10"]))
YAML_BITS = st.sampled_from(["&a ", "*a", "!!python/object/apply:os.system ['touch MARK'] ", "? ", "- ", "{", "[",
                             "\t", "%YAML 1.1\n---\n", "<<: *a\n", "!x ", "'", "\"\\x", "\n  "])


@FUZZ
@given(values=st.dictionaries(PAGE_KEYS, PAGE_VALUES, max_size=4), notebook=st.sampled_from(PAGE_NOTEBOOKS),
       splices=st.lists(st.tuples(st.integers(0, 400), YAML_BITS), max_size=2))
def test_page_parameter_files_are_taken_typed_inside_the_run_or_refused_in_one_line(values, notebook, splices,
                                                                                    tmp_path_factory):
    """Taken: only the notebook's declared names, each of its kind, paths inside the results (or data)
    folder once links are resolved. Refused: one line, and `bladefl run-page` exits 2 having written
    nothing and run no code."""
    import contextlib

    from bladefl.cli import main
    from bladefl.data.datasets import SPECS
    from bladefl.report import page_parameters as pp

    folder = tmp_path_factory.mktemp("page")
    text = yaml.safe_dump(values, allow_unicode=True)
    for at, bit in splices:
        text = text[: at % (len(text) + 1)] + bit + text[at % (len(text) + 1):]
    (folder / "p.yaml").write_text(text)
    nb = REPO / "notebooks" / notebook
    with no_hang(), contextlib.chdir(folder):
        try:
            taken = pp.read("p.yaml", nb, "results", "data")
        except pp.ParameterError as exc:
            one_line(exc)
            code = main(["run-page", str(nb), "--parameters", "p.yaml", "--executed", "out/page.ipynb", "--out",
                         "out/page.html", "--index", "index.html", "--results-dir", "results", "--data-dir", "data"])
            assert code == 2 and not (folder / "out").exists() and not (folder / "MARK").exists()
            return
    kinds = pp.declared(nb)
    assert set(taken) <= set(kinds), taken
    results, data = (folder / "results").resolve(), (folder / "data").resolve()
    for key, value in taken.items():
        roots = [results] if key in pp.OUTPUT_FOLDERS else [results, data]
        paths = [value] if kinds[key] == "path" and value is not None else value if kinds[key] == "paths" else []
        for path in paths:
            real = (folder / path).resolve()
            assert any(real == root or root in real.parents for root in roots), (key, value)
        if kinds[key] == "dataset":
            assert value in SPECS


# Archive member names: every name a tar can hold, run folders with non-ASCII or non-decimal seeds,
# traversal, absolute paths, empty parts.
NAME_PARTS = st.one_of(st.sampled_from(["grid", "mnist", "alpha~1_beta~10_N~4", "seed~0", "seed~٠", "seed~017",
                                        "seed~-1", "seed~1_000", "seed~0x10", "..", ".", "", "summary.json",
                                        "rounds.csv", "chains", "K3.json", "ABOUT.json", "detections.csv"]),
                       st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6))
MEMBER_NAMES = st.lists(st.lists(NAME_PARTS, min_size=1, max_size=6).map("/".join), min_size=1, max_size=4)


@FUZZ
@given(names=MEMBER_NAMES)
def test_archive_member_names_map_to_plain_run_folders_or_are_refused_by_name(names, tmp_path_factory):
    """A member is a run file of a folder `<dataset>/<cell>/seed~<decimal ASCII>` (or the archive's
    ABOUT.json), or the archive is refused in one line; no name reaches outside its run."""
    import re

    from bladefl.experiments.bundles import run_import as ri

    folder = tmp_path_factory.mktemp("names")
    archive = folder / "a.tar.gz"
    try:
        archive.write_bytes(tar_bytes({n: b"{}" for n in names}))
    except (ValueError, UnicodeError):  # a name tar itself cannot write (a NUL, a lone surrogate)
        return
    with no_hang():
        try:
            runs, _ = ri.read_archive(archive)
        except ri.ArchiveError as exc:
            one_line(exc)
            return
    for (dataset, cell, seed), files in runs.items():
        assert isinstance(seed, int) and seed >= 0
        assert any(re.search(rf"(^|/){re.escape(dataset)}/{re.escape(cell)}/seed~{seed}/", n) for n in names)
        for part in (dataset, cell):
            assert part not in ("", ".", "..") and "/" not in part
        assert set(files) <= {*ri.RUN_FILES, *(n for n in files if re.fullmatch(r"chains/K[0-9]+\.json", n))}


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory):
    """A real run that keeps its uploads in a model store (models/<digest>.bin)."""
    from bladefl.experiments.runs.runner import run_cell
    from test_engine import small_cfg, synthetic

    out = tmp_path_factory.mktemp("storerun")
    run_cell(small_cfg(time={"K": [2]}, chain={"save_models": True}, seed=6), out, data=synthetic(), progress=False)
    return out


@FUZZ
@given(which=st.integers(0, 10**6), kind=st.sampled_from(["edit", "sparse", "empty", "folder", "link", "fifo"]),
       edits=EDITS)
def test_a_hostile_model_store_ends_in_a_named_problem(stored_run, which, kind, edits, tmp_path_factory):
    """A store file changed, emptied, made a sparse file of gigabytes, a folder, a link or a FIFO:
    `chain verify --store` names a problem in one line (or verifies, only for the original bytes),
    within its time, never reading a huge file whole."""
    import os
    import shutil

    from bladefl.chain.verify import verify_chain

    folder = tmp_path_factory.mktemp("store")
    shutil.copytree(stored_run, folder, dirs_exist_ok=True)
    files = sorted((folder / "models").glob("*.bin"))
    target = files[which % len(files)]
    original = target.read_bytes()
    if kind == "edit":
        target.write_bytes(mutate(original, edits))
    else:
        target.unlink()
        if kind == "sparse":
            with open(target, "wb") as handle:
                handle.truncate(8 << 30)
        elif kind == "empty":
            target.write_bytes(b"")
        elif kind == "folder":
            target.mkdir()
        elif kind == "link":
            target.symlink_to(folder / "summary.json")
        else:
            os.mkfifo(target)
    with no_hang():
        problem = verify_chain(folder / "chains/K2.json", store=folder / "models", summary=folder / "summary.json")
    if problem is None:
        assert kind == "edit" and target.read_bytes() == original
    else:
        assert problem.reason and "\n" not in problem.reason


# A kept bundle whose manifest agrees with its files, but whose names are hostile: traversal,
# names outside results/ and data/, control characters, a listed file given twice in the JSON.
BUNDLE_NAMES = st.lists(st.one_of(st.sampled_from(["results/a.csv", "data/p.json", "results/x/../../../escape",
                                                   "results/../data/b.csv", "other/c.csv", "results/", "results",
                                                   "config.yaml", "results/a\nb.csv", "results/./d.csv"]),
                                  st.lists(NAME_PARTS, min_size=1, max_size=3).map("/".join)),
                        min_size=1, max_size=4, unique=True)


@FUZZ
@given(names=BUNDLE_NAMES, twice=st.booleans(), unlisted=st.sampled_from(["", "results/z.csv", "results/new\nline"]))
def test_a_kept_bundle_lays_out_only_inside_its_results_and_data_folders(names, twice, unlisted, tmp_path_factory):
    """What `bladefl lay-out` writes lies inside the two folders it was given; anything else is a
    refusal in one line, with nothing written."""
    import hashlib

    from bladefl.experiments.bundles import kept_results

    top = tmp_path_factory.mktemp("lay")
    bundle = top / "bundle" / "inner"
    bundle.mkdir(parents=True)
    files = {}
    for name in names:
        path = bundle / name
        try:
            if not path.resolve().is_relative_to(bundle.resolve()) or name.endswith("/"):
                continue  # a name that is no file of the bundle: listed only
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(name.encode("utf-8", "replace"))
        except (OSError, ValueError):
            continue
        files[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    if unlisted and unlisted not in names and not (bundle / "results").is_file():
        (bundle / unlisted).parent.mkdir(parents=True, exist_ok=True)
        (bundle / unlisted).write_bytes(b"not listed")
    entries = [f'{json.dumps(n)}: {{"bytes": 1, "sha256": "{files.get(n, "0" * 64)}"}}' for n in names]
    if twice:
        entries.append(entries[0])
    (bundle / "MANIFEST.json").write_text('{"files": {' + ", ".join(entries) + "}}")
    before = {p for p in top.rglob("*")}
    with no_hang():
        try:
            kept_results.lay_out(bundle, top / "results", top / "data")
        except (ValueError, OSError) as exc:
            one_line(exc)
            assert {p for p in top.rglob("*")} == before
            return
    written = {p for p in top.rglob("*") if p.is_file()} - before
    for path in written:
        assert path.resolve().is_relative_to((top / "results").resolve()) or \
            path.resolve().is_relative_to((top / "data").resolve()), path
