"""Property-based fuzzing (Hypothesis) of the inputs the workflow's newer commands read as hostile:
group marks, anchor files, YAML nesting and aliases, and where `run --group --computed-in` may move
a run. Each input is taken as what it is or refused in one line naming it, never a traceback of
another kind, never a hang, and a refused move moves nothing. Seeded and bounded like tests/test_fuzz.py."""

from __future__ import annotations

import json
import shutil

import yaml
from hypothesis import given
from hypothesis import strategies as st

from bladefl.chain import anchors
from bladefl.core import strict_yaml
from bladefl.experiments.runs.run_source import group_computed
from test_engine import small_cfg
from test_fuzz import FUZZ, no_hang, one_line
from test_run_source import CELL, _group_copy, _take, computed  # noqa: F401 - the fixture
from test_run_source import finished_run as _finished

JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=70),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)
HEX = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)
ANCHOR = st.fixed_dictionaries({"format": st.sampled_from(["bladefl-anchor/1", "x", 1]), "chains": st.one_of(
    st.dictionaries(HEX | st.text(max_size=70), st.fixed_dictionaries({"tip": HEX | st.text(max_size=70),
                                                                         "blocks": st.integers(-3, 10**9)})
                    | JSON, max_size=3), JSON)})


@FUZZ
@given(st.one_of(JSON.map(json.dumps), st.binary(max_size=1200).map(lambda b: b.decode("latin-1")),
                 st.integers(-5, 10**6).map(lambda n: json.dumps({"runs": n})),
                 st.integers(0, 9).map(lambda n: f'{{"runs": {n}, "runs": {n + 1}}}')))
def test_a_group_mark_is_a_whole_count_or_one_line(text):
    from tempfile import TemporaryDirectory

    with TemporaryDirectory() as folder, no_hang():
        path = f"{folder}/g.done"
        with open(path, "w", encoding="latin-1") as f:
            f.write(text)
        try:
            computed_runs = group_computed(path)
        except ValueError as exc:
            assert one_line(exc).startswith("--group")
            return
        record = json.loads(text)
        assert {"runs"} <= set(record) <= {"runs", "seconds"} and type(record["runs"]) is int
        assert computed_runs == (record["runs"] > 0)
        assert text.count('"runs"') == 1  # a key given twice is never taken


@FUZZ
@given(st.one_of(ANCHOR.map(json.dumps), JSON.map(json.dumps), st.text(max_size=300)),
       st.booleans())
def test_an_anchor_file_is_its_chains_or_one_line(text, twice):
    from tempfile import TemporaryDirectory

    if twice and text.startswith('{"format"'):  # the same chain named twice: the wrong tip first
        text = text[:-1] + ', "chains": {}}'
    with TemporaryDirectory() as folder, no_hang():
        path = f"{folder}/a.json"
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            chains = anchors.read(path)
        except anchors.AnchorError as exc:
            assert one_line(exc).startswith("--anchor")
            return
        assert text.count('"chains"') == 1
        for cid, entry in chains.items():
            assert len(cid) == 64 and set(entry) == {"tip", "blocks"} and entry["blocks"] >= 1


SCALAR = st.sampled_from(["1", "x", "'a'", "null", "{}", "[]"])


@st.composite
def yaml_texts(draw):
    """Deep flow and block nesting, anchors and aliases of aliases, as a hostile file writes them."""
    kind = draw(st.sampled_from(["flow", "block", "dashes", "aliases", "mixed"]))
    depth = draw(st.integers(1, 400))
    if kind == "flow":
        return "k: " + "[" * depth + draw(SCALAR) + "]" * draw(st.integers(0, depth))
    if kind == "block":
        return "".join(" " * (2 * i) + f"k{i}:\n" for i in range(depth)) + " " * (2 * depth) + "v: 1\n"
    if kind == "dashes":
        return "- " * depth + draw(SCALAR)
    width, levels = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    parts = ["&a0 [" + ", ".join(["1"] * width) + "]"]
    parts += [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    text = "k: [" + ", ".join(parts) + "]"
    return text if kind == "aliases" else text + "\nd: " + "[" * min(depth, 60) + "1" + "]" * min(depth, 60)


@FUZZ
@given(yaml_texts())
def test_yaml_of_any_depth_or_expansion_is_read_or_refused_at_once(text):
    with no_hang(5):
        try:
            data = strict_yaml.load(text)
        except strict_yaml.OversizeError as exc:
            one_line(exc)
            return
        except yaml.YAMLError:
            return  # not YAML: its reader's error, which the callers turn into one line
        assert strict_yaml.expanded_size(data) <= strict_yaml.MAX_VALUES


PARTS = ["results", "groups", "paper", "mnist_N4_block0", "mnist", CELL, "seed~5", "runs", "x", ".."]


@FUZZ
@given(st.lists(st.sampled_from(PARTS), min_size=1, max_size=8))
def test_a_group_move_to_any_folder_moves_whole_or_nothing(computed, tmp_path_factory, parts):  # noqa: F811
    """Wherever --out points (the run itself, inside it, its parents, the group's folder, beside it
    through ..), the move either leaves a whole finished run at --out and nothing at the source, or
    is refused in one line with every file where it was."""
    import contextlib
    import io

    tmp = tmp_path_factory.mktemp("move")
    src, cfg, mark = _group_copy(computed, tmp)
    files = sorted(p.relative_to(src).as_posix() for p in src.rglob("*"))
    everything = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*"))
    out = tmp.joinpath(*parts)
    err = io.StringIO()
    with no_hang(), contextlib.redirect_stderr(err):
        code = _take(src, cfg, mark, out)
    if code == 0:
        assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == files and not src.exists()
        assert _finished(out, small_cfg(time={"K": [2]}, seed=5))
    else:
        assert code == 2 and len(err.getvalue().strip().splitlines()) == 1, err.getvalue()
        assert sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*")) == everything
    shutil.rmtree(tmp)


@FUZZ
@given(st.text(max_size=80), st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True), min_size=1,
                                       max_size=4, unique=True))
def test_a_profile_written_from_any_config_name_reads_back_as_its_rules_only(target, rules):
    """`bladefl resources --for NAME`: whatever NAME holds (newlines, U+2028, quotes, `$( )`, YAML), the
    profile is YAML whose only key is set-resources, holding exactly the measured rules."""
    from bladefl.experiments.runs.job_resources import Need, Scaled, profile_text

    found = [Need(r, 2, 30.0, 500.0) for r in rules]
    scaled = [Scaled(rules[0], 2, 10.0, 1e-6, 400.0, 8, 60.0, 900.0),
              Scaled("not_measured", 1, 0, 0, 0, 1, 0, 0, why=f"not sized: {target}")]
    text = profile_text(found, 1.5, scaled, target)
    read = yaml.safe_load(text)
    assert set(read) == {"set-resources"} and set(read["set-resources"]) == set(rules)
    assert all(line.startswith("#") for line in text.splitlines() if not line.startswith(("set-resources", "  ")))
