"""Containment of the child that runs project code: no secrets, no network, no writes outside its scratch folder.

Every child that runs a model's or a project's code (opscan/isolation.py `run`, and the training
command of `opscan parity run` through `command_prefix`) enters the containment before any of that
code runs (`enter`). It has four parts (PARTS), each of which holds or not on a given machine, and
the child says which held (`Held`, one line in the report, `containment` in the JSON):

- environment: the child's variables are an allow-list (`child_environment`: what Python, torch,
  the Hugging Face / torch caches, the locale and the thread pools read), never a name that reads
  as a token, key, password or credential, plus the names of `--pass-env`. HOME and TMPDIR point
  into the scratch folder. The variables the process started with are wiped from its memory too,
  so `/proc/self/environ` shows none of them. Pure Python: it holds everywhere.
- network: a new network namespace (only a loopback device, brought up, that reaches nothing
  outside the child). Nothing is patched in Python: `_socket`, ctypes, curl in a subprocess all
  meet the same empty namespace.
- files: a new mount namespace in which every mount is read-only, the scratch folder is a
  size-limited tmpfs (SCRATCH_SIZE: filling it ends in ENOSPC, not a full disk), the project
  folder is an overlay whose writes land in the scratch folder (the project is unchanged), the
  home folder's secret places (SECRET_PLACES) are covered by empty read-only mounts, /dev/shm is a
  fresh tmpfs, and the folders the caller names (`Policy.writable`: `opscan parity`'s output
  folder) stay writable. Files larger than SCRATCH_SIZE cannot be written at all (RLIMIT_FSIZE).
- processes: a new PID namespace with a fresh /proc: the code sees no process of the machine
  (not the parent's /proc/PID/environ), and when the child ends every process it started ends
  with it (a daemon cannot outlive it). Without it, the child's process group is killed at the end.

The namespaces are made with the libc `unshare` call (Python 3.11 has no os.unshare) in a new user
namespace, which needs no privilege on Linux (uid and gid mapped to themselves); after setting
them up the child drops every capability it had in them, so the code cannot undo a mount. Where
the platform refuses (macOS, Windows, old kernels, a container whose seccomp profile forbids
user namespaces), the run goes on and `Held` says which parts did not hold and why; on Linux
without user namespaces, Landlock still restricts writes, secret reads and TCP where the kernel
has it (NOTE [Landlock without namespaces]). `--require-containment` turns a part that does not
hold into exit 2 before any project code runs.

Stdlib only; the parent never imports torch.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import sys
from dataclasses import dataclass, field

PARTS: dict[str, str] = {
    "environment": "the child's environment is an allow-list: no token, key or credential reaches it",
    "network": "a new network namespace: no connection leaves the child",
    "files": "read-only mounts: writes only inside the scratch folder; the home folder's secret places are hidden",
    "processes": "a new PID namespace: no other process visible, none outlives the child",
}
HELD = "held"
SCRATCH_SIZE = 2 << 30     # bytes of the child's scratch tmpfs (and the largest file it may write)

# Which commands run project code, and how (docs/reliability.md, "Which commands run project code";
# tests/reliability/test_reliability_containment_docs.py keeps that table, this one and the
# commands' flags in step): the command as the docs name it -> the argv words of its parser.
PROJECT_CODE_COMMANDS: dict[str, tuple[str, ...]] = {
    "opscan PATH": ("check",),
    "opscan trace": ("trace",),
    "opscan run": ("run",),
    "opscan init": ("init",),
    "opscan zoo": ("zoo",),
    "opscan parity run": ("parity",),
    "opscan db probe": ("db", "probe"),
}
# Commands that only read the project (never import or run any of its code).
READ_ONLY_COMMANDS = ("opscan scan", "opscan baseline", "opscan PATH --no-trace", "opscan fix")

# --- environment ---------------------------------------------------------------------------------

ALLOWED_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "COLUMNS", "LINES", "NO_COLOR",
    "PYTHONPATH", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONDONTWRITEBYTECODE",
    "PYTHONWARNINGS", "PYTHONFAULTHANDLER", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
    "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "TOKENIZERS_PARALLELISM", "SOURCE_DATE_EPOCH",
    "XDG_CACHE_HOME",
})
ALLOWED_PREFIXES = ("LC_", "HF_", "TRANSFORMERS_", "HUGGINGFACE_HUB_CACHE", "TORCH", "PYTORCH_", "TIMM_",
                    "NEURON_", "XLA_", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "OPSCAN_")
# A word of a name (split at "_") that makes it a secret even when its prefix is allowed (HF_TOKEN).
SECRET_WORDS = frozenset({"TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASS", "PWD", "KEY", "KEYS",
                          "APIKEY", "CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "COOKIE", "SESSION", "PAT",
                          "PRIVATE", "CERT", "SIGNATURE"})


def is_secret_name(name: str) -> bool:
    """Whether a variable's name reads as a secret (a word of it: TOKEN, KEY, SECRET, ...)."""
    return bool(set(name.upper().split("_")) & SECRET_WORDS)


