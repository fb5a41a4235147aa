"""Zoo pages say what the fallback cost stands for: scaled back to the real layer count under --layers."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest

from opscan.zoo.execution import ZooRun
from opscan.zoo.render import html, markdown, terminal
from opscan.zoo.results import OpStat, Row


@pytest.fixture
def run() -> ZooRun:
    rows = (Row("llama", "hf:/c/llama", "causal-lm", "ok", "fallback", ops=2, note="num_hidden_layers 32 -> 2",
                counts={"device-or-cpu": 1, "native": 1}, fallbacks=("aten::sort",),
                fallback_bytes={"aten::sort": 50_000_000}, op_cells={"aten::mm": "FBO", "aten::sort": "F"}),)
    ops = (OpStat("aten::sort", "device-or-cpu", ("llama",), 1, 0, 50_000_000),
           OpStat("aten::mm", "native", ("llama",), 1, 0))
    return ZooRun(rows, ops, {"backend": "torchneuron==2.33.0", "layers": 2})


@pytest.mark.parametrize("module", [markdown, html, terminal])
def test_a_layers_run_says_its_costs_are_scaled_back(module, run):
    out = io.StringIO()
    module.render(run, out)
    assert "scaled back from the 2 traced layers to each model" in out.getvalue()   # HTML escapes the '
    plain = io.StringIO()
    module.render(replace(run, meta={"backend": "torchneuron==2.33.0", "layers": None}), plain)
    assert "scaled back" not in plain.getvalue() and "at the traced shapes" in plain.getvalue()
