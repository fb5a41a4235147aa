"""A trace that stops early says what to try, once, in its own field (`stop_hint`; NOTE [stop and hint]),
printed `...; try: <hint>`, never "try: try ..."."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from opscan.trace import tracer  # noqa: E402
from opscan.targets import trace_target  # noqa: E402

MODEL = """\
import torch


class Broken(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.proj(x)
        raise ValueError("model code failed on purpose")


def build():
    return Broken(), (torch.randn(2, 4),)
"""


def test_every_hint_reads_after_try():
    hints = [tracer.DEFAULT_HINT, *(hint for _key, hint in tracer._HINTS)]
    assert [h for h in hints if h.lower().startswith("try")] == []


def test_stopped_trace_names_the_hint_once(tmp_path):
    (tmp_path / "broken.py").write_text(MODEL)
    trace = trace_target("broken.py:build", mode="inference", project_root=str(tmp_path))
    assert not trace.complete
    assert "ValueError: model code failed on purpose" in trace.stopped_at
    assert "try" not in trace.stopped_at, trace.stopped_at
    assert trace.stop_hint.startswith("--device cpu or --mode inference")
