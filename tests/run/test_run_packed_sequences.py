"""Packed sequences on fake tensors (NOTE [packed sequences of unknown lengths] in
opscan/trace/standins.py): `pack_padded_sequence`, an LSTM over the packed batch and
`pad_packed_sequence` back trace the whole step, gradients through the packing included."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

SCRIPT = """\
import torch, torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
dev = "cuda"
emb = nn.Embedding(50, 8).to(dev)
rnn = nn.LSTM(8, 16, batch_first=True, bidirectional=True).to(dev)
head = nn.Linear(32, 3).to(dev)
opt = torch.optim.Adam([*emb.parameters(), *rnn.parameters(), *head.parameters()])
x = torch.randint(0, 50, (4, 7)).to(dev)
lengths = LENGTHS
packed = pack_padded_sequence(emb(x), lengths, batch_first=True, enforce_sorted=False)
out, (h, c) = rnn(packed)
out, lens = pad_packed_sequence(out, batch_first=True, total_length=TOTAL)
assert out.shape == (4, TOTAL or 7, 32) and lens.shape == (4,), (out.shape, lens)
loss = head(out).mean() + head(torch.cat([h[0], h[1]], -1)).mean()
opt.zero_grad(); loss.backward(); opt.step()
"""


@pytest.mark.parametrize("lengths, total", [
    ("torch.tensor([7, 5, 3, 2])", None),              # lengths the host holds: the exact packing
    ("(x != 0).sum(1).cpu()", 9),                      # lengths computed from device data: values unknown
])
def test_a_packed_lstm_step_traces_with_its_backward(tmp_path, monkeypatch, lengths, total):
    from opscan.trace.run import run_script

    script = tmp_path / "packed.py"
    script.write_text(SCRIPT.replace("LENGTHS", lengths).replace("TOTAL", str(total)))
    monkeypatch.chdir(tmp_path)
    trace, _ = run_script(str(script), device="neuron", steps=1, project_root=str(tmp_path))
    assert trace.complete, trace.stopped_at
    ops = {u.op for u in trace.ops}
    assert {"aten::_pack_padded_sequence", "aten::_thnn_fused_lstm_cell_backward_impl",
            "aten::embedding_dense_backward"} <= ops
    assert trace.steps
