"""Terminal layout (NOTE [piped output], NOTE [whole op names]): piped output has no trailing
spaces and takes COLUMNS (else a width where tables fit); at 80 columns no op name is broken."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from tests.support import sample
from opscan.records import OpSource, OpUsage
from opscan.reporters.terminal import PIPED_WIDTH, make_console, render
from opscan.reporters.terminal.ops import short_op

LONG = "aten::_foreach_addcdiv_.ScalarList"


def _report():
    (trace,) = sample.traces()
    extra = OpUsage(LONG, 3, ("optimizer",), ("torch.float32", "torch.bfloat16", "torch.float16"),
                    (OpSource("some/very/long/path/to/the/training/script_file.py", 120, "opt"),), ("train",))
    return sample.report(traces=(replace(trace, ops=trace.ops + (extra,)),))


def _piped(monkeypatch, columns: str | None) -> str:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    out = io.StringIO()   # not a terminal: a file, a pipe, a CI log
    render(_report(), out, make_console(out))
    return out.getvalue()


def test_piped_output_has_no_trailing_spaces_and_its_width(monkeypatch):
    text = _piped(monkeypatch, None)
    lines = text.splitlines()
    assert lines and [line for line in lines if line != line.rstrip()] == []
    assert max(len(line) for line in lines) <= PIPED_WIDTH
    assert any(LONG in line for line in lines)                    # whole at the piped width
    wide = _piped(monkeypatch, "200")
    assert max(len(line) for line in wide.splitlines()) > PIPED_WIDTH   # COLUMNS is followed
    assert _piped(monkeypatch, None) == text                      # same input, same bytes


def test_no_op_name_is_broken_at_80_columns():
    out = io.StringIO()
    render(_report(), out, Console(file=out, width=80, color_system=None, highlight=False, soft_wrap=False))
    lines = out.getvalue().splitlines()
    table = lines[next(i for i, line in enumerate(lines) if line.startswith("op / first source")):]
    names = [line.split()[0] for line in table[1:] if line.startswith("aten::")]
    assert len(names) == 5
    shown = {name: op for op in ("aten::mm", "aten::gelu", "aten::_fused_adamw_", "aten::embedding_dense_backward",
                                 LONG)
             for name in names if name == op or (("…" in name) and name.startswith(op.split("…")[0][:10]))}
    assert set(shown.values()) == {"aten::mm", "aten::gelu", "aten::_fused_adamw_", "aten::embedding_dense_backward",
                                   LONG}
    assert not any(line.startswith(("arList", "rd ")) for line in table)   # no name's end on a line of its own
    assert all(len(line) <= 80 for line in lines)


def test_a_long_name_is_shortened_in_the_middle_keeping_its_overload():
    assert short_op(LONG, 40) == LONG
    assert short_op(LONG, 27) == "aten::_foreach_….ScalarList" and len(short_op(LONG, 27)) == 27
    assert short_op("aten::embedding_dense_backward",
                    27).endswith("…") and len(short_op("aten::embedding_dense_backward", 27)) == 27
