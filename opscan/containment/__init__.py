"""Containment of the child that runs project code: no secrets, no network, only the files it needs.

Every child that runs a model's or a project's code (containment/process.py `run`, and the training
command of `opscan parity run` through `command_prefix`) enters the containment before any of that
code runs (`enter`). It has seven parts (PARTS), each of which holds or not on a given machine, and
the child says which held (`Held`, one line in the report, `containment` in the JSON):

- environment: the child's variables are an allow-list (`child_environment`: what Python, torch,
  the Hugging Face / torch caches, the locale and the thread pools read), never a name that reads
  as a token, key, password or credential, plus the names of `--pass-env`. HOME and TMPDIR point
  into the scratch folder. The variables the process started with are wiped from its memory too,
  so `/proc/self/environ` shows none of them. Pure Python: it holds everywhere.
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

The package: policy.py (what the child may have, and what held), allowlist.py (its files),
namespaces.py (the Linux calls through libc), rootfs.py (its new root), landlock.py (what holds
without namespaces), seccomp.py (the keyring filter), limits.py and cgroup.py (the tree's limits),
supervisor.py (`enter`, and the processes that watch the child), process.py (the contained child
process every run of project code happens in: `run` -> `Ended`), outcome.py (what that end means
for a trace), __main__.py (`python -m opscan.containment`: a command run contained). This module
re-exports the public names of the policy, the supervisor, `named_paths` and `landlock_abi`.

Stdlib only; the parent never imports torch.
"""

from __future__ import annotations

from opscan.containment.allowlist import named_paths
from opscan.containment.landlock import landlock_abi
from opscan.containment.policy import (ALLOWED_NAMES, ALLOWED_PREFIXES, ContainmentUnavailable, HELD, Held,
                                       MAX_PROCESSES, PARTS, PROJECT_CODE_COMMANDS, Policy, READ_ONLY_COMMANDS,
                                       SCRATCH_SIZE, SECRET_PLACES,
                                       SECRET_WORDS, allowed_name, child_environment, is_secret_name, not_contained,
                                       real_home)
from opscan.containment.supervisor import command_prefix, enter, held_here, prepare_scratch, remove_scratch

__all__ = [
    "ALLOWED_NAMES", "ALLOWED_PREFIXES", "ContainmentUnavailable", "HELD", "Held", "MAX_PROCESSES", "PARTS",
    "PROJECT_CODE_COMMANDS", "Policy", "READ_ONLY_COMMANDS", "SCRATCH_SIZE", "SECRET_PLACES", "SECRET_WORDS",
    "allowed_name", "child_environment", "command_prefix", "enter", "held_here", "is_secret_name",
    "landlock_abi", "named_paths", "not_contained", "prepare_scratch", "real_home", "remove_scratch",
]
