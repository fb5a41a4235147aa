"""The terminal ops section, on hand-built Reports (no torch needed)."""

from __future__ import annotations

from io import StringIO

from rich.console import Console

from opscan.records import Coverage, Evidence, ModelTrace, OpSource, OpUsage, Report, StandIn
from opscan.reporters.terminal.ops import section


def render(report: Report, width: int = 100) -> str:
    out = StringIO()
    section(report, Console(file=out, width=width, color_system=None, highlight=False))
    return out.getvalue()


TRACE = ModelTrace(
    target="model.py:build", mode="both", device="neuron",
    ops=(
        OpUsage("aten::_transformer_encoder_layer_fwd", 1, ("forward",), ("torch.float32",),
                (OpSource("model.py", 12, "encoder.layers.0"),), ("inference",)),
        OpUsage("aten::mm", 7, ("forward", "backward"), ("torch.bfloat16", "torch.float32"),
                (OpSource("model.py", 20, "head"), OpSource("model.py", 21, "head")), ("inference", "train")),
        OpUsage("mylib::fused_rope", 2, ("forward",), ("torch.float32",), (), ("train",), custom=True),
    ),
    stand_ins=(StandIn("aten::nonzero", "dynamic-shape", "upper bound 8 rows", 4, OpSource("model.py", 30)),),
    complete=False, stopped_at="mylib::other at model.py:40: RuntimeError: no fake",
    stop_hint="register_fake",
)


def test_lists_ops_with_count_phases_dtypes_and_first_source():
    text = render(Report(root=".", tool_version="0", traces=(TRACE,)))
    assert "model.py:build  both on neuron: 3 ops, 10 dispatches" in text
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("aten::mm"))
    row = lines[at]
    assert "7" in row and "fwd,bwd" in row and "both" in row
    assert "bfloat16,float32" in row
    assert lines[at + 1].strip().startswith("model.py:20 (head)  +1 more")
    fast = next(line for line in lines if line.startswith("aten::_transformer_encoder_layer_fwd"))
    assert "inf only" in fast
    custom = next(line for line in lines if line.startswith("mylib::fused_rope [custom]"))
    assert "train only" in custom
    assert "trace stopped early" in text and "mylib::other at model.py:40" in text
    assert "stand-in: aten::nonzero (dynamic-shape) = upper bound 8 rows, 4x at model.py:30" in text
    assert "status" not in text


def test_shows_status_and_evidence_when_coverage_is_known():
    coverage = (Coverage("aten::mm", "native", (Evidence("documented", "op table"),)),
                Coverage("aten::_transformer_encoder_layer_fwd", "cpu-fallback",
                         (Evidence("probed", "no PrivateUse1 kernel in torch-neuronx 2.14.3"),), via="exact"))
    text = render(Report(root=".", tool_version="0", traces=(TRACE,), coverage=coverage))
    assert "status" in text
    row = next(line for line in text.splitlines() if line.startswith("aten::_transformer"))
    assert row.rstrip().endswith("cpu-fallback [1]")
    mm = next(line for line in text.splitlines() if line.startswith("aten::mm"))
    assert mm.rstrip().endswith("native [2]")
    wide = render(Report(root=".", tool_version="0", traces=(TRACE,), coverage=coverage), width=160)
    row = next(line for line in wide.splitlines() if line.startswith("aten::_transformer"))
    assert "cpu-fallback" in row and row.rstrip().endswith("model.py:12 (encoder.layers.0)")
    # each distinct evidence is printed once, numbered, under the table
    assert "[2] op table" in text and "[1] no PrivateUse1 kernel in torch-neuronx 2.14.3" in text
    assert "mylib::fused_rope" in text and "unknown" in text


def test_prints_nothing_without_traces():
    assert render(Report(root=".", tool_version="0")) == ""
