"""`opscan trace` of a model with lazy modules (nn.LazyConv2d, nn.LazyBatchNorm2d, nn.LazyLinear).

Their parameters get their shapes at the first forward; the trace lists the ops the same model
written with explicit shapes lists (NOTE [lazy modules on fake tensors] in opscan/trace/lazy.py).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from opscan.targets import trace_target

MODEL = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, lazy):
        super().__init__()
        self.conv = nn.LazyConv2d(8, 3, padding=1) if lazy else nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.LazyBatchNorm2d() if lazy else nn.BatchNorm2d(8)
        self.head = nn.LazyLinear(10) if lazy else nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        return self.head(torch.relu(self.norm(self.conv(x))).flatten(1))


def lazy():
    return Net(True), (torch.randn(2, 3, 8, 8),)


def explicit():
    return Net(False), (torch.randn(2, 3, 8, 8),)
'''


@pytest.mark.parametrize("device", ["neuron", "cpu"])
def test_a_lazy_model_traces_the_ops_of_the_same_model_with_explicit_shapes(tmp_path, device):
    (tmp_path / "nets.py").write_text(MODEL)
    lazy = trace_target(f"{tmp_path / 'nets.py'}:lazy", mode="train", device=device, project_root=str(tmp_path))
    explicit = trace_target(f"{tmp_path / 'nets.py'}:explicit", mode="train", device=device,
                            project_root=str(tmp_path))
    assert lazy.complete, lazy.stopped_at
    assert {(u.op, u.phases, u.dtypes) for u in lazy.ops} == {(u.op, u.phases, u.dtypes) for u in explicit.ops}
    conv = next(u for u in lazy.ops if u.op == "aten::convolution_backward")
    assert conv.phases == ("backward",)
