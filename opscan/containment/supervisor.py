"""Entering the containment: a fresh child contains itself before any project code runs (`enter`),
and the processes that supervise it (NOTE [three processes]): the waiter, init and the worker."""

from __future__ import annotations

import os
import signal
import sys

from opscan.containment import cgroup, limits, rootfs
from opscan.containment.allowlist import Host, generated_files, make_plan
from opscan.containment.landlock import landlock
from opscan.containment.namespaces import (CLONE_NEWIPC, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUSER,
                                           PR_SET_PDEATHSIG, check, drop_capabilities, lib, loopback_up, unshare,
                                           write)
from opscan.containment.policy import HELD, PARTS, ContainmentUnavailable, Held, Policy, child_environment
from opscan.containment.seccomp import no_keyring


# --- entering the containment ------------------------------------------------------------------

def prepare_scratch(parent: str | None = None) -> str:
    """A new scratch folder for one child (the parent removes it with `remove_scratch`)."""
    import tempfile

    return tempfile.mkdtemp(prefix="opscan-scratch-", dir=parent)


def remove_scratch(path: str) -> None:
    """Remove a child's scratch folder, and its cgroup where it had one (NOTE [cgroup delegation])."""
    import shutil

    cgroup.remove(os.path.basename(path.rstrip(os.sep)))
    shutil.rmtree(path, ignore_errors=True)


