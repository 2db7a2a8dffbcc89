"""What a result records of the code that made it: this project's own commit, never another's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import bladefl
from bladefl import __version__
from bladefl.experiments.runs import provenance
from conftest import HANG_S, write_run_folder

SRC = Path(bladefl.__file__).resolve().parents[1]  # <checkout>/src


def _version_of_copy(where: Path, env: dict[str, str]) -> str:
    code = "from bladefl.experiments.runs.provenance import code_version; print(code_version())"
    out = subprocess.run([sys.executable, "-c", code], cwd=where, env={**env, "PYTHONPATH": str(where / "src")},
                         capture_output=True, text=True, timeout=HANG_S, check=True)
    return out.stdout.strip()


def test_a_copy_inside_another_checkout_records_the_package_version_not_that_checkouts_commit(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a", "-C", str(other)]
    subprocess.run([*git, "init", "-q"], check=True)
    (other / "x.txt").write_text("x")
    subprocess.run([*git, "add", "x.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    foreign = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    shutil.copytree(SRC / "bladefl", other / "copy" / "src" / "bladefl",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != provenance.VERSION_VARIABLE}
    version = _version_of_copy(other / "copy", env)
    assert version == __version__ and foreign not in version
    given = _version_of_copy(other / "copy", {**env, provenance.VERSION_VARIABLE: "abc1234"})
    assert given == f"{__version__}+abc1234"


def test_the_version_is_taken_once_per_process(monkeypatch):
    provenance.code_version.cache_clear()
    calls = []
    real = subprocess.run
    monkeypatch.setattr(provenance.subprocess, "run", lambda *a, **k: calls.append(a) or real(*a, **k))
    first = [provenance.code_version() for _ in range(5)]
    assert len(set(first)) == 1 and len(calls) <= 1
    provenance.code_version.cache_clear()


def test_each_run_records_its_device_and_the_front_page_names_hosts_and_devices(tmp_path):
    import json

    from bladefl.report import bundle_design, views

    assert provenance.device_name("cpu").startswith("cpu (")
    assert provenance.record("mnist", None, "cpu")["device"] == provenance.device_name("cpu")
    paths = []
    for seed, device in ((0, "NVIDIA H100 80GB HBM3"), (1, None)):  # run folders as the engine writes them
        path = write_run_folder(tmp_path / f"runs/mnist/cell/seed~{seed}", seed,
                                [{"train_loss": 1.0, "test_loss": 1.1, "test_accuracy": 0.5}])
        prov = {"code_version": "0.1.0+abc", "host": "gpu1", **({"device": device} if device else {})}
        path.write_text(json.dumps({**json.loads(path.read_text()), "provenance": prov, "seconds": {"total": 2.0}}))
        paths.append(path)
    table = views.provenance(paths)
    assert list(table.device.fillna("-")) == ["NVIDIA H100 80GB HBM3", "-"]
    line = bundle_design.provenance_line({"mnist": table}, [], [0, 1])
    assert "2 runs on gpu1 (NVIDIA H100 80GB HBM3), 4 s of run time" in line
    bare = bundle_design.provenance_line({"mnist": table.drop(columns="device")}, [], [0, 1])
    assert "(" not in bare.split("runs on")[1]


def test_the_provenance_line_writes_consecutive_seeds_as_a_range():
    from bladefl.report.bundle_design import seed_span

    assert seed_span(range(20)) == "0-19" and seed_span([5, 6, 7]) == "5-7"
    assert seed_span([0]) == "[0]" and seed_span([0, 1]) == "[0, 1]" and seed_span([0, 2, 3]) == "[0, 2, 3]"


def test_the_pages_style_is_plain_text_and_folds_each_statements_evidence_onto_its_line():
    """A CSS escape written into a Python string once became a control character on the page (an octal
    escape): the style holds printable characters only, and a folded evidence stays on its line."""
    from bladefl.report.front_page import STYLE

    assert all(c.isprintable() or c == "\n" for c in STYLE)
    assert ".statements details:not([open]){display:inline" in STYLE and 'content:"\u25b8 "' in STYLE