def allowed_name(name: str) -> bool:
    """Whether the allow-list passes `name` to the child (before --pass-env)."""
    if is_secret_name(name):
        return False
    return name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)


def real_home(environ) -> str:
    """The user's home folder: $HOME, else the password database's."""
    home = environ.get("HOME")
    if home:
        return home
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        return os.path.expanduser("~")


def child_environment(environ, policy: Policy, scratch: str) -> dict[str, str]:
    """The child's variables: the allow-list of `environ`, --pass-env, the caches where they were,
    HOME and TMPDIR in `scratch`, and the policy's own (`Policy.set_env`)."""
    env = {k: v for k, v in environ.items() if allowed_name(k)}
    for name in policy.pass_env:
        if name in environ:
            env[name] = environ[name]
    home = real_home(environ)
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    env.setdefault("HF_HOME", os.path.join(cache, "huggingface"))
    env.setdefault("TORCH_HOME", os.path.join(cache, "torch"))
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    env["HF_MODULES_CACHE"] = os.path.join(scratch, "hf_modules")   # remote code is written here
    env["HOME"] = os.path.join(scratch, "home")
    env["TMPDIR"] = os.path.join(scratch, "tmp")
    env.setdefault("PATH", os.defpath)
    env.update(policy.set_env)
    return env


# --- the policy and what held ----------------------------------------------------------------------

# The home folder's places that hold credentials: covered by an empty mount in the child.
SECRET_PLACES = (
    ".ssh", ".aws", ".azure", ".config/gcloud", ".config/gh", ".config/hub", ".config/git/credentials",
    ".config/rclone", ".netrc", ".docker", ".kube", ".git-credentials", ".gnupg", ".pypirc", ".npmrc",
    ".yarnrc", ".boto", ".s3cfg", ".databrickscfg", ".pgpass", ".vault-token", ".terraform.d",
    ".password-store", ".oci", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
    ".m2/settings.xml", ".gradle/gradle.properties", ".huggingface/token", ".cache/huggingface/token",
    ".cache/huggingface/stored_tokens", ".wandb", ".netrc.gpg", ".config/wandb",
)


@dataclass(frozen=True)
class Policy:
    """What a contained child may have: variables it is given by name, folders it may write
    besides its scratch folder, folders whose writes go to a copy, and whether the run must stop
    when a part of the containment cannot be had."""

    pass_env: tuple[str, ...] = ()             # --pass-env NAME
    require: bool = False                      # --require-containment
    writable: tuple[str, ...] = ()             # e.g. parity's output folder
    overlays: tuple[str, ...] = ()             # the project folder: writes go to the scratch folder
    set_env: tuple[tuple[str, str], ...] = ()  # variables the caller sets (parity's TORCH_DEVICE)
    enabled: bool = True                       # False: the child is not contained (opscan's own tests)
    scratch_size: int = SCRATCH_SIZE

    def __post_init__(self) -> None:
        object.__setattr__(self, "set_env", tuple(dict(self.set_env).items()))


class ContainmentUnavailable(Exception):
    """A part of the containment could not be had (its errno and what was tried)."""


