"""The public API of opscan.db, and the commands without torch."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import opscan.db as db


def test_public_api_is_pinned():
    assert sorted(db.__all__) == ["Changelog", "Release", "check", "diff", "load_file", "load_release",
                                  "shipped_releases"]
    assert list(inspect.signature(db.load_release).parameters) == ["spec", "db_file"]
    for method in ("lookup", "profile", "pairs_with_torch", "pairing_warning"):
        assert callable(getattr(db.Release, method))


@pytest.mark.slow
def test_commands_work_without_torch(repo_root):
    code = ("import sys; sys.modules['torch'] = None\n"
            "from opscan.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    def run(*args):
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                              cwd=repo_root)
    listed = run("db", "list")
    assert listed.returncode == 0 and "torchneuron==2.33.0" in listed.stdout
    shown = run("db", "show", "aten::mm", "aten::mse_loss_backward")
    assert shown.returncode == 0
    assert "torch is not importable" in shown.stdout
    assert "aten::mm: native (pre-release source, unverified for 2.33)" in shown.stdout
    assert "aten::mse_loss_backward: unknown" in shown.stdout
    diffed = run("db", "diff", "torch-neuronx-xla==2.3.0", "torch-neuronx-xla==2.32.0")
    assert diffed.returncode == 0 and "The release changed (3)" in diffed.stdout
