"""torch.compile in `opscan run` and `opscan trace`: the regions (lines, options), their graph breaks
from torch._dynamo.explain on the CPU, and the ops dispatched inside (NOTE [compiled regions])."""

from __future__ import annotations

import json
import textwrap

import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent("""\
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(16, 32)
            self.b = nn.Linear(32, 4)

        def forward(self, x):
            h = self.a(x).relu()
            print("shape", h.shape)
            return self.b(h)


    @torch.compile
    def loss_fn(out, y):
        return nn.functional.cross_entropy(out, y)


    model = Net().to("cuda")
    model = torch.compile(model, mode="max-autotune", dynamic=True)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(3):
        x = torch.randn(8, 16, device="cuda")
        y = torch.randint(0, 4, (8,), device="cuda")
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
    """)


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "train.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(project, **kwargs):
    from opscan.trace.run import run_script

    return run_script(str(project / "train.py"), project_root=str(project), steps=2, **kwargs)


def test_run_records_each_region_with_its_line_options_and_breaks(project):
    trace, notes = _run(project)
    assert trace.complete, trace.stopped_at
    by_line = {r.line: r for r in trace.compiled}
    assert sorted(by_line) == [17, 23]
    loss, net = by_line[17], by_line[23]
    assert loss.target == "function loss_fn" and loss.options == ()
    assert net.target == "module Net" and dict(net.options) == {"dynamic": "True", "mode": "'max-autotune'"}
    assert net.calls == 3 and loss.calls == 3          # the run stops at the third step, after its forward
    assert net.explained and (net.graphs, net.graph_break_count) == (2, 1)
    assert [(b.path, b.line) for b in net.graph_breaks] == [("train.py", 13)]   # print
    assert loss.explained and (loss.graphs, loss.graph_break_count) == (1, 0)
    assert any("torch.compile ran eager" in n and "train.py:23" in n for n in notes)


def test_ops_inside_regions_forward_and_backward(project):
    trace, _ = _run(project)
    net = next(r for r in trace.compiled if r.line == 23)
    assert {"aten::addmm", "aten::relu"} <= set(net.ops)
    assert "aten::threshold_backward" in net.ops        # the region's backward is compiled too
    assert not any(op.startswith("aten::_fused_adamw") or "adam" in op for op in net.ops)   # the optimizer is not


def test_explain_runs_do_not_add_to_the_traced_ops(project):
    from opscan.trace.run import run_script

    compiled, _ = _run(project)
    plain = project / "plain.py"
    plain.write_text(SCRIPT.replace("@torch.compile\n", "").replace(
        'model = torch.compile(model, mode="max-autotune", dynamic=True)', "model = model"))
    eager, _ = run_script(str(plain), project_root=str(project), steps=2)
    assert {(u.op, u.count) for u in compiled.ops} == {(u.op, u.count) for u in eager.ops}


def test_a_model_too_large_to_copy_is_not_explained_and_says_why(project, monkeypatch):
    from opscan.trace import compiled

    monkeypatch.setattr(compiled, "MAX_EXPLAIN_ELEMENTS", 10)
    trace, _ = _run(project)
    net = next(r for r in trace.compiled if r.line == 23)
    assert not net.explained and net.graph_breaks == () and "parameter and buffer elements" in net.not_explained
    assert trace.complete


MODEL = textwrap.dedent("""\
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(16, 32)

        def forward(self, x):
            h = self.a(x)
            n = int(h.sum().item())
            return h.relu()


    def build():
        model = Net()
        model.compile(backend="inductor")
        return model, (torch.randn(4, 16),)
    """)


def test_trace_of_a_factory_that_compiles(tmp_path, monkeypatch, run_cli):
    (tmp_path / "model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli("trace", "model.py:build", "--format", "json", "--in-process")
    doc = json.loads(out)
    region, = doc["compile"]["torch_compile"]["regions"]
    assert (region["path"], region["line"], region["compiles"]) == ("model.py", 18, "module Net")
    assert region["graph_break_count"] == 1
    assert [(b["path"], b["line"]) for b in region["graph_breaks"]] == [("model.py", 12)]   # .item()
    assert [o["rule"] for o in doc["compile"]["torch_compile"]["options"]] == ["OPS213"]


def test_opscan_path_on_a_configured_model_in_the_child_process(tmp_path, monkeypatch, run_cli):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "pyproject.toml").write_text('[[tool.opscan.models]]\ntarget = "model.py:build"\n')
    code, out, err = run_cli(str(tmp_path), "--format", "json")
    doc = json.loads(out)
    region, = doc["compile"]["torch_compile"]["regions"]
    assert (region["target"], region["line"], region["graph_break_count"]) == ("model.py:build", 18, 1)
    assert any(d.startswith("torch.compile: 1 compiled region, 1 graph break") for d in doc["verdict"]["details"])
    assert any(f["rule"] == "OPS213" for f in doc["findings"])   # the scan flags the same option in source
