"""What a contained child may have and what held: the parts (PARTS), the environment's allow-list,
the secret places, the Policy, Held, and which commands run project code."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field


PARTS: dict[str, str] = {
    "environment": "the child's environment is an allow-list: no token, key or credential reaches it",
    "network": "a new network namespace: no connection leaves the child",
    "files": "the child's file system is an allow-list (the interpreter, opscan, the project as an overlay, "
             "the caches), read-only; writes only inside its scratch folder",
    "ipc": "a new IPC namespace and a fresh /dev/shm: shared memory, semaphores and message queues are "
           "the child's own and end with it",
    "keyring": "a new session keyring, and no keyring system call: no key of the user can be read",
    "processes": "a new PID namespace: no other process visible, none outlives the child",
    "limits": "memory and the number of processes are limited for the child's whole process tree",
}
HELD = "held"
SCRATCH_SIZE = 2 << 30     # bytes of the child's scratch tmpfs (and the largest file it may write)
MAX_PROCESSES = 512        # processes and threads of the child's whole tree (--max-processes)

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
# NOTE [secret names]
# A variable is kept from the child when its name reads as a secret: a long secret word anywhere in it
# (HF_TOKEN2, HF_APITOKEN, TORCH_HUB_GITHUBTOKEN, MY_SECRETS_FILE), or a short one as a whole word
# (AWS_ACCESS_KEY_ID, GH_PAT, DB_PASS, HF_AUTH_2: the name split at every character that is not a
# letter), where a short word anywhere would catch too much (PATH, KEYBOARD, BYPASS, AUTHOR). A few
# names the allow-list passes hold a long word and are no secret (SAFE_NAMES). Values are looked at
# too: credentials written into a URL (postgres://user:password@host, https://token@host) are
# taken out of every value the child is given (`strip_credentials`), never of a --pass-env one.
SECRET_WORDS = frozenset({"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "APIKEY",
                          "ACCESSKEY", "PRIVATEKEY", "COOKIE", "SIGNATURE"})
SHORT_SECRET_WORDS = frozenset({"KEY", "KEYS", "PAT", "PASS", "PWD", "AUTH", "CREDS", "SESSION", "PRIVATE", "CERT",
                                "SIG", "JWT", "OTP"})
SAFE_NAMES = frozenset({"PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "TOKENIZERS_PARALLELISM",
                        "HF_HUB_DISABLE_IMPLICIT_TOKEN"})
_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s]*@")


def is_secret_name(name: str) -> bool:
    """Whether a variable's name reads as a secret (NOTE [secret names])."""
    upper = name.upper()
    if upper in SAFE_NAMES:
        return False
    return any(word in upper for word in SECRET_WORDS) or bool(set(re.findall("[A-Z]+", upper)) & SHORT_SECRET_WORDS)


def strip_credentials(value: str) -> str:
    """`value` with the user and password of every URL in it taken out (`postgres://u:pw@db/x` -> `postgres://db/x`)."""
    return _URL_CREDENTIALS.sub(lambda m: m["scheme"], value) if "@" in value else value


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
    env = {k: strip_credentials(v) for k, v in environ.items() if allowed_name(k)}
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
    env["WANDB_MODE"] = "disabled"   # wandb's documented off switch: no login, no network (NOTE [inert trackers])
    env["WANDB_SILENT"] = "true"
    env["HF_MODULES_CACHE"] = os.path.join(scratch, "hf_modules")   # remote code is written here
    env["HOME"] = os.path.join(scratch, "home")
    env["TMPDIR"] = os.path.join(scratch, "tmp")
    env.setdefault("PATH", os.defpath)
    env.update(policy.set_env)
    return env


# Variables that name where a secret file is (not the secret): the child's allow-list hides the file.
HIDDEN_BY_NAME = ("HF_TOKEN_PATH",)


def carried_environment(environ, policy: Policy) -> dict[str, str]:
    """The variables a contained child (or a fork server) is started with, before it contains
    itself: the allow-list, --pass-env and HOME (whose secret places the child covers), so that no
    secret is in the child even before `enter` makes its environment (`child_environment`), and
    the names that say where a secret file is (HIDDEN_BY_NAME: a path, no secret), so that the
    child's file allow-list can hide that file (containment/allowlist.py); the code never gets them."""
    env = {k: strip_credentials(v) for k, v in environ.items() if allowed_name(k)}
    env.update({name: environ[name] for name in policy.pass_env if name in environ})
    env.update({name: environ[name] for name in HIDDEN_BY_NAME if environ.get(name)})
    env["HOME"] = real_home(environ)
    return env


# --- the policy and what held ----------------------------------------------------------------------

# The home folder's places that hold credentials: never in the child, even inside a folder it is
# given (a project that is the home folder; NOTE [file allow-list] in containment/allowlist.py).
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
    besides its scratch folder, folders whose writes go to a copy, folders it may read besides
    what it needs (containment/allowlist.py), how many processes its tree may have, and whether
    the run must stop when a part of the containment cannot be had."""

    pass_env: tuple[str, ...] = ()             # --pass-env NAME
    require: bool = False                      # --require-containment
    writable: tuple[str, ...] = ()             # e.g. parity's output folder
    overlays: tuple[str, ...] = ()             # the project folder: writes go to the scratch folder
    set_env: tuple[tuple[str, str], ...] = ()  # variables the caller sets (parity's TORCH_DEVICE)
    enabled: bool = True                       # False: the child is not contained (opscan's own tests)
    scratch_size: int = SCRATCH_SIZE
    readable: tuple[str, ...] = ()             # --allow-read PATH (and what the user named: a trace target)
    max_processes: int = MAX_PROCESSES         # --max-processes

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


DEFAULT_TIMEOUT = 900.0  # seconds; a 70B-shape fake trace takes ~25 s here


@dataclass(frozen=True)
class Limits:
    """What the child may use: wall seconds (None = no limit), bytes of address space (None = no
    limit of opscan's own), how the child process is started (process.py START_METHODS), and its
    containment (PARTS: environment, network, files, ipc, keyring, processes, limits). Run by
    containment/process.py `run`; defined here with the Policy it holds, so that a run which starts
    no child can carry its default limits without importing the machinery that starts one."""

    timeout: float | None = DEFAULT_TIMEOUT
    max_memory: int | None = None
    start_method: str = "spawn"
    containment: Policy = Policy()


def default_max_memory() -> int | None:
    """Three quarters of physical memory (so a runaway model fails before the machine swaps), or None."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 3 // 4)
    except (ValueError, OSError, AttributeError):
        return None
