"""The ways out of issue 41 that were opscan's own (escapes 1, 2 and 5), each planted in a repository
and run through the commands that reach it (escape 7, secrets by other names, is in the planted
repository of test_reliability_containment.py).

1. Code in opscan's own process: the model finds multiprocessing's Connection with gc and sends an
   object whose `__reduce__` calls exec, and writes raw and framed pickle bytes on every pipe it can.
   Through `opscan PATH`, `trace`, `run`, `zoo` and `db probe`: no marker of the exploit, and the
   run ends as the child sending invalid data (exit 2; the zoo row a "crash").
2. Project code before containment: `keyword.py`, `signal.py`, `socket.py`, ... at the repository
   root, with opscan run from there (`opscan` as the console script runs it: `python -P -m opscan`),
   through the check child, the trace child, the zoo's fork server and its children, parity's
   launcher and `opscan scan`: no module runs uncontained, and the README's model is still traced.
3. The parent's resource tracker: the model writes `REGISTER:/victim:shared_memory` on every pipe it
   holds: the host's /dev/shm/victim outlives the run.
And as an unprivileged user (uid 65534), the same three at the process level.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.support.planted import markers_left, plant_shadowing

ROOT = Path(__file__).resolve().parents[2]

linux_namespaces = pytest.mark.skipif(
    not sys.platform.startswith("linux") or subprocess.run(["unshare", "-Urn", "true"], capture_output=True).returncode,
    reason="needs Linux user namespaces (unshare -Urn)")

ATTACK = '''
def _attack(marker):
    """Everything a model can send back to make opscan itself run code."""
    import gc, os, pickle, struct

    class _Exec:
        def __reduce__(self):
            return (exec, (f"open({marker!r}, 'w').write('ran in opscan')",))

    for obj in gc.get_objects():   # multiprocessing's Connection, as the old child had it
        if type(obj).__name__ == "Connection" and hasattr(obj, "send"):
            try:
                obj.send(_Exec())
            except Exception:
                pass
    data = pickle.dumps(_Exec())
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd < 3 or not os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                continue
            os.write(fd, struct.pack(">Q", len(data)) + data + data)
        except OSError:
            pass
'''

MODEL = '''import torch
from torch import nn
{attack}

def build():
    _attack({marker!r})
    return nn.Linear(8, 4), (torch.randn(2, 8),)
'''

TRAIN = '''import torch
from torch import nn
{attack}
_attack({marker!r})
model = nn.Linear(8, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    loss = model(torch.randn(2, 8)).sum()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
'''

BACKEND = '''{attack}
_attack({marker!r})
'''


def _opscan(argv: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """`opscan ARGS` as the console script runs it (no working folder on sys.path: `python -P -m`)."""
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    environ.update(env, GITHUB_TOKEN="ghp_FAKE-escapes-test-token")
    return subprocess.run([sys.executable, "-P", "-m", "opscan", *argv], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=900)


@pytest.fixture
def attacker(tmp_path):
    repo, marker = tmp_path / "repo", tmp_path / "pwned"
    repo.mkdir()
    values = {"attack": ATTACK, "marker": str(marker)}
    (repo / "model.py").write_text(MODEL.format(**values))
    (repo / "train.py").write_text(TRAIN.format(**values))
    (repo / "evil_backend.py").write_text(BACKEND.format(**values))
    return repo, marker


COMMANDS = {
    "opscan PATH": ([".", "--model", "model.py:build", "--format", "json"], {}),
    "opscan trace": (["trace", "model.py:build", "--format", "json"], {}),
    "opscan run": (["run", "--", "python", "train.py"], {}),
    "opscan zoo": (["zoo", "model.py:build", "--workers", "1", "--no-cache", "--format", "json"], {}),
    "opscan db probe": (["db", "probe", "--import", "evil_backend", "--out", "probe.yaml"], {"PYTHONPATH": "."}),
}


@pytest.mark.slow
@linux_namespaces
@pytest.mark.parametrize("command", COMMANDS)
def test_nothing_the_child_sends_runs_in_opscan(attacker, command):
    pytest.importorskip("torch")
    repo, marker = attacker
    argv, env = COMMANDS[command]
    if "PYTHONPATH" in env:
        env = {"PYTHONPATH": str(repo)}
    done = _opscan(argv, repo, **env)
    assert not marker.exists(), "the exploit ran in opscan's own process"
    if command == "opscan zoo":
        rows = json.loads(done.stdout)["models"]
        assert [(row["status"], "sent invalid data" in row["error"]) for row in rows] == [("crash", True)]
    else:
        assert done.returncode == 2, done.stderr[-2000:]
        assert "the child sent invalid data" in done.stderr and "Traceback" not in done.stderr


README = """# planted

```python
import torch
from torch import nn

model = nn.Linear(8, 4)
out = model(torch.randn(2, 8))
```
"""


@pytest.fixture
def shadowed(tmp_path):
    """A repository whose root shadows Python's modules, a README model, a training script."""
    repo, markers = tmp_path / "repo", tmp_path / "markers"
    repo.mkdir()
    markers.mkdir()
    plant_shadowing(repo, markers)
    (repo / "README.md").write_text(README)
    (repo / "model.py").write_text("import torch\nfrom torch import nn\n\n\ndef build():\n"
                                   "    return nn.Linear(8, 4), (torch.randn(2, 8),)\n")
    (repo / "train.py").write_text("import json, os\n"
                                   "json.dump({'0': 1.0, '1': 0.5}, open(os.environ['LOSS_DUMP'], 'w'))\n")
    return repo, markers


