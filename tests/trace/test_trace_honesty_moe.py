"""Honesty for an fp32 MoE: the fake trace, with opscan's fake kernel for aten::_grouped_mm,
lists the same ops as a real one-step CPU training run (as tests/trace/test_trace_honesty.py)."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from trace_recorder import real_step_ops  # noqa: E402

from opscan.trace import trace_target  # noqa: E402

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
