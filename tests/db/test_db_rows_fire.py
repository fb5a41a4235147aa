"""Every known-failure row and release note of the shipped release can fire on a trace, and no xfail
that blames the test harness reaches a model (issue 36; NOTE [decompositions the meta samples miss]
in opscan/db/failing_tests.py, NOTE [xfail reasons] in tools/regen_torchneuron.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from opscan.db import load_release

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("torch")


def _recordable(op: str, kernels: frozenset[str]) -> bool:
    """Whether a trace can record `op`: torch has it and it reaches the dispatcher (the backend has a
    kernel for it, where the trace stops, or no CompositeImplicitAutograd kernel decomposes it first)."""
    from opscan.db import registry

    return bool(registry.op_exists(op)) and (
        op in kernels or registry.composite_key(op, "PrivateUse1") != "CompositeImplicitAutograd")


def _fires(packet: str, ops: tuple[str, ...], parts: tuple[str, ...], kernels: frozenset[str]) -> bool:
    from opscan.db import registry

    named = ops + parts if ops or parts else registry.packet_overloads(packet)
    return any(_recordable(op, kernels) for op in named)


def test_no_known_failure_row_or_release_note_can_never_fire():
    release = load_release("torchneuron==2.33.0")
    kernels = frozenset(release.profile().native_ops)     # the ops the trace stops at on this release
    dead = [f"{f.packet} {f.dtype or 'any'} {f.case}" for f in release.known_failures
            if not _fires(f.packet, f.ops, f.parts, kernels)]
    assert dead == []
    silent = [n.packet for n in release.release_notes if not _fires(n.packet, n.ops, n.parts, kernels)]
    assert silent == []
    rows = {(f.packet, f.case): f for f in release.known_failures}
    assert rows[("aten::conv3d", "same_padding")].parts == ("aten::convolution",)
    assert rows[("aten::conj", "imag_view")].parts == ("aten::_conj",)
    assert rows[("aten::ctc_loss", "")].parts == ("aten::_ctc_loss", "aten::_ctc_loss.Tensor")
    # left out, with the reason in the release's note
    packets = {f.packet for f in release.known_failures} | {n.packet for n in release.release_notes}
    assert not packets & {"aten::combinations", "aten::gru", "aten::lstm"}
    left_out = next(n for n in release.notes if n.startswith("Left out as facts about no op"))
    assert all(p in left_out for p in ("aten::combinations (", "aten::gru (", "aten::lstm ("))


def test_the_reason_vocabulary_tells_harness_xfails_from_op_failures(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "tools"))
    import regen_torchneuron as regen

    extract = json.loads(regen.EXTRACT.read_text(encoding="utf-8"))
    reasons = {x["reason"] for key in ("spec_xfails", "pytest_xfails", "test_xfails") for x in extract.get(key, ())}
    harness = sorted(r for r in reasons if regen.reason_kind(r) == "harness")
    assert harness == ["CPU throws Value error.",
                       "Need to update the op logging for sync mode for short-circuited tests",
                       "The test is trying to copy tensors of different sizes that is not supported on Neuron."]
    assert regen.reason_kind("Float64 data type is not supported on Neuron") == "op"
    assert regen.reason_kind("dim based torch.min and torch.max are not supported right now") == "op"
    # whole-test xfails are read (~31 in the snapshot's op tests), the op ones become rows
    assert len(extract["test_xfails"]) == 31
    release = load_release("torchneuron==2.33.0")
    cases = {(f.packet, f.case) for f in release.known_failures}
    assert {("aten::min", "function_with_dim"), ("aten::sign", "special_values"), ("aten::clamp", "ops_with_nan"),
            ("aten::topk", "with_out_parameter"), ("aten::index_select", "with_indices_out_of_range")} <= cases
    lerp = {f.dtype for f in release.known_failures if f.packet == "aten::lerp" and not f.case}
    assert "float32" not in lerp and "float64" in lerp


MODELS = '''import torch
from torch import nn


class Conv3(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv3d(2, 2, 3, padding="same")

    def forward(self, x):
        return self.c(x)


class Conj(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        return torch.view_as_real(torch.complex(x @ self.w, x).conj().resolve_conj()).sum()


def conv3():
    return Conv3(), (torch.randn(1, 2, 4, 4, 4),)


def conj():
    return Conj(), (torch.randn(4, 4),)
'''


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    (folder / "m.py").write_text(MODELS, encoding="utf-8")
    return folder / "m.py"


def _caveats(run_cli, target: str, *extra: str) -> list[dict]:
    code, out, err = run_cli("trace", target, "--format", "json", *extra)
    assert code in (0, 1), err
    return json.loads(out)["caveats"]


@pytest.mark.slow
def test_a_conv3d_model_gets_the_conv3d_rows_and_adamw_no_harness_caveat(run_cli, models):
    for impl in ("for-loop", "foreach"):
        caveats = _caveats(run_cli, f"{models}:conv3", "--optimizer-impl", impl)
        text = " ".join(c["message"] for c in caveats)
        assert "via aten::conv3d with float32, same padding" in text
        assert "copy tensors of different sizes" not in text and "lerp" not in text, impl
        assert all(c["kind"] != "known-failure" for c in caveats)   # nothing keeps it from ready


@pytest.mark.slow
def test_a_complex_conj_gets_the_conj_rows(run_cli, models):
    text = " ".join(c["message"] for c in _caveats(run_cli, f"{models}:conj"))
    assert "aten::_conj" in text and "imag view" in text
