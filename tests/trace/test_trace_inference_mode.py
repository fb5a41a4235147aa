"""Code that runs under torch.inference_mode: the backend meets the decompositions of composite
ops, as outside it (opscan/trace/recorder.py, NOTE [inference mode])."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from opscan.records import DeviceProfile  # noqa: E402
from opscan.targets import trace_target  # noqa: E402

NET = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.norm, self.head = nn.Conv2d(3, 4, 3), nn.LayerNorm(4), nn.Linear(4, 2)

    def forward(self, x):
        y = self.head(self.norm(self.conv(x).mean((2, 3))))
        if y.sum().item() > 1e9:       # a value read: aten::item decomposes to _local_scalar_dense
            y = y * 2
        return y


class Served(Net):
    @torch.inference_mode()
    def forward(self, x):
        return super().forward(x)


def plain():
    return Net(), (torch.randn(2, 3, 8, 8),)


def served():
    return Served(), (torch.randn(2, 3, 8, 8),)
'''


def _ops(tmp_path, name, device="neuron", profile=None):
    (tmp_path / "net.py").write_text(NET)
    trace = trace_target(f"{tmp_path}/net.py:{name}", mode="inference", device=device, profile=profile)
    assert trace.complete, trace.stopped_at
    return {u.op for u in trace.ops}, trace


@pytest.mark.parametrize("device", ["neuron", "cpu"])
def test_an_inference_mode_forward_lists_the_ops_of_the_same_forward_without_it(tmp_path, device):
    served, trace = _ops(tmp_path, "served", device)
    plain, _ = _ops(tmp_path, "plain", device)
    assert served == plain
    # what a backend without their kernels receives: the decompositions, not the composite ops
    assert {"aten::convolution", "aten::native_layer_norm", "aten::_local_scalar_dense"} <= served
    assert not {"aten::conv2d", "aten::layer_norm", "aten::item"} & served
    # the value read inside inference mode gets a stand-in and is said, like any other
    assert any(s.op == "aten::_local_scalar_dense" for s in trace.stand_ins)


def test_an_op_the_backend_registers_stays_itself_in_inference_mode(tmp_path):
    profile = DeviceProfile(name="p", native_ops=("aten::layer_norm",))
    served, _ = _ops(tmp_path, "served", profile=profile)
    plain, _ = _ops(tmp_path, "plain", profile=profile)
    assert served == plain
    assert "aten::layer_norm" in served and "aten::native_layer_norm" not in served