@dataclass(frozen=True)
class Held:
    """Which parts of the containment held in a child: PARTS name -> "held" or why not."""

    parts: tuple[tuple[str, str], ...] = field(default=())

    @property
    def all(self) -> bool:
        return bool(self.parts) and all(state == HELD for _, state in self.parts)

    def state(self, part: str) -> str:
        return dict(self.parts).get(part, "not tried")

    def line(self) -> str:
        """One line: 'containment: environment, network, files, processes held' or which did not and why."""
        from opscan.records import containment_line

        return containment_line(self.parts)

    def as_json(self) -> dict:
        return {"held": self.all, "parts": {p: s for p, s in self.parts}}


def not_contained(reason: str) -> Held:
    return Held(tuple((part, reason) for part in PARTS))


# --- libc ---------------------------------------------------------------------------------------

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 4096, 16384, 1 << 18
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
MOUNT_ATTR_RDONLY = 0x1
SYS_MOUNT_SETATTR = {"x86_64": 442, "aarch64": 442}
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT = 1, 38, 24, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

_libc = None


def _lib():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(result: int, what: str) -> int:
    if result == -1:
        code = ctypes.get_errno()
        raise ContainmentUnavailable(f"{what}: {errno.errorcode.get(code, code)}")
    return result


def _unshare(flags: int) -> None:
    _check(_lib().unshare(ctypes.c_int(flags)), "unshare")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(s: str | None) -> bytes | None:
        return None if s is None else os.fsencode(s)

    _check(_lib().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {target}")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _mount_setattr(path: str, recursive: bool, set_: int = 0, clear: int = 0) -> None:
    number = SYS_MOUNT_SETATTR.get(os.uname().machine)
    if number is None:
        raise ContainmentUnavailable(f"mount_setattr: unknown on {os.uname().machine}")
    attr = _MountAttr(set_, clear, 0, 0)
    _check(_lib().syscall(ctypes.c_long(number), ctypes.c_int(AT_FDCWD), os.fsencode(path),
                          ctypes.c_uint(AT_RECURSIVE if recursive else 0), ctypes.byref(attr),
                          ctypes.c_size_t(ctypes.sizeof(attr))), f"mount_setattr {path}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


# --- entering the containment ------------------------------------------------------------------

def prepare_scratch(parent: str | None = None) -> str:
    """A new scratch folder for one child (the parent removes it with `remove_scratch`)."""
    import tempfile

    return tempfile.mkdtemp(prefix="opscan-scratch-", dir=parent)


def remove_scratch(path: str) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def enter(policy: Policy, scratch: str, *, then_exec: list[str] | None = None) -> Held:
    """Contain this process (a fresh child, single-threaded, before any project code) and return
    which parts held. With the PID namespace, this process forks: the fork continues as the
    contained child (pid 1 of the new namespace) and this process only waits for it and ends with
    its status, never returning. `then_exec`: a command the contained child execs (parity runs).
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
        _make_dirs(scratch)
        return _finish(parts, policy, then_exec, env)
    uid, gid = os.getuid(), os.getgid()
    try:
        _unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID)
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    except (ContainmentUnavailable, OSError) as exc:
        reason = f"user namespace refused: {exc}"
        _make_dirs(scratch)
        parts.update(_landlock(policy, scratch, real_home(environ), reason))
        parts.update({p: reason for p in PARTS if p not in parts})
        return _finish(parts, policy, then_exec, env)
    try:
        _loopback_up()
        parts["network"] = HELD
    except OSError as exc:   # the namespace has no route out either way; lo is only down
        parts["network"] = HELD if exc.errno else f"loopback: {exc}"
    try:
        _files(policy, scratch, real_home(environ))
        parts["files"] = HELD
    except (ContainmentUnavailable, OSError) as exc:
        parts["files"] = str(exc)
        _make_dirs(scratch)
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
        _check(_lib().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl")
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        parts["processes"] = HELD
    except (ContainmentUnavailable, OSError) as exc:
        parts["processes"] = f"a fresh /proc: {exc}"
    worker = os.fork()
    if worker:   # init
        _drop_capabilities()
        _init(worker, write_end)
    os.close(write_end)
    _lib().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    _drop_capabilities()
    return _finish(parts, policy, then_exec, env)


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


def _make_dirs(scratch: str) -> None:
    for sub in ("home", "tmp", "hf_modules"):
        os.makedirs(os.path.join(scratch, sub), exist_ok=True)


def _loopback_up() -> None:
    import fcntl
    import socket
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        raw = fcntl.ioctl(sock, siocgifflags, struct.pack("16sH14x", b"lo", 0))
        flags = struct.unpack("16sH14x", raw)[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


def _files(policy: Policy, scratch: str, home: str) -> None:
    """The mount namespace: everything read-only, scratch a tmpfs, the project an overlay into it,
    secret places covered, the writable folders bound again writable."""
    cwd = os.getcwd()
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount_setattr("/", True, set_=MOUNT_ATTR_RDONLY)
    _mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, f"size={policy.scratch_size},mode=0700")
    _make_dirs(scratch)
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
            _mount("overlay", folder, "overlay", 0, f"lowerdir={escaped},upperdir={upper},workdir={work},userxattr")
        except ContainmentUnavailable:
            pass   # writes into the folder then fail (read-only) instead of going to a copy
    for folder, fd in real.items():
        _mount(f"/proc/self/fd/{fd}", folder, None, MS_BIND | MS_REC)
        _mount_setattr(folder, False, clear=MOUNT_ATTR_RDONLY)
        os.close(fd)
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=268435456,mode=1777")
    os.chdir(cwd)   # the working folder as mounted now (an overlay's writes go to the copy)
    for place in SECRET_PLACES:
        path = os.path.join(home, place)
        if os.path.isdir(path) and not os.path.islink(path):
            _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "size=4096,mode=0")
        elif os.path.lexists(path):
            _mount("/dev/null", os.path.realpath(path), None, MS_BIND)
            _mount_setattr(os.path.realpath(path), False, set_=MOUNT_ATTR_RDONLY)


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
    version = _lib().syscall(ctypes.c_long(_LL_CREATE), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(0, version)


def _landlock(policy: Policy, scratch: str, home: str, why: str) -> dict[str, str]:
    """Restrict this process with Landlock (NOTE [Landlock without namespaces]); the parts' states."""
    abi = landlock_abi()
    if abi < 1:
        return {}
    writes = _LL_WRITE_FILE | _LL_WRITES | (_LL_REFER if abi >= 2 else 0) | (_LL_TRUNCATE if abi >= 3 else 0)
    reads = _LL_READ_FILE | _LL_EXECUTE
    attr = _RulesetAttr(writes | reads | _LL_READ_DIR, 0b11 if abi >= 4 else 0, 0b11 if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    libc = _lib()
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


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _drop_capabilities() -> None:
    """Give up every capability held in the new namespaces, for good (no mount can be undone)."""
    libc = _lib()
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1 and ctypes.get_errno() == errno.EINVAL:
            break
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)   # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()                   # effective, permitted, inheritable: none
    libc.capget.argtypes = libc.capset.argtypes = None
    libc.capset(ctypes.byref(header), ctypes.byref(data))


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
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _suppress():
    import contextlib

    return contextlib.suppress(OSError)


def held_here() -> bool:
    """The function of the child that only checks the containment (isolation.check_containment)."""
    return True


# --- commands started by opscan (`opscan parity run`) ---------------------------------------------

def command_prefix(policy: Policy, scratch: str) -> list[str]:
    """argv that runs a command contained: `python -m opscan.containment SPEC -- COMMAND...`."""
    import json

    spec = {"pass_env": list(policy.pass_env), "require": policy.require, "writable": list(policy.writable),
            "overlays": list(policy.overlays), "set_env": dict(policy.set_env), "scratch": scratch,
            "scratch_size": policy.scratch_size}
    return [sys.executable, "-m", "opscan.containment", json.dumps(spec, sort_keys=True), "--"]


def _main(argv: list[str]) -> None:
    import json

    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m opscan.containment SPEC -- COMMAND ...", file=sys.stderr)
        os._exit(2)
    spec = json.loads(argv[0])
    policy = Policy(pass_env=tuple(spec["pass_env"]), require=spec["require"], writable=tuple(spec["writable"]),
                    overlays=tuple(spec["overlays"]), set_env=tuple(spec["set_env"].items()),
                    scratch_size=spec["scratch_size"])
    held = enter(policy, spec["scratch"], then_exec=argv[2:])
    raise AssertionError(f"not reached: {held}")


if __name__ == "__main__":
    _main(sys.argv[1:])
