"""The ways out of issue 41, each tried by planted code (escape_probes.py) in the contained child:
Unix sockets of the host (an ssh-agent's, an abstract one), SysV shared memory and POSIX message
queues that would outlive the run, the host's /dev/shm, the user's keyrings, credential files in the
home folder (a dotfiles home whose ~/.ssh and ~/.aws are symlinks), the real home when HOME is set
elsewhere, `../.env` beside the checkout, the checkout's `.git/config`, /etc/shadow, a fork storm,
and memory spread over many processes.

Each runs as the caller (root here) and as uid 65534 (when the caller is root), with user
namespaces and in the Landlock-only mode (user namespaces made unavailable): with namespaces every
part holds and nothing gets out; without them what Landlock cannot hold is named as not held.
The unprivileged runs use the system's Python, without torch: the checkout's virtual environment
may sit in a home folder no other user can enter.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

import pytest

from opscan.containment import PARTS, landlock_abi

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
SECRET = "FAKE-issue41-secret-0123456789"
NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"

HOME_FILES = {".kaggle/kaggle.json": '{"username": "me", "key": "KAGGLE-%s"}',
              ".config/pip/pip.conf": "[global]\nindex-url = https://me:PIP-%s@pkgs.example.invalid/simple\n",
              ".gitconfig": "[credential]\n\thelper = store\n[http]\n\textraheader = AUTHORIZATION: basic GIT-%s\n",
              ".bash_history": "export GITHUB_TOKEN=HISTORY-%s\n", ".zsh_history": ": 1:0;export X=ZSH-%s\n",
              ".env": "OPENAI_API_KEY=ENV-%s\n", ".netrc": "machine example login me password NETRC-%s\n",
              ".cache/huggingface/token": "hf_TOKEN%s\n"}
DOTFILES = {"dotfiles/ssh/id_rsa": "SSH-KEY-%s", "../outside-dotfiles/aws/credentials": "AWS-%s"}
GIT_CONFIG = ('[remote "origin"]\n\turl = https://x-access-token:GITURL-%s@github.com/me/repo.git\n'
              '[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic EXTRAHEADER-%s\n')


def _namespaces_available() -> bool:
    return sys.platform.startswith("linux") and shutil.which("unshare") is not None and \
        subprocess.run(["unshare", "-Urn", "true"], capture_output=True).returncode == 0


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not _namespaces_available(), reason="needs Linux user namespaces (unshare -Urn)")]

USERS = ("caller", "uid 65534")
MODES = ("namespaces", "landlock")


def _skip_unless_possible(user: str, mode: str) -> None:
    if user != "caller" and (os.getuid() != 0 or not shutil.which("setpriv")
                             or not os.access(SYSTEM_PYTHON, os.X_OK)):
        pytest.skip("needs root to become uid 65534, and a Python every user can run")
    if mode == "landlock" and landlock_abi() < 4:
        pytest.skip("needs Landlock ABI 4+ (Linux 6.7+) for the Landlock-only mode")


class _Listener:
    """A Unix (or TCP) listener that counts the connections it accepts."""

    def __init__(self, family: int, address) -> None:
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind(address)
        self.sock.listen(16)
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


def _hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.fixture
def planted():
    """A world-readable tree (uid 65534 reaches it too): a checkout with a token in .git/config, a
    `.env` beside it, a dotfiles home, an ssh-agent-like socket; an abstract socket, a TCP listener,
    a file of the host's /dev/shm. Everything is removed afterwards, whatever the test found."""
    tag = uuid.uuid4().hex[:12]
    base = Path(tempfile.mkdtemp(prefix="opscan-escapes-"))
    base.chmod(0o755)
    home, repo = base / "home", base / "repo"
    for rel, text in {**HOME_FILES, **DOTFILES}.items():
        path = (home / rel).resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text % tag)
    (home / ".ssh").symlink_to(home / "dotfiles" / "ssh")                 # a dotfiles setup: links
    (home / ".aws").symlink_to(base / "outside-dotfiles" / "aws")
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(GIT_CONFIG % (tag, tag))
    (repo / "model.py").write_text("x = 1\n")
    (base / ".env").write_text(f"DATABASE_URL=postgres://u:DOTENV-{tag}@db.invalid/x\n")
    for path in base.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o777 if path.is_dir() else 0o666)
    agent = _Listener(socket.AF_UNIX, str(base / "agent.sock"))
    (base / "agent.sock").chmod(0o777)
    abstract = _Listener(socket.AF_UNIX, f"\0opscan-escapes-{tag}")
    tcp = _Listener(socket.AF_INET, ("127.0.0.1", 0))
    victim = Path(f"/dev/shm/opscan-victim-{tag}")
    victim.write_text("the host's")
    victim.chmod(0o666)
    key = int(tag[:6], 16) * 16
    values = [f"{marker}-{tag}" for marker in ("KAGGLE", "PIP", "GIT", "HISTORY", "ZSH", "ENV", "NETRC",
                                                "SSH-KEY", "AWS", "GITURL", "EXTRAHEADER", "DOTENV", "KEYRING")]
    values.append(f"hf_TOKEN{tag}")
    state = {"tag": tag, "base": base, "home": home, "repo": repo, "agent": agent, "abstract": abstract, "tcp": tcp,
             "victim": victim, "sysv_key": key, "mqueue": f"/opscan-escapes-{tag}", "secrets": values}
    try:
        yield state
    finally:
        for listener in (agent, abstract, tcp):
            listener.close()
        victim.unlink(missing_ok=True)
        _remove_sysv(key)
        _remove_mqueue(state["mqueue"])
        shutil.rmtree(base, ignore_errors=True)


