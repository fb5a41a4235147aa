"""The contained child's files as an allow-list: which host paths it gets (read-only, writable, or
as an overlay), what is hidden inside them, and the symlinks on the way (NOTE [file allow-list]).

Pure: it reads the host's file system and settings but mounts nothing. containment/rootfs.py builds
a new root from the `Plan` (with namespaces); containment/landlock.py turns the same `Plan` into
Landlock rules (without them).
"""

from __future__ import annotations

import glob
import os
import sys
from dataclasses import dataclass, field

from opscan.containment.policy import SECRET_PLACES, Policy

# NOTE [file allow-list]
# The child's file system is built from what it needs, never the host's with covers on known
# places: a folder not named here does not exist in the child (the home folder, the folder above
# the project with its `../.env`, /etc/shadow, /run with the ssh-agent, docker and D-Bus sockets,
# another checkout). What it gets, read-only unless said:
# - the interpreter: sys.prefix and sys.base_prefix (a venv and the Python it was made from), the
#   executable, every sys.path and PYTHONPATH entry; opscan's own package and data;
# - the system: /usr (and /bin, /lib, ... which usually link into it), the library folders of
#   /etc/ld.so.conf and LD_LIBRARY_PATH, the PATH folders outside the home folder (a script in
#   ~/bin may hold a token; a venv's bin is there with the venv), a few /etc files libraries read
#   (ETC_FILES: the loader's cache, time zone, certificates, ...; never passwd, shadow, pip.conf,
#   gitconfig), a passwd/group/hosts/nsswitch.conf of the child's own (GENERATED), the parts of
#   /sys that describe devices (SYS), a /dev of its own (DEV_NODES and the accelerators),
#   /proc of its own PID namespace;
# - the caches it is given (HF_HOME, TORCH_HOME, ...: CACHE_VARIABLES) without their token files;
# - the project folder as an overlay (writes go to a copy in the scratch folder);
# - never the .git folder of a place (the project, a source checkout on sys.path): its config
#   may hold a token (a remote URL, the `extraheader` CI checkouts write);
# - writable: the scratch folder (a tmpfs that is also the child's /tmp, /var/tmp and /run), the
#   caller's writable folders (parity's output folder);
# - what the user names with --allow-read.
# An entry that comes from a variable or sys.path (not from the user's command line) is refused
# when it is `/`, a system folder handled apart (/etc, /proc, /dev, /run, /tmp, ...), the home
# folder, the folder above the project or an ancestor of one of those (`PYTHONPATH=..`), or one
# of the home folder's secret places (SECRET_PLACES). Inside every place that holds a home
# folder's secret place (a project that is the home folder), that place is hidden as well.
# Symlinks on the way to a place (a dotfiles ~/.cache -> /data/cache, /lib -> usr/lib) are made in
# the child as they are, and the place is mounted at its real path, so a symlinked home entry
# never breaks the build.

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "ssl/certs", "ssl/openssl.cnf",
             "ca-certificates.conf", "pki/tls/certs", "pki/ca-trust/extracted", "ca-certificates", "alternatives",
             "os-release", "lsb-release", "debian_version", "mime.types", "protocols", "services", "gai.conf",
             "host.conf", "locale.alias", "fonts", "python3", f"python{sys.version_info[0]}.{sys.version_info[1]}")
GENERATED = ("passwd", "group", "hosts", "nsswitch.conf")
SYS = ("/sys/devices", "/sys/bus", "/sys/class", "/sys/dev", "/sys/block")
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
ACCELERATORS = ("neuron*", "nvidia*")     # /dev entries of Trainium/Inferentia and NVIDIA devices
CACHE_VARIABLES = ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_DATASETS_CACHE",
                   "HF_ASSETS_CACHE", "TORCH_HOME")
CACHE_SECRETS = ("token", "stored_tokens")   # a Hugging Face cache's login files
# Places handled apart (NOTE [file allow-list]): an entry inside one is refused ...
HANDLED_APART = ("/etc", "/proc", "/sys", "/dev", "/run", "/var/run")
# ... and so is an entry that is one of these, or holds one (`/`, `/home`, `/var`).
NEVER_WHOLE = (*HANDLED_APART, "/tmp", "/var/tmp", "/home", "/root", "/boot", "/mnt", "/media", "/srv", "/var", "/opt")
RO, RW, OVERLAY = "ro", "rw", "overlay"


