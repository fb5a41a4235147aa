"""`opscan run --steps N`: the compile signatures of each step, the new ones of later steps with the
line that made their shape and its cause, in the JSON, the verdict and the plan (docs/run.md, "Compile
forecast")."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _run(name: str, steps: int, tmp_path, monkeypatch, device: str = "neuron"):
    from opscan.assess import assess
    from opscan.records import Draft
    from opscan.reporters.json import to_dict
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    trace, _ = run_script(str(FIXTURES / name), device=device, steps=steps, project_root=str(FIXTURES))
    assert trace.complete, trace.stopped_at
    report = assess(Draft(root=str(FIXTURES), tool_version="test", traces=(trace,)), None)
    return report, to_dict(report)


def _origins(doc) -> set[tuple[str, int, str]]:
    return {(v["origin"]["path"], v["origin"]["line"], v["cause"]) for v in doc["compile"]["varying_ops"]}


@pytest.mark.slow
def test_a_collate_padding_to_the_longest_brings_new_signatures_every_step(tmp_path, monkeypatch):
    report, doc = _run("pad_collate.py", 3, tmp_path, monkeypatch)
    steps = doc["compile"]["steps"]
    assert len(steps) == 3 and steps[0]["new"] == []
    assert all(step["new"] for step in steps[1:])
    new_ops = {n["op"] for n in steps[1]["new"]}
    assert {"aten::embedding", "aten::addmm", "aten::embedding_dense_backward"} <= new_ops
    assert {(n["origin"]["path"], n["origin"]["line"], n["cause"]) for n in steps[1]["new"]} == \
        {("pad_collate.py", 24, "data")}   # the collate function's pad_sequence line
    assert any(s.startswith("aten::embedding(") and "(2, 7):int64" in s for s in steps[1]["signatures"])
    assert steps[0]["host_signatures"] and not any("pad_sequence" in s for s in steps[0]["signatures"])
    assert set(steps[0]["phases"]) >= {"forward", "backward", "optimizer"}
    (task,) = [t for t in report.tasks if t.kind == "static-shapes"]
    assert [(s.path, s.line) for s in task.sites] == [("pad_collate.py", 24)] and task.sized
    assert any("each later step about" in d and "pad_collate.py:24 (data)" in d for d in report.verdict.details)


@pytest.mark.slow
def test_a_short_last_batch_is_predicted_and_seen(tmp_path, monkeypatch):
    report, doc = _run("tail_batch.py", 3, tmp_path, monkeypatch)
    steps = doc["compile"]["steps"]
    assert [bool(s["new"]) for s in steps] == [False, False, True]   # batches 4, 4, then 2
    tails = [v for v in doc["compile"]["varying_ops"] if v["cause"] == "tail-batch"]
    assert tails and all("last batch of 2" in v["detail"] for v in tails)
    assert any("once per epoch" in d for d in report.verdict.details)


@pytest.mark.slow
def test_moe_routing_with_nonzero_is_a_new_shape_every_step(tmp_path, monkeypatch):
    report, doc = _run("moe_nonzero.py", 2, tmp_path, monkeypatch)
    varying = doc["compile"]["varying_ops"]
    assert _origins(doc) == {("moe_nonzero.py", 20, "data-dependent")}
    ops = {v["op"] for v in varying}
    assert {"aten::index.Tensor", "aten::addmm", "aten::index_add"} <= ops
    assert "aten::nonzero" not in ops   # its input has a fixed shape: its own signature does not change
    assert any("moe_nonzero.py:20 (nonzero)" in d for d in report.verdict.details)
    assert any(t.kind == "static-shapes" for t in report.tasks)


@pytest.mark.slow
def test_a_fixed_shape_script_is_not_flagged(tmp_path, monkeypatch):
    report, doc = _run("fixed_shape.py", 3, tmp_path, monkeypatch)
    steps = doc["compile"]["steps"]
    assert len(steps) == 3 and all(step["new"] == [] for step in steps)
    assert doc["compile"]["varying_ops"] == []
    assert not any(t.kind == "static-shapes" for t in report.tasks)
    assert any("none of the 2 later steps run brought a new shape" in d for d in report.verdict.details)


@pytest.mark.slow
def test_the_forecast_is_deterministic(tmp_path, monkeypatch):
    first = _run("pad_collate.py", 2, tmp_path, monkeypatch)[1]["compile"]
    assert _run("pad_collate.py", 2, tmp_path, monkeypatch)[1]["compile"] == first


@pytest.mark.slow
def test_opscan_run_json_carries_the_forecast(tmp_path):
    import json
    import shutil

    from opscan.cli import main

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "tagger"\nversion = "0"\n')
    shutil.copy(FIXTURES / "pad_collate.py", tmp_path / "pad_collate.py")
    out = tmp_path / "report.json"
    main(["run", "--steps", "2", "--format", "json", "--output", str(out), "--", "python",
          str(tmp_path / "pad_collate.py")])
    doc = json.loads(out.read_text())
    steps = doc["compile"]["steps"]
    assert len(steps) == 2 and steps[1]["new"]
    assert {v["origin"]["path"] for v in doc["compile"]["varying_ops"]} == {"pad_collate.py"}
    assert any(t["kind"] == "static-shapes" and t["sites"] == [{"path": "pad_collate.py", "line": 24, "column": 1}]
               for t in doc["tasks"])


@pytest.mark.slow
def test_host_draws_after_a_seeded_init_are_the_real_runs(tmp_path, monkeypatch):
    """NOTE [host random stream]: weight init, a sampler's seed and CPU dropout draw from the host
    generator in the fake run as in a real one, so later batch indices are the real run's."""
    import json
    import runpy
    import sys

    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["seeded_draws.py", str(tmp_path / "real.json")])
    runpy.run_path(str(FIXTURES / "seeded_draws.py"), run_name="__main__")
    trace, _ = run_script(str(FIXTURES / "seeded_draws.py"), [str(tmp_path / "fake.json")], device="neuron",
                          project_root=str(FIXTURES))
    assert trace.complete, trace.stopped_at
    real, fake = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("real", "fake"))
    assert fake == real
    assert not any(s.kind == "item" for s in trace.stand_ins)   # the sampler's seed has its drawn value


