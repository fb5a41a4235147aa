"""A script with lazy modules runs on the imitated device: the parameters it materialises at its
first forward are the device's, and its optimizer steps them (NOTE [lazy modules on fake tensors]).
The CPU run's ops against a real run: tests/run/test_run_ops.py (lazy_train.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_lazy_modules_moved_before_their_first_forward_materialise_on_the_device(tmp_path, monkeypatch):
    from opscan.trace.run import run_script

    monkeypatch.chdir(tmp_path)
    trace, notes = run_script(str(FIXTURES / "lazy_train.py"), [], device="neuron", steps=1,
                              project_root=str(FIXTURES))
    assert trace.complete, trace.stopped_at
    assert notes[0].startswith("lazy_train.py: ended after 1 optimizer step")
    device = {u.op: u for u in trace.ops}
    for op in ("aten::convolution", "aten::convolution_backward", "aten::addmm", "aten::native_batch_norm",
               "aten::uniform_", "aten::_foreach_addcdiv_.ScalarList"):
        assert op in device, op
    assert device["aten::_foreach_addcdiv_.ScalarList"].phases == ("optimizer",)
    host = {u.op for u in trace.host_ops}
    assert not host & {"aten::convolution", "aten::addmm", "aten::uniform_"}
