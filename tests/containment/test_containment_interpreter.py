"""The interpreter of a child is opscan's until it is contained (issue 41, escape 2).

The working folder holds `keyword.py`, `signal.py`, `socket.py`, ... (tests/support/planted.py):
each leaves a marker outside when it runs uncontained. No child imports one before it is contained,
through every start method, the check child and parity's launcher; PYTHONPATH pointing at them is
not read before either; and the function still runs in the caller's working folder with the
caller's sys.path (a module only the parent's sys.path reaches is imported, once contained).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from opscan.containment import Policy, command_prefix, prepare_scratch, remove_scratch
from opscan.containment.interpreter import BOOT, isolated_argv
from opscan.containment.process import START_METHODS, Limits, check_containment, run
from tests.support.planted import markers_left, plant_shadowing

linux_namespaces = pytest.mark.skipif(
    not sys.platform.startswith("linux") or subprocess.run(["unshare", "-Urn", "true"], capture_output=True).returncode,
    reason="needs Linux user namespaces (unshare -Urn)")


@pytest.fixture
def hostile_folder(tmp_path, monkeypatch):
    """The working folder, and PYTHONPATH, full of modules that shadow Python's; a project module
    the parent's sys.path reaches."""
    folder, markers, project = tmp_path / "repo", tmp_path / "markers", tmp_path / "project"
    for path in (folder, markers, project):
        path.mkdir()
    plant_shadowing(folder, markers)
    (project / "own_module.py").write_text("import os\n\ndef where():\n    return os.getcwd()\n")
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.setenv("PYTHONPATH", str(folder))
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_FAKE-interpreter-test")
    monkeypatch.chdir(folder)
    return folder, markers


@pytest.mark.parametrize("method", [m if m == "spawn" else pytest.param(m, marks=pytest.mark.slow)
                                    for m in START_METHODS])
@pytest.mark.parametrize("contained", [True, False], ids=["contained", "not-contained"])
def test_no_child_imports_the_working_folders_modules(hostile_folder, method, contained):
    folder, markers = hostile_folder
    ended = run("own_module:where", {}, Limits(timeout=60, start_method=method,
                                                containment=Policy(enabled=contained)))
    assert ended.how == "returned", ended
    assert ended.value == str(folder)          # it ran in the caller's folder, with the caller's sys.path
    assert markers_left(markers) == []


def test_the_check_child_imports_none_of_them(hostile_folder):
    _, markers = hostile_folder
    check_containment(Limits(timeout=60))
    assert markers_left(markers) == []


@linux_namespaces
def test_parity_launcher_imports_none_of_them_before_it_is_contained(hostile_folder, tmp_path):
    """The launcher is isolated; the command it runs (`python -c`, which puts "" first) does import
    them, but contained: no marker reaches the folder outside."""
    folder, markers = hostile_folder
    scratch = prepare_scratch()
    try:
        code = "import keyword, socket, os; print(os.getcwd())"
        done = subprocess.run([*command_prefix(Policy(), scratch), sys.executable, "-c", code], capture_output=True,
                              text=True, timeout=120, cwd=scratch, env=dict(os.environ))
    finally:
        remove_scratch(scratch)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(folder)
    assert markers_left(markers) == []


# The launcher's command: what it can read, and how many processes its tree may start (one JSON line).
LAUNCHED = """import json, os, sys
seen = {}
for name in ("given", "other"):
    try:
        seen[name] = open(os.path.join(sys.argv[1], name, "data.txt")).read()
    except OSError as exc:
        seen[name] = type(exc).__name__
read_end, write_end = os.pipe()
forks = 0
for _ in range(400):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.close(write_end)
        os.read(read_end, 1)   # until the parent's end closes
        os._exit(0)
    forks += 1
os.close(write_end)
print(json.dumps({"seen": seen, "forks": forks}))
"""


@pytest.mark.slow
@linux_namespaces
def test_parity_launcher_takes_the_whole_policy(tmp_path):
    """The launcher's spec carries the Policy's `readable` (--allow-read, the files the user named) and
    `max_processes` (--max-processes): a folder given is readable and one not given is not in the
    command's files, and its tree stops short of 400 processes (under 16 as a user; as root under
    300, the floor of the PID namespace's pid_max; the default of 512 would let all 400 through)."""
    for name in ("given", "other"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "data.txt").write_text(f"{name} data")
    scratch = prepare_scratch()
    try:
        policy = Policy(readable=(str(tmp_path / "given"),), max_processes=16)
        done = subprocess.run([*command_prefix(policy, scratch, cwd=str(tmp_path / "given")), sys.executable, "-c",
                               LAUNCHED, str(tmp_path)], capture_output=True, text=True, timeout=180, cwd=scratch,
                              env=dict(os.environ))
    finally:
        remove_scratch(scratch)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["seen"] == {"given": "given data", "other": "FileNotFoundError"}
    assert 0 < out["forks"] < (300 if os.getuid() == 0 else 16)


def test_the_isolated_command_line():
    argv = isolated_argv("opscan.containment.child", "call", "3", "4")
    boot = argv.index("-c")
    assert argv[:2] == [sys.executable, "-I"] and argv[boot + 1] == BOOT
    assert Path(argv[boot + 2], "opscan", "__init__.py").is_file()
    assert argv[boot + 3:] == ["opscan.containment.child", "call", "3", "4"]


def test_the_fork_server_starts_isolated_and_without_a_secret(hostile_folder):
    """The zoo's fork server: no secret in the environment it was started with (it preloads torch
    and transformers uncontained), no module of the working folder, the working folder not its own."""
    from opscan.containment import carried_environment
    from opscan.containment.forkserver import server_for

    _, markers = hostile_folder
    ended = run("os:getpid", {}, Limits(timeout=60, start_method="forkserver"))
    assert ended.how == "returned", ended
    server = server_for((), carried_environment(os.environ, Policy()))   # the one that ran it
    environ = Path(f"/proc/{server.pid}/environ").read_bytes()
    assert b"GITHUB_TOKEN" not in environ and b"ghp_FAKE" not in environ
    assert os.readlink(f"/proc/{server.pid}/cwd") == "/"
    assert markers_left(markers) == []
