"""Baseline fingerprints under random unrelated edits (hypothesis, with the real scanner)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from opscan.assess import baseline
from opscan.scan import load_rules, scan_memory

RULES = load_rules()
FLAGGED = ["x = x.cuda()", 'y = y.to("cuda")', "torch.cuda.synchronize()", "x = x.cuda()"]
FILLER = ["z = 1", "# a comment", "", "def f():\n    return 2", "import os", "w = [1,\n     2]"]


def _source(body: list[str]) -> str:
    return "import torch\n" + "\n".join(body) + "\n"


def _findings(text: str):
    return scan_memory({"train.py": text}, RULES).findings


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(FLAGGED)), st.sampled_from(FILLER)), max_size=8),
       st.integers(0, len(FLAGGED)))
def test_unrelated_insertions_keep_every_finding_known(insertions, new_at):
    body = list(FLAGGED)
    entries = baseline.entries(_findings(_source(body)))
    assert len(entries) == len(FLAGGED)
    edited = list(body)
    for position, filler in sorted(insertions, reverse=True):
        edited.insert(position, filler)
    applied = baseline.apply(_findings(_source(edited)), entries)
    assert applied.new == () and applied.stale == () and applied.known == len(FLAGGED)
    # one new `.cuda()` anywhere is exactly one new finding, even when identical lines exist
    edited.insert(min(new_at, len(edited)), "x = x.cuda()")
    applied = baseline.apply(_findings(_source(edited)), entries)
    assert len(applied.new) == 1 and applied.stale == ()