@dataclass(frozen=True)
class Host:
    """What the plan is made from (the current process by default; tests give their own)."""

    environ: dict[str, str]
    cwd: str
    sys_path: tuple[str, ...]
    prefixes: tuple[str, ...]
    executable: str
    homes: tuple[str, ...]

    @classmethod
    def current(cls, environ: dict[str, str]) -> Host:
        prefixes = (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
        return cls(environ=dict(environ), cwd=os.getcwd(), sys_path=tuple(sys.path),
                   prefixes=tuple(dict.fromkeys(prefixes)), executable=sys.executable,
                   homes=homes_of(environ))


@dataclass(frozen=True)
class Plan:
    """The child's file system: places (host path -> RO/RW/OVERLAY, each at its real path), the
    paths hidden inside them, and the symlinks to make on the way (path -> its target as written)."""

    places: dict[str, str] = field(default_factory=dict)
    hidden: tuple[str, ...] = ()
    links: dict[str, str] = field(default_factory=dict)
    refused: tuple[str, ...] = ()      # entries left out by the rules above (for the record)


def homes_of(environ: dict[str, str]) -> tuple[str, ...]:
    """The account's home folders: $HOME and the password database's (they differ when HOME is set elsewhere)."""
    found = [environ.get("HOME", "")]
    try:
        import pwd

        found.append(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError):
        pass
    return tuple(dict.fromkeys(os.path.realpath(h) for h in found if h and os.path.isabs(h)))


def inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or below it (both normalised, no symlink resolution)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def make_plan(policy: Policy, scratch: str, child_env: dict[str, str], host: Host) -> Plan:
    """The allow-list of one child (NOTE [file allow-list]); `child_env` is the child's environment
    (its caches), `host.environ` the one opscan was started with (its PATH, PYTHONPATH, ...)."""
    builder = _Builder(host, policy, scratch)
    for folder in policy.overlays:
        builder.add(folder, OVERLAY, trusted=True)
    for folder in policy.writable:
        builder.add(folder, RW, trusted=True)
    for path in policy.readable:
        builder.add(path, RO, trusted=True)
    for prefix in host.prefixes:
        builder.add(prefix, RO)
    builder.add(host.executable, RO)
    for path in _opscan_paths():
        builder.add(path, RO, trusted=True)
    for entry in (*host.sys_path, *_split(host.environ.get("PYTHONPATH"))):
        builder.add(entry, RO)
    for path in SYSTEM:
        builder.add(path, RO, trusted=True)
    for folder in (*_loader_folders(), *_split(host.environ.get("LD_LIBRARY_PATH"))):
        builder.add(folder, RO)
    for folder in _split(host.environ.get("PATH")):   # programs: not a home folder's (~/bin, ~/.local/bin)
        if not any(inside(os.path.realpath(folder), home) for home in host.homes):
            builder.add(folder, RO)
    for name in ETC_FILES:
        builder.add(os.path.join("/etc", name), RO, trusted=True)
    for path in SYS:
        builder.add(path, RO, trusted=True)
    for name in CACHE_VARIABLES:
        if child_env.get(name):
            builder.add(child_env[name], RO)
            for secret in CACHE_SECRETS:
                builder.hide(os.path.join(child_env[name], secret))
    token_path = host.environ.get("HF_TOKEN_PATH")
    if token_path:
        builder.hide(token_path)
    for home in host.homes:
        for place in SECRET_PLACES:
            builder.hide(os.path.join(home, place))
    return builder.plan()


class _Builder:
    def __init__(self, host: Host, policy: Policy, scratch: str) -> None:
        self.host, self.scratch = host, scratch
        self.places: dict[str, str] = {}
        self.links: dict[str, str] = {}
        self.hidden: list[str] = []
        self.refused: list[str] = []
        parents = [os.path.dirname(os.path.realpath(p)) for p in policy.overlays]   # `../.env` of the project
        self.guarded = tuple(dict.fromkeys((*host.homes, *parents, os.path.realpath(scratch))))
        secrets = [os.path.join(h, p) for h in host.homes for p in SECRET_PLACES]
        # the secret places, and where a dotfiles home's links to them lead
        self.secrets = tuple(dict.fromkeys((*secrets, *map(os.path.realpath, secrets))))

    def add(self, path: str, mode: str, *, trusted: bool = False) -> None:
        """Add `path` as a place (`trusted`: named by the user or by opscan, not by a variable)."""
        if not path or not (trusted or os.path.isabs(path)):
            return   # a relative entry ('' or '.') is the working folder: never the host's
        path = os.path.abspath(os.path.join(self.host.cwd, path))
        links: dict[str, str] = {}
        real = resolve(path, links)
        if real is None or not os.path.exists(real):
            return
        if real == os.sep or not trusted and self._refused(path, real):
            self.refused.append(path)
            return
        self.links.update(links)
        if mode == RO and self.places.get(real) in (RW, OVERLAY):
            return
        self.places[real] = mode

    def _refused(self, path: str, real: str) -> bool:
        for candidate in {path, real}:
            if any(inside(candidate, place) for place in (*HANDLED_APART, *self.secrets)):
                return True
            if any(inside(place, candidate) for place in (*NEVER_WHOLE, *self.guarded)):
                return True
        return False

    def hide(self, path: str) -> None:
        if os.path.lexists(path):
            real = resolve(os.path.abspath(path), {})
            if real is not None and os.path.lexists(real):
                self.hidden.append(real)

    def plan(self) -> Plan:
        places = {}
        for path in sorted(self.places):   # a read-only place inside another place adds nothing
            mode = self.places[path]
            if mode == RO and any(inside(path, outer) and path != outer for outer in places):
                continue
            places[path] = mode
            if mode != RW:   # a checkout (the project, opscan's own source, an editable install): never its .git
                self.hide(os.path.join(path, ".git"))
        hidden = tuple(sorted({h for h in self.hidden if any(inside(h, p) for p in places)}))
        links = {link: target for link, target in sorted(self.links.items())
                 if not any(inside(link, p) for p in places)}   # a link inside a place is there already
        return Plan(places=places, hidden=hidden, links=links, refused=tuple(sorted(set(self.refused))))


def resolve(path: str, links: dict[str, str], depth: int = 0) -> str | None:
    """The real path of absolute `path`, with each symlink met on the way put in `links` (to be
    made in the child as it is); None for a loop."""
    if depth > 40:
        return None
    current = os.sep
    parts = [p for p in path.split(os.sep) if p]
    for index, name in enumerate(parts):
        if name in (".", ".."):   # `current` has no symlink in it: its parent is its dirname
            current = current if name == "." else os.path.dirname(current)
            continue
        candidate = os.path.join(current, name)
        if os.path.islink(candidate):
            try:
                target = os.readlink(candidate)
            except OSError:
                return None
            links.setdefault(candidate, target)
            return resolve(os.path.join(current, target, *parts[index + 1:]), links, depth + 1)
        current = candidate
    return current


def _split(value: str | None) -> list[str]:
    return [p for p in (value or "").split(os.pathsep) if p]


def _loader_folders(conf: str = "/etc/ld.so.conf", depth: int = 0) -> list[str]:
    """The library folders of the dynamic loader's configuration (its `include` lines followed)."""
    folders: list[str] = []
    try:
        with open(conf, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return folders
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line.startswith("include") and depth < 4:
            pattern = line.split(None, 1)[1] if len(line.split(None, 1)) > 1 else ""
            pattern = pattern if os.path.isabs(pattern) else os.path.join(os.path.dirname(conf), pattern)
            for included in sorted(glob.glob(pattern)):
                folders.extend(_loader_folders(included, depth + 1))
        elif line.startswith(os.sep):
            folders.append(line)
    return folders


def _opscan_paths() -> list[str]:
    """opscan's package folder and its data (the built-in rules and coverage database)."""
    from opscan.resources import coverage_db_dir, rules_dir

    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    return [package, str(rules_dir()), str(coverage_db_dir())]


def named_paths(words, cwd: str, environ: dict[str, str]) -> tuple[str, ...]:
    """What the user named on the command line and the child must read: a trace target
    (`model.py:build`, `hf:FOLDER`, `pt2:FILE`), a report, the words of a command
    (`opscan parity run -- python train.py`). Each word (or its part after a `scheme:` and before
    a `:function`) that is an existing file gives its folder (a script's imports sit beside it),
    an existing folder itself; never a home folder or a folder holding one (a file there is
    given alone). Never a word from the repository's configuration: only the user's."""
    homes = homes_of(environ)
    found: list[str] = []
    for word in words:
        if not word or word.startswith("-"):
            continue
        scheme, colon, rest = word.partition(":")
        candidates = [word, word.rsplit(":", 1)[0]]
        if colon and scheme.isalnum() and len(scheme) > 1:
            candidates += [rest, rest.rsplit(":", 1)[0]]
        for candidate in candidates:
            path = os.path.realpath(os.path.join(cwd, candidate)) if candidate else ""
            if not path or not os.path.exists(path):
                continue
            folder = path if os.path.isdir(path) else os.path.dirname(path)
            if folder != os.sep and not any(inside(home, folder) for home in homes):
                found.append(folder)
            elif not os.path.isdir(path):
                found.append(path)
            break
    return tuple(dict.fromkeys(found))


def generated_files(uid: int, gid: int, home: str) -> dict[str, str]:
    """The /etc files the child gets a version of its own of (GENERATED): its user, its group, localhost."""
    import socket

    name = "user"
    try:
        import pwd

        name = pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        pass
    users = {0: "root", 65534: "nobody"}
    users[uid] = name
    passwd = "".join(f"{n}:x:{u}:{gid if u == uid else u}:{n}:{home if u == uid else '/'}:/bin/sh\n"
                     for u, n in sorted(users.items()))
    groups = {0: "root", 65534: "nogroup"}
    groups.setdefault(gid, name)
    group = "".join(f"{n}:x:{g}:\n" for g, n in sorted(groups.items()))
    hostname = socket.gethostname()
    hosts = f"127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.1.1\t{hostname}\n"
    nsswitch = "passwd: files\ngroup: files\nshadow: files\nhosts: files\n"
    return {"passwd": passwd, "group": group, "hosts": hosts, "nsswitch.conf": nsswitch}


def accelerator_nodes(dev: str = "/dev") -> list[str]:
    """The /dev entries of accelerators present (ACCELERATORS)."""
    found: list[str] = []
    for pattern in ACCELERATORS:
        found.extend(sorted(glob.glob(os.path.join(dev, pattern))))
    return found
