"""Limits on the contained child's whole process tree, memory and processes (NOTE [tree limits]):
what is set, and pid 1's watch of the tree's memory."""

from __future__ import annotations

import os
import signal

from opscan.containment.policy import HELD

# NOTE [tree limits]
# --max-memory used to be RLIMIT_AS of one process: seven processes of 2 GiB each held under 4G.
# --max-processes did not exist: 200 forks went through. Both now hold for the whole tree of the
# child, by the first of these the machine gives:
# 1. cgroup v2 where delegated (containment/cgroup.py): memory.max and pids.max of a cgroup the
#    child enters before anything else; the kernel refuses the allocation or the fork.
# 2. Otherwise, with the namespaces:
#    - processes: RLIMIT_NPROC, which since Linux 5.14 counts the processes and threads of one uid
#      *in one user namespace*, so in the child's new user namespace it counts exactly its tree.
#      Root is exempt from RLIMIT_NPROC (uid 0 is never checked), so for root the PID namespace's
#      own pid_max is set instead (Linux 6.14+, per PID namespace): no pid past it can be given,
#      so the tree has at most pid_max - 1 processes and threads; the kernel's floor for pid_max
#      is 301, so as root the limit is at least 300.
#    - memory: pid 1 of the PID namespace (supervisor.py) sees every process of the tree in its
#      own /proc and adds up their memory every WATCH_SECONDS: the resident anonymous and shared
#      memory (statm, cheap), and, only when that sum is over the limit, the proportional share
#      of each (smaps_rollup Pss_Anon + Pss_Shmem, so pages shared after a fork count once; at
#      most every EXACT_SECONDS, since that costs milliseconds per process).
#      Over the limit, it ends every process of the tree (SIGKILL) and says so on stderr; the
#      child is then reported as killed by SIGKILL (likely out of memory). Between two looks a
#      tree can go over by what it allocates in WATCH_SECONDS; RLIMIT_AS still caps each process.
# 3. Without namespaces: RLIMIT_NPROC counts every process of the user (set to what the user
#    has now plus --max-processes; nothing for root), and memory is per process (RLIMIT_AS):
#    the part is "not held" and says which limit held.
# Memory-backed folders are apart from the processes' memory: the scratch tmpfs and /dev/shm are
# each capped at --scratch-size, and SysV shared memory of the child's IPC namespace too
# (kernel.shmall / shmmax of that namespace, `ipc_limits`).

WATCH_SECONDS = 0.1
EXACT_SECONDS = 0.5   # the proportional shares are read at most this often
PID_MAX_FLOOR = 301


def kernel_at_least(major: int, minor: int, release: str | None = None) -> bool:
    text = release if release is not None else os.uname().release
    numbers = []
    for part in text.split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit()) or "0"
        numbers.append(int(digits[:4]))
    return tuple(numbers) >= (major, minor)


def address_space_limit() -> int | None:
    """This process's RLIMIT_AS (the child's --max-memory, set before it enters), or None."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def limit_processes(count: int, uid: int, *, user_namespace: bool) -> str:
    """Set RLIMIT_NPROC for the tree (`uid`: the user's, outside any namespace); "held" when it
    holds per tree, else which limit holds."""
    import resource

    if uid == 0:
        return "root: RLIMIT_NPROC does not apply"   # the PID namespace's pid_max is set by pid 1
    per_tree = user_namespace and kernel_at_least(5, 14)
    limit = count if per_tree else _user_tasks(uid) + count
    try:
        hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
        limit = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit if hard == resource.RLIM_INFINITY else hard))
    except (ValueError, OSError) as exc:
        return f"RLIMIT_NPROC refused: {exc}"
    return HELD if per_tree else f"processes per user (RLIMIT_NPROC {limit}, the user's processes included)"


def limit_pids(count: int) -> str:
    """In pid 1 of the new PID namespace, as root: its pid_max (NOTE [tree limits]); "held" or why not."""
    if not kernel_at_least(6, 14):
        return "root, Linux before 6.14: no per-namespace pid_max, and RLIMIT_NPROC does not apply to root"
    try:
        with open("/proc/sys/kernel/pid_max", "w", encoding="ascii") as handle:
            handle.write(str(max(count + 1, PID_MAX_FLOOR)))
    except OSError as exc:
        return f"pid_max of the PID namespace refused: {exc.strerror}"
    return HELD


def ipc_limits(size: int) -> None:
    """Cap the SysV shared memory of the child's IPC namespace at `size` bytes (best effort)."""
    page = os.sysconf("SC_PAGE_SIZE")
    for name, value in (("shmmax", size), ("shmall", max(1, size // page))):
        try:
            with open(f"/proc/sys/kernel/{name}", "w", encoding="ascii") as handle:
                handle.write(str(value))
        except OSError:
            pass


def _user_tasks(uid: int) -> int:
    """The processes and threads of `uid` on the machine now (what RLIMIT_NPROC counts without a user namespace)."""
    count = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                count += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
    return count


# --- pid 1's watch of the tree's memory ---------------------------------------------------------

def tree_memory(exact: bool, proc: str = "/proc") -> int:
    """Bytes of memory of every process in `proc` (this PID namespace): resident anonymous and
    shared pages (statm), or with `exact` their proportional share (smaps_rollup)."""
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for pid in os.listdir(proc):
        if not pid.isdigit():
            continue
        try:
            if exact:
                with open(f"{proc}/{pid}/smaps_rollup", "rb") as handle:
                    for line in handle.read().splitlines():
                        if line.startswith((b"Pss_Anon:", b"Pss_Shmem:")):
                            total += int(line.split()[1]) * 1024
            else:
                with open(f"{proc}/{pid}/statm", "rb") as handle:
                    fields = handle.read().split()
                total += int(fields[1]) * page   # resident (anonymous, file and shared)
        except (OSError, ValueError, IndexError):
            continue
    return total


def watch(worker: int, limit: int | None) -> int:
    """pid 1's loop: reap every process until the worker ends, ending the whole tree when its
    memory goes over `limit`; the worker's wait status."""
    import time

    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    exact_at = 0.0
    while True:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return 1 << 8
            if pid == 0:
                break
            if pid == worker:
                return status
        used, now = 0, time.monotonic()
        if limit and now - exact_at >= EXACT_SECONDS and tree_memory(False) > limit:
            exact_at = now   # the cheap sum is over: the proportional shares decide (not at every look)
            shares = tree_memory(True)
            used = shares if shares > limit else 0
        if used:
            import sys

            print(f"opscan: the child's processes used {used / 2**30:.2f} GiB together, over the limit of "
                  f"{(limit or 0) / 2**30:.2f} GiB (--max-memory): all ended", file=sys.stderr, flush=True)
            os.kill(-1, signal.SIGKILL)   # from pid 1: every other process of the namespace
        signal.sigtimedwait({signal.SIGCHLD}, WATCH_SECONDS)
