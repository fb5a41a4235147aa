"""Containment of the child that runs project code (opscan/containment/, docs/reliability.md).

A planted repository whose package and README block misbehave in every way the issue lists
(markers under absolute paths outside, writes into the repository, dumps of os.environ, of
/proc/self/environ and of every /proc/PID/environ it can read, the home folder's secret files, a
subprocess and a ctypes `connect` to a listener of this test on 127.0.0.1, a daemon that should
outlive the child, a scratch disk filled up) is checked with fake secrets in the environment: no
secret reaches what the code can see or send, no connection arrives, nothing outside the scratch
folder changes, no process is left, and the model is still traced. The degraded path (no user
namespaces: simulated with a user namespace whose `max_user_namespaces` is 0, as a container that
forbids them) still traces and says which parts held; `--require-containment` then exits 2
before any project code runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from opscan import containment
from opscan.containment import Policy, child_environment

SECRETS = {"GITHUB_TOKEN": "ghp_FAKE0SECRET0GITHUB0TOKEN0123456789",
           "AWS_SECRET_ACCESS_KEY": "FAKEawsSECRETaccessKEY0123456789abcdef",
           "AWS_ACCESS_KEY_ID": "AKIAFAKEACCESSKEY0001",
           "HF_TOKEN": "hf_FAKEhuggingFACEtoken0123456789",
           "NPM_TOKEN": "npm_FAKE0npm0token0123456789",
           "DATABASE_PASSWORD": "FAKE-db-password-0123456789",
           "MY_SERVICE_CREDENTIALS": "FAKE-service-credentials-0123456789"}
HOME_SECRETS = {".ssh/id_rsa": "FAKE-ssh-private-key-0123456789",
                ".aws/credentials": "FAKE-aws-credentials-file-0123456789",
                ".netrc": "machine example login me password FAKE-netrc-0123456789",
                ".git-credentials": "https://me:FAKE-git-credentials-0123456789@example.invalid",
                ".config/gcloud/credentials.db": "FAKE-gcloud-0123456789",
                ".docker/config.json": "FAKE-docker-auth-0123456789",
                ".kube/config": "FAKE-kube-token-0123456789"}

PAYLOAD = r'''
def _planted(where):
    import ctypes, json, os, socket, struct, subprocess, sys
    say = lambda tag, value: print(f"PLANTED {where} {tag}: {value}", file=sys.stderr, flush=True)
    say("RAN", "yes")
    say("ENV", json.dumps(dict(os.environ)))
    import posix
    say("POSIX-ENV", repr(posix.environ))
    try:
        say("PROC-SELF", open("/proc/self/environ", "rb").read().decode(errors="replace"))
    except OSError as exc:
        say("PROC-SELF", f"refused {exc}")
    seen = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                say(f"PROC-{pid}", open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace"))
                seen += 1
            except OSError:
                pass
    try:
        say("PROC-PARENT", open(f"/proc/{PARENT_PID}/environ", "rb").read().decode(errors="replace"))
    except FileNotFoundError:
        say("PROC-PARENT", "absent")
    except OSError as exc:
        say("PROC-PARENT", f"refused {exc}")
    for rel in HOME_FILES:
        for home in (FAKE_HOME, os.path.expanduser("~")):
            try:
                say("HOME-FILE", open(os.path.join(home, rel)).read())
            except OSError as exc:
                say("HOME-FILE", f"refused {type(exc).__name__}")
    for path in (os.path.join(MARKERS, f"{where}-marker"), os.path.join(REPO, f"{where}-written.txt"),
                 os.path.join(FAKE_HOME, f"{where}-written.txt"), f"/tmp/opscan-planted-{TAG}-{where}",
                 f"/opscan-planted-{TAG}-{where}", os.path.join(os.getcwd(), f"{where}-cwd.txt")):
        try:
            with open(path, "w") as handle:
                handle.write(os.environ.get("GITHUB_TOKEN", "no token"))
            say("WROTE", path)
        except OSError as exc:
            say("WRITE-REFUSED", f"{path} {exc}")
    try:   # a connection through Python's socket module
        socket.create_connection(("127.0.0.1", PORT), timeout=2).sendall(b"python")
        say("CONNECTED", "socket")
    except OSError as exc:
        say("CONNECT-REFUSED", f"socket {exc}")
    try:   # through a subprocess (python -c; curl when installed)
        code = f"import socket; socket.create_connection(('127.0.0.1', {PORT}), timeout=2).sendall(b'sub')"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=20)
        say("SUBPROCESS", f"exit {done.returncode}")
        done = subprocess.run(["curl", "-s", "-m", "2", f"http://127.0.0.1:{PORT}/"], capture_output=True, timeout=20)
        say("CURL", f"exit {done.returncode}")
    except (OSError, subprocess.SubprocessError) as exc:
        say("SUBPROCESS", f"failed {type(exc).__name__}")
    libc = ctypes.CDLL(None, use_errno=True)   # through libc, past any Python-level patch
    fd = libc.socket(2, 1, 0)
    address = struct.pack("=H", 2) + struct.pack("!H", PORT) + socket.inet_aton("127.0.0.1") + bytes(8)
    result = libc.connect(fd, address, len(address))
    say("CTYPES-CONNECT", f"{result} errno {ctypes.get_errno()}")
    if where == "package":   # a daemon that would outlive the child
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", f"daemon-{TAG}"])
            os._exit(0)
        written = 0
        try:   # fill the scratch folder's disk
            with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "fill"), "wb") as handle:
                block = b"x" * (1 << 20)
                while written < (96 << 20):
                    handle.write(block)
                    handle.flush()
                    written += len(block)
            say("DISK", f"not full after {written}")
        except OSError as exc:
            say("DISK", f"full after {written} bytes: {type(exc).__name__}")
        os.unlink(os.path.join(os.environ.get("TMPDIR", "/tmp"), "fill"))   # the model's build goes on


_planted(WHERE)
'''

README = """# planted