def _sysv_keys() -> set[int]:
    try:
        lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    except OSError:
        return set()
    return {int(line.split()[0]) & 0xFFFFFFFF for line in lines if line.split()}


def _remove_sysv(key: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for index in range(4):
        ident = libc.shmget(ctypes.c_int(key + index), ctypes.c_size_t(0), ctypes.c_int(0))
        if ident >= 0:
            libc.shmctl(ctypes.c_int(ident), ctypes.c_int(0), None)


def _mqueue_exists(name: str, remove: bool = False) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.mq_open(name.encode(), ctypes.c_int(os.O_RDONLY))
    if fd >= 0:
        os.close(fd)
        if remove:
            libc.mq_unlink(name.encode())
    return fd >= 0


def _remove_mqueue(name: str) -> None:
    _mqueue_exists(name, remove=True)


def _contained(request: dict, user: str, mode: str, *, cwd: Path, home: Path) -> tuple[dict, str]:
    """Run escape_runner.py with `request` as `user` in `mode`: (its JSON line, its stderr)."""
    python = sys.executable if user == "caller" else SYSTEM_PYTHON
    command = [python, str(HERE / "escape_runner.py"), json.dumps(request)]
    if mode == "landlock":   # a user namespace in which no further one can be made (a container's seccomp)
        command = ["unshare", "-Ur", "sh", "-c", 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "sh",
                   *command]
    if user != "caller":
        command = ["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups", *command]
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home), "PYTHONPATH": f"{REPO_ROOT}:{HERE}",
           "GITHUB_TOKEN": f"ghp_{SECRET}", "AWS_SECRET_ACCESS_KEY": SECRET}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def _real_home_files(uid: int) -> list[str]:
    """Files directly in the account's real home (pwd), as `uid` could read them without containment."""
    try:
        home = Path(pwd.getpwuid(uid).pw_dir)
        return [str(p) for p in sorted(home.iterdir()) if p.is_file() and not p.is_symlink()]
    except (KeyError, OSError):
        return []


def _attempts(planted, uid: int) -> dict:
    """The request that tries every way out of issue 41 from the planted tree."""
    base, home, repo, tag = planted["base"], planted["home"], planted["repo"], planted["tag"]
    secrets_to_read = [home / rel for rel in HOME_FILES] + [
        home / ".ssh" / "id_rsa", home / ".aws" / "credentials", home / "dotfiles" / "ssh" / "id_rsa",
        base / "outside-dotfiles" / "aws" / "credentials", base / ".env", repo / ".git" / "config",
        Path("/etc/shadow"), *map(Path, _real_home_files(uid))]
    spec = {"read": [str(p) for p in secrets_to_read],
            "list": [str(home), str(base), str(repo / ".git"), "/run", "/var/run", "/home", "/root"],
            "write": [str(planted["victim"]), str(base / ".env"), str(home / ".bashrc")],
            "unix": [str(base / "agent.sock"), f"@opscan-escapes-{tag}"], "port": planted["tcp"].sock.getsockname()[1],
            "sysv_key": planted["sysv_key"], "sysv_sizes": [1 << 20, 1 << 30], "mqueue": planted["mqueue"],
            "key_description": f"opscan-escapes-{tag}"}
    return {"func": "escape_probes:attempt", "kwargs": {"spec": spec}, "overlays": [str(repo)],
            "keys": {f"opscan-escapes-{tag}": f"KEYRING-{tag}"}}


