"""Landlock: what holds where no user namespace can be made (NOTE [Landlock without namespaces])."""

from __future__ import annotations

import ctypes
import os
import sys

from opscan.containment.allowlist import DEV_NODES, GENERATED, RW, Plan, accelerator_nodes, inside
from opscan.containment.namespaces import PR_SET_NO_NEW_PRIVS, SYS_MOUNT_SETATTR, lib
from opscan.containment.policy import Policy


# --- Landlock: what holds without user namespaces ---------------------------------------------------

# NOTE [Landlock without namespaces]
# Where no user namespace can be made (a container's seccomp profile, user.max_user_namespaces=0),
# Linux 5.13+ may still offer Landlock, which needs no privilege: the child restricts itself before
# any project code runs, with the same allow-list as the new root (NOTE [file allow-list] in
# containment/allowlist.py): reads and execution only beneath its places (a place's hidden paths,
# its .git or token files, are left out by granting its other entries one by one), the host's
# passwd, group, hosts and nsswitch.conf for the ones the new root writes itself, /proc, the safe
# /dev nodes and the accelerators; writes only beneath the scratch folder, the writable folders,
# those nodes and /dev/shm; TCP connect and bind nowhere (ABI 4+); (ABI 6+) no signals to, or
# abstract unix sockets of, processes outside it. Folders outside the places cannot be listed or
# read, but a path's existence still shows (stat is not restricted). What it does not give, the
# parts say: the scratch folder is on the disk (each file capped by RLIMIT_FSIZE, not their sum),
# writes into the project fail instead of going to a copy, UDP and unix sockets still reach out
# (ssh-agent, docker.sock), SysV shared memory, message queues and the host's /dev/shm are shared
# (/dev/shm stays writable: Python's semaphores live there), other processes' /proc entries stay
# readable, and a process that makes its own session outlives the child. So network, files, ipc
# and processes are reported "not held", with what Landlock did hold.

_LL_CREATE, _LL_ADD_RULE, _LL_RESTRICT = 444, 445, 446
_LL_EXECUTE, _LL_WRITE_FILE, _LL_READ_FILE, _LL_READ_DIR = 1, 2, 4, 8
_LL_WRITES = 0x10 | 0x20 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800 | 0x1000   # remove, make_*
_LL_REFER, _LL_TRUNCATE = 1 << 13, 1 << 14


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The Landlock ABI version of this kernel (0: none)."""
    if not sys.platform.startswith("linux") or os.uname().machine not in SYS_MOUNT_SETATTR:
        return 0
    version = lib().syscall(ctypes.c_long(_LL_CREATE), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(0, version)


def landlock(plan: Plan, policy: Policy, scratch: str, why: str) -> dict[str, str]:
    """Restrict this process with Landlock (NOTE [Landlock without namespaces]); the parts' states."""
    abi = landlock_abi()
    if abi < 1:
        return {}
    writes = _LL_WRITE_FILE | _LL_WRITES | (_LL_REFER if abi >= 2 else 0) | (_LL_TRUNCATE if abi >= 3 else 0)
    reads = _LL_READ_FILE | _LL_EXECUTE | _LL_READ_DIR
    attr = _RulesetAttr(writes | reads, 0b11 if abi >= 4 else 0, 0b11 if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    libc = lib()
    ruleset = libc.syscall(ctypes.c_long(_LL_CREATE), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return {}

    def allow(path: str, access: int) -> None:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return
        if not os.path.isdir(path):
            access &= _LL_EXECUTE | _LL_WRITE_FILE | _LL_READ_FILE | (_LL_TRUNCATE if abi >= 3 else 0)
        rule = _PathBeneath(access, fd)
        libc.syscall(ctypes.c_long(_LL_ADD_RULE), ctypes.c_int(ruleset), ctypes.c_int(1), ctypes.byref(rule),
                     ctypes.c_uint32(0))
        os.close(fd)

    try:
        for path, mode in plan.places.items():
            hidden = [h for h in plan.hidden if inside(h, path)]
            access = reads | (writes if mode == RW else 0)
            if hidden:   # its folders stay listable, the files of its hidden paths unreadable
                allow(path, _LL_READ_DIR)
                _allow_reads_but(path, hidden, lambda entry, access=access: allow(entry, access))
            else:
                allow(path, access)
        for name in GENERATED:
            allow(f"/etc/{name}", reads)
        allow("/proc", reads)
        for folder in (scratch, *policy.writable):
            allow(folder, writes | reads)
        for node in (*(f"/dev/{name}" for name in DEV_NODES), "/dev/ptmx", "/dev/pts", *accelerator_nodes()):
            allow(node, _LL_READ_FILE | _LL_WRITE_FILE | (_LL_READ_DIR if os.path.isdir(node) else 0))
        allow("/dev/shm", writes | reads)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
                libc.syscall(ctypes.c_long(_LL_RESTRICT), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return {}
    finally:
        os.close(ruleset)
    tcp = "Landlock refuses TCP; UDP and unix sockets (ssh-agent, docker.sock) are not restricted" if abi >= 4 \
        else "Landlock ABI < 4: no network rules"
    return {"network": f"{why}; {tcp}",
            "files": f"{why}; Landlock: only the allow-list is readable and only the scratch folder writable, "
                     "but the scratch folder is on the disk and writes into the project fail",
            "ipc": f"{why}; SysV shared memory, message queues and the host's /dev/shm are shared",
            "processes": f"{why}; the child's process group is killed at the end, but a process that makes "
                         "its own session outlives it, and other processes' /proc entries stay readable"}


def _allow_reads_but(folder: str, hidden: list[str], allow) -> None:
    """Call `allow` on every entry of `folder` and below that holds none of `hidden`, never on a
    hidden path or a folder above one (those are entered instead)."""
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return
    for name in entries:
        path = os.path.join(folder, name)
        if path in hidden or os.path.islink(path):   # a link is allowed where it leads, not by its own rule
            continue
        if any(inside(h, path) for h in hidden):
            _allow_reads_but(path, hidden, allow)
        else:
            allow(path)
