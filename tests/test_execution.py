"""Report notebooks run on kernels of their own: Unix sockets in a private folder (removed after),
never TCP ports two kernels started at once could both be handed; `bladefl run-page` executes and
renders in one step and refuses a parameter file that is not a mapping."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import nbformat
import pytest

from bladefl.report import execution
from conftest import HANG_S, venv_env

PROBE = """\
import json
from ipykernel.connect import get_connection_info
info = get_connection_info(unpack=True)
with open(record, "w") as f:
    json.dump({"transport": info["transport"], "ip": info["ip"], "label": label}, f)
print("probed", label)
"""


def _probe_notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell('record = ""\nlabel = "default"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# probe"), params, nbformat.v4.new_code_cell(PROBE)]
    nbformat.write(nb, path)
    return path


def test_a_notebook_runs_on_a_kernel_with_private_sockets(tmp_path):
    notebook = _probe_notebook(tmp_path / "probe.ipynb")
    record = tmp_path / "record.json"
    out = execution.execute_notebook(notebook, tmp_path / "executed.ipynb",
                                     {"record": str(record), "label": "injected"}, progress_bar=False)
    seen = json.loads(record.read_text())
    assert seen["transport"] == "ipc" and seen["label"] == "injected"
    folder = Path(seen["ip"]).parent
    assert folder.name.startswith("bladefl-kernel-") and not folder.exists()  # private, and removed after
    executed = nbformat.read(out, as_version=4)
    assert any("probed injected" in o.get("text", "") for c in executed.cells for o in c.get("outputs", []))


def test_a_temporary_folder_too_deep_for_a_socket_falls_back(monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", "/scratch/" + "job/" * 30)
    assert execution.socket_parent() == "/tmp"
    monkeypatch.setattr(tempfile, "tempdir", "/var/tmp")
    assert execution.socket_parent() == "/var/tmp"


def test_run_page_executes_and_renders_pages_started_together(tmp_path):
    """Four pages started at once (as report jobs are) all run, each on its own socket folder."""
    notebook = _probe_notebook(tmp_path / "probe.ipynb")
    procs = []
    for i in range(4):
        params = tmp_path / f"p{i}.yaml"
        # run-page takes paths inside the run's folders only (here both are tmp_path): the label is one
        params.write_text(json.dumps({"record": str(tmp_path / f"r{i}.json"), "label": str(tmp_path / f"page{i}")}))
        procs.append(subprocess.Popen(
            ["bladefl", "run-page", str(notebook), "--parameters", str(params), "--executed",
             str(tmp_path / f"e{i}.ipynb"), "--out", str(tmp_path / f"mnist/p{i}.html"), "--index",
             str(tmp_path / "index.html"), "--results-dir", str(tmp_path), "--data-dir", str(tmp_path)],
            env=venv_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for i, proc in enumerate(procs):
        stdout, stderr = proc.communicate(timeout=HANG_S)
        assert proc.returncode == 0, stderr[-2000:]
        assert f"wrote {tmp_path / f'mnist/p{i}.html'}" in stdout
        assert json.loads((tmp_path / f"r{i}.json").read_text())["label"] == str(tmp_path / f"page{i}")
        assert "probe" in (tmp_path / f"mnist/p{i}.html").read_text()
    folders = {Path(json.loads((tmp_path / f"r{i}.json").read_text())["ip"]).parent for i in range(4)}
    assert len(folders) == 4


@pytest.mark.parametrize("content", ["- a\n- b\n", "just text\n", "a: 1\na: 2\n"])
def test_run_page_refuses_parameters_that_are_not_one_mapping(tmp_path, content):
    notebook = _probe_notebook(tmp_path / "probe.ipynb")
    (tmp_path / "p.yaml").write_text(content)
    proc = subprocess.run(["bladefl", "run-page", str(notebook), "--parameters", str(tmp_path / "p.yaml"),
                           "--executed", str(tmp_path / "e.ipynb"), "--out", str(tmp_path / "p.html"),
                           "--index", str(tmp_path / "index.html")], env=venv_env(), capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("error: --parameters ")
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "e.ipynb").exists()
