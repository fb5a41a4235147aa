"""How a child is started (spawn, fork, forkserver) and watched: its pid, the end of it, its stop.

Each start gives the child three of the parent's file descriptors and no other: the request pipe's
read end, the result pipe's write end and where its output goes (the parent's stderr or a log).
`spawn` is a new isolated interpreter (child.isolated_argv); `forkserver` a fork of an isolated
server that preloaded heavy modules (containment/forkserver.py); `fork` a fork of opscan itself,
which closes every other descriptor first (NOTE [a fork of opscan]). All three then run child.call,
which contains the child before it imports anything of the project.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from opscan.containment.child import call
from opscan.containment.interpreter import NEUTRAL_FOLDER, isolated_argv


class Child(Protocol):
    """A started child: its pid, a descriptor readable when it ended (-1: none, poll), its exit code."""

    pid: int
    exit_fd: int

    def poll(self) -> int | None: ...


class Spawned:
    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc, self.pid, self.exit_fd = proc, proc.pid, _pidfd(proc.pid)

    def poll(self) -> int | None:
        return self.proc.poll()


class Forked:
    def __init__(self, pid: int) -> None:
        self.pid, self.exit_fd = pid, _pidfd(pid)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            with contextlib.suppress(ChildProcessError):
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def start(method: str, request_r: int, result_w: int, out: int, env: Mapping[str, str],
          preload: Sequence[str] = ()) -> Child:
    """Start a child that runs child.call on these descriptors (OSError when it cannot be)."""
    if method == "spawn":
        proc = subprocess.Popen(isolated_argv("opscan.containment.child", "call", str(request_r), str(result_w)),
                                pass_fds=(request_r, result_w),
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd=NEUTRAL_FOLDER, env=dict(env))
        return Spawned(proc)
    if method == "forkserver":
        from opscan.containment.forkserver import server_for

        return server_for(preload, env).start(request_r, result_w, out)
    return _fork(request_r, result_w, out)


# NOTE [a fork of opscan]
# `fork` copies opscan itself: its memory (the caller's environment, which containment.enter wipes)
# and every descriptor it holds (a resource tracker's pipe, a cache file, a socket). The child closes
# every descriptor but its three before anything else, and forgets a multiprocessing resource tracker
# it may have inherited, so that its own use of shared memory starts its own tracker instead of
# writing to a descriptor number that now names something else.

def _fork(request_r: int, result_w: int, out: int) -> Forked:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    pid = os.fork()
    if pid == 0:
        try:
            _close_all_but({0, 1, 2, request_r, result_w, out})
            _forget_resource_tracker()
            os.chdir(NEUTRAL_FOLDER)
            call(request_r, result_w, out)
        except BaseException:  # noqa: BLE001 - opscan's own failure in the child: said, never returned from
            import traceback

            traceback.print_exc()
        finally:
            os._exit(70)
    return Forked(pid)


def _close_all_but(keep: set[int]) -> None:
    low = 0
    for fd in sorted(keep):
        if low < fd:   # never an empty range: closerange(n, n) closes every descriptor from n on (close_range)
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, max(low + 1, os.sysconf("SC_OPEN_MAX")))


def _forget_resource_tracker() -> None:
    tracker = sys.modules.get("multiprocessing.resource_tracker")
    instance = getattr(tracker, "_resource_tracker", None)
    if instance is not None:
        instance.__init__()   # no descriptor, no pid: the next use starts a tracker of the child's own


def _pidfd(pid: int) -> int:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return -1


def wait(child: Child, seconds: float) -> int | None:
    """The child's exit code, waiting up to `seconds` for it."""
    deadline = time.monotonic() + seconds
    while True:
        code = child.poll()
        if code is not None or time.monotonic() >= deadline:
            return code
        time.sleep(0.01)


def stop(child: Child) -> None:
    """End the child: SIGTERM, then SIGKILL."""
    for number in (signal.SIGTERM, signal.SIGKILL):
        if child.poll() is not None:
            return
        with contextlib.suppress(OSError):
            os.kill(child.pid, number)
        if wait(child, 3) is not None:
            return


def end_group(child: Child) -> None:
    """Kill what is left of the child's process group (a contained child leads one: containment.enter);
    with the PID namespace its processes die with it anyway (NOTE [processes left behind])."""
    # NOTE [processes left behind]
    # A contained child is pid 1 of its own PID namespace: when it ends, the kernel kills every
    # process in that namespace, so a daemon it forked cannot outlive it. Where there is no PID
    # namespace, the child still leads its own session and process group, which is killed here;
    # only a process that made its own session escapes that (the report says processes: not held).
    if child.pid and hasattr(os, "killpg"):
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL)


def close(child: Child) -> None:
    """Release what watching the child took (its pidfd or status pipe); reap it if it ended."""
    child.poll()
    if child.exit_fd >= 0:
        with contextlib.suppress(OSError):
            os.close(child.exit_fd)
        child.exit_fd = -1
