"""A trace's stop and what to try are two fields (NOTE [stop and hint] in opscan/records/trace.py): both
are keys of the JSON report, the text formats print them as one line, and a trace cached in the glued
form written before the split (`<stop>; try: <hint>`) still loads into the two."""

from __future__ import annotations

import io
import json
from dataclasses import replace

from tests.support import sample
from opscan.records import ModelTrace, split_stop
from opscan.reporters import render
from opscan.zoo.cache import trace_from_dict, trace_to_dict

STOP = "aten::nonzero at model.py:30: RuntimeError: data-dependent shape"
HINT = "make the size static (e.g. torch.nonzero_static)"


def _stopped_report():
    (trace,) = sample.traces()
    return sample.report(traces=(replace(trace, complete=False, stopped_at=STOP, stop_hint=HINT),))


def _render(fmt: str, report) -> str:
    out = io.StringIO()
    render(fmt, report, out)
    return out.getvalue()


def test_the_json_report_holds_the_stop_and_the_hint_apart():
    (trace,) = json.loads(_render("json", _stopped_report()))["traces"]
    assert (trace["complete"], trace["stopped_at"], trace["stop_hint"]) == (False, STOP, HINT)


def test_the_text_formats_print_one_line_with_the_hint_after_try():
    assert f"{STOP}; try: {HINT}" in " ".join(_render("terminal", _stopped_report()).split())
    assert f"{STOP}; try: {HINT}" in _render("markdown", _stopped_report())


def test_a_trace_cached_with_the_glued_stop_still_loads():
    new = ModelTrace("m.py:build", "train", "neuron", complete=False, stopped_at=STOP, stop_hint=HINT)
    old = trace_to_dict(new)
    del old["stop_hint"]
    old["stopped_at"] = f"{STOP}; try: {HINT}"
    assert trace_from_dict(old) == new
    assert trace_from_dict(trace_to_dict(new)) == new
    assert split_stop(STOP) == (STOP, "")   # a stop with nothing to try
