"""Landlock: what holds where no user namespace can be made (NOTE [Landlock without namespaces])."""

from __future__ import annotations

import ctypes
import os
import sys

from opscan.containment.namespaces import PR_SET_NO_NEW_PRIVS, SYS_MOUNT_SETATTR, lib
from opscan.containment.policy import SECRET_PLACES, Policy


# --- Landlock: what holds without user namespaces ---------------------------------------------------

# NOTE [Landlock without namespaces]
# Where no user namespace can be made (a container's seccomp profile, user.max_user_namespaces=0),
# Linux 5.13+ may still offer Landlock, which needs no privilege: the child restricts itself before
# any project code runs. Writes are allowed only beneath the scratch folder, the writable folders
# and /dev (device files); reads and execution everywhere except the home folder's secret places
# (granted entry by entry along the paths to them, so those places get no rule; listing folders
# stays allowed, so their file names remain visible); TCP connect and bind nowhere (ABI 4+);
# (ABI 6+) no signals to, or abstract unix sockets of, processes outside it. What it does not give,
# the parts say: the scratch folder is on the disk (each file capped by RLIMIT_FSIZE), writes into
# the project fail instead of going to a copy, UDP and other sockets still leave, other processes'
# /proc entries stay readable (as root, the parent's /proc/PID/environ was, in a test), and a
# process that makes its own session outlives the child. So the parts are reported "not held",
# with what Landlock did hold.

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


def landlock(policy: Policy, scratch: str, home: str, why: str) -> dict[str, str]:
    """Restrict this process with Landlock (NOTE [Landlock without namespaces]); the parts' states."""
    abi = landlock_abi()
    if abi < 1:
        return {}
    writes = _LL_WRITE_FILE | _LL_WRITES | (_LL_REFER if abi >= 2 else 0) | (_LL_TRUNCATE if abi >= 3 else 0)
    reads = _LL_READ_FILE | _LL_EXECUTE
    attr = _RulesetAttr(writes | reads | _LL_READ_DIR, 0b11 if abi >= 4 else 0, 0b11 if abi >= 6 else 0)
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
        allow("/", _LL_READ_DIR)
        secrets = [os.path.realpath(os.path.join(home, place)) for place in SECRET_PLACES
                   if os.path.lexists(os.path.join(home, place))]
        _allow_reads_but(os.sep, secrets, lambda path: allow(path, reads))
        for folder in (scratch, *policy.writable):
            allow(folder, writes | reads | _LL_READ_DIR)
        allow("/dev", writes & ~_LL_WRITES | _LL_WRITE_FILE | reads)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
                libc.syscall(ctypes.c_long(_LL_RESTRICT), ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            return {}
    finally:
        os.close(ruleset)
    tcp = "Landlock refuses TCP; UDP and other sockets are not restricted" if abi >= 4 \
        else "Landlock ABI < 4: no network rules"
    return {"network": f"{why}; {tcp}",
            "files": f"{why}; Landlock: writes only in the scratch folder, the home folder's secret places "
                     "unreadable, but the scratch folder is on the disk and writes into the project fail",
            "processes": f"{why}; the child's process group is killed at the end, but a process that makes "
                         "its own session outlives it, and other processes' /proc entries stay readable"}


def _allow_reads_but(folder: str, secrets: list[str], allow) -> None:
    """Call `allow` on every entry of `folder` and below that holds none of `secrets`, never on a
    secret or a folder above one (those are entered instead)."""
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return
    for name in entries:
        path = os.path.join(folder, name)
        if path in secrets or os.path.islink(path):   # a link is checked where it leads: no rule of its own
            continue
        if any(secret.startswith(path.rstrip(os.sep) + os.sep) for secret in secrets):
            _allow_reads_but(path, secrets, allow)
        else:
            allow(path)
