"""A repository whose model module needs packages this environment lacks: one run names every
missing module, one remedy names the manifest found and --allow-unchecked, a model never built is
never listed as traced, and one line per distinct cause (NOTE [every missing module at once] in
opscan/targets/absent.py)."""

from __future__ import annotations

import json

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
    (tmp_path / "model2.py").write_text(MODEL.replace("TinyNet", "OtherNet")
                                        .replace("missing_pkg_two", "missing_pkg_three"))
    (tmp_path / "requirements.txt").write_text("torch\nmissing-pkg-one\nmissing-pkg-two\n")
    code, out, err = run_cli(str(tmp_path))
    assert code == 2   # a model given could not be checked
    errors = [line for line in err.splitlines() if line.startswith("opscan: error: could not check")]
    assert len(errors) == 2   # one line per distinct cause, each the cause only
    assert "'missing_pkg_one', 'missing_pkg_two'" in errors[0] and "'missing_pkg_one', 'missing_pkg_three'" in errors[1]
    assert not any("--allow-unchecked" in line or "requirements" in line for line in errors)
    remedies = [line for line in err.splitlines() if "--allow-unchecked" in line]
    assert remedies == [err.splitlines()[err.splitlines().index(errors[-1]) + 1]]   # ONE remedy line, after them
    assert "requirements.txt found" in remedies[0]
    text = " ".join(out.split())
    assert text.count("--allow-unchecked") == 1 and "requirements.txt found" in text   # the terminal report
    assert text.count("could not check repo:") == 2   # each cause once: under the verdict, not again below
    assert "traced with no configuration" not in out
    code, out, err = run_cli(str(tmp_path), "--format", "json")
    verdict = json.loads(out)["verdict"]
    assert "requirements.txt found" in verdict["remedy"] and "--allow-unchecked" in verdict["remedy"]
    assert len(verdict["unchecked"]) == 2 and not any("--allow-unchecked" in u for u in verdict["unchecked"])
    assert [d for d in verdict["details"] if "--allow-unchecked" in d] == [verdict["remedy"]]
    code, out, err = run_cli(str(tmp_path), "--format", "markdown")
    assert out.count("--allow-unchecked") == 1 and f"- {verdict['remedy']}" in out
    code, out, err = run_cli(str(tmp_path), "--allow-unchecked")
    assert code == 0


def test_the_remedy_names_the_manifest_found(tmp_path):
    from opscan.targets.absent import remedy

    assert "the packages the project needs" in remedy(tmp_path) and "--allow-unchecked" in remedy(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert "(pyproject.toml found)" in remedy(tmp_path)


def test_one_remedy_line_after_the_causes():
    from opscan.records import Report
    from opscan.assess.verdict import judge

    why = "ModuleNotFoundError: No module named 'x' (not installed here)"
    remedy = "install the project's requirements (requirements.txt found) into this environment, or pass " \
             "--allow-unchecked to judge what was checked"
    verdict = judge(Report(root="r", tool_version="0"), unchecked=(("repo:a.py:A", why), ("repo:b.py:B", "other")),
                    remedy=remedy)
    assert verdict.remedy == remedy
    assert verdict.details[:3] == (f"could not check repo:a.py:A: {why}", "could not check repo:b.py:B: other", remedy)
    assert judge(Report(root="r", tool_version="0"), unchecked=(("repo:a.py:A", why),)).remedy == ""


def test_one_line_per_distinct_cause():
    from opscan.records import Report
    from opscan.assess.verdict import judge

    why = "ModuleNotFoundError: No module named 'x' (not installed here); install ..."
    verdict = judge(Report(root="r", tool_version="0"), unchecked=(("repo:a.py:A", why), ("repo:b.py:B", why),
                                                                   ("repo:c.py:C", "other")))
    assert verdict.unchecked == (f"repo:a.py:A, repo:b.py:B: {why}", "repo:c.py:C: other")
