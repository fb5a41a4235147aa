"""`opscan trace`, `opscan PATH` and `opscan zoo` judge one model with the one assessment
(opscan/assess/assessment.py)."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.slow


def _statuses(doc: dict) -> dict[str, str]:
    return {op["op"]: op["status"] for op in doc["ops"]}


def _caveats(doc: dict) -> list[str]:
    return [f"{c['kind']}: {', '.join(c['ops'])}" for c in doc["caveats"]]


def test_trace_path_and_zoo_give_the_same_statuses_caveats_and_verdict(run_cli, repo_root, tmp_path, monkeypatch):
    folder = tmp_path / "tiny-model"   # not a model_type name: the zoo takes it as a folder (hf:PATH)
    folder.mkdir()
    shutil.copy(repo_root / "examples/models/hf/llama-tiny/config.json", folder / "config.json")
    monkeypatch.chdir(tmp_path)   # the same default release for all three (no [tool.opscan] here)

    code, out, err = run_cli("trace", f"hf:{folder}", "--format", "json", "--in-process")
    assert code == 0, err
    traced = json.loads(out)
    code, out, err = run_cli(str(folder), "--format", "json", "--in-process")
    assert code == 0, err
    whole = json.loads(out)
    code, _, err = run_cli("zoo", f"hf:{folder}", "--no-cache", "--quiet", "--workers", "1", "--start-method",
                           "spawn", "--cache-dir", str(tmp_path / "cache"), "--json", str(tmp_path / "zoo.json"))
    assert code == 0, err
    zoo = json.loads((tmp_path / "zoo.json").read_text())
    (row,) = zoo["models"]

    assert traced["backend"] == whole["backend"] == zoo["meta"]["backend"]
    assert _statuses(traced) == _statuses(whole) == _statuses(zoo) and _statuses(whole)
    # a tiny Llama adds int64 position ids: the release's int64 caveat, now in its zoo row too
    assert _caveats(traced) == _caveats(whole) == list(row["caveats"])
    assert any(c.startswith("int64-narrowed: ") for c in row["caveats"])
    # the same verdict: the zoo row's is PATH's; `opscan trace` (no source scanned) says the same of the ops
    assert row["verdict"] == whole["verdict"]["kind"]
    assert set(whole["verdict"]["details"]) <= set(traced["verdict"]["details"])
    assert traced["tasks"] == whole["tasks"]
