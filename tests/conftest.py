"""Shared fixtures. Real data is fetched once (offline sources work here) into data/raw."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _a_share_of_the_cores_per_worker() -> None:
    """Each `pytest -n` worker's torch (OpenMP, MKL, OpenBLAS), and the processes it starts, use the
    machine's cores divided among the workers rather than every core each: two workers each spinning
    two OpenMP threads on two cores took the unit tests 1 min 51 s instead of 47 s. Set before torch
    is imported (it reads these once); a value the user set is kept. Not in pytest's main process (its
    environment is the workers'), nor without workers: there torch's default is every core already."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if workers is None:
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = str(max(1, cores // int(workers)))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, threads)


_a_share_of_the_cores_per_worker()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # noqa: ANN001
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI", "").lower() == "true" and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"required test skipped under CI=true: {report.longrepr}"


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The repository's data/raw with both datasets fetched and verified (idempotent)."""
    from filelock import FileLock

    from bladefl.data.fetch import fetch

    root = Path(os.environ.get("BLADEFL_DATA_ROOT", REPO / "data" / "raw"))
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / ".fetch.lock")):  # test workers (pytest -n) fetch one at a time
        for name in ("mnist", "fashion_mnist"):
            fetch(name, root, sources=("existing", "registry"), log=lambda m: None)
    return root


def checkout_files(root: Path) -> list[str]:
    """The checkout's files as the GPU machine receives them and prepare.sh lists them: tracked, and new
    ones git does not ignore (paths relative to ``root``)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                            capture_output=True, check=True).stdout.decode().split("\0")
    return [name for name in listed if name]


def venv_env() -> dict[str, str]:
    """The environment with this interpreter's bin folder first on PATH (snakemake, bladefl)."""
    import sys

    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


# How long a test waits on a subprocess (a workflow, a script, a command) before calling it hung: an hour, far
# beyond what any of them takes on a busy 2-core machine, so no test fails because the machine is slow
# (tests/test_docs.py walks the tests for a shorter one).
HANG_S = 3600


def snakemake(cwd: Path, *args: str, timeout: int = HANG_S):
    import subprocess

    return subprocess.run(["snakemake", "--show-failed-logs", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=venv_env())


def copy_workflow(dest: Path, extra: tuple[str, ...] = ()) -> Path:
    """The workflow's files, as a user's clone has them (its profiles too: Snakemake applies
    profiles/default wherever it finds it), and ``extra`` items of the checkout, copied into ``dest``."""
    import shutil

    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for item in ("workflow", "config", "envs", "notebooks", "profiles", ".test", *extra):
        src = REPO / item
        if src.is_dir():
            shutil.copytree(src, dest / item, ignore=ignore)
        else:
            shutil.copy(src, dest / item)
    return dest


def bare_env() -> dict[str, str]:
    """The environment with no folder holding ``bladefl`` (this interpreter's bin folder included)
    on PATH: as a cluster node or a user who calls ``.venv/bin/snakemake`` directly sees it."""
    import shutil
    import sys

    env = dict(os.environ)
    own = Path(sys.executable).parent
    keep = [p for p in env.get("PATH", "").split(os.pathsep)
            if p and Path(p) != own and not (Path(p) / "bladefl").exists()]
    env["PATH"] = os.pathsep.join(keep)
    assert shutil.which("bladefl", path=env["PATH"]) is None and shutil.which("papermill", path=env["PATH"]) is None
    return env


@pytest.fixture(scope="session")
def smoke(tmp_path_factory) -> Path:
    """The whole workflow once on the smoke config (data, grid, bound, report), in a fresh
    folder with no data: the fetch runs offline from the registries. Run as docs/hpc.md says, through
    ``.venv/bin/snakemake`` with no ``bladefl`` or ``papermill`` on PATH: every rule must find the
    tools of the environment that runs the workflow."""
    return shared_once(tmp_path_factory, "smoke", _run_smoke)


def _run_smoke(work: Path) -> None:
    import subprocess
    import sys

    copy_workflow(work)
    proc = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "--cores", "2", "--show-failed-logs",
                           "--configfile", "config/smoke.yaml"], cwd=work, capture_output=True, text=True,
                          timeout=HANG_S,
                          env=bare_env())
    assert proc.returncode == 0, proc.stderr[-3000:]