```python
import torch
from pkg.model import TinyNet

model = TinyNet()
out = model(torch.randn(2, 8))
```
"""

MODEL = """import torch
from torch import nn

{payload}

class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.fc(x)).sum(-1)
"""


class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self):
        self.sock.close()


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _plant(tmp_path: Path, port: int, tag: str) -> dict[str, Path]:
    repo, markers, home = tmp_path / "repo", tmp_path / "markers", tmp_path / "home"
    for folder in (repo / "pkg", markers, home):
        folder.mkdir(parents=True)
    for rel, text in HOME_SECRETS.items():   # ~/.ssh is a link into a dotfiles folder (issue 41)
        path = home / rel.replace(".ssh/", "dotfiles/ssh/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (home / ".ssh").symlink_to(home / "dotfiles" / "ssh")
    values = (f"PORT = {port}\nTAG = {tag!r}\nPARENT_PID = {os.getpid()}\nMARKERS = {str(markers)!r}\n"
              f"REPO = {str(repo)!r}\nFAKE_HOME = {str(home)!r}\nHOME_FILES = {sorted(HOME_SECRETS)!r}\n")
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "model.py").write_text(MODEL.format(payload=values + "WHERE = 'package'\n" + PAYLOAD))
    block = values + "WHERE = 'readme'\n" + PAYLOAD
    (repo / "README.md").write_text(README.replace("model = TinyNet()", block + "\nmodel = TinyNet()"))
    return {"repo": repo, "markers": markers, "home": home}


def _run(argv: list[str], tree: dict[str, Path], prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(SECRETS)
    env["HOME"] = str(tree["home"])
    command = [*prefix, sys.executable, "-m", "opscan", *argv]
    return subprocess.run(command, cwd=tree["repo"], env=env, capture_output=True, text=True, timeout=600)


def _daemons(tag: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            if f"daemon-{tag}".encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except (OSError, ValueError):
            pass
    return found


def _secret_values() -> list[str]:
    return list(SECRETS.values()) + list(HOME_SECRETS.values())


@pytest.fixture
def planted(tmp_path):
    listener = Listener()
    tag = uuid.uuid4().hex[:12]
    tree = _plant(tmp_path, listener.port, tag)
    before = {name: _tree(path) for name, path in tree.items()}
    yield tree, listener, tag, before
    listener.close()
    for pid in _daemons(tag):   # never leave one behind, whatever the test found
        os.kill(pid, 9)
    for leftover in [*Path("/tmp").glob(f"opscan-planted-{tag}-*"), *Path("/").glob(f"opscan-planted-{tag}-*")]:
        leftover.unlink()


linux_namespaces = pytest.mark.skipif(
    not sys.platform.startswith("linux") or subprocess.run(["unshare", "-Urn", "true"], capture_output=True).returncode,
    reason="needs Linux user namespaces (unshare -Urn)")


@pytest.mark.slow
@linux_namespaces
def test_planted_repository_gets_no_secret_no_network_no_write_and_is_still_traced(planted):
    tree, listener, tag, before = planted
    done = _run([".", "--format", "json", "--scratch-size", "48M"], tree)
    seen = done.stdout + done.stderr
    assert "PLANTED readme RAN: yes" in done.stderr and "PLANTED package RAN: yes" in done.stderr, done.stderr[-3000:]
    leaked = [value for value in _secret_values() if value in seen]
    assert leaked == [], "secrets reached the project's code"
    report = json.loads(done.stdout)
    assert report["containment"] == {"held": True, "parts": {p: "held" for p in containment.PARTS}}
    traced = {t["target"]: t for t in report["traces"]}
    assert "repo:README.md#1" in traced and traced["repo:README.md#1"]["distinct_ops"] > 0
    assert traced["repo:README.md#1"]["built_by"] == "built by running README.md block 1"
    assert "aten::relu" in {op["op"] for op in report["ops"]}
    assert listener.accepted == 0                                     # 0 connections
    assert "PLANTED package CTYPES-CONNECT: -1" in done.stderr
    wrote = [line.split(" WROTE: ")[1] for line in done.stderr.splitlines() if " WROTE: " in line]
    # only the repository's copy and the child's own /tmp (its scratch tmpfs) took writes ...
    assert wrote and all(path.startswith((str(tree["repo"]), "/tmp/")) for path in wrote), wrote
    assert f"PLANTED package WRITE-REFUSED: /opscan-planted-{tag}-package" in done.stderr
    assert {name: _tree(path) for name, path in tree.items()} == before   # ... the host's repo, markers, home unchanged
    assert not list(Path("/tmp").glob(f"opscan-planted-{tag}-*")) and not list(Path("/").glob("opscan-planted-*"))
    assert "PLANTED package DISK: full after" in done.stderr         # the scratch tmpfs filled, not the disk
    assert _daemons(tag) == []                                        # 0 processes left behind
    assert "PLANTED readme PROC-PARENT: absent" in done.stderr       # a fresh /proc: no other process


@pytest.mark.slow
@linux_namespaces
def test_terminal_report_names_what_ran_and_what_held(planted):
    tree, _, _, _ = planted
    done = _run([".", "--exit-zero"], tree)
    assert "built by running README.md block 1" in done.stdout
    assert "containment: environment, network, files, ipc, keyring, processes, limits held" in done.stdout


def _no_user_namespaces() -> tuple[str, ...]:
    """A prefix that runs opscan where no new user namespace can be made (as in a container that forbids them)."""
    return ("unshare", "-Ur", "sh", "-c", 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "sh")


@pytest.mark.slow
@linux_namespaces
def test_without_user_namespaces_the_run_still_traces_and_says_what_held(planted):
    tree, listener, tag, before = planted
    done = _run([".", "--format", "json", "--scratch-size", "48M"], tree, _no_user_namespaces())
    report = json.loads(done.stdout)
    parts = report["containment"]["parts"]
    assert report["containment"]["held"] is False
    assert parts["environment"] == "held"
    assert all(parts[p] != "held" and "user namespace refused" in parts[p] for p in ("network", "files", "processes"))
    assert "repo:README.md#1" in {t["target"] for t in report["traces"]}
    env_lines = [line for line in done.stderr.splitlines() if " ENV: " in line]
    assert env_lines and not [v for v in SECRETS.values() if any(v in line for line in env_lines)]
    self_lines = [line for line in done.stderr.splitlines() if " PROC-SELF: " in line]
    assert self_lines and not [v for v in SECRETS.values() if any(v in line for line in self_lines)]
    if containment.landlock_abi() >= 4:   # what Landlock still holds (NOTE [Landlock without namespaces])
        assert "Landlock" in parts["files"] and "Landlock refuses TCP" in parts["network"]
        assert listener.accepted == 0
        assert [line for line in done.stderr.splitlines() if " WROTE: " in line] == []
        assert {name: _tree(path) for name, path in tree.items()} == before
        assert not [line for line in done.stderr.splitlines() if any(v in line for v in HOME_SECRETS.values())]
    # a daemon that made its own session escapes here (documented): the fixture kills it


@pytest.mark.slow
@linux_namespaces
def test_require_containment_exits_2_before_any_project_code(planted):
    tree, _, _, before = planted
    done = _run([".", "--require-containment"], tree, _no_user_namespaces())
    assert done.returncode == 2
    assert "PLANTED" not in done.stderr
    assert "--require-containment" in done.stderr and "network not held" in done.stderr
    assert {name: _tree(path) for name, path in tree.items()} == before
    ok = _run([".", "--require-containment", "--exit-zero"], tree)
    assert ok.returncode == 0, ok.stderr[-2000:]


@pytest.mark.slow
@linux_namespaces
def test_no_project_code_runs_nothing_of_the_repository(planted):
    tree, _, _, _ = planted
    done = _run([".", "--no-project-code", "--format", "json"], tree)
    assert "PLANTED" not in done.stderr
    report = json.loads(done.stdout)
    assert report["traces"] == []
    assert any(note.startswith("--no-project-code:") for note in report["notes"])


@pytest.mark.slow
@linux_namespaces
def test_pass_env_gives_the_child_one_variable(tmp_path):
    from opscan.containment.process import Limits, run

    os.environ["OPSCAN_TEST_WANTED_TOKEN"] = "wanted-0123"
    os.environ["OPSCAN_TEST_OTHER_TOKEN"] = "other-0123"
    try:
        ended = run("os:getenv", {"key": "OPSCAN_TEST_WANTED_TOKEN"},
                    Limits(timeout=60, containment=Policy(pass_env=("OPSCAN_TEST_WANTED_TOKEN",))))
        other = run("os:getenv", {"key": "OPSCAN_TEST_OTHER_TOKEN"}, Limits(timeout=60))
    finally:
        del os.environ["OPSCAN_TEST_WANTED_TOKEN"], os.environ["OPSCAN_TEST_OTHER_TOKEN"]
    assert (ended.how, ended.value) == ("returned", "wanted-0123")
    assert (other.how, other.value) == ("returned", None)


@pytest.mark.slow
@linux_namespaces
@pytest.mark.skipif(os.getuid() != 0 or not shutil.which("setpriv") or not os.access("/usr/bin/python3", os.X_OK),
                    reason="needs root to become another user, and a Python every user can run")
def test_containment_holds_for_a_user_without_privileges():
    """As an ordinary user (uid 65534): the user namespace maps the uid to itself; every part holds.
    (The system's Python: this checkout's virtual environment may sit in a home no other user can read.)"""
    code = ("from opscan.containment.process import Limits, check_containment\n"
            "if __name__ == '__main__':\n    print(check_containment(Limits(timeout=60)).line())\n")
    repo = Path(containment.__file__).resolve().parents[2]
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONPATH": str(repo)}
    done = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                           "/usr/bin/python3", "-c", code], cwd="/", env=env, capture_output=True, text=True,
                           timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "containment: environment, network, files, ipc, keyring, processes, limits held"


# -- the environment allow-list (no child) ------------------------------------------------------------

def test_allow_list_passes_what_python_and_torch_need_and_never_a_secret(tmp_path):
    environ = {**SECRETS, "PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HF_HOME": "/caches/hf",
               "OMP_NUM_THREADS": "2", "TOKENIZERS_PARALLELISM": "false", "HF_HUB_TOKEN": "x-secret",
               "TORCH_HOME": "/caches/torch", "AZURE_CLIENT_SECRET": "x-secret", "SSH_AUTH_SOCK": "/tmp/agent",
               "GOOGLE_APPLICATION_CREDENTIALS": "/x.json", "KUBECONFIG": "/k", "CI_JOB_TOKEN": "x-secret",
               "HOME": "/home/me", "USER": "me", "MY_OWN_SETTING": "1"}
    env = child_environment(environ, Policy(pass_env=("MY_OWN_SETTING",)), str(tmp_path))
    assert {k: env[k] for k in ("PATH", "LANG", "LC_ALL", "HF_HOME", "OMP_NUM_THREADS", "TOKENIZERS_PARALLELISM",
                                "TORCH_HOME", "MY_OWN_SETTING")} == {
        "PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HF_HOME": "/caches/hf", "OMP_NUM_THREADS": "2",
        "TOKENIZERS_PARALLELISM": "false", "TORCH_HOME": "/caches/torch", "MY_OWN_SETTING": "1"}
    assert env["HOME"] == str(tmp_path / "home") and env["TMPDIR"] == str(tmp_path / "tmp")
    assert env["HF_HUB_OFFLINE"] == "1"
    for name in (*SECRETS, "HF_HUB_TOKEN", "AZURE_CLIENT_SECRET", "SSH_AUTH_SOCK", "GOOGLE_APPLICATION_CREDENTIALS",
                 "KUBECONFIG", "CI_JOB_TOKEN", "USER"):
        assert name not in env, name


def test_pass_env_takes_a_name_not_an_assignment(run_cli):
    code, _, err = run_cli("trace", "x.py:build", "--pass-env", "A=1")
    assert code == 2 and "--pass-env" in err


def test_allow_read_and_max_processes_take_a_path_and_a_count(run_cli, tmp_path):
    for flags in (("--allow-read", str(tmp_path / "missing")), ("--max-processes", "2"), ("--max-processes", "x")):
        code, _, err = run_cli("trace", "x.py:build", *flags)
        assert code == 2 and flags[0] in err, (flags, err)


def test_require_containment_with_in_process_is_a_usage_error(run_cli):
    code, _, err = run_cli("trace", "x.py:build", "--require-containment", "--in-process")
    assert code == 2 and "--require-containment" in err


@pytest.mark.slow
@linux_namespaces
def test_parity_run_command_is_contained(tmp_path, run_cli, monkeypatch):
    """`opscan parity run -- COMMAND`: the command gets no secret and writes only its loss log (the
    output folder stays writable); a write elsewhere is refused."""
    marker, out_dir = tmp_path / "marker", tmp_path / "runs"
    script = tmp_path / "train.py"
    script.write_text(
        "import json, os, sys\n"
        "if 'GITHUB_TOKEN' in os.environ or "
        "'ghp_' in open('/proc/self/environ', 'rb').read().decode(errors='replace'):\n"
        "    sys.exit(3)\n"
        "try:\n"
        f"    open({str(marker)!r}, 'w').write('x')\n"
        "except OSError:\n"
        "    pass\n"
        "json.dump({str(s): 1.0 / (s + 1) for s in range(5)}, open(os.environ['LOSS_DUMP'], 'w'))\n")
    monkeypatch.setenv("GITHUB_TOKEN", SECRETS["GITHUB_TOKEN"])
    code, out, err = run_cli("parity", "run", "--target-device", "cpu", "--tolerance", "1e-6", "--out-dir",
                             str(out_dir), "--format", "json", "--", sys.executable, str(script))
    assert code == 0, err
    assert json.loads(out)["run"]["containment"]["held"] is True
    assert not marker.exists()
    assert sorted(p.name for p in out_dir.iterdir()) == ["baseline.json", "baseline.log", "candidate.json",
                                                         "candidate.log"]


@linux_namespaces
def test_the_child_can_write_to_dev_null():
    """Libraries write to /dev/null at import (dill, which torch.utils.data imports when installed):
    the read-only root does not make it read-only (NOTE [devices that take writes])."""
    from opscan.containment.process import Limits, run

    ended = run("shutil:copyfile", {"src": os.__file__, "dst": "/dev/null"}, Limits(timeout=60))
    assert (ended.how, ended.value) == ("returned", "/dev/null")