@pytest.mark.slow
@linux_namespaces
def test_no_module_of_the_repository_runs_before_containment(shadowed, tmp_path):
    pytest.importorskip("torch")
    repo, markers = shadowed
    done = _opscan([".", "--format", "json", "--require-containment"], repo)   # the check child, the trace child
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert "repo:README.md#1" in {t["target"] for t in json.loads(done.stdout)["traces"]}
    assert markers_left(markers) == []
    zoo = _opscan(["zoo", "model.py:build", "--workers", "1", "--no-cache", "--format", "json"], repo)   # forkserver
    assert [row["status"] for row in json.loads(zoo.stdout)["models"]] == ["ok"], zoo.stderr[-3000:]
    assert markers_left(markers) == []
    parity = _opscan(["parity", "run", "--target-device", "cpu", "--tolerance", "1e-6", "--out-dir",
                      str(tmp_path / "runs"), "--", sys.executable, "train.py"], repo)   # the launcher
    assert parity.returncode == 0, parity.stderr[-3000:]
    assert markers_left(markers) == []
    scan = _opscan(["scan", ".", "--jobs", "2"], repo)
    assert scan.returncode in (0, 1), scan.stderr[-3000:]
    assert markers_left(markers) == []


@pytest.mark.slow
def test_python_dash_m_runs_the_folders_modules_before_opscan_as_the_docs_say(shadowed):
    """Why the docs say to run `opscan` or `python -P -m opscan`: plain `python -m opscan` puts the
    working folder first, and Python imports from it before opscan's first line."""
    repo, markers = shadowed
    subprocess.run([sys.executable, "-m", "opscan", "--version"], cwd=repo, capture_output=True, timeout=120,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert markers_left(markers) != []


TRACKER = '''
import os
for name in os.listdir("/proc/self/fd"):
    try:
        if int(name) > 2 and os.readlink(f"/proc/self/fd/{name}").startswith("pipe:"):
            os.write(int(name), b"REGISTER:/VICTIM:shared_memory\\n")
    except OSError:
        pass
'''


@pytest.mark.slow
@linux_namespaces
def test_the_parents_resource_tracker_takes_no_order_from_the_child(tmp_path):
    pytest.importorskip("torch")
    repo = tmp_path / "repo"
    repo.mkdir()
    victim = f"opscan-victim-{uuid.uuid4().hex[:12]}"
    shm = Path("/dev/shm") / victim
    (repo / "README.md").write_text(README.replace("model = nn", TRACKER.replace("VICTIM", victim) + "model = nn"))
    shm.write_bytes(b"the host's data")
    try:
        _opscan([".", "--format", "json"], repo)
        assert shm.read_bytes() == b"the host's data"
    finally:
        shm.unlink(missing_ok=True)


UNPRIVILEGED = '''
import json, os, sys
from multiprocessing import resource_tracker
from opscan.containment.process import START_METHODS, Limits, run
from opscan.records import ModelTrace
work = os.getcwd()
os.chdir("/")                       # the test's own tracker (python -c) must not import the planted modules
resource_tracker.ensure_running()   # the parent's tracker, with its pipe
os.chdir(work)
out = {}
for method in START_METHODS:
    limits = Limits(timeout=60, start_method=method)
    pickled = run("process_targets:planted_answer", {"marker": sys.argv[1], "kind": "connection"}, limits,
                  returns=ModelTrace)
    framed = run("process_targets:planted_answer", {"marker": sys.argv[1], "kind": "framed-pickle"}, limits,
                 returns=ModelTrace)
    told = run("process_targets:tell_the_tracker", {"victim": "/" + sys.argv[2]}, limits)
    out[method] = [pickled.how, framed.how, told.how, told.containment.all]
print(json.dumps(out))
'''


@pytest.mark.slow
@linux_namespaces
@pytest.mark.skipif(os.getuid() != 0 or not shutil.which("setpriv") or not os.access("/usr/bin/python3", os.X_OK),
                    reason="needs root to become another user, and a Python every user can run")
def test_the_escapes_stay_shut_for_a_user_without_privileges():
    """As uid 65534 with the system's Python: planted answers end invalid, no marker, the working
    folder's `keyword.py` ... never run uncontained, the victim (the user's own) survives the
    parent's tracker."""
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="opscan-unprivileged-", dir="/tmp"))   # a folder every user can enter
    try:
        _unprivileged(top)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _unprivileged(top: Path) -> None:
    work, markers = top / "work", top / "markers"
    top.chmod(0o755)
    for folder in (work, markers):
        folder.mkdir()
        folder.chmod(0o777)
    plant_shadowing(work, markers)
    marker, victim = markers / "pwned", f"opscan-victim-{uuid.uuid4().hex[:12]}"
    shm = Path("/dev/shm") / victim
    shm.write_bytes(b"the host's data")
    os.chown(shm, 65534, 65534)   # the user's own segment: its tracker could unlink it
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GITHUB_TOKEN": "ghp_FAKE-unprivileged",
           "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests" / "containment")])}
    script = top / "unprivileged.py"
    script.write_text(UNPRIVILEGED)
    try:
        done = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                               "/usr/bin/python3", str(script), str(marker), victim], cwd=work, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result == {m: ["invalid", "invalid", "invalid", True] for m in ("spawn", "forkserver", "fork")}
        assert markers_left(markers) == []            # neither the exploit nor a planted module ran uncontained
        assert shm.read_bytes() == b"the host's data"
    finally:
        shm.unlink(missing_ok=True)

