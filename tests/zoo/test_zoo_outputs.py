"""Outputs: JSON, markdown, HTML and terminal from one hand-built ZooRun; deterministic bytes."""

from __future__ import annotations

import io
import json
import re

import pytest

from opscan.zoo.render import html, jsonout, markdown, terminal
from opscan.zoo.results import OpStat, Row
from opscan.zoo.execution import ZooRun


@pytest.fixture
def run() -> ZooRun:
    rows = (
        Row("gpt2", "hf:/c/gpt2", "causal-lm", "ok", "ready", ops=2, counts={"native": 2},
            op_cells={"aten::addmm": "FB", "aten::mm": "FBO"}, seconds=4.2),
        Row("llama", "hf:/c/llama", "causal-lm", "ok", "fallback", ops=4, note="num_hidden_layers 32 -> 2",
            counts={"cpu-fallback": 1, "device-or-cpu": 1, "native": 2}, fallbacks=("aten::_cdist<x>", "aten::sort"),
            fallback_bytes={"aten::_cdist<x>": 2_000_000, "aten::sort": 50_000_000},
            op_cells={"aten::_cdist<x>": "F", "aten::addmm": "FB", "aten::mm": "FBO", "aten::sort": "F"}, seconds=6.0),
        Row("mixtral", "hf:/c/mixtral", "causal-lm", "ok", "blocked", ops=2,
            counts={"unsupported": 1, "native": 1}, blockers=("mylib::moe|route",),
            custom_ops=("mylib::moe|route",), stand_ins=("aten::nonzero dynamic-shape=upper bound 16 x2",),
            op_cells={"aten::mm": "FBO", "mylib::moe|route": "I"}, seconds=9.5),
        Row("broken", "hf:/c/broken", "causal-lm", "crash", "failed", error="process killed by SIGSEGV"),
    )
    ops = (
        OpStat("mylib::moe|route", "unsupported", ("mixtral",), 0, 1),
        OpStat("aten::_cdist<x>", "cpu-fallback", ("llama",), 1, 0, 2_000_000),
        OpStat("aten::sort", "device-or-cpu", ("llama",), 1, 0, 50_000_000),
        OpStat("aten::mm", "native", ("gpt2", "llama", "mixtral"), 3, 0),
        OpStat("aten::addmm", "native", ("gpt2", "llama"), 2, 0),
    )
    meta = {"backend": "torchneuron==2.33.0", "tools": {"torch": "2.13.0", "transformers": "5.24.0",
                                                        "opscan": "0.1.0"}, "options": {"mode": "train"}}
    return ZooRun(rows, ops, meta)


def _render(module, run) -> str:
    out = io.StringIO()
    module.render(run, out)
    return out.getvalue()


@pytest.mark.parametrize("module", [jsonout, markdown, html, terminal])
def test_same_run_same_bytes(module, run):
    assert _render(module, run) == _render(module, run)


def test_json_has_rows_matrix_and_ranked_ops(run):
    data = json.loads(_render(jsonout, run))
    assert data["schema"] == "opscan-zoo/2"
    assert data["summary"] == {"models": 4, "verdicts": {"ready": 1, "likely": 0, "fallback": 1, "unknown": 0,
                                                         "blocked": 1, "failed": 1}}
    llama = next(m for m in data["models"] if m["name"] == "llama")
    assert llama["native"] == 2 and llama["counts"]["cpu-fallback"] == 1
    assert llama["fallbacks"] == ["aten::_cdist<x>", "aten::sort"] and llama["blockers"] == []
    assert llama["fallback_bytes"]["aten::sort"] == 50_000_000
    assert llama["op_cells"]["aten::mm"] == "FBO"
    sort = next(o for o in data["ops"] if o["op"] == "aten::sort")
    assert (sort["status"], sort["blocks"], sort["bytes_per_step"]) == ("device-or-cpu", 0, 50_000_000)


def test_markdown_escapes_pipes_and_lists_failures(run):
    text = _render(markdown, run)
    assert "| broken | failed | crash |" in text and "process killed by SIGSEGV" in text
    assert "mylib::moe\\|route" in text           # a pipe in a name does not break the table
    assert "llama (num_hidden_layers 32 -> 2)" in text
    blocking = text.split("## Ops that block the most models")[1].split("## ")[0]
    assert "mylib::moe" in blocking
    assert "aten::mm" not in blocking and "aten::_cdist" not in blocking   # they run
    fallbacks = text.split("## Ops that may fall back to the CPU")[1].split("## Models")[0]
    assert fallbacks.index("aten::sort") < fallbacks.index("aten::_cdist")   # most costly first
    assert "| `aten::sort` | device-or-cpu | 50.0 | 1 |" in fallbacks
    assert "llama" in text.split("## Models")[1] and "may run on the CPU: aten::_cdist<x>, aten::sort" in text


def test_html_is_self_contained_escaped_and_sortable(run):
    page = _render(html, run)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)  # no external assets
    assert "<link" not in page and "<script src" not in page
    assert "aten::_cdist&lt;x&gt;" in page and "<x>" not in page
    assert 'class="sortable"' in page and "addEventListener('click'" in page
    blocking = page.split("Ops that block the most models")[1].split("<h2>")[0]
    assert "moe|route" in blocking and "_cdist" not in blocking
    fallbacks = page.split("Ops that may fall back to the CPU")[1].split("<h2>")[0]
    assert fallbacks.index("aten::sort") < fallbacks.index("_cdist")
    assert 'class="v-failed"' in page


def test_terminal_summary_names_failures_and_priorities(run):
    text = _render(terminal, run)
    assert "4 models against torchneuron==2.33.0: 1 ready, 1 fallback, 1 blocked, 1 failed" in text
    assert "SIGSEGV" in text
    assert "ops that block the most models" in text and "ops that may fall back to the CPU" in text