@pytest.mark.slow
def test_moe_signatures_write_the_routed_sizes_as_symbols(tmp_path, monkeypatch):
    """NOTE [unknown sizes]: the rows a nonzero picks are a symbol, not the stand-in's upper bound."""
    _, doc = _run("moe_nonzero.py", 2, tmp_path, monkeypatch)
    first = doc["compile"]["steps"][0]["signatures"]
    experts = [s for s in first if s.startswith("aten::addmm((16,):float32;(u")]
    assert len(experts) == 4   # one symbol per expert's rows: u0..u3 (numbered per step)
    assert "aten::addmm((16,):float32;(12, 8):float32;(8, 16):float32)" in first   # the input layer: known rows
    assert not any(s.startswith("aten::index_add(") and "(u" in s.split(";")[0] for s in first)   # into a fixed shape
    later = doc["compile"]["steps"][1]["signatures"]
    assert [s for s in later if s.startswith("aten::addmm((16,):float32;(u")] == experts   # numbered per step


@pytest.mark.slow
def test_numbers_read_from_tensors_that_become_shapes_vary(tmp_path, monkeypatch):
    """NOTE [numbers that become shapes]: `x[:n.item()]` and `torch.zeros(int(t.max()) + 1)`."""
    report, doc = _run("item_shape.py", 3, tmp_path, monkeypatch)
    varying = doc["compile"]["varying_ops"]
    by_line = {}
    for v in varying:
        if v["cause"] == "data-dependent":
            by_line.setdefault(v["origin"]["line"], set()).add(v["op"])
    assert "aten::slice.Tensor" in by_line.get(13, set())   # n = ....item(); scores[:n]
    assert "aten::zeros" in by_line.get(15, set())          # int(scores.argmax(dim=0).max()) + 1
    assert not any(v["op"] == "aten::addmm" for v in varying)   # the model's input: a fixed shape
    assert any("item_shape.py:13" in d for d in report.verdict.details)
