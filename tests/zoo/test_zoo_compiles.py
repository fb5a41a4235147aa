"""The zoo's "new compiles per step" column: from each row's compile forecast, on the markdown and
HTML pages and in the JSON rows (docs/zoo.md)."""

from __future__ import annotations

import io
import json

from opscan.records import CompileForecast, CompileStep, NewSignature, OpSource
from opscan.zoo.execution import ZooRun
from opscan.zoo.render import html, jsonout, markdown
from opscan.zoo.results import Row, new_per_step, row_from_dict, row_to_dict

AT = OpSource("model.py", 12, "")


def _new(n: int, cause: str = "data") -> tuple[NewSignature, ...]:
    return tuple(NewSignature(f"aten::mm(({i}, 4):float32)", "aten::mm", ("forward",), AT, cause, AT)
                 for i in range(n))


def test_new_per_step_reads_the_forecast():
    assert new_per_step(None) is None and new_per_step(CompileForecast()) is None
    one = CompileForecast((CompileStep(("a", "b")),))
    assert new_per_step(one) == 0
    assert new_per_step(CompileForecast((CompileStep(("a",)),), likely_new=7)) == 7   # a data-dependent size
    seen = CompileForecast((CompileStep(("a",)), CompileStep(("b",), new=_new(3)), CompileStep(("c",), new=_new(5))))
    assert new_per_step(seen) == 4
    late = CompileForecast((CompileStep(("a",)), CompileStep(("b",), new=_new(2, "first-run"))))
    assert new_per_step(late) == 0   # code first run after the first step: compiled once, not per step


def _page(module, rows) -> str:
    out = io.StringIO()
    module.render(ZooRun(rows, (), {"backend": "", "tools": {}, "options": {}}), out)
    return out.getvalue()


def test_pages_show_the_column():
    rows = (Row("gpt2", "hf:/c/gpt2", "causal-lm", "ok", "ready", ops=2, compiles=40, new_compiles=0),
            Row("mixtral", "hf:/c/mixtral", "causal-lm", "ok", "ready", ops=2, compiles=90, new_compiles=12),
            Row("old", "hf:/c/old", "causal-lm", "ok", "ready", ops=2))
    text = _page(markdown, rows)
    header = next(line for line in text.splitlines() if line.startswith("| model |"))
    column = header.split("|").index(" new compiles per step ")
    cells = {line.split("|")[1].strip(): line.split("|")[column].strip()
             for line in text.splitlines() if line.startswith(("| gpt2", "| mixtral", "| old"))}
    assert cells == {"gpt2": "0", "mixtral": "~12", "old": "-"}
    page = _page(html, rows)
    assert "new compiles per step" in page and ">~12<" in page
    data = json.loads(_page(jsonout, rows))
    assert {m["name"]: m["new_compiles"] for m in data["models"]} == {"gpt2": 0, "mixtral": 12, "old": None}


def test_cached_rows_without_the_fields_say_not_known():
    data = row_to_dict(Row("m", "hf:/c/m", "f", "ok", "ready"))
    data.pop("compiles"), data.pop("new_compiles")
    row = row_from_dict(data)
    assert row.compiles is None and row.new_compiles is None


def test_a_cached_trace_keeps_its_forecast():
    from opscan.records import ModelTrace, VaryingOp
    from opscan.zoo.cache import trace_from_dict, trace_to_dict

    forecast = CompileForecast((CompileStep(("a",), ("h",), (("forward", 1),)),
                                CompileStep(("b",), (), (("forward", 1),), _new(2))),
                               (VaryingOp("aten::mm", "data", AT, (AT,), (2,), 2, ""),), likely_new=3)
    trace = ModelTrace("hf:/c/m", "train", "neuron", compile=forecast)
    back = trace_from_dict(json.loads(json.dumps(trace_to_dict(trace))))
    assert back.compile == trace.compile
    assert trace_from_dict(json.loads(json.dumps(trace_to_dict(ModelTrace("t", "train", "neuron"))))).compile is None