def enter(policy: Policy, scratch: str, *, then_exec: list[str] | None = None) -> Held:
    """Contain this process (a fresh child, single-threaded, before any project code) and return
    which parts held. With the PID namespace, this process forks: the fork continues as the
    contained child (pid 1 of the new namespace) and this process only waits for it and ends with
    its status, never returning. `then_exec`: a command the contained child execs (parity runs).
    The tree's memory limit is this process's address-space limit (process.py sets --max-memory
    there before it enters; NOTE [tree limits]).
    """
    environ, cwd = dict(os.environ), _cwd()
    env = child_environment(environ, policy, scratch)
    parts: dict[str, str] = {}
    if hasattr(os, "setsid"):
        try:
            os.setsid()   # one process group: killed as one at the end (when there is no PID namespace)
        except OSError:
            pass
    if not sys.platform.startswith("linux"):
        _set_environment(env)
        parts["environment"] = HELD
        reason = f"no namespaces on {sys.platform}"
        parts.update({p: reason for p in PARTS if p not in parts})
        _make_dirs(scratch)
        return _finish(parts, policy, then_exec, env)
    plan = make_plan(policy, scratch, env, Host.current(environ))
    memory = limits.address_space_limit()
    uid, gid = os.getuid(), os.getgid()
    etc = generated_files(uid, gid, env["HOME"])
    _set_environment(env)
    parts["environment"] = HELD
    in_cgroup = cgroup.join(os.path.basename(scratch.rstrip(os.sep)), memory, policy.max_processes)
    try:
        unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC)
        _map_ids(0, uid, 0, gid)   # NOTE [two user namespaces]: root of the namespaces it sets up
    except (ContainmentUnavailable, OSError) as exc:
        reason = f"user namespace refused: {exc}"
        _make_dirs(scratch)
        parts.update(landlock(plan, policy, scratch, reason))
        parts["keyring"] = no_keyring()
        nproc = HELD if in_cgroup else limits.limit_processes(policy.max_processes, uid, user_namespace=False)
        parts["limits"] = HELD if in_cgroup else f"{reason}; {_per_process(nproc, memory)}"
        parts.update({p: reason for p in PARTS if p not in parts})
        drop_capabilities()   # as root: no capability left to the code (mounts, other users' processes)
        return _finish(parts, policy, then_exec, env)
    try:
        loopback_up()
        parts["network"] = HELD
    except OSError as exc:   # the namespace has no route out either way; lo is only down
        parts["network"] = HELD if exc.errno else f"loopback: {exc}"
    root: str | None = None
    try:
        root = rootfs.build(plan, scratch, policy.scratch_size, etc)
        parts["files"] = parts["ipc"] = HELD
    except (ContainmentUnavailable, OSError) as exc:
        rootfs.abandon(scratch)
        parts["files"] = f"the allow-list could not be built ({exc}); the host's files are read-only instead"
        parts["ipc"] = _fallback_files(policy, scratch)
    nproc = HELD if in_cgroup else limits.limit_processes(policy.max_processes, uid, user_namespace=True)
    # NOTE [three processes]: the waiter (outside, reports the status to opscan), init (pid 1 of the
    # new PID namespace: a fresh /proc, reaps, watches the tree's memory, and its end kills
    # everything left in the namespace), and the worker (pid 2) that runs the code. The code never
    # runs as pid 1, which the kernel shields from its own signals (an abort() would be ignored).
    read_end, write_end = os.pipe()
    if os.fork():   # the waiter: ends as the worker ended
        os.close(write_end)
        _wait_and_exit(read_end)
    os.close(read_end)
    try:
        check(lib().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
        if root is not None:
            parts["processes"] = rootfs.enter_root(root, cwd, env["HOME"])
        else:
            parts["processes"] = rootfs.fresh_proc()
    except (ContainmentUnavailable, OSError) as exc:
        parts["processes"] = f"a fresh /proc: {exc}"
        if root is not None:   # the new root could not be entered: the host's files, read-only
            parts["files"] = f"the new root could not be entered ({exc}); the host's files are read-only instead"
            parts["ipc"] = _fallback_files(policy, scratch)
    limits.ipc_limits(policy.scratch_size)
    if uid == 0 and not in_cgroup:
        nproc = limits.limit_pids(policy.max_processes)
    parts["limits"] = HELD if nproc == HELD else f"{nproc}; memory per tree (watched by pid 1)"
    try:
        rootfs.seal_sysctls()   # the limits just set cannot be raised again from inside
    except (ContainmentUnavailable, OSError) as exc:
        parts["limits"] = f"/proc/sys stays writable: {exc}"
    worker = os.fork()
    if worker:   # init
        drop_capabilities()
        _init(worker, write_end, None if in_cgroup else memory)
    os.close(write_end)
    lib().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    try:   # NOTE [two user namespaces]: the code runs as the user's own uid again
        unshare(CLONE_NEWUSER)
        _map_ids(uid, 0, gid, 0)
    except (ContainmentUnavailable, OSError):
        pass   # it then sees itself as uid 0 of the namespace: no capability, nothing more to reach
    parts["keyring"] = no_keyring()
    drop_capabilities()
    return _finish(parts, policy, then_exec, env)


# NOTE [two user namespaces]
# The namespaces are made in a user namespace whose root (uid 0 inside) is the user, because some
# of their settings can be changed only by that root: a PID namespace's pid_max and an IPC
# namespace's SysV limits (kernel.shmmax/shmall) check the writer's uid against the namespace's
# root, not its capabilities, so with the uid mapped to itself nobody could set them. After pid 1
# has set them and made /proc/sys read-only (a bind mount the code cannot undo: it holds no
# capability over the mount namespace), the worker enters a second user namespace, nested, that
# maps the user's uid and gid back to themselves, so the code sees its own uid (`getpass`,
# file owners) and holds no capability over the namespaces above.


def _map_ids(inside_uid: int, outside_uid: int, inside_gid: int, outside_gid: int) -> None:
    write("/proc/self/setgroups", "deny")
    write("/proc/self/uid_map", f"{inside_uid} {outside_uid} 1")
    write("/proc/self/gid_map", f"{inside_gid} {outside_gid} 1")


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:
        return "/"


def _per_process(nproc: str, memory: int | None) -> str:
    """Which limits hold without a per-tree mechanism (the `limits` part's state)."""
    said = "memory per process (the address-space limit)" if memory else "no memory limit"
    return f"{said}; {nproc if nproc != HELD else 'processes per tree'}"


def _fallback_files(policy: Policy, scratch: str) -> str:
    """Where the new root cannot be had: the host's files read-only, the scratch tmpfs, a fresh
    /dev/shm (the `ipc` part's state)."""
    try:
        rootfs.read_only_host(scratch, policy.scratch_size)
    except (ContainmentUnavailable, OSError) as exc:
        _make_dirs(scratch)
        return f"no fresh /dev/shm: {exc}"
    return HELD


def _make_dirs(scratch: str) -> None:
    for sub in ("home", "tmp", "hf_modules"):
        os.makedirs(os.path.join(scratch, sub), exist_ok=True)


def _finish(parts: dict[str, str], policy: Policy, then_exec: list[str] | None, env: dict) -> Held:
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


def _init(worker: int, report: int, memory: int | None) -> None:
    """pid 1 of the namespace: reap every process until the worker ends (ending the whole tree when
    its memory goes over `memory`: NOTE [tree limits]), hand the worker's wait status to the waiter,
    and end (which ends every process left in the namespace)."""
    import struct

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    status = limits.watch(worker, memory)
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
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _suppress():
    import contextlib

    return contextlib.suppress(OSError)


def held_here() -> bool:
    """The function of the child that only checks the containment (process.check_containment)."""
    return True


# --- commands started by opscan (`opscan parity run`) ---------------------------------------------

def command_prefix(policy: Policy, scratch: str) -> list[str]:
    """argv that runs a command contained: `python -m opscan.containment SPEC -- COMMAND...`."""
    import json

    spec = {"pass_env": list(policy.pass_env), "require": policy.require, "writable": list(policy.writable),
            "overlays": list(policy.overlays), "set_env": dict(policy.set_env), "scratch": scratch,
            "scratch_size": policy.scratch_size, "readable": list(policy.readable),
            "max_processes": policy.max_processes}
    return [sys.executable, "-m", "opscan.containment", json.dumps(spec, sort_keys=True), "--"]
