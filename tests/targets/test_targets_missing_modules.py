"""A repository whose model module needs packages this environment lacks: one run names every
missing module, one remedy names the manifest found and --allow-unchecked, a model never built is
never listed as traced, and one line per distinct cause (NOTE [every missing module at once] in
opscan/targets/absent.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

MODEL = '''\
import torch
from torch import nn
import missing_pkg_one
from missing_pkg_two import helper


class TinyNet(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x)


def build():
    return TinyNet()
'''


@pytest.mark.slow
def test_every_missing_module_in_one_run_with_one_remedy(tmp_path, run_cli):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "requirements.txt").write_text("torch\nmissing-pkg-one\nmissing-pkg-two\n")
    code, out, err = run_cli(str(tmp_path))
    assert code == 2   # a model given could not be checked
    errors = [line for line in err.splitlines() if line.startswith("opscan: error: could not check")]
    assert len(errors) == 1
    assert "'missing_pkg_one', 'missing_pkg_two'" in errors[0]
    assert "requirements.txt found" in errors[0] and "--allow-unchecked" in errors[0]
    assert "Model not traced: repo:model.py:build" in out
    assert "traced with no configuration)" not in out
    code, out, err = run_cli(str(tmp_path), "--allow-unchecked")
    assert code == 0


def test_the_remedy_names_the_manifest_found(tmp_path):
    from opscan.targets.absent import remedy

    assert "the packages the project needs" in remedy(tmp_path) and "--allow-unchecked" in remedy(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert "(pyproject.toml found)" in remedy(tmp_path)


def test_one_line_per_distinct_cause():
    from opscan.records import Report
    from opscan.verdict import judge

    why = "ModuleNotFoundError: No module named 'x' (not installed here); install ..."
    verdict = judge(Report(root="r", tool_version="0"), unchecked=(("repo:a.py:A", why), ("repo:b.py:B", why),
                                                                   ("repo:c.py:C", "other")))
    assert verdict.unchecked == (f"repo:a.py:A, repo:b.py:B: {why}", "repo:c.py:C: other")
