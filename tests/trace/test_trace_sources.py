"""How op sources are named: project files relative to the project, installed packages from their site dir."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("torch")

from opscan.trace.sources import SourceFinder


def test_a_venv_inside_the_project_names_packages_from_site_packages(tmp_path, monkeypatch):
    site = tmp_path / ".venv" / "lib" / "python3.11" / "site-packages"
    (site / "transformers").mkdir(parents=True)
    (tmp_path / "src").mkdir()
    monkeypatch.setattr(sys, "path", [str(site), *sys.path])
    finder = SourceFinder(tmp_path)
    assert finder.name(str(site / "transformers" / "moe.py")) == "transformers/moe.py"
    assert finder.name(str(tmp_path / "src" / "model.py")) == "src/model.py"


def test_files_outside_the_project_are_named_from_their_sys_path_entry(tmp_path, monkeypatch):
    lib = tmp_path / "lib"
    (lib / "pkg").mkdir(parents=True)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setattr(sys, "path", [str(lib), *sys.path])
    assert SourceFinder(project).name(str(lib / "pkg" / "m.py")) == "pkg/m.py"
