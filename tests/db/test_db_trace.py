"""`opscan trace ... --backend/--db`: every traced op gets a status and its evidence; notes count them."""

from __future__ import annotations

import json

import pytest
from dbtest_support import write

from opscan.model import STATUSES

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

TARGET = "examples/models/mlp.py:make_mlp"


@pytest.fixture
def in_repo(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)


def _trace_json(run_cli, *extra: str) -> dict:
    code, out, err = run_cli("trace", TARGET, "--format", "json", *extra)
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
