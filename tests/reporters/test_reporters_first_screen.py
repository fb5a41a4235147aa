"""The terminal report's first screen (NOTE [the first screen] in opscan/reporters/terminal/top.py):
at 80 columns its first 24 lines are the verdict, the top port tasks with their effort, what was
not checked (said once) and the caveats folded to one line with their count; no table splits a
word, at 80 or at 120 columns."""

from __future__ import annotations

import io
import re
from dataclasses import replace

import pytest
from rich.console import Console

from opscan.assess.verdict import judge
from opscan.records import ModelTrace, OpSource, OpUsage
from opscan.reporters.tasklist import effort, sites_by_file
from opscan.reporters.terminal import render
from tests.support import sample

WHY = "building the model failed: RuntimeError: config.json names no hidden_size"
ODD_DTYPES = ("torch.int32", "torch.bfloat16", "torch.float16", "torch.complex64")   # 37 characters joined


def _report():
    """The sample, a model opscan could not build, and an op whose cells would overflow their columns."""
    (trace,) = sample.traces()
    odd = OpUsage("aten::addmm", 3, ("forward", "backward"), ODD_DTYPES,
                  tuple(OpSource("src/models/transformer/attention_block.py", 120 + i, "encoder.layers.11.self_attn")
                        for i in range(3)), ("train",))
    broken = ModelTrace("hf:broken", "train", "neuron", (), (), False, f"the model could not be built: {WHY}")
    report = sample.report(traces=(replace(trace, ops=trace.ops + (odd,)), broken))
    return replace(report, verdict=judge(report, unchecked=(("hf:broken", WHY),)))


def _lines(report, width: int) -> list[str]:
    out = io.StringIO()
    render(report, out, Console(file=out, width=width, color_system=None, highlight=False, soft_wrap=False))
    return [line.rstrip() for line in out.getvalue().splitlines()]


def test_the_first_screen_is_verdict_top_tasks_not_checked_then_the_caveats_count():
    report = _report()
    lines = _lines(report, 80)
    screen = lines[:24]
    text = "\n".join(screen)
    assert screen[0].startswith("✗ blocked by ")                                   # the verdict first
    tasks_at = screen.index(next(line for line in screen if line.startswith("Port tasks — ")))
    first = report.tasks[0]
    row = next(i for i, line in enumerate(screen) if line.split()[:2] == ["1", first.title.split()[0]])
    assert effort(first.effort_hours) in screen[row]                               # each top task with its size
    assert tasks_at < row
    gap = next(i for i, line in enumerate(screen) if line.startswith("– could not check hf:broken"))
    fold = next(i for i, line in enumerate(screen) if re.search(r"\d+ caveats? \(under Caveats, below\)", line))
    assert row < gap < fold                                                        # then what was not checked
    count = int(re.search(r"(\d+) caveats?", screen[fold]).group(1))
    shown = report.verdict.caveats
    assert count == len(shown) + (report.verdict.step is not None) + 1             # + the stale baseline entries
    assert not any(detail in text for detail in shown)                             # folded: none on the first screen
    whole = " ".join(" ".join(lines).split())
    assert whole.count(WHY) == 1                                                    # the reason said once
    assert all(detail in whole for detail in shown)                                # ... the caveats in full, below
    assert lines.index(f"Caveats ({count})") > fold


def test_no_task_cut_off_the_first_screen_says_where_the_rest_are():
    lines = _lines(_report(), 80)
    more = next(line for line in lines[:24] if "more task" in line)
    assert "+ 3 more tasks" in more and "below" in more
    assert sum(line.startswith("Port tasks and their sites") for line in lines) == 1


@pytest.mark.parametrize("width", [80, 120])
def test_no_table_splits_a_word(width):
    """Every word of a table cell is whole on one line (rich folds a word longer than its column)."""
    report = _report()
    lines = _lines(report, width)
    assert all(len(line) <= width for line in lines)
    words = set()
    for line in lines:
        words.update(w for w in re.split(r"[\s,│┃]+", line) if w)
    cells = {d.removeprefix("torch.") for d in ODD_DTYPES}                       # each only in the odd op's row
    cells |= {"aten::addmm", "fwd", "bwd", "native", "unsupported", "cpu-fallback", "unknown"}
    for task in report.tasks:
        cells |= set(task.title.replace("`", "").replace(",", " ").split())
    split = sorted(w for w in cells if w not in words)
    places = {f"{path.rpartition('/')[2]}:{lines[0]}" for t in report.tasks for path, lines in sites_by_file(t)}
    split += sorted(p for p in places if not any(w.endswith(p) for w in words))   # `folder/…/name.py:12`
    assert split == []
    assert not any(line.strip() in {"more", "s"} for line in lines)               # no word left alone below its row


def test_the_gate_leaves_its_lines_to_the_report_on_the_same_screen(capsys):
    """On a terminal the report already says why the run fails; the exit code stays the same."""
    from opscan.commands.flags import gate

    report = _report()
    assert gate(report, ("error",), exit_zero=False) == 2                         # piped, a file, CI: stderr says it
    err = capsys.readouterr().err
    assert f"could not check hf:broken: {WHY}" in err and "opscan: fail-on error" in err
    assert gate(report, ("error",), exit_zero=False, shown=True) == 2             # the report on the screen
    assert capsys.readouterr().err == ""
