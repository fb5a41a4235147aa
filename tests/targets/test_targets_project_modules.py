"""A `package.module:NAME` target is the project's own module, whatever sys.path and sys.modules hold
(issue 44; NOTE [the project's module first] in opscan/targets/project_modules.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from opscan.targets.project_modules import PRIVATE, import_project_module


@pytest.fixture
def clean_modules():
    """Modules imported by a test are forgotten after it (the project's and the planted ones)."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_a_namespace_package_of_the_project_beats_a_regular_one_on_sys_path(tmp_path, monkeypatch, clean_modules):
    project = _write(tmp_path / "project", {"nets/m.py": "from nets import layers\nWHO = 'project' + layers.X\n",
                                            "nets/layers.py": "X = '!'\n"})
    other = _write(tmp_path / "other", {"nets/__init__.py": "", "nets/m.py": "WHO = 'other'\n"})
    monkeypatch.syspath_prepend(str(other))        # first on sys.path, and a regular package
    module = import_project_module("nets.m", project)
    assert module.WHO == "project!"
    assert import_project_module("nets.missing", project) is None     # not the project's: Python's import


def test_a_regular_package_already_imported_elsewhere_is_left_alone(tmp_path, monkeypatch, clean_modules):
    project = _write(tmp_path / "project", {"nets/__init__.py": "", "nets/m.py": "from . import layers\n"
                                            "WHO = 'project' + layers.X\n", "nets/layers.py": "X = '?'\n"})
    other = _write(tmp_path / "other", {"nets/__init__.py": "WHO = 'other'\n"})
    monkeypatch.syspath_prepend(str(other))
    import nets   # another library already uses this name in the process

    assert import_project_module("nets.m", project).WHO == "project?"
    assert sys.modules["nets"] is nets and nets.WHO == "other"         # kept for the rest of the process
    assert f"{PRIVATE}.nets.m" in sys.modules


@pytest.mark.parametrize("name", ["signal", "tokenize", "io", "logging", "random"])
def test_a_project_module_named_like_the_standard_library_is_the_projects(tmp_path, clean_modules, name):
    project = _write(tmp_path, {f"{name}.py": "def build():\n    return 'the project'\n"})
    stdlib = __import__(name)
    module = import_project_module(name, project)
    assert module.build() == "the project"
    assert sys.modules[name] is stdlib      # the standard library stays what everything else imports


def test_a_package_named_like_the_standard_library(tmp_path, clean_modules):
    project = _write(tmp_path, {"logging/__init__.py": "", "logging/models.py": "from .parts import P\n",
                                "logging/parts.py": "P = 'project part'\n"})
    assert import_project_module("logging.models", project).P == "project part"
    import logging

    assert hasattr(logging, "getLogger")


MODEL = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x).{call}()


def build():
    return Net(), (torch.randn(4, 8),)
'''


@pytest.mark.slow
def test_opscan_traces_the_projects_module(run_cli, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    project = _write(tmp_path / "project", {"nets/m.py": MODEL.format(call="relu"),
                                            "signal.py": MODEL.format(call="sigmoid"),
                                            "pyproject.toml": "[project]\nname = 'p'\n"})
    other = _write(tmp_path / "other", {"nets/__init__.py": "", "nets/m.py": MODEL.format(call="tanh")})
    monkeypatch.syspath_prepend(str(other))
    monkeypatch.setenv("PYTHONPATH", str(other))
    for target, op in (("nets.m:build", "aten::relu"), ("signal:build", "aten::sigmoid")):
        code, out, err = run_cli(str(project), "--model", target, "--mode", "inference", "--format", "json")
        assert code in (0, 1), err
        ops = {o["op"] for o in json.loads(out)["ops"]}
        assert op in ops and "aten::tanh" not in ops, target
