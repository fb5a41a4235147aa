"""Odd file names: not UTF-8, with newlines, commas, colons, spaces, a leading dash, non-ASCII."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CUDA = b'x = x.to("cuda")\n'
NAMES = [b"bad\xff.py", b"evil\n::error file=x.py,line=1::INJECTED.py", b"comma,colon:name.py",
         b"with space.py", b"-rf.py", "caf\u00e9_\u6a21\u578b.py".encode(), b"per%cent.py"]


@pytest.fixture(scope="module")
def odd_tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("names")
    for name in NAMES:
        with open(os.path.join(os.fsencode(root), name), "wb") as handle:
            handle.write(CUDA)
    return root


def _run(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-m", "opscan", *args], cwd=root, capture_output=True, timeout=120,
                          env=env)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "markdown", "terminal"])
def test_odd_file_names_in_every_format(odd_tree, fmt):
    proc = _run(odd_tree, "check", ".", "--no-trace", "--format", fmt)
    assert proc.returncode == 1, proc.stderr.decode(errors="replace")
    text = proc.stdout.decode("utf-8")          # valid UTF-8, whatever the names
    assert b"Traceback" not in proc.stderr
    if fmt == "json":
        paths = sorted(f["path"] for f in json.loads(text)["findings"])
        assert len(paths) == len(NAMES) and "bad\\xff.py" in paths
    if fmt == "github":
        # a newline in a file name must not start a workflow command of its own
        commands = [line for line in text.splitlines() if line.startswith("::")]
        assert not any(line.startswith("::error file=x.py") for line in commands)
        assert sum(line.startswith("::error file=") for line in commands) == len(NAMES)
        assert commands[0].startswith("::error title=opscan verdict%3A blocked::")


@pytest.mark.slow
def test_odd_file_names_in_scan_json(odd_tree):
    proc = _run(odd_tree, "scan", ".", "--format", "json")
    assert proc.returncode == 1 and b"Traceback" not in proc.stderr
    assert len(json.loads(proc.stdout.decode("utf-8"))["findings"]) == len(NAMES)


@pytest.mark.parametrize("fmt", ["json", "github"])
def test_odd_file_names_in_process(odd_tree, run_cli, monkeypatch, fmt):
    """The quick loop's twin of the two tests above: the same tree, the CLI in this process."""
    monkeypatch.chdir(odd_tree)
    code, out, err = run_cli("check", ".", "--no-trace", "--format", fmt)
    assert code == 1, err
    out.encode("utf-8")                         # every name came out as valid text
    if fmt == "json":
        paths = sorted(f["path"] for f in json.loads(out)["findings"])
        assert len(paths) == len(NAMES) and "bad\\xff.py" in paths
    else:
        commands = [line for line in out.splitlines() if line.startswith("::")]
        assert not any(line.startswith("::error file=x.py") for line in commands)
        assert sum(line.startswith("::error file=") for line in commands) == len(NAMES)
