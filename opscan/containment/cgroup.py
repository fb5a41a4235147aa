"""cgroup v2 limits on the contained child's whole process tree, where the user's part of the
cgroup tree is delegated (NOTE [cgroup delegation]); nothing is done elsewhere."""

from __future__ import annotations

import os

# NOTE [cgroup delegation]
# A cgroup may be used by an unprivileged process only where it is delegated: systemd's user
# manager (`user@UID.service`, `systemd-run --user --scope -p Delegate=yes`), a container given
# its own cgroup namespace with a writable cgroup2 mount, or root on a cgroup2 host. cgroup v2
# forbids processes in a cgroup whose controllers are enabled for its children, so opscan's own
# cgroup cannot get a child with a memory limit; its parent can, when the parent is delegated to
# the user (owned by it; for root, marked delegated by systemd, never a system slice merely
# because root may write it) and already enables `memory` and `pids` for its children. Then each contained child makes a
# sibling cgroup of opscan's (`opscan-<scratch folder name>`), sets memory.max (the --max-memory
# of the child: the whole tree, the tmpfs pages it writes included), memory.swap.max 0,
# memory.oom.group (an OOM kill ends the whole tree) and pids.max (--max-processes), and moves
# itself there before making its namespaces, so every process it starts is inside. The parent
# removes that cgroup after the child ended (`remove`, from supervisor.remove_scratch). cgroup v1,
# and a cgroup tree that is not delegated, are left alone: the limits then come from
# containment/limits.py (NOTE [tree limits]).

CONTROLLERS = ("memory", "pids")


def mount_point(mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """Where the cgroup2 hierarchy is mounted (its root, not a subtree), or None."""
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if " - cgroup2 " in line and len(fields) > 4 and fields[3] == "/":
            return fields[4].replace("\\040", " ")
    return None


def own_cgroup(cgroup_file: str = "/proc/self/cgroup") -> str | None:
    """This process's cgroup v2 path (the `0::` line), or None."""
    try:
        with open(cgroup_file, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            return line[3:] or "/"
    return None


def delegated_parent(fs: str | None, own: str | None, uid: int | None = None) -> str | None:
    """The folder where sibling cgroups with memory and pids limits can be made, or None."""
    if not fs or not own or own == "/":
        return None
    parent = os.path.dirname(os.path.join(fs, own.lstrip("/")).rstrip("/"))
    try:
        with open(os.path.join(parent, "cgroup.subtree_control"), encoding="utf-8") as handle:
            enabled = set(handle.read().split())
    except OSError:
        return None
    if not set(CONTROLLERS) <= enabled or not os.access(parent, os.W_OK | os.X_OK) \
            or not os.access(os.path.join(parent, "cgroup.procs"), os.W_OK) or not _delegated(parent, uid):
        return None
    return parent


def _delegated(folder: str, uid: int | None) -> bool:
    """Whether `folder` is given to this user: owned by it, or (root, who may write anywhere) marked
    delegated by systemd (the `trusted.delegate` / `user.delegate` attribute); never a slice of the
    system's merely because root can write it."""
    uid = os.getuid() if uid is None else uid
    try:
        if uid != 0:
            return os.stat(folder).st_uid == uid
        return any(_has_attribute(folder, name) for name in ("trusted.delegate", "user.delegate"))
    except OSError:
        return False


def _has_attribute(folder: str, name: str) -> bool:
    try:
        return os.getxattr(folder, name) not in (b"", b"0")
    except OSError:
        return False


def join(name: str, memory: int | None, processes: int, *, fs: str | None = None, own: str | None = None,
         uid: int | None = None) -> str | None:
    """Make the child's cgroup `name` with its limits and move this process into it: its path, or
    None where the cgroup tree is not delegated (or any step fails; nothing is left behind)."""
    parent = delegated_parent(fs if fs is not None else mount_point(), own if own is not None else own_cgroup(),
                              uid)
    if parent is None:
        return None
    group = os.path.join(parent, name)
    try:
        os.mkdir(group)
    except OSError:
        return None
    try:
        _write(group, "pids.max", str(processes))
        _write(group, "memory.max", str(memory) if memory else "max")
        for setting, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
            try:
                _write(group, setting, value)
            except OSError:
                pass   # no swap accounting, or an older kernel: the memory.max holds without them
        _write(group, "cgroup.procs", "0")
    except OSError:
        _remove(group)
        return None
    return group


def remove(name: str, *, fs: str | None = None, own: str | None = None, uid: int | None = None) -> None:
    """End what is left in the child's cgroup `name` and remove it (nothing when there is none)."""
    parent = delegated_parent(fs if fs is not None else mount_point(), own if own is not None else own_cgroup(),
                              uid)
    if parent is not None and os.path.isdir(os.path.join(parent, name)):
        _remove(os.path.join(parent, name))


def _remove(group: str) -> None:
    try:
        _write(group, "cgroup.kill", "1")
    except OSError:
        pass
    for _ in range(50):
        try:
            os.rmdir(group)
            return
        except FileNotFoundError:
            return
        except OSError:
            import time

            time.sleep(0.02)   # the killed processes are still leaving


def _write(group: str, name: str, value: str) -> None:
    with open(os.path.join(group, name), "w", encoding="utf-8") as handle:
        handle.write(value)
