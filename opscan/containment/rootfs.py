"""The contained child's new root: a tmpfs holding only the places of the allow-list (containment/
allowlist.py), bound read-only, the project as an overlay, a scratch tmpfs as /tmp, a /dev of its
own; then pivot_root into it (NOTE [new root])."""

from __future__ import annotations

import os

from opscan.containment.allowlist import DEV_NODES, OVERLAY, RW, Plan, accelerator_nodes, inside
from opscan.containment.namespaces import (MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY, MS_BIND,
                                           MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_PRIVATE, MS_RDONLY, MS_REC, mount,
                                           mount_setattr, pivot_root, umount)
from opscan.containment.policy import ContainmentUnavailable

# NOTE [new root]
# The root is built while the host's is still this process's root (the bind sources are host
# paths), in the mount namespace of the user namespace: a small tmpfs mounted over the child's own
# scratch folder (an empty folder of the host, so the host sees nothing) receives a mount point
# for each place, at the place's real path, and the symlinks on the way. The scratch tmpfs
# (--scratch-size) is the child's /tmp, /var/tmp and /run, and holds the scratch folder at the
# same path it has on the host (HOME, TMPDIR point there), so every write of the child, the
# project's overlay copy included, counts against one size. /proc is mounted by pid 1 of the new
# PID namespace (a proc shows the PID namespace of whoever mounts it), before pivot_root: the
# kernel lets a user namespace mount proc only while a full proc is visible in its mount
# namespace, which the old root still is. pivot_root then makes the tmpfs the root, the old root
# is detached (no path of the host is left to reach), and the tmpfs is made read-only.

ROOT_SIZE = "8m"     # the root tmpfs holds mount points, symlinks and four small /etc files
NOT_PLACES = ("/tmp", "/var/tmp", "/run", "/dev", "/proc")


def build(plan: Plan, scratch: str, scratch_size: int, etc: dict[str, str]) -> str:
    """Build the new root over `scratch` (a host folder) and return it; ContainmentUnavailable
    when a step fails (the caller then detaches it: `abandon`)."""
    root = scratch
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, f"size={ROOT_SIZE},mode=0755")
    tmp = _join(root, "/tmp")
    os.mkdir(tmp)
    mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV, f"size={scratch_size},mode=1777")
    inner = _join(root, scratch)
    if inside(scratch, "/tmp"):
        os.makedirs(inner, mode=0o700)
    else:   # a scratch folder outside /tmp: a folder of the same tmpfs, bound at its path
        os.makedirs(_join(tmp, "/.scratch"), mode=0o700)
        os.makedirs(inner, mode=0o700)
        mount(_join(tmp, "/.scratch"), inner, None, MS_BIND)
    for sub in ("home", "tmp", "hf_modules", "run", ".overlay"):
        os.makedirs(os.path.join(inner, sub), exist_ok=True)
    _bind_dir(tmp, _join(root, "/var/tmp"), writable=True)
    _bind_dir(os.path.join(inner, "run"), _join(root, "/run"), writable=True)
    for index, (path, mode) in enumerate(sorted(plan.places.items())):
        if path in NOT_PLACES or inside(scratch, path):
            continue
        _place(root, inner, index, path, mode)
    for path in plan.hidden:
        _hide(root, path)
    for link, target in plan.links.items():
        where = _join(root, link)
        if not os.path.lexists(where):
            try:
                os.makedirs(os.path.dirname(where), exist_ok=True)
                os.symlink(target, where)
            except OSError:
                pass   # inside a read-only place: the link is there already, as on the host
    etc = {name: text for name, text in etc.items() if not os.path.lexists(_join(root, f"/etc/{name}"))}
    os.makedirs(_join(root, "/etc"), exist_ok=True)
    for name, text in etc.items():
        with open(_join(root, f"/etc/{name}"), "w", encoding="utf-8") as handle:
            handle.write(text)
    _dev(root, scratch_size)
    os.makedirs(_join(root, "/proc"), exist_ok=True)
    return root


def enter_root(root: str, cwd: str, fallback: str) -> str:
    """In pid 1 of the new PID namespace: mount its /proc in `root`, make `root` the root (read-only)
    and go to `cwd` (else `fallback`). Returns the state of the PID part: "held" or why not."""
    state = "held"
    try:
        mount("proc", _join(root, "/proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except ContainmentUnavailable as exc:   # the host's, read-only: the code sees other processes
        state = f"a fresh /proc: {exc}"
        mount("/proc", _join(root, "/proc"), None, MS_BIND | MS_REC)
    pivot_root(root)
    mount_setattr("/", False, set_=MOUNT_ATTR_RDONLY)
    for folder in (cwd, fallback):
        try:
            os.chdir(folder)
            break
        except OSError:
            continue
    return state


def seal_sysctls() -> None:
    """/proc/sys read-only (the namespaces' limits set by pid 1 stay as they are)."""
    mount("/proc/sys", "/proc/sys", None, MS_BIND | MS_REC)
    mount_setattr("/proc/sys", True, set_=MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)


def fresh_proc() -> str:
    """Without a new root: a /proc of the new PID namespace over the host's (in pid 1)."""
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    return "held"


def read_only_host(scratch: str, scratch_size: int) -> None:
    """Where the new root cannot be built: every mount of the host read-only, the scratch folder a
    tmpfs, /dev/shm a fresh tmpfs (what the containment did before the allow-list)."""
    cwd = os.getcwd()
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount_setattr("/", True, set_=MOUNT_ATTR_RDONLY)
    mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, f"size={scratch_size},mode=0700")
    for sub in ("home", "tmp", "hf_modules"):
        os.makedirs(os.path.join(scratch, sub), exist_ok=True)
    if os.path.isdir("/dev/shm"):
        mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"size={scratch_size},mode=1777")
    for device in WRITABLE_DEVICES:   # NOTE [devices that take writes]
        if os.path.exists(device) and not os.path.islink(device):
            mount(device, device, None, MS_BIND)
            mount_setattr(device, False, clear=MOUNT_ATTR_RDONLY)
    os.chdir(cwd)


