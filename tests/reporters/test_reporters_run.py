"""`opscan run`'s terminal report leads with the run (steps, where its ops run, stand-ins), then the
source; a report without a script run has no run section."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from tests.support import sample
from opscan.records import OpSource, StandIn
from opscan.reporters.terminal import render


def _text(report) -> str:
    out = io.StringIO()
    render(report, out, Console(file=out, width=100, color_system=None, highlight=False, soft_wrap=False))
    return out.getvalue()


def _run_report(**trace_changes):
    (trace,) = sample.traces()
    trace = replace(trace, target="script:train.py", **{"steps": 2, **trace_changes})
    return sample.report(traces=(trace,))


def test_the_run_comes_first_then_the_source():
    text = _text(_run_report(stand_ins=(StandIn("aten::_local_scalar_dense", "item", "1", 3,
                                                 OpSource("train.py", 9, "")),)))
    lines = text.splitlines()
    assert lines[0] == "Run of train.py on neuron: 2 optimizer steps run"
    # the sample's four ops: mm native, gelu unknown, _fused_adamw_ cpu-fallback, embedding backward rejected
    assert lines[1] == "  ops: 4 — 1 on the device, 1 may fall back to the CPU, 1 unknown, 1 rejected"
    assert lines[2].startswith("  stand-ins used: 3 ")
    assert text.index("Run of train.py") < text.index("✗ blocked by") < text.index("Port tasks")


def test_a_stopped_run_says_so_first():
    text = _text(_run_report(complete=False, stopped_at="aten::mm at train.py:3: ValueError: x",
                             stop_hint="--device cpu", steps=0))
    lines = text.splitlines()
    assert lines[0] == "Run of train.py on neuron: stopped early after 0 optimizer steps (why: under the verdict)"
    assert " ".join(text.split()).count("aten::mm at train.py:3: ValueError: x; try: --device cpu") == 1   # once


def test_no_run_section_without_a_script_run():
    assert not _text(sample.report()).startswith("Run of")
    assert "Run of" not in _text(sample.report())