def shared_once(tmp_path_factory, name: str, make) -> Path:  # noqa: ANN001 - pytest's factory, a callable
    """A folder ``make(folder)`` fills once for the whole test run: under ``pytest -n`` the workers
    share it (the first builds it under a lock, the others wait and reuse it); a failed build is
    not reused (the next worker tries again and fails the same way)."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # one run's workers share base.parent
    folder, done = shared / f"shared-{name}", shared / f"shared-{name}.done"
    with FileLock(str(shared / f"shared-{name}.lock")):
        if not done.exists():
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def smoke_study(tmp_path_factory, data_root) -> Path:  # noqa: ANN001 - pytest's factory
    """The smoke calibration study (config/calibration_smoke.yaml) run through the workflow once for the whole
    test run: its work folder (the study under results/calibration-smoke/calibration/mnist). Its readers copy
    what they change."""
    def make(work: Path) -> None:
        copy_workflow(work)
        (work / "data").mkdir()
        (work / "data" / "raw").symlink_to(data_root.resolve(), target_is_directory=True)
        proc = snakemake(work, "--cores", "2", "--configfile", "config/calibration_smoke.yaml")
        assert proc.returncode == 0, proc.stderr[-3000:]

    return shared_once(tmp_path_factory, "calibration-smoke", make)


def dry_run_once(tmp_path_factory, *argv: str):  # noqa: ANN001, ANN201 - pytest's factory; a CompletedProcess
    """``snakemake *argv -n`` in a copy of the workflow, run once for the whole test run whichever test
    asks first (the docs' commands and the workflow's tests ask for some of the same dry runs)."""
    import hashlib
    import json
    import subprocess

    args = [a for a in argv if a != "-n"] + ["-n"]

    def make(folder: Path) -> None:
        (folder / "work").mkdir()
        kept = ("reference",) if any(a.startswith("reference/") for a in args) else ()  # a kept bundle's config
        proc = snakemake(copy_workflow(folder / "work", kept), *args, timeout=HANG_S)
        result = {"returncode": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}
        (folder / "result.json").write_text(json.dumps(result))

    folder = shared_once(tmp_path_factory, "dry-" + hashlib.sha256(json.dumps(args).encode()).hexdigest()[:16], make)
    result = json.loads((folder / "result.json").read_text())
    return subprocess.CompletedProcess(["snakemake", *args], result["returncode"], result["stdout"], result["stderr"])


def write_run_folder(folder: Path, seed: int, finals: list[dict], time: dict | None = None) -> Path:
    """A run folder as the engine writes one, for tests of the analyses: per K (1, 2, ...) the given
    final values (train_loss, test_loss, test_accuracy, and any other per_K field), tau and status
    from the time model (default alpha 1, beta 10, t_sum 100), K blocks, and rounds.csv rows 1..K
    that end in those values; returns its summary.json."""
    import json

    from bladefl.fl.timemodel import allocate

    time = {"alpha": 1, "beta": 10, "t_sum": 100, **(time or {})}
    time["K"] = list(range(1, len(finals) + 1))
    per_k, rows = [], ["K,round,tau,status,train_loss,test_loss,test_accuracy"]
    for k, values in enumerate(finals, start=1):
        a = allocate(k, time["alpha"], time["beta"], time["t_sum"])
        if not a.feasible:
            per_k.append({"K": k, "tau": a.tau, "status": "infeasible"})
            rows.append(f"{k},0,{a.tau},infeasible,,,")
            continue
        metrics = [values["train_loss"], values["test_loss"], values["test_accuracy"]]
        per_k.append({"K": k, "tau": a.tau, "status": "ok", "blocks": k, "tip": f"{k:064x}",
                      "training_time": a.training_time, "mining_time": a.mining_time, **values})
        rows += [f"{k},{r},{a.tau},ok," + ",".join(map(repr, metrics)) for r in range(1, k + 1)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps({"config": {"seed": seed, "time": time}, "per_K": per_k}))
    (folder / "rounds.csv").write_text("\n".join(rows) + "\n")
    return folder / "summary.json"
