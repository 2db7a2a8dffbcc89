"""scripts/gpu/deadline.py alone: the hard stop of the GPU script's grid (the script around it:
tests/test_gpu_script.py). No test here bounds a wall time: each waits on a marker or on the exit."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import HANG_S

DEADLINE = Path(__file__).resolve().parents[1] / "scripts/gpu/deadline.py"
# A command that says it started (the marker) and would sleep for long; started with SIGINT and SIGTERM
# ignored (inherited, so from its first instruction: no window in which a signal could still end it).
STUBBORN = "touch {marker}; sleep 600"


def _ignore_sigint_and_sigterm() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _start(seconds: float, command: list[str]) -> subprocess.Popen:
    """deadline.py SECONDS 1 -- COMMAND, itself and so its command started ignoring SIGINT and SIGTERM
    (it only sends them)."""
    return subprocess.Popen([sys.executable, str(DEADLINE), str(seconds), "1", "--", *command],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ignore_sigint_and_sigterm)


def _wait_for(marker: Path, proc: subprocess.Popen) -> None:
    while not marker.exists() and proc.poll() is None:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate()


def test_a_command_that_ends_in_time_gives_its_own_status():
    proc = _start(600, ["bash", "-c", "exit 3"])
    assert proc.wait(timeout=HANG_S) == 3


def test_the_deadline_kills_a_command_that_ignores_sigint_and_sigterm(tmp_path):
    marker = tmp_path / "started"
    proc = _start(0.5, ["bash", "-c", STUBBORN.format(marker=marker)])
    _, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 124, err
    assert "0.5 s reached" in err and "ignored SIGINT and SIGTERM: killed" in err, err
    assert "sleep 600" in err  # named: which job held the stop


# A child that has ended and stays a zombie (its parent, exec'd into `sleep 600`, never waits for it); the
# marker once it is one.
ZOMBIE_PARENT = """import os, pathlib, subprocess, sys
child = subprocess.Popen(["true"])
while open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
    pass
pathlib.Path(sys.argv[1]).touch()
os.execvp("sleep", ["sleep", "600"])
"""


def test_a_zombie_left_in_the_session_is_not_counted_as_a_process_that_ignored_the_stop(tmp_path):
    marker = tmp_path / "started"
    proc = _start(3600, [sys.executable, "-c", ZOMBIE_PARENT, str(marker)])
    _wait_for(marker, proc)
    proc.send_signal(signal.SIGUSR1)
    _, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 124, err
    assert "deadline: 1 processes ignored SIGINT and SIGTERM: killed" in err and "sleep 600" in err, err


def test_sigusr1_stops_the_command_at_once_the_same_way(tmp_path):
    marker = tmp_path / "started"
    proc = _start(3600, ["bash", "-c", STUBBORN.format(marker=marker)])
    _wait_for(marker, proc)  # the command runs: deadline.py has taken SIGUSR1 over before starting it
    proc.send_signal(signal.SIGUSR1)
    _, err = proc.communicate(timeout=HANG_S)  # an hour's deadline: only the stop asked can end it here
    assert proc.returncode == 124, err
    assert "a stop asked (SIGUSR1)" in err and "ignored SIGINT and SIGTERM: killed" in err, err


# A job that detaches itself: a session of its own and its parent gone (so init, or here deadline.py,
# adopts it), ignoring SIGINT and SIGTERM; its pid written once it runs.
DETACHED = "setsid sh -c 'trap \"\" INT TERM; sleep 600 & echo $! > {pidfile}' ; {after}"


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_job_that_detaches_itself_is_stopped_by_the_deadline(tmp_path):
    """Was: a `setsid` job whose parent had exited survived the deadline (no session or parent linked it)."""
    pidfile = tmp_path / "pid"
    proc = _start(1, ["bash", "-c", DETACHED.format(pidfile=pidfile, after="sleep 600")])
    _, err = proc.communicate(timeout=HANG_S)
    pid = int(pidfile.read_text())
    assert proc.returncode == 124 and _gone(pid), err


def test_a_detached_job_left_when_the_command_ends_in_time_is_stopped(tmp_path):
    pidfile = tmp_path / "pid"
    proc = _start(600, ["bash", "-c", DETACHED.format(pidfile=pidfile, after="while [ ! -s " + str(pidfile)
                                                       + " ]; do sleep 0.05; done; exit 4")])
    _, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 4 and _gone(int(pidfile.read_text())), err
    assert "1 processes it detached still ran: stopped" in err