def test_the_planted_code_gets_out_when_not_contained(planted):
    """The probes are real: uncontained, each way out of issue 41 works on this machine (so the
    tests below cannot pass for want of a working attempt)."""
    request = {**_attempts(planted, os.getuid()), "contained": False}
    out, _ = _contained(request, "caller", "namespaces", cwd=planted["repo"], home=planted["home"])
    reached = out["value"]
    readable = {path for path, state in reached["read"].items() if state.startswith("READ:")}
    planted_files = set(request["kwargs"]["spec"]["read"]) - {"/etc/shadow", *_real_home_files(os.getuid())}
    assert planted_files and planted_files <= readable, planted_files - readable
    assert set(reached["unix"].values()) == {"CONNECTED"} and reached["tcp"] == "CONNECTED"
    assert reached["sysv"] == {str(1 << 20): "CREATED", str(1 << 30): "CREATED"} and reached["mqueue"] == "CREATED"
    assert planted["sysv_key"] in _sysv_keys() and _mqueue_exists(planted["mqueue"])   # they outlive the child
    assert reached["wrote"][str(planted["victim"])] == "WROTE"
    assert reached["keys"] == [f"KEYRING-{planted['tag']}"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("user", USERS)
def test_planted_code_reaches_no_socket_key_ipc_or_credential_file_outside(planted, user, mode):
    _skip_unless_possible(user, mode)
    base, home, repo = planted["base"], planted["home"], planted["repo"]
    before = _hashes(base)
    uid = 0 if user == "caller" and os.getuid() == 0 else (os.getuid() if user == "caller" else NOBODY)
    out, err = _contained(_attempts(planted, uid), user, mode, cwd=repo, home=home)
    assert out["how"] == "returned", out
    seen = json.dumps(out["value"]) + err
    assert [value for value in planted["secrets"] if value in seen] == [], "a secret reached the planted code"
    assert SECRET not in seen
    reached = out["value"]
    assert [path for path, state in reached["read"].items() if state.startswith("READ:")] == []
    assert reached["keys"] == []
    assert reached["tcp"].startswith("refused") and planted["tcp"].accepted == 0
    assert out["parts"]["environment"] == "held" and out["parts"]["keyring"] == "held"
    if mode == "namespaces":
        assert out["parts"] == {part: "held" for part in PARTS}, out["parts"]   # a symlinked home included
        assert all(state.startswith("refused") for state in reached["unix"].values()), reached["unix"]
        assert planted["agent"].accepted == 0 and planted["abstract"].accepted == 0
        listed = reached["listed"]   # only the mount points of the project and of the cache it is given
        assert listed[str(base)] == ["home", "repo"] and listed[str(home)] == [".cache"], listed
        assert listed["/run"] == [] and not isinstance(listed["/var/run"], list), listed   # no socket of /run
        assert not isinstance(listed["/home"], list) or listed["/home"] == [], listed
        assert not isinstance(listed[str(repo / ".git")], list) or listed[str(repo / ".git")] == [], listed
        assert reached["sysv"] == {str(1 << 20): "CREATED", str(1 << 30): "refused EINVAL"}   # over --scratch-size
        assert reached["mqueue"] == "CREATED"
        assert planted["sysv_key"] not in _sysv_keys() and not _mqueue_exists(planted["mqueue"])   # gone with it
        assert planted["victim"].read_text() == "the host's"
        assert _hashes(base) == before
    else:   # what Landlock cannot hold is said (NOTE [Landlock without namespaces])
        assert {part for part, state in out["parts"].items() if state != "held"} == {
            "network", "files", "ipc", "processes", "limits"}
        assert reached["wrote"][str(base / ".env")].startswith("refused") and _hashes(base) == before


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("user", USERS)
def test_the_process_tree_is_limited_as_a_whole(planted, user, mode):
    """--max-processes 100 against 400 forks; --max-memory 800M against four processes of 300 MiB
    (each under the limit, together over it)."""
    _skip_unless_possible(user, mode)
    forks, _ = _contained({"func": "escape_probes:fork_count", "kwargs": {"attempts": 400}, "max_processes": 100},
                          user, mode, cwd=planted["base"], home=planted["home"])
    memory, err = _contained({"func": "escape_probes:hold_memory", "kwargs": {"processes": 4, "mib": 300},
                              "max_memory": 800 << 20}, user, mode, cwd=planted["base"], home=planted["home"])
    if mode == "namespaces":
        assert forks["parts"]["limits"] == "held"
        assert forks["how"] == "returned"
        uid_zero = user == "caller" and os.getuid() == 0
        assert forks["value"] < (300 if uid_zero else 100)   # root: the PID namespace's pid_max, at least 300
        assert (memory["how"], memory["signal"]) == ("signal", "SIGKILL"), memory
        assert "over the limit" in err
    else:
        assert forks["parts"]["limits"] != "held" and memory["parts"]["limits"] != "held"
        assert memory["value"] == "held all"   # per process only: said, not hidden
