"""`opscan trace`: one step's compile signatures, counted per phase, and the ops whose shapes the data
decides (docs/trace.md, "Compile signatures")."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

MODEL = '''
import torch
from torch import nn


class Routed(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(8, 2)
        self.expert = nn.Linear(8, 8)

    def forward(self, x):
        keep = self.gate(x).argmax(-1) == 0
        picked = x[keep]
        return self.expert(picked).sum() + x.sum()


def build():
    return Routed(), (torch.randn(6, 8),)
'''


@pytest.mark.slow
def test_a_traced_step_has_signatures_per_phase_and_predicts_boolean_mask_shapes(tmp_path):
    from opscan.targets import trace_target

    (tmp_path / "routed.py").write_text(MODEL)
    trace = trace_target(f"{tmp_path / 'routed.py'}:build", project_root=str(tmp_path))
    assert trace.complete, trace.stopped_at
    (step,) = trace.compile.steps
    assert "aten::addmm((2,):float32;(6, 8):float32;(8, 2):float32)" in step.signatures
    assert dict(step.phases).keys() >= {"forward", "backward", "optimizer"}
    assert step.new == () and step.host_signatures == ()
    assert "aten::addmm((8,):float32;(u0, 8):float32;(8, 8):float32)" in step.signatures   # masked rows: a symbol
    assert not any("(6, 8):float32;(8, 8)" in s for s in step.signatures if s.startswith("aten::addmm("))
    varying = {(v.op, v.cause, v.origin.line) for v in trace.compile.varying}
    assert ("aten::addmm", "data-dependent", 14) in varying            # the expert on the masked rows
    assert not any(v.op == "aten::argmax" for v in trace.compile.varying)  # before the mask: fixed


@pytest.mark.slow
def test_trace_steps_runs_the_step_again_for_its_signatures_only(tmp_path):
    from opscan.targets import trace_target

    (tmp_path / "routed.py").write_text(MODEL)
    one = trace_target(f"{tmp_path / 'routed.py'}:build", project_root=str(tmp_path))
    three = trace_target(f"{tmp_path / 'routed.py'}:build", project_root=str(tmp_path), steps=3)
    assert three.complete and len(three.compile.steps) == 3
    assert three.compile.steps[0].signatures == one.compile.steps[0].signatures
    assert three.ops == one.ops and three.stand_ins == one.stand_ins   # counts and costs: the first step's
    # fixed inputs: no shape changes between steps; the masked rows stay a prediction
    assert all(n.cause == "first-run" for step in three.compile.steps[1:] for n in step.new)
    assert {v.cause for v in three.compile.varying} == {"data-dependent"}


@pytest.mark.slow
def test_trace_command_json_has_the_compile_steps(run_cli):
    import json

    code, out, err = run_cli("trace", "examples/models/data_dependent.py:make_router", "--steps", "2",
                             "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    steps = doc["compile"]["steps"]
    assert [s["step"] for s in steps] == [1, 2] and steps[0]["signatures"] and steps[0]["new"] == []
    assert all(s.startswith("aten::") and s.endswith(")") for s in steps[0]["signatures"])
    assert {v["cause"] for v in doc["compile"]["varying_ops"]} == {"data-dependent"}
    assert any(d.startswith("the first step compiles") for d in doc["verdict"]["details"])
    code, _, err = run_cli("trace", "examples/models/data_dependent.py:make_router", "--steps", "0")
    assert code == 2


ITEM_MODEL = '''
import torch
from torch import nn


class Counted(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        n = int((y[:, 0] > 0).sum())
        return y[:n].sum()


def build():
    return Counted(), (torch.randn(6, 8),)
'''


@pytest.mark.slow
def test_trace_steps_sees_a_number_read_from_a_tensor_become_a_shape(tmp_path):
    from opscan.targets import trace_target

    (tmp_path / "counted.py").write_text(ITEM_MODEL)
    trace = trace_target(f"{tmp_path / 'counted.py'}:build", project_root=str(tmp_path), steps=2)
    assert trace.complete, trace.stopped_at
    varying = {(v.op, v.cause, v.origin.line) for v in trace.compile.varying}
    assert ("aten::slice.Tensor", "data-dependent", 13) in varying   # y[:n], n read at line 13
    assert not any(op == "aten::addmm" for op, _, _ in varying)


@pytest.mark.slow
def test_mode_both_counts_each_phase_s_distinct_signatures_once(tmp_path):
    from opscan.targets import trace_target

    (tmp_path / "counted.py").write_text(ITEM_MODEL)
    target = f"{tmp_path / 'counted.py'}:build"
    both = trace_target(target, project_root=str(tmp_path), mode="both")
    train = trace_target(target, project_root=str(tmp_path), mode="train")
    infer = trace_target(target, project_root=str(tmp_path), mode="inference")
    (step,) = both.compile.steps
    forward = {s for t in (train, infer) for s in t.compile.steps[0].signatures}
    assert set(step.signatures) == forward | set(train.compile.steps[0].signatures)
    alone = dict(infer.compile.steps[0].phases)["forward"], dict(train.compile.steps[0].phases)["forward"]
    # the forward's signatures of the two modes are mostly the same: counted once, not added
    assert max(alone) <= dict(step.phases)["forward"] < sum(alone)
    assert dict(step.phases)["backward"] == dict(train.compile.steps[0].phases)["backward"]
