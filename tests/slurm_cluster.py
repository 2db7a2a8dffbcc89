"""A real one-node SLURM cluster on localhost for tests (Debian's slurmctld, slurmd, munge).

State lives under a temp folder; daemons are started with -D (foreground) as child processes
and stopped by PID in ``stop`` (also on failure, through the context manager). Facts of this
kind of machine that shape it: no cgroups (proctrack/linuxproc, task/none); the slurm-jobstep
plugin strips SLURM_* (SLURM_CONF included) before its inner srun, so an ``srun`` wrapper on
PATH supplies the config; there is no slurmdbd, so Snakemake must use ``squeue`` for status
and MinJobAge must outlast its first status check.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge"]
PARTITION = "debug"  # the cluster's default partition (profiles/slurm names none)


def missing_tools() -> list[str]:
    return [t for t in ("slurmctld", "slurmd", "sbatch", "squeue", "srun", "munged") if shutil.which(t) is None
            and not Path("/usr/sbin", t).exists()]


def install() -> None:
    """apt-get install the daemons when missing (needs root and Debian's package lists)."""
    if not missing_tools():
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "install", "-y", "-q", *PACKAGES], check=False, env=env, capture_output=True)
    if missing_tools():
        subprocess.run(["apt-get", "update", "-q"], check=True, env=env, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-q", *PACKAGES], check=True, env=env, capture_output=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sbin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


class Cluster:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf = root / "slurm.conf"
        self.bin = root / "bin"
        self.procs: list[subprocess.Popen] = []

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf), "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}"}

    def write_config(self) -> None:
        r = self.root
        for d in ("state", "spool", "munge/run", "munge/etc", "munge/lib", "munge/log", "bin"):
            (r / d).mkdir(parents=True, exist_ok=True)
        os.chmod(r / "munge/run", 0o755)
        os.chmod(r / "munge/etc", 0o700)
        (r / "munge/etc/munge.key").write_bytes(os.urandom(1024))
        os.chmod(r / "munge/etc/munge.key", 0o400)
        cpus = os.cpu_count() or 2
        self.conf.write_text(f"""ClusterName=bladefltest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={r}/munge/run/munge.socket.2
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/slurmctld.log
SlurmdLogFile={r}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
ReturnToService=2
MinJobAge=120
NodeName=localhost CPUs={cpus} RealMemory=16000 State=UNKNOWN
PartitionName={PARTITION} Nodes=localhost Default=YES MaxTime=INFINITE State=UP
""")
        srun = self.bin / "srun"
        real = shutil.which("srun") or "/usr/bin/srun"
        srun.write_text(f"#!/bin/sh\nexport SLURM_CONF={self.conf}\nexec {real} \"$@\"\n")
        srun.chmod(0o755)

    def start(self) -> None:
        r = self.root
        self.write_config()
        log = open(r / "daemons.log", "ab")
        self.procs.append(subprocess.Popen(
            [_sbin("munged"), "-F", "--force", f"--socket={r}/munge/run/munge.socket.2",
             f"--key-file={r}/munge/etc/munge.key", f"--pid-file={r}/munge/run/munged.pid",
             f"--log-file={r}/munge/log/munged.log", f"--seed-file={r}/munge/lib/munged.seed"],
            stdout=log, stderr=log))
        self._wait(lambda: (r / "munge/run/munge.socket.2").exists(), "munged socket")
        self.procs.append(subprocess.Popen([_sbin("slurmctld"), "-D", "-i", "-f", str(self.conf)], stdout=log,
                                           stderr=log, env=self.env))
        self.procs.append(subprocess.Popen([_sbin("slurmd"), "-D", "-N", "localhost", "-f", str(self.conf)],
                                           stdout=log, stderr=log, env=self.env))
        self._wait(self._node_idle, "the node to become idle")

    def _node_idle(self) -> bool:
        out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, env=self.env)
        return out.returncode == 0 and out.stdout.strip() in ("idle", "mix", "alloc")

    def _wait(self, ok, what: str, timeout: float = 600) -> None:  # noqa: ANN001 - not a workflow: a daemon up
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(p.poll() is not None for p in self.procs):
                break
            if ok():
                return
            time.sleep(0.5)
        raise RuntimeError(f"local SLURM: timed out waiting for {what}; see {self.root}/daemons.log, "
                           f"{self.root}/slurmctld.log, {self.root}/slurmd.log")

    def stop(self) -> None:
        """Cancel our jobs, then stop every daemon started here, by PID (slurm first, munge last)."""
        if self.procs and self.procs[-1].poll() is None:
            subprocess.run(["scancel", "--user", "root"], env=self.env, check=False, capture_output=True,
                           timeout=30)  # not a workflow
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=20)  # not a workflow: a daemon stopping, then killed
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)  # not a workflow: a daemon stopping, then killed


@contextmanager
def local_cluster(root: Path):
    cluster = Cluster(root)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
