"""A model built narrower than the real one: the fallback cost scales its width too (issue 36; NOTE
[fallback scaling] in opscan/assess/assessment.py), and says "not scaled: width" when the real width is unknown."""

from __future__ import annotations


import pytest

from opscan.assess import fallback_costs
from opscan.records import Coverage, ModelTrace, OpUsage, Shrink

MODEL = '''import torch
from torch import nn


class Net(nn.Module):
    """A block 64 wide; the real model is 4096 wide."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(64)
        self.fc = nn.Linear(64, 64)

    def forward(self, x):
        return nn.functional.gelu(self.fc(self.norm(x)))


def make():
    return Net(), (torch.randn(2, 8, 64),)
'''
FALLS_BACK = (Coverage("aten::gelu", "cpu-fallback"), Coverage("aten::gelu_backward", "cpu-fallback"))


@pytest.fixture(scope="module")
def narrow(tmp_path_factory):
    pytest.importorskip("torch")
    from opscan.targets import trace_target

    folder = tmp_path_factory.mktemp("narrow")
    (folder / "m.py").write_text(MODEL, encoding="utf-8")
    return folder, trace_target(f"{folder / 'm.py'}:make", mode="train", device="neuron", project_root=str(folder))


@pytest.mark.slow
def test_a_4096_wide_model_traced_64_wide_scales_the_fallback_bytes_by_its_width(narrow):
    from opscan.config import ModelConfig
    from opscan.pipeline.phases import at_real_size

    folder, trace = narrow
    assert trace.shrink.hidden == 64                                  # the LayerNorm's width
    stated = at_real_size(trace, ModelConfig(target="m.py:make", real_hidden=4096), folder)
    costs = {f.op: f for f in fallback_costs((stated,), FALLS_BACK)}
    gelu, backward = costs["aten::gelu"], costs["aten::gelu_backward"]
    # By hand. gelu's one train-step call reads x [2, 8, 64] float32 = 2*8*64*4 = 4096 bytes and writes
    # its result, the same 4096 bytes: 8192 traced. Each tensor has one dim of the width (64), so at
    # 4096 wide it is 4096/64 = 64x: 8192 * 64 = 524288 bytes (0.5 MiB), one call, one sync.
    assert (gelu.traced_bytes, gelu.bytes_per_step, gelu.calls_per_step) == (8192, 524_288, 1)
    # gelu_backward reads the gradient and x, writes the input gradient: 3 * 4096 = 12288 traced,
    # x 64 = 786432 at 4096 wide.
    assert (backward.traced_bytes, backward.bytes_per_step) == (12_288, 786_432)
    assert gelu.scaled_by == "width 64 -> 4096 (--real-hidden)"
    # the same width from a config.json beside the model's file (the model folder's own config)
    (folder / "config.json").write_text('{"hidden_size": 4096}', encoding="utf-8")
    try:
        found = at_real_size(trace, ModelConfig(target="m.py:make"), folder)
    finally:
        (folder / "config.json").unlink()
    costs = {f.op: f for f in fallback_costs((found,), FALLS_BACK)}
    assert costs["aten::gelu"].bytes_per_step == 524_288
    assert costs["aten::gelu"].scaled_by == "width 64 -> 4096 (config.json)"


@pytest.mark.slow
def test_without_the_real_width_the_cost_says_width_was_not_scaled(narrow):
    from opscan.config import ModelConfig
    from opscan.pipeline.phases import at_real_size

    folder, trace = narrow
    as_traced = {f.op: f for f in fallback_costs((at_real_size(trace, ModelConfig(target="m.py:make"), folder),),
                                                 FALLS_BACK)}
    assert (as_traced["aten::gelu"].bytes_per_step, as_traced["aten::gelu"].scaled_by) == (8192, "")
    batch = at_real_size(trace, ModelConfig(target="m.py:make", real_batch=8, batch=2), folder)
    gelu = {f.op: f for f in fallback_costs((batch,), FALLS_BACK)}["aten::gelu"]
    assert gelu.bytes_per_step == 8192 * 4                            # batch 2 -> 8, width as traced
    assert gelu.scaled_by == "batch x sequence 2x0 -> 8x0; not scaled: width"


def test_a_tensor_growing_with_the_square_of_the_sequence_is_scaled_as_the_square():
    # attention scores [B, heads, S, S] (class 2: x batch x sequence; one extra sequence dim) and an
    # activation [B, S, H] (one width dim), traced at batch 2, sequence 16, width 32.
    usage = OpUsage("aten::_softmax", 1, ("forward",), ("torch.float32",), modes=("train",), step_calls=1,
                    step_bytes=3000, step_token_bytes=3000,
                    step_shape_bytes=((2, 0, 1, 2000), (2, 1, 0, 1000)))
    shrink = Shrink(batch=2, seq_len=16, real_seq_len=64, hidden=32, real_hidden=128, hidden_from="--real-hidden")
    (cost,) = fallback_costs((ModelTrace("m", "train", "neuron", (usage,), shrink=shrink),),
                             (Coverage("aten::_softmax", "cpu-fallback"),))
    # sequence 16 -> 64 is 4x: scores grow 4 (tokens) x 4 (the second S) = 16x; the activation 4 (tokens)
    # x 4 (width 32 -> 128) = 16x: 2000 * 16 + 1000 * 16 = 48000
    assert cost.bytes_per_step == 48_000
    assert cost.scaled_by == "batch x sequence 2x16 -> 2x64; width 32 -> 128 (--real-hidden)"
