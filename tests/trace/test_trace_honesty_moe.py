"""Honesty for an fp32 MoE: the fake trace, with opscan's fake kernel for aten::_grouped_mm,
lists the same ops as a real one-step CPU training run (as tests/trace/test_trace_honesty.py)."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.support.trace_recorder import real_step_ops  # noqa: E402

from opscan.targets import trace_target  # noqa: E402

pytestmark = pytest.mark.slow
SEQ_LEN = 16


@pytest.fixture(scope="module")
def mixtral_fp32(tmp_path_factory, request):
    """A tiny Mixtral-style MoE (examples/models/hf/mixtral-tiny) as users configure it: fp32."""
    root = request.config.rootpath
    config = json.loads((root / "examples/models/hf/mixtral-tiny/config.json").read_text())
    config["dtype"] = "float32"
    folder = tmp_path_factory.mktemp("mixtral-fp32")
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_fp32_moe_fake_trace_matches_a_real_cpu_step(mixtral_fp32):
    real = real_step_ops(mixtral_fp32, SEQ_LEN)
    assert "aten::_grouped_mm" in real  # the real fp32 step runs the grouped kernel on the CPU
    trace = trace_target(f"hf:{mixtral_fp32}", mode="train", device="cpu", batch=2, seq_len=SEQ_LEN)
    assert trace.complete, trace.stopped_at
    assert trace.supplied_fakes == ("aten::_grouped_mm",)
    fake = {u.op for u in trace.ops}
    assert fake == real, (sorted(fake - real), sorted(real - fake))
    phases = {u.op: u.phases for u in trace.ops}
    assert phases["aten::_grouped_mm"] == ("forward", "backward")
    assert any(p == ("optimizer",) for p in phases.values())  # the whole step, optimizer included


SWITCH = {"model_type": "switch_transformers", "architectures": ["SwitchTransformersForConditionalGeneration"],
          "d_model": 32, "d_kv": 8, "d_ff": 64, "num_layers": 2, "num_decoder_layers": 2,
          "num_sparse_encoder_layers": 1, "num_sparse_decoder_layers": 1, "num_heads": 4,
          "num_experts": 2, "vocab_size": 100, "expert_capacity": 64, "decoder_start_token_id": 0,
          "pad_token_id": 0, "eos_token_id": 1}


def test_switch_transformers_router_converted_in_forward_matches_a_real_cpu_step(tmp_path):
    # its router converts its classifier inside forward (`self.classifier.to(self.dtype)`) and
    # picks experts by formatted name (f"expert_{idx[0]}"): NOTEs [module conversions in forward]
    # and [formatting 0-dim fake tensors] in opscan/trace/fakes.py
    (tmp_path / "config.json").write_text(json.dumps(SWITCH))
    real = real_step_ops(tmp_path, SEQ_LEN)
    trace = trace_target(f"hf:{tmp_path}", mode="train", device="cpu", batch=2, seq_len=SEQ_LEN)
    assert trace.complete, trace.stopped_at
    fake = {u.op for u in trace.ops}
    assert fake == real, (sorted(fake - real), sorted(real - fake))
    assert "aten::index_add_" in fake                          # the experts ran
    assert any(s.op == "aten::_local_scalar_dense" for s in trace.stand_ins)   # the formatted index
