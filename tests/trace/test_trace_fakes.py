"""Fake kernels opscan supplies (opscan/trace/fakes.py): each against the real CPU kernel, and in a trace."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

from opscan.targets import trace_target  # noqa: E402
from opscan.trace import fakes  # noqa: E402

aten = torch.ops.aten


def _offs(*ends):
    return torch.tensor(ends, dtype=torch.int32)


# (mat_a shape, mat_b shape, offs) for each layout the CPU kernel accepts; sizes keep strides 16-byte aligned
GROUPED_MM_CASES = {
    "2d x 3d (MoE experts)": ((16, 8), (3, 8, 8), (3, 7, 16)),
    "3d x 3d (batched)": ((3, 8, 16), (3, 16, 8), None),
    "2d x 2d (weight gradient)": ((8, 16), (16, 8), (8, 16, 16)),
    "3d x 2d": ((3, 8, 16), (16, 8), (8, 16, 16)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("case", sorted(GROUPED_MM_CASES))
def test_grouped_mm_fake_matches_the_cpu_kernel(case, dtype):
    a_shape, b_shape, ends = GROUPED_MM_CASES[case]
    a, b = torch.randn(a_shape, dtype=dtype), torch.randn(b_shape, dtype=dtype)
    offs = _offs(*ends) if ends else None
    real = torch._grouped_mm(a, b, offs)
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        fa, fb = mode.from_tensor(a), mode.from_tensor(b)
        fo = mode.from_tensor(offs) if offs is not None else None
        fake = fakes.supply(aten._grouped_mm.default, (fa, fb, fo), {})
    assert (tuple(fake.shape), fake.dtype) == (tuple(real.shape), real.dtype)


def test_pytorch_fake_grouped_mm_still_refuses_fp32():
    # the reason fakes.py exists; when PyTorch relaxes its check this fails and the kernel can go
    a, b = torch.randn(10, 8), torch.randn(3, 8, 4)
    assert torch._grouped_mm(a, b, _offs(3, 7, 10)).shape == (10, 4)  # the CPU kernel runs fp32
    with FakeTensorMode(allow_non_fake_inputs=True) as mode, pytest.raises(RuntimeError, match="BF16"):
        torch._grouped_mm(mode.from_tensor(a), mode.from_tensor(b), mode.from_tensor(_offs(3, 7, 10)))


def test_supplied_kernel_refuses_what_the_cpu_kernel_refuses():
    a, b = torch.empty(10, 8, device="meta"), torch.empty(3, 6, 4, device="meta")  # 8 vs 6
    assert fakes.supply(aten._grouped_mm.default, (a, b, torch.empty(3, device="meta")), {}) is None
    assert fakes.supply(aten.mm.default, (a, a), {}) is None  # opscan supplies nothing for mm


@pytest.mark.slow
def test_fp32_moe_traces_completely_and_says_the_kernel_was_supplied(tmp_path, repo_root):
    config = json.loads((repo_root / "examples/models/hf/mixtral-tiny/config.json").read_text())
    config["dtype"] = "float32"
    (tmp_path / "config.json").write_text(json.dumps(config))
    trace = trace_target(f"hf:{tmp_path}", mode="train", batch=2, seq_len=16)
    assert trace.complete, trace.stopped_at
    assert trace.supplied_fakes == ("aten::_grouped_mm",)
    grouped = next(u for u in trace.ops if u.op == "aten::_grouped_mm")
    assert grouped.phases == ("forward", "backward") and grouped.dtypes == ("torch.float32", "torch.int32")
    # in bf16 PyTorch's own fake kernel serves: nothing supplied
    config["dtype"] = "bfloat16"
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert trace_target(f"hf:{tmp_path}", mode="inference", batch=2, seq_len=16).supplied_fakes == ()


@pytest.mark.slow
def test_torch_error_logs_stay_off_the_terminal(tmp_path, repo_root):
    # PyTorch logs "failed while attempting to run meta for aten._grouped_mm" with a traceback
    # each time its fake kernel refuses fp32; `opscan trace` prints none of it
    config = json.loads((repo_root / "examples/models/hf/mixtral-tiny/config.json").read_text())
    config["dtype"] = "float32"
    (tmp_path / "config.json").write_text(json.dumps(config))
    proc = subprocess.run([sys.executable, "-m", "opscan", "trace", f"hf:{tmp_path}", "--mode",
                           "inference", "--seq-len", "16", "--format", "json"],
                          capture_output=True, text=True, timeout=600, cwd=repo_root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "failed while attempting" not in proc.stderr, proc.stderr
    trace = json.loads(proc.stdout)["traces"][0]
    assert trace["complete"] and trace["supplied_fakes"] == ["aten::_grouped_mm"]


ROUTER = '''
import torch
from torch import nn


class Router(nn.Module):
    def __init__(self):
        super().__init__()
        self.classifier = nn.Linear(8, 3)
        self.expert_0, self.expert_1, self.expert_2 = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        self.classifier = self.classifier.to(torch.float32)   # a conversion that changes nothing
        choice = self.classifier(x).argmax(-1)
        mask = torch.nn.functional.one_hot(choice, num_classes=3)
        expert = getattr(self, f"expert_{choice[0]}")          # a 0-dim tensor formatted as its value
        return (expert(x) * mask.sum(-1, keepdim=True)).sum()


def build():
    return Router(), (torch.randn(4, 8),)
'''


def _router_ops(tmp_path, device):
    (tmp_path / "router.py").write_text(ROUTER)
    trace = trace_target(f"{tmp_path}/router.py:build", mode="train", device=device)
    assert trace.complete, trace.stopped_at
    return trace, {u.op for u in trace.ops}


def test_one_hot_lists_the_ops_a_real_run_on_the_device_dispatches(tmp_path):
    trace, ops = _router_ops(tmp_path, "neuron")
    # Onehot.cpp off the CPU: zeros + scatter_; the fake-tensor branch (eq with an arange) is not listed
    assert {"aten::zeros", "aten::scatter_.value"} <= ops and "aten::eq.Tensor" not in ops
    assert "aten::aminmax" not in ops
    # on the CPU the kernel also checks the bounds with aminmax, as a real CPU run does
    _, cpu_ops = _router_ops(tmp_path, "cpu")
    assert {"aten::aminmax", "aten::scatter_.value"} <= cpu_ops


def test_a_real_router_step_dispatches_what_the_trace_lists(tmp_path):
    from tests.support.trace_recorder import Recorder

    namespace: dict = {}
    exec(compile(ROUTER, "router.py", "exec"), namespace)
    model, (x,) = namespace["build"]()
    recorder = Recorder()
    with recorder:
        model(x).backward()
    trace, ops = _router_ops(tmp_path, "cpu")
    assert {"aten::aminmax", "aten::scatter_.value", "aten::zeros"} <= recorder.ops
    assert not {"aten::aminmax", "aten::scatter_.value", "aten::zeros"} - ops
    # the formatted expert index is a stand-in value, said like any other
    assert any(s.op == "aten::_local_scalar_dense" for s in trace.stand_ins)


def test_conversions_that_change_something_still_go_to_torch():
    linear = torch.nn.Linear(2, 2)
    with fakes.identity_conversions():
        assert linear.to(torch.float32) is linear
        assert linear.to(torch.float64).weight.dtype == torch.float64
    assert torch.nn.Module._apply is not None and "identity" not in torch.nn.Module._apply.__qualname__


def test_a_device_with_its_own_one_hot_kernel_lists_the_op_itself(tmp_path):
    from opscan.records import DeviceProfile

    (tmp_path / "router.py").write_text(ROUTER)
    profile = DeviceProfile(name="p", native_ops=("aten::one_hot",))
    trace = trace_target(f"{tmp_path}/router.py:build", mode="train", device="neuron", profile=profile)
    assert trace.complete, trace.stopped_at
    ops = {u.op for u in trace.ops}
    assert "aten::one_hot" in ops and "aten::scatter_.value" not in ops


RECURRENT = '''import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 32, batch_first=True)
        self.lstm = nn.LSTM(32, 8, batch_first=True)

    def forward(self, x):
        return self.lstm(self.gru(x)[0])[0]


def build():
    return Encoder(), (torch.randn(2, 5, 16),)
'''


def test_the_gru_cells_meta_kernels_give_the_shapes_of_the_fused_kernels():
    """NOTE [fused recurrent cells]: hy [B, H] and a workspace [B, 5H]; the gradients of the gates,
    hx and the biases backward."""
    from opscan.trace import meta_kernels

    meta_kernels.register()
    gates, hx = torch.empty(4, 24, device="meta"), torch.empty(4, 8, device="meta")
    bias = torch.empty(24, device="meta")
    hy, workspace = aten._thnn_fused_gru_cell(gates, gates, hx, bias, bias)
    assert (tuple(hy.shape), tuple(workspace.shape)) == ((4, 8), (4, 40))
    grads = aten._thnn_fused_gru_cell_backward(hy, workspace, True)
    assert [tuple(g.shape) for g in grads] == [(4, 24), (4, 24), (4, 8), (24,), (24,)]
    assert [tuple(g.shape) for g in aten._thnn_fused_gru_cell_backward(hy, workspace, False)][3:] == [(0,), (0,)]


@pytest.mark.parametrize("device", ["neuron", "cpu"])
def test_a_gru_and_an_lstm_trace_in_train_mode_on_each_device(tmp_path, device):
    (tmp_path / "recurrent.py").write_text(RECURRENT, encoding="utf-8")
    trace = trace_target(f"{tmp_path}/recurrent.py:build", mode="train", device=device)
    assert trace.complete, trace.stopped_at
    ops = {u.op for u in trace.ops}
    if device == "neuron":   # the fused cells an accelerator is handed
        assert {"aten::_thnn_fused_gru_cell", "aten::_thnn_fused_gru_cell_backward",
                "aten::_thnn_fused_lstm_cell"} <= ops
    else:   # the CPU runs the cells' own ops
        assert not {o for o in ops if o.startswith("aten::_thnn_fused")}