# NOTE [devices that take writes]
# Writing to /dev/null is how libraries find a file type or drop output: dill, which torch.utils.data
# imports when it is installed, opens /dev/null for writing at import. Where the host is made
# read-only recursively (read_only_host), /dev goes read-only with it and such a library fails
# with EROFS before any model code; /dev/null and /dev/zero are bound again writable there (what
# is written to them vanishes). The child's own /dev (_dev) binds the host's nodes as they are.
WRITABLE_DEVICES = ("/dev/null", "/dev/zero")


def abandon(scratch: str) -> None:
    """Undo a new root that could not be finished (the host's root stays this process's)."""
    try:
        umount(scratch)
    except ContainmentUnavailable:
        pass


def _join(root: str, path: str) -> str:
    return root.rstrip(os.sep) + path


def _place(root: str, inner: str, index: int, path: str, mode: str) -> None:
    where = _join(root, path)
    is_dir = os.path.isdir(path)
    try:
        _mount_point(where, is_dir)
    except OSError:
        return   # inside a read-only place that lacks it: nothing can be mounted there
    if mode == OVERLAY and is_dir:
        upper, work = (os.path.join(inner, ".overlay", str(index), part) for part in ("upper", "work"))
        os.makedirs(upper)
        os.makedirs(work)
        escaped = path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")
        try:
            mount("overlay", where, "overlay", MS_NOSUID | MS_NODEV,
                  f"lowerdir={escaped},upperdir={upper},workdir={work},userxattr")
            return
        except ContainmentUnavailable:
            pass   # no overlay here: bound read-only, writes into the project fail instead of going to a copy
    mount(path, where, None, MS_BIND | MS_REC)
    flags = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (0 if mode == RW else MOUNT_ATTR_RDONLY)
    mount_setattr(where, True, set_=flags)


def _mount_point(where: str, is_dir: bool) -> None:
    if os.path.lexists(where):
        return
    os.makedirs(where if is_dir else os.path.dirname(where), exist_ok=True)
    if not is_dir:
        os.close(os.open(where, os.O_CREAT | os.O_WRONLY, 0o600))


def _bind_dir(source: str, where: str, *, writable: bool) -> None:
    os.makedirs(where, exist_ok=True)
    mount(source, where, None, MS_BIND)
    if not writable:
        mount_setattr(where, False, set_=MOUNT_ATTR_RDONLY)


def _hide(root: str, path: str) -> None:
    """An empty read-only folder or file over `path` (a .git, a token file, ~/.ssh in a given folder)."""
    where = _join(root, path)
    if not os.path.lexists(where):
        return
    if os.path.isdir(where) and not os.path.islink(where):
        mount("tmpfs", where, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "size=4k,mode=0")
        return
    empty = _join(root, "/.empty")
    if not os.path.exists(empty):
        os.close(os.open(empty, os.O_CREAT | os.O_WRONLY, 0o000))
    mount(empty, where, None, MS_BIND)
    mount_setattr(where, False, set_=MOUNT_ATTR_RDONLY)


def _dev(root: str, shm_size: int) -> None:
    """A /dev of the child's own: the safe nodes, the accelerators, its own pts and shm."""
    dev = _join(root, "/dev")
    os.makedirs(dev, exist_ok=True)
    mount("tmpfs", dev, "tmpfs", MS_NOSUID, "size=64k,mode=0755")
    for node in (*(f"/dev/{name}" for name in DEV_NODES), *accelerator_nodes()):
        if not os.path.exists(node):
            continue
        where = _join(root, node)
        _mount_point(where, os.path.isdir(node))
        mount(node, where, None, MS_BIND | MS_REC)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, os.path.join(dev, name))
    os.mkdir(os.path.join(dev, "pts"))
    try:
        mount("devpts", os.path.join(dev, "pts"), "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620")
        os.symlink("pts/ptmx", os.path.join(dev, "ptmx"))
    except ContainmentUnavailable:
        pass   # no terminal devices: nothing a trace needs
    os.mkdir(os.path.join(dev, "shm"))
    mount("tmpfs", os.path.join(dev, "shm"), "tmpfs", MS_NOSUID | MS_NODEV, f"size={shm_size},mode=1777")
    mount_setattr(dev, False, set_=MOUNT_ATTR_RDONLY)
