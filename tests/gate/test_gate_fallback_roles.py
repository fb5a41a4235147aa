"""Fallback bytes never infer a dim's role from equal values (issue 44; NOTE [sizes by role] in
opscan/trace/roles.py): opscan chooses distinct sizes, tells a given sequence apart by a second trace,
or says the bytes are not scaled in width."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from opscan.assess.assessment import scale_factors
from opscan.records import Shrink
from opscan.trace.roles import by_role, distinct_length

REPO = Path(__file__).resolve().parents[2]


def test_opscan_chooses_a_length_no_size_of_the_model_has():
    llama_tiny = {64, 128, 192, 256, 32}          # its parameters' dims and the width multiples of 64
    assert distinct_length(128, llama_tiny) == 112
    assert distinct_length(96, llama_tiny) == 96
    assert distinct_length(64, {64}) == 48
    assert distinct_length(64, {16, 32, 48, 64}) == 56                # multiples of 16, then of 8
    assert distinct_length(8, {8}) == 8                                # nothing free at or above the floor


def test_two_traces_tell_the_sequence_from_the_width():
    # silu on [B, S, I] with S = I = 128 (2 x the width 64), attention scores [B, h, S, S], a flattened [B*S, I]
    main = [("aten::silu", ((3, (2, 128, 128), 131072, True),)),
            ("aten::_softmax", ((3, (2, 4, 128, 128), 524288, True),)),
            ("aten::mm", ((3, (256, 128), 131072, True), (1, (128, 64), 32768, False)))]
    probe = [("aten::silu", ((3, (2, 112, 128), 114688, True),)),
             ("aten::_softmax", ((3, (2, 4, 112, 112), 401408, True),)),
             ("aten::mm", ((3, (224, 128), 114688, True), (1, (128, 64), 32768, False)))]
    shaped = by_role(main, probe, 128, 112, 64)
    assert shaped["aten::silu"] == {(3, 1, 0): 131072}           # one width dim, no second sequence dim
    assert shaped["aten::_softmax"] == {(3, 0, 1): 524288}       # S x S: no width, one extra sequence dim
    assert shaped["aten::mm"] == {(3, 1, 0): 131072, (1, 2, 0): 32768}
    assert by_role(main, probe[:2], 128, 112, 64) is None        # calls that do not line up: not told apart
    assert by_role(main, [probe[1], probe[0], probe[2]], 128, 112, 64) is None


def test_sizes_not_told_apart_leave_the_width_unscaled_and_say_why():
    why = "not told apart: an input size, 128, is also a multiple of the width 64 (...)"
    factors = scale_factors(Shrink(hidden=64, real_hidden=4096, hidden_from="--real-hidden", roles=why))
    assert (factors.width, factors.seq) == (1.0, 1.0)
    assert "not scaled: width 64 -> 4096 (an input size, 128" in factors.how
    told = scale_factors(Shrink(hidden=64, real_hidden=4096, hidden_from="--real-hidden", roles="probe 112"))
    assert told.width == 64.0 and "second trace at 112" in told.how


@pytest.fixture(scope="module")
def silu_fallback(tmp_path_factory):
    """The shipped release with `aten::silu` made a CPU fallback by an imported table."""
    pytest.importorskip("transformers")
    from opscan.cli import main
    from opscan.db import registry

    folder = tmp_path_factory.mktemp("silu")
    (folder / "t.md").write_text("## torch.nn.functional\n\n| API | Status | Limitations |\n|---|---|---|\n"
                                 "| torch.nn.functional.silu | CPU_FALLBACK | aten::silu |\n", encoding="utf-8")
    minor = ".".join(registry.torch_version().split(".")[:2])
    assert main(["db", "import-compat", str(folder / "t.md"), "--release", "2.34.0", "--out",
                 str(folder / "r.yaml"), "--torch", minor]) == 0
    return folder / "r.yaml"


def _silu(run_cli, db: Path, *extra: str) -> tuple[dict, dict]:
    code, out, err = run_cli("trace", "hf:" + str(REPO / "examples/models/hf/llama-tiny"), "--db", str(db),
                             "--real-hidden", "4096", "--format", "json", *extra)
    assert code == 0, err
    data = json.loads(out)
    return {o["op"]: o for o in data["ops"]}["aten::silu"]["fallback"], data["traces"][0]["shrink"]


@pytest.mark.slow
def test_llama_tiny_silu_bytes_at_two_lengths_differ_by_their_ratio(run_cli, silu_fallback):
    at128, shrink128 = _silu(run_cli, silu_fallback, "--seq-len", "128")   # 128 = its intermediate size
    at96, shrink96 = _silu(run_cli, silu_fallback, "--seq-len", "96")
    assert shrink128["roles"] == "probe 112" and shrink96["roles"] == ""
    assert at128["bytes_per_step"] * 96 == at96["bytes_per_step"] * 128
    assert at96["bytes_per_step"] == 64 * at96["traced"]["bytes_per_step"]   # [2, S, 128]: one width dim
    assert at128["traced"]["bytes_per_step"] * 96 == at96["traced"]["bytes_per_step"] * 128
    default, shrink = _silu(run_cli, silu_fallback)                            # opscan's choice: distinct
    assert shrink["seq_len"] == 112 and shrink["roles"] == ""
    assert default["bytes_per_step"] * 96 == at96["bytes_per_step"] * 112


FACTORY = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(256, 64)
        self.up = nn.Linear(64, 128)

    def forward(self, ids):
        return torch.nn.functional.silu(self.up(self.emb(ids))).sum()


def build():
    return Net(), (torch.randint(0, 256, (2, {seq})),)
'''


@pytest.mark.slow
def test_a_factorys_input_size_equal_to_the_width_leaves_the_width_unscaled(run_cli, silu_fallback, tmp_path):
    for seq, told in ((128, False), (96, True)):
        (tmp_path / f"m{seq}.py").write_text(FACTORY.format(seq=seq), encoding="utf-8")
        code, out, err = run_cli("trace", f"{tmp_path / f'm{seq}.py'}:build", "--db", str(silu_fallback),
                                 "--real-hidden", "4096", "--format", "json")
        assert code == 0, err
        silu = {o["op"]: o for o in json.loads(out)["ops"]}["aten::silu"]["fallback"]
        if told:
            assert silu["bytes_per_step"] == 64 * silu["traced"]["bytes_per_step"]
        else:
            assert silu["bytes_per_step"] == silu["traced"]["bytes_per_step"]
            assert "not scaled: width 64 -> 4096 (an input size, 128" in silu["scaled_by"]
