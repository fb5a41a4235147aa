"""Entering the containment: a fresh child contains itself before any project code runs (`enter`),
and the processes that supervise it (NOTE [three processes]): the waiter, init and the worker."""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass
from typing import NoReturn

from opscan.containment import codec
from opscan.containment.interpreter import isolated_argv
from opscan.containment.landlock import landlock
from opscan.containment.namespaces import (CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUSER, MS_NODEV,
                                           MS_NOEXEC, MS_NOSUID, PR_SET_PDEATHSIG, check, drop_capabilities,
                                           files, lib, loopback_up, make_dirs, mount, unshare, write)
from opscan.containment.policy import HELD, PARTS, ContainmentUnavailable, Held, Policy, child_environment, real_home


# --- entering the containment ------------------------------------------------------------------

def prepare_scratch(parent: str | None = None) -> str:
    """A new scratch folder for one child (the parent removes it with `remove_scratch`)."""
    import tempfile

    return tempfile.mkdtemp(prefix="opscan-scratch-", dir=parent)


def remove_scratch(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def enter(policy: Policy, scratch: str, *, then_exec: list[str] | None = None, cwd: str | None = None) -> Held:
    """Contain this process (a fresh child, single-threaded, before any project code) and return
    which parts held. With the PID namespace, this process forks: the fork continues as the
    contained child (pid 1 of the new namespace) and this process only waits for it and ends with
    its status, never returning. `then_exec`: a command the contained child execs (parity runs),
    in the folder `cwd` as the containment shows it.
    """
    environ = dict(os.environ)
    env = child_environment(environ, policy, scratch)
    parts: dict[str, str] = {}
    if hasattr(os, "setsid"):
        try:
            os.setsid()   # one process group: killed as one at the end (when there is no PID namespace)
        except OSError:
            pass
    _set_environment(env)
    parts["environment"] = HELD
    if not sys.platform.startswith("linux"):
        reason = f"no namespaces on {sys.platform}"
        parts.update({p: reason for p in PARTS if p not in parts})
        make_dirs(scratch)
        return _finish(parts, policy, then_exec, env, cwd)
    uid, gid = os.getuid(), os.getgid()
    try:
        unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID)
        write("/proc/self/setgroups", "deny")
        write("/proc/self/uid_map", f"{uid} {uid} 1")
        write("/proc/self/gid_map", f"{gid} {gid} 1")
    except (ContainmentUnavailable, OSError) as exc:
        reason = f"user namespace refused: {exc}"
        make_dirs(scratch)
        parts.update(landlock(policy, scratch, real_home(environ), reason))
        parts.update({p: reason for p in PARTS if p not in parts})
        return _finish(parts, policy, then_exec, env, cwd)
    try:
        loopback_up()
        parts["network"] = HELD
    except OSError as exc:   # the namespace has no route out either way; lo is only down
        parts["network"] = HELD if exc.errno else f"loopback: {exc}"
    try:
        files(policy, scratch, real_home(environ))
        parts["files"] = HELD
    except (ContainmentUnavailable, OSError) as exc:
        parts["files"] = str(exc)
        make_dirs(scratch)
    # NOTE [three processes]: the waiter (outside, reports the status to opscan), init (pid 1 of the
    # new PID namespace: a fresh /proc, reaps, and its end kills everything left in the namespace),
    # and the worker (pid 2) that runs the code. The code never runs as pid 1, which the kernel
    # shields from its own signals (an abort() would be ignored).
    read_end, write_end = os.pipe()
    if os.fork():   # the waiter: ends as the worker ended
        os.close(write_end)
        _wait_and_exit(read_end)
    os.close(read_end)
    try:
        check(lib().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        parts["processes"] = HELD
    except (ContainmentUnavailable, OSError) as exc:
        parts["processes"] = f"a fresh /proc: {exc}"
    worker = os.fork()
    if worker:   # init
        drop_capabilities()
        _init(worker, write_end)
    os.close(write_end)
    lib().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    drop_capabilities()
    return _finish(parts, policy, then_exec, env, cwd)


def _finish(parts: dict[str, str], policy: Policy, then_exec: list[str] | None, env: dict,
            cwd: str | None = None) -> Held:
    held = Held(tuple((p, parts.get(p, "not tried")) for p in PARTS))
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (policy.scratch_size, policy.scratch_size))
    except (ImportError, ValueError, OSError):
        pass
    if then_exec is not None:
        if policy.require and not held.all:
            print(f"opscan: containment required but not had: {held.line()}", file=sys.stderr)
            os._exit(125)
        if cwd is not None:
            try:
                os.chdir(cwd)
            except OSError as exc:
                print(f"opscan: cannot enter the working folder {cwd!r}: {exc}", file=sys.stderr)
                os._exit(126)
        try:
            os.execvpe(then_exec[0], then_exec, env)
        except OSError as exc:
            print(f"opscan: cannot run {then_exec[0]!r}: {exc}", file=sys.stderr)
            os._exit(127 if isinstance(exc, FileNotFoundError) else 126)
    return held


