"""The Linux calls of the contained child through libc: unshare, mount, mount_setattr, pivot_root,
the loopback device, capabilities dropped (the file system itself is built by containment/rootfs.py)."""

from __future__ import annotations

import ctypes
import errno
import os

from opscan.containment.policy import ContainmentUnavailable


# --- libc ---------------------------------------------------------------------------------------

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
CLONE_NEWIPC = 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 4096, 16384, 1 << 18
MNT_DETACH = 2
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 0x1, 0x2, 0x4
SYS_MOUNT_SETATTR = {"x86_64": 442, "aarch64": 442}
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT = 1, 38, 24, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

_libc = None


def lib():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def check(result: int, what: str) -> int:
    if result == -1:
        code = ctypes.get_errno()
        raise ContainmentUnavailable(f"{what}: {errno.errorcode.get(code, code)}")
    return result


def unshare(flags: int) -> None:
    check(lib().unshare(ctypes.c_int(flags)), "unshare")


def _enc(s: str | None) -> bytes | None:
    return None if s is None else os.fsencode(s)


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    check(lib().mount(_enc(source), _enc(target), _enc(fstype), ctypes.c_ulong(flags), _enc(data)),
          f"mount {target}")


def umount(target: str) -> None:
    """Detach `target` (MNT_DETACH: at once, even while in use)."""
    check(lib().umount2(_enc(target), ctypes.c_int(MNT_DETACH)), f"umount {target}")


def pivot_root(new_root: str) -> None:
    """Make `new_root` (a mount point) the root of this mount namespace and detach the old root
    (the `pivot_root(".", ".")` form: no folder for the old root is needed)."""
    number = SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise ContainmentUnavailable(f"pivot_root: unknown on {os.uname().machine}")
    os.chdir(new_root)
    check(lib().syscall(ctypes.c_long(number), b".", b"."), "pivot_root")
    umount(".")
    os.chdir("/")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def mount_setattr(path: str, recursive: bool, set_: int = 0, clear: int = 0) -> None:
    number = SYS_MOUNT_SETATTR.get(os.uname().machine)
    if number is None:
        raise ContainmentUnavailable(f"mount_setattr: unknown on {os.uname().machine}")
    attr = _MountAttr(set_, clear, 0, 0)
    check(lib().syscall(ctypes.c_long(number), ctypes.c_int(AT_FDCWD), os.fsencode(path),
                        ctypes.c_uint(AT_RECURSIVE if recursive else 0), ctypes.byref(attr),
                        ctypes.c_size_t(ctypes.sizeof(attr))), f"mount_setattr {path}")


def write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def loopback_up() -> None:
    import fcntl
    import socket
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        raw = fcntl.ioctl(sock, siocgifflags, struct.pack("16sH14x", b"lo", 0))
        flags = struct.unpack("16sH14x", raw)[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


def drop_capabilities() -> None:
    """Give up every capability held (in the new namespaces, or as root without them), for good."""
    libc = lib()
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1 and ctypes.get_errno() == errno.EINVAL:
            break
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)   # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()                   # effective, permitted, inheritable: none
    libc.capget.argtypes = libc.capset.argtypes = None
    libc.capset(ctypes.byref(header), ctypes.byref(data))
