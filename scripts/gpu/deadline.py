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


def session_processes(sid: int, root: int) -> list[int]:
    """Every process still running in session ``sid`` or descended from ``root`` (read from /proc); a
    zombie (state Z) has ended, and only waits for its parent: it is no process to stop."""
    parents: dict[int, int] = {}
    members, zombies = set(), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid, session = int(entry), int(fields[1]), int(fields[3])
        parents[pid] = ppid
        if fields[0] == "Z":
            zombies.add(pid)
        if session == sid:
            members.add(pid)
    me = os.getpid()
    for pid in list(parents):  # descendants of the root, or adopted here, that left its session (setsid)
        p, seen = pid, set()
        while p in parents and p not in seen:
            if p in (root, me):
                members.add(pid)
                break
            seen.add(p)
            p = parents[p]
    members -= zombies | {os.getpid()}
    return sorted(members)


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
    for pid in _zombie_children():
        if pid != command:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _zombie_children() -> list[int]:
    me, out = os.getpid(), []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if entry.isdigit() and fields[0] == "Z" and int(fields[1]) == me:
            out.append(int(entry))
    return out


def stop(pids_of, grace: float) -> list[int]:  # noqa: ANN001 - a function listing the processes left
    """SIGTERM to every process ``pids_of()`` lists, then SIGKILL to those left after ``grace`` (at
    most 5 s); returns those killed."""
    left = pids_of()
    if not left:
        return []
    signal_all(left, signal.SIGTERM)
    time.sleep(min(5.0, grace))
    left = pids_of()
    signal_all(left, signal.SIGKILL)
    return left


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
        adopted = stop(lambda: session_processes(proc.pid, os.getpid()), grace)
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
    left = session_processes(proc.pid, proc.pid)
    if left:
        signal_all(left, signal.SIGTERM)
        time.sleep(min(5.0, grace))
        reap_adopted(proc.pid)
        left = session_processes(proc.pid, proc.pid)
        if left:
            print(f"deadline: {len(left)} processes ignored SIGINT and SIGTERM: killed ({named(left)})",
                  file=sys.stderr, flush=True)
            signal_all(left, signal.SIGKILL)
    reap_adopted(proc.pid)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    return 124


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
