"""The Linux namespaces of the contained child through libc: unshare, mounts (read-only, scratch
tmpfs, the project's overlay, secret places covered), the loopback device, capabilities dropped."""

from __future__ import annotations

import ctypes
import errno
import os

from opscan.containment.policy import SECRET_PLACES, ContainmentUnavailable, Policy


# --- libc ---------------------------------------------------------------------------------------

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 4096, 16384, 1 << 18
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
MOUNT_ATTR_RDONLY = 0x1
SYS_MOUNT_SETATTR = {"x86_64": 442, "aarch64": 442}
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


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(s: str | None) -> bytes | None:
        return None if s is None else os.fsencode(s)

    check(lib().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {target}")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _mount_setattr(path: str, recursive: bool, set_: int = 0, clear: int = 0) -> None:
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


def make_dirs(scratch: str) -> None:
    for sub in ("home", "tmp", "hf_modules"):
        os.makedirs(os.path.join(scratch, sub), exist_ok=True)


def loopback_up() -> None:
    import fcntl
    import socket
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        raw = fcntl.ioctl(sock, siocgifflags, struct.pack("16sH14x", b"lo", 0))
        flags = struct.unpack("16sH14x", raw)[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


# NOTE [devices that take writes]
# The root is made read-only recursively, /dev with it; but writing to /dev/null is how libraries
# find a file type or drop output (dill, which torch.utils.data imports when it is installed, opens
# /dev/null for writing at import), and a read-only /dev/null fails them with EROFS before any
# model code. /dev/null and /dev/zero are bound again writable: what is written there vanishes.
WRITABLE_DEVICES = ("/dev/null", "/dev/zero")


def files(policy: Policy, scratch: str, home: str) -> None:
    """The mount namespace: everything read-only, scratch a tmpfs, the project an overlay into it,
    secret places covered, the writable folders bound again writable."""
    cwd = os.getcwd()
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount_setattr("/", True, set_=MOUNT_ATTR_RDONLY)
    mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, f"size={policy.scratch_size},mode=0700")
    make_dirs(scratch)
    # the writable folders, opened before an overlay of a folder above them could hide them
    real = {folder: os.open(folder, os.O_PATH | os.O_DIRECTORY) for folder in dict.fromkeys(policy.writable)
            if os.path.isdir(folder)}
    for index, folder in enumerate(dict.fromkeys(policy.overlays)):
        if not os.path.isdir(folder) or _inside(folder, scratch):
            continue
        upper, work = (os.path.join(scratch, ".overlay", str(index), part) for part in ("upper", "work"))
        os.makedirs(upper)
        os.makedirs(work)
        escaped = folder.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")
        try:
            mount("overlay", folder, "overlay", 0, f"lowerdir={escaped},upperdir={upper},workdir={work},userxattr")
        except ContainmentUnavailable:
            pass   # writes into the folder then fail (read-only) instead of going to a copy
    for folder, fd in real.items():
        mount(f"/proc/self/fd/{fd}", folder, None, MS_BIND | MS_REC)
        _mount_setattr(folder, False, clear=MOUNT_ATTR_RDONLY)
        os.close(fd)
    if os.path.isdir("/dev/shm"):
        mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=268435456,mode=1777")
    for device in WRITABLE_DEVICES:   # NOTE [devices that take writes]
        if os.path.exists(device) and not os.path.islink(device):
            mount(device, device, None, MS_BIND)
            _mount_setattr(device, False, clear=MOUNT_ATTR_RDONLY)
    os.chdir(cwd)   # the working folder as mounted now (an overlay's writes go to the copy)
    for place in SECRET_PLACES:
        path = os.path.join(home, place)
        if os.path.isdir(path) and not os.path.islink(path):
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "size=4096,mode=0")
        elif os.path.lexists(path):
            mount("/dev/null", os.path.realpath(path), None, MS_BIND)
            _mount_setattr(os.path.realpath(path), False, set_=MOUNT_ATTR_RDONLY)


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def drop_capabilities() -> None:
    """Give up every capability held in the new namespaces, for good (no mount can be undone)."""
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