def _set_environment(env: dict[str, str]) -> None:
    """os.environ becomes `env`, and the block the process started with is wiped from its memory
    (so /proc/self/environ holds none of the old variables)."""
    os.environ.clear()
    os.environ.update(env)
    try:   # the interpreter's own copy of the start-up environment (posix.environ / nt.environ)
        native = sys.modules[os.name].environ
        encode = os.fsencode if isinstance(next(iter(native), ""), bytes) else str
        native.clear()
        native.update({encode(k): encode(v) for k, v in env.items()})
    except (KeyError, AttributeError, TypeError):
        pass
    if not sys.platform.startswith("linux"):
        return
    try:
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])   # env_start, env_end (fields 50, 51 of stat)
        if 0 < start < end:
            with open("/proc/self/mem", "r+b", buffering=0) as mem:
                mem.seek(start)
                mem.write(b"\0" * (end - start))
    except (OSError, ValueError, IndexError):
        pass   # the allow-list holds in os.environ either way; only the initial copy stays


def _init(worker: int, report: int) -> None:
    """pid 1 of the namespace: reap every process until the worker ends, hand its wait status to
    the waiter, and end (which ends every process left in the namespace)."""
    import struct

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
        if pid == worker:
            os.write(report, struct.pack("i", status))
            os._exit(0)


def _wait_and_exit(report: int) -> None:
    """The waiter's whole life after the fork: end as the worker ended (its status comes from init)."""
    import struct

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)   # the parent's stop ends the waiter; init and the worker die with it
    data = b""
    while len(data) < 4:
        try:
            chunk = os.read(report, 4 - len(data))
        except InterruptedError:
            continue
        if not chunk:
            break
        data += chunk
    with _suppress():
        os.wait()
    if len(data) < 4:
        os._exit(1)
    status = struct.unpack("i", data)[0]
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number not in (signal.SIGKILL, signal.SIGSTOP):   # those two have no handler to reset
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _suppress():
    import contextlib

    return contextlib.suppress(OSError)


def held_here() -> bool:
    """The function of the child that only checks the containment (process.check_containment)."""
    return True


# --- commands started by opscan (`opscan parity run`) ----------------------------------------------

@dataclass(frozen=True)
class Launch:
    """What the launcher needs: the containment, and the folder the command runs in."""

    policy: Policy
    scratch: str
    cwd: str


def command_prefix(policy: Policy, scratch: str, cwd: str | None = None) -> list[str]:
    """argv that runs a command contained, in `cwd` (default: this process's working folder): an
    isolated interpreter (containment/interpreter.py) whose `main` contains itself, then execs it."""
    spec = codec.dumps(Launch(policy, scratch, cwd or os.getcwd())).decode("ascii")
    return [*isolated_argv("opscan.containment.supervisor", spec), "--"]


def main(argv: list[str]) -> NoReturn:
    """The launcher: `SPEC -- COMMAND...` (command_prefix), run contained; never returns."""
    if len(argv) < 3 or argv[1] != "--":
        print("usage: SPEC -- COMMAND ... (opscan.containment.supervisor.command_prefix)", file=sys.stderr)
        os._exit(2)
    wanted = codec.loads(argv[0].encode(), Launch)
    enter(wanted.policy, wanted.scratch, then_exec=argv[2:], cwd=wanted.cwd)
    raise AssertionError("not reached: enter execs the command")
