"""Run a command with a hard deadline (scripts/gpu/run.sh's grid): the command runs in a session of its
own; at SECONDS it gets SIGINT (Snakemake stops scheduling and asks its jobs to stop), after GRACE more
seconds every process left in its session or below it gets SIGTERM, and 5 seconds later SIGKILL. So
the call ends by SECONDS + GRACE + 5 whatever its jobs do (a job that ignores SIGINT and SIGTERM
included) and the script packs what finished before the machine's own limit. SIGUSR1 to this process
stops the command the same way at once (a grid stopped early by hand still packs what finished).
This process is the command's subreaper (Linux's PR_SET_CHILD_SUBREAPER): a job that detaches itself
(a session of its own, its parent gone) is adopted here instead of by init, so it is found and stopped
too, and any such process still running when the command ends in time is stopped then.

    deadline.py SECONDS GRACE -- COMMAND [ARG ...]

Exits with the command's status, or 124 when the deadline stopped it (as timeout(1) does)."""
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable


def processes() -> dict[int, tuple[str, int, int]]:
    """Every process of the machine from /proc: pid -> (state, parent's pid, session)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        out[int(entry)] = (fields[0], int(fields[1]), int(fields[3]))
    return out


def session_processes(sid: int, root: int) -> list[int]:
    """Every process still running in session ``sid`` or descended from ``root`` or from this process (read
    from /proc); a zombie (state Z) has ended, and only waits for its parent: it is no process to stop."""
    table = processes()
    parents = {pid: ppid for pid, (_, ppid, _) in table.items()}
    members = {pid for pid, (_, _, session) in table.items() if session == sid}
    me = os.getpid()
    for pid in parents:  # descendants of the root, or adopted here, that left its session (setsid)
        p, seen = pid, set()
        while p in parents and p not in seen:
            if p in (root, me):
                members.add(pid)
                break
            seen.add(p)
            p = parents[p]
    return sorted(pid for pid in members if table[pid][0] != "Z" and pid != me)


def command_line(pid: int) -> str | None:
    """The command line of process ``pid``, its arguments joined by spaces (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return None


def named(pids: list[int], most: int = 5) -> str:
    """``pid command`` of the first ``most`` processes (their command lines cut at 60 characters)."""
    names = [f"{pid} {(command_line(pid) or '?')[:60]}" for pid in pids[:most]]
    return "; ".join(names) + ("; ..." if len(pids) > most else "")


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt the command's orphaned descendants (Linux; False where the kernel or libc refuses)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def reap_adopted(command: int) -> None:
    """Collect the exit of every adopted process that has ended (not the command's own: Popen's)."""
    me = os.getpid()
    for pid, (state, ppid, _) in processes().items():
        if state == "Z" and ppid == me and pid != command:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def stop(command: int, grace: float, killing: Callable[[list[int]], None] | None = None) -> list[int]:
    """SIGTERM to every process of the command's session or below it, then SIGKILL to those left after
    ``grace`` (at most 5 s), ``killing`` told of them first; returns the processes found at the start."""
    found = session_processes(command, command)
    if not found:
        return []
    signal_all(found, signal.SIGTERM)
    time.sleep(min(5.0, grace))
    reap_adopted(command)
    left = session_processes(command, command)
    if left:
        if killing is not None:
            killing(left)
        signal_all(left, signal.SIGKILL)
    return found


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    seconds, grace = float(argv[0]), float(argv[1])
    asked = threading.Event()
    signal.signal(signal.SIGUSR1, lambda *_: asked.set())
    become_subreaper()
    proc = subprocess.Popen(argv[3:], start_new_session=True)
    end = time.monotonic() + max(seconds, 0.0)
    while (rc := proc.poll()) is None and not asked.is_set() and time.monotonic() < end:
        asked.wait(min(0.5, max(end - time.monotonic(), 0.0)))
        reap_adopted(proc.pid)
    if rc is not None:
        adopted = stop(proc.pid, grace)
        if adopted:
            print(f"deadline: the command ended, {len(adopted)} processes it detached still ran: stopped",
                  file=sys.stderr, flush=True)
        reap_adopted(proc.pid)
        return rc
    why = "a stop asked (SIGUSR1)" if asked.is_set() else f"{seconds:g} s reached"
    print(f"deadline: {why}: SIGINT to the command, then its processes stopped after {grace:g} s",
          file=sys.stderr, flush=True)
    signal_all(session_processes(proc.pid, proc.pid), signal.SIGINT)
    end = time.monotonic() + grace
    while time.monotonic() < end and (proc.poll() is None or session_processes(proc.pid, proc.pid)):
        time.sleep(0.2)
        reap_adopted(proc.pid)
    stop(proc.pid, grace, lambda left: print(f"deadline: {len(left)} processes ignored SIGINT and SIGTERM: killed "
                                              f"({named(left)})", file=sys.stderr, flush=True))
    reap_adopted(proc.pid)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    return 124


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
