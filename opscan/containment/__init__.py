"""Containment of the child that runs project code: no secrets, no network, only the files it needs.

Every child that runs a model's or a project's code (containment/process.py `run`, and the training
command of `opscan parity run` through `command_prefix`) enters the containment before any of that
code runs (`enter`). It has seven parts (PARTS), each of which holds or not on a given machine, and
the child says which held (`Held`, one line in the report, `containment` in the JSON):

- environment: the child's variables are an allow-list (`child_environment`: what Python, torch,
  the Hugging Face / torch caches, the locale and the thread pools read), never a name that reads
  as a token, key, password or credential (NOTE [secret names]), credentials inside URL values
  taken out, plus the names of `--pass-env` (as they are). HOME and TMPDIR point into the scratch
  folder. The child starts with the allow-list already (`carried_environment`), and the variables
  it started with are wiped from its memory too, so `/proc/self/environ` shows none of them. Pure
  Python: it holds everywhere.
- network: a new network namespace (only a loopback device, brought up, that reaches nothing
  outside the child). Nothing is patched in Python: `_socket`, ctypes, curl in a subprocess all
  meet the same empty namespace; the machine's Unix sockets are not in its files.
- files: an allow-list (containment/allowlist.py, NOTE [file allow-list]): a new root
  (containment/rootfs.py) that holds only the interpreter, opscan, the system's libraries, the
  caches and what the user named, read-only; the project folder as an overlay whose writes land
  in the scratch folder; the scratch folder a size-limited tmpfs that is also /tmp (SCRATCH_SIZE:
  filling it ends in ENOSPC, not a full disk); the folders the caller names (`Policy.writable`:
  `opscan parity`'s output folder) writable. Never the home folder, the folder above the project
  or a .git folder. Files larger than SCRATCH_SIZE cannot be written at all (RLIMIT_FSIZE).
- ipc: a new IPC namespace (SysV and POSIX queues, shared memory and semaphores end with the
  child; SysV memory capped at the scratch size) and a fresh /dev/shm.
- keyring: a new session keyring and a seccomp filter against the keyring calls
  (containment/seccomp.py, NOTE [keyring]).
- processes: a new PID namespace with a fresh /proc: the code sees no process of the machine
  (not the parent's /proc/PID/environ), and when the child ends every process it started ends
  with it (a daemon cannot outlive it). Without it, the child's process group is killed at the end.
- limits: --max-memory and --max-processes hold for the whole process tree (containment/limits.py,
  NOTE [tree limits]; containment/cgroup.py where the cgroup tree is delegated).

The namespaces are made with the libc `unshare` call (Python 3.11 has no os.unshare) in new user
namespaces, which need no privilege on Linux (NOTE [two user namespaces] in supervisor.py); after
setting them up the child drops every capability it had in them, so the code cannot undo a mount.
Where the platform refuses (macOS, Windows, old kernels, a container whose seccomp profile forbids
user namespaces), the run goes on and `Held` says which parts did not hold and why; on Linux
without user namespaces, Landlock still restricts the child to the same allow-list of files and
refuses TCP where the kernel has it (NOTE [Landlock without namespaces]). `--require-containment`
turns a part that does not hold into exit 2 before any project code runs.

Before any of that, the child is opscan's: it starts as an isolated interpreter that takes the
project's sys.path only once contained (interpreter.py, NOTE [opscan's interpreter until
contained]), holds no descriptor of opscan but its own pipes, and what it sends back is data
decoded by the declared type, never pickle (codec.py, NOTE [data only on the way back]).

The package: policy.py (what the child may have, and what held), allowlist.py (its files),
namespaces.py (the Linux calls through libc), rootfs.py (its new root), landlock.py (what holds
without namespaces), seccomp.py (the keyring filter), limits.py and cgroup.py (the tree's limits),
supervisor.py (`enter`, the processes that watch the child, and `opscan parity run`'s launcher),
interpreter.py (the isolated command line of every child), child.py (the child's side: request,
containment, call, answer), codec.py (the typed JSON between them), children.py (spawn, fork and
forkserver starts, and the end of a child), forkserver.py (the zoo's fork server), process.py (the
parent's side: `run` -> `Ended`), outcome.py (what that end means for a trace). This module
re-exports the public names of the policy, the supervisor, `named_paths` and `landlock_abi`.

Stdlib only; the parent never imports torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opscan.containment.policy import (ALLOWED_NAMES, ALLOWED_PREFIXES, ContainmentUnavailable, HELD, Held,
                                       MAX_PROCESSES, PARTS, PROJECT_CODE_COMMANDS, Policy, READ_ONLY_COMMANDS,
                                       SAFE_NAMES, SCRATCH_SIZE, SECRET_PLACES, SECRET_WORDS, SHORT_SECRET_WORDS,
                                       allowed_name, carried_environment, child_environment, is_secret_name,
                                       not_contained, real_home, strip_credentials)

# The supervisor's, the allow-list's and Landlock's names are imported on first use (PEP 562): a
# run that starts no child (`opscan scan`) carries a Policy and Limits (policy.py) and nothing else
# of the package. Each module that uses them imports them itself (child.py imports `enter` before
# any containment), so no name is first imported inside a contained child.
_LAZY = {"named_paths": "allowlist", "landlock_abi": "landlock", "command_prefix": "supervisor",
         "enter": "supervisor", "held_here": "supervisor", "prepare_scratch": "supervisor",
         "remove_scratch": "supervisor"}


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from opscan.containment.allowlist import named_paths
    from opscan.containment.landlock import landlock_abi
    from opscan.containment.supervisor import command_prefix, enter, held_here, prepare_scratch, remove_scratch

__all__ = [
    "ALLOWED_NAMES", "ALLOWED_PREFIXES", "ContainmentUnavailable", "HELD", "Held", "MAX_PROCESSES", "PARTS",
    "PROJECT_CODE_COMMANDS", "Policy", "READ_ONLY_COMMANDS", "SAFE_NAMES", "SCRATCH_SIZE", "SECRET_PLACES",
    "SECRET_WORDS", "SHORT_SECRET_WORDS", "allowed_name", "carried_environment", "child_environment",
    "command_prefix", "enter", "held_here", "is_secret_name", "landlock_abi", "named_paths", "not_contained",
    "prepare_scratch", "real_home", "remove_scratch", "strip_credentials",
]
