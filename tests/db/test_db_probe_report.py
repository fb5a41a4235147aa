"""`opscan db probe --report`: a model's own ops replayed on the toy backend, then the verdict on that file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from opscan.db import load_file

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent

MODEL = '''
import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(torch.rand(8, 16))
        self.w2 = nn.Parameter(torch.rand(16, 4))

    def forward(self, x):
        return torch.neg(torch.relu(torch.mm(x, self.w1)).exp() * 0.5 + 1.0).mm(self.w2)


def build():
    return Tiny(), (torch.rand(2, 8),)
'''

# the toy backend with its one wrong op (aten::neg forgets to negate) made right
TOY_FIXED = '''
import torch
import toy_backend

__version__ = toy_backend.__version__
_LIB = torch.library.Library("aten", "IMPL")
_LIB.impl("neg", lambda x: toy_backend._wrap(-toy_backend._unwrap(x)), "PrivateUse1")
'''


def _opscan(*args: str, path: Path | None = None) -> subprocess.CompletedProcess:
    extra = [str(HERE)] + ([str(path)] if path else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*extra, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "opscan", *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> tuple[Path, Path]:
    """(the project folder, its report's JSON): a tiny model whose ops all have toy kernels."""
    project = tmp_path_factory.mktemp("project")
    (project / "model.py").write_text(MODEL)
    report = project.parent / "report.json"
    done = _opscan(str(project), "--model", f"{project / 'model.py'}:build", "--mode", "inference",
                   "--in-process", "--format", "json", "--output", str(report))
    assert report.exists(), done.stderr
    ops = {o["op"]: o["dtypes"] for o in json.loads(report.read_text())["ops"]}
    assert ops["aten::neg"] == ["torch.float32"] and "aten::mm" in ops
    return project, report


def _check(project: Path, db: Path) -> dict:
    done = _opscan(str(project), "--model", f"{project / 'model.py'}:build", "--mode", "inference",
                   "--in-process", "--db", str(db), "--format", "json")
    return json.loads(done.stdout)


def test_one_wrong_op_is_marked_failed_and_keeps_the_model_from_ready(model, tmp_path):
    project, report = model
    out = tmp_path / "probed.yaml"
    done = _opscan("db", "probe", "--import", "toy_backend", "--report", str(report), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "6 ops of report.json replayed on toy-backend==0.1.0 (device 'toy')" in done.stdout
    assert "not passed: aten::neg\n" in done.stdout
    release = load_file(out)
    replayed = {o["op"] for o in json.loads(report.read_text())["ops"]}
    assert replayed < set(release.entries) and release.kernel_list == "complete"
    neg = release.entries["aten::neg"]
    assert neg.status == "limited" and neg.note.startswith("float32: wrong results (max error ")
    assert all(e.status == "native" and e.confidence == "high"
               for op, e in release.entries.items() if op in replayed and op != "aten::neg")
    # a registered kernel the model's trace did not record (a part of a decomposition, say) is what
    # the probe read -- registered, never run -- not `unknown` (issue 36)
    others = {op: e for op, e in release.entries.items() if op not in replayed}
    assert others and all((e.status, e.confidence, e.sources) == ("native", "medium", ("probe",))
                          for e in others.values())
    assert release.lookup("aten::_to_copy").status == "native"
    assert release.lookup("aten::erfinv").status == "cpu-fallback"     # no kernel, catch-all fallback
    assert release.sources["samples"].compared and release.environment["backend"] == "toy_backend 0.1.0"
    verdict = _check(project, out)["verdict"]
    assert verdict["kind"] != "ready"
    assert "known failure" in verdict["headline"]
    assert any(d.startswith("aten::neg with torch.float32") for d in verdict["details"])


def test_every_op_right_makes_the_model_ready(model, tmp_path):
    project, report = model
    modules = tmp_path / "modules"     # outside the project: its torch.library use is no finding of the model's
    modules.mkdir()
    (modules / "toy_fixed.py").write_text(TOY_FIXED)
    out = tmp_path / "fixed.yaml"
    done = _opscan("db", "probe", "--import", "toy_fixed", "--report", str(report), "--out", str(out),
                   path=modules)
    assert done.returncode == 0, done.stderr
    assert "6 native;" in done.stdout and "not passed" not in done.stdout
    assert {e.status for e in load_file(out).entries.values()} == {"native"}
    verdict = _check(project, out)["verdict"]
    assert (verdict["kind"], verdict["headline"]) == ("ready", "ready")


def test_report_that_is_not_a_report_is_a_usage_error(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text('{"findings": []}')
    done = _opscan("db", "probe", "--import", "toy_backend", "--report", str(bad), "--out", str(tmp_path / "x.yaml"))
    assert done.returncode == 2 and "no `ops` list" in done.stderr
    assert not (tmp_path / "x.yaml").exists()


def test_report_ops_are_the_aten_ops_with_their_dtypes(tmp_path):
    from opscan.db.replay import report_ops

    report = tmp_path / "r.json"
    report.write_text(json.dumps({"ops": [
        {"op": "aten::mm", "dtypes": ["torch.float32", "torch.bfloat16"]},
        {"op": "mylib::fused", "dtypes": ["torch.float32"]},      # a custom kernel: not replayed
        {"op": "aten::arange.start", "dtypes": []},               # no dtype recorded: float32
    ]}))
    assert report_ops(report) == {"aten::arange.start": ("float32",), "aten::mm": ("bfloat16", "float32")}


def test_replayed_entries_by_outcome():
    from opscan.db.probe import SampleResult
    from opscan.db.replay import _entry

    fell, rows = _entry("aten::sort", ("float32",), SampleResult(fell_back=["float32"]))
    assert (fell["status"], rows) == ("cpu-fallback", [])
    partly, rows = _entry("aten::relu", ("float32", "float64"),
                          SampleResult(ran=["float32"], fell_back=["float64"], matched=["float32"]))
    assert partly["status"] == "limited" and partly["note"] == "falls back to CPU for float64" and rows == []
    wrong, rows = _entry("aten::neg", ("float32",), SampleResult(ran=["float32"], wrong={"float32": "max error 2"}))
    assert wrong["status"] == "limited"
    assert [(r["packet"], r["dtype"], r["ops"]) for r in rows] == [("aten::neg", "float32", ["aten::neg"])]
    untested, _ = _entry("aten::bernoulli", ("float32",), SampleResult(ran=["float32"]))
    assert (untested["status"], untested["evidence"]) == ("native", ["probe"])     # ran, nothing compared
    assert _entry("aten::odd", ("float32",), None)[0]["status"] == "unknown"
