"""`opscan trace ... --backend/--db`: every traced op gets a status and its evidence; notes count them."""

from __future__ import annotations

import json

import pytest
from tests.support.db_files import write

from opscan.records import STATUSES

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

TARGET = "examples/models/mlp.py:make_mlp"


@pytest.fixture
def in_repo(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)


def _trace_json(run_cli, *extra: str, target: str = TARGET) -> dict:
    code, out, err = run_cli("trace", target, "--format", "json", *extra)
    assert code == 0, err
    return json.loads(out)


def test_trace_with_backend_annotates_every_op(run_cli, in_repo):
    data = _trace_json(run_cli, "--backend", "torchneuron==2.33.0")
    assert data["backend"] == "torchneuron==2.33.0"
    assert data["ops"]
    for op in data["ops"]:
        assert op["status"] in STATUSES, op
        assert op["evidence"] and op["evidence"][0]["text"], op
        if op["status"] == "native":
            assert op["evidence"][0]["kind"] == "source-snapshot" and op["confidence"] == "low"
    by_status = data["summary"]["by_status"]
    assert sum(by_status.values()) == len(data["ops"])
    counts = [n for n in data["notes"] if n.startswith("coverage against torchneuron==2.33.0:")]
    assert counts == [f"coverage against torchneuron==2.33.0: {len(data['ops'])} ops: "
                      + ", ".join(f"{n} {s}" for s, n in by_status.items()
                                  if n or s in ("native", "cpu-fallback", "unknown"))]
    optimizer_ops = {op["op"]: op for op in data["ops"] if "optimizer" in op["phases"]}
    assert optimizer_ops["aten::_foreach_sqrt"]["status"] == "composite"
    assert optimizer_ops["aten::_foreach_sqrt"]["parts"] == ["aten::sqrt"]


def test_trace_with_a_db_file(run_cli, in_repo, tmp_path):
    data = _trace_json(run_cli, "--db", str(write(tmp_path)))
    assert data["backend"] == "testline==1.0.0"
    statuses = {op["op"]: op["status"] for op in data["ops"]}
    assert statuses["aten::gelu"] == "cpu-fallback"      # complete list, no kernel: the fallback
    assert all(s in STATUSES for s in statuses.values())


def test_trace_without_backend_uses_the_newest_release(run_cli, in_repo):
    data = _trace_json(run_cli)
    assert data["backend"] == "torchneuron==2.33.0" and all(op["status"] in STATUSES for op in data["ops"])


MODEL64 = '''
import torch
from torch import nn

class Wide(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4).double()

    def forward(self, x, ids):
        return self.proj(x).sum() + (ids * 3).cumsum(0).sum()

def build():
    return Wide(), {"x": torch.randn(2, 4, dtype=torch.float64), "ids": torch.arange(4)}
'''


def _trace_source_json(run_cli, tmp_path, monkeypatch, name: str, source: str) -> dict:
    """`opscan trace NAME:build` (inference, against torchneuron 2.33.0) of `source`, as JSON."""
    (tmp_path / name).write_text(source)
    monkeypatch.chdir(tmp_path)
    return _trace_json(run_cli, "--mode", "inference", "--backend", "torchneuron==2.33.0", target=f"{name}:build")


def test_trace_reports_the_64_bit_caveats_with_source_lines(run_cli, tmp_path, monkeypatch):
    caveats = {c["kind"]: c for c in _trace_source_json(run_cli, tmp_path, monkeypatch, "wide.py", MODEL64)["caveats"]}
    assert set(caveats) == {"float64-narrowed", "int64-narrowed"}
    wide = caveats["float64-narrowed"]
    assert "aten::linear" in wide["ops"] and wide["dtypes"] == ["torch.float64"]   # linear: a 2.33 kernel
    assert any(s["path"].endswith("wide.py") and s["line"] == 11 for s in wide["sources"])
    ints = caveats["int64-narrowed"]
    assert {"aten::mul.Tensor", "aten::cumsum"} <= set(ints["ops"])
    assert any(s["path"].endswith("wide.py") and s["line"] == 11 for s in ints["sources"])
    assert "wide.py:11" in ints["message"]   # the message (terminal, markdown, SARIF) names the line too


GATHER = '''
import torch
from torch import nn

class Pick(nn.Module):
    def forward(self, x, idx):
        return torch.gather(x, 0, idx).abs().sum()

def build():
    return Pick(), {"x": torch.randn(2, 3, dtype=torch.complex64), "idx": torch.zeros(2, 3, dtype=torch.long)}
'''


def test_trace_tells_a_known_failure_of_the_traced_dtype(run_cli, tmp_path, monkeypatch):
    data = _trace_source_json(run_cli, tmp_path, monkeypatch, "pick.py", GATHER)
    (failure,) = [c for c in data["caveats"] if c["kind"] == "known-failure"]
    assert failure["ops"] == ["aten::gather"] and failure["dtypes"] == ["torch.complex64"]
    assert failure["tests"] == ["TestScatterGather.test_gather_neuron_complex64"]
    assert "pick.py:7" in failure["message"]
    assert data["verdict"]["kind"] == "unknown" and "1 known failure" in data["verdict"]["headline"]
    assert failure["message"] in data["verdict"]["details"]
    gather = next(op for op in data["ops"] if op["op"] == "aten::gather")
    assert gather["status"] == "limited"
