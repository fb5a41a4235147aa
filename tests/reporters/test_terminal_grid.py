"""The findings grid prints what rich's Table.grid printed, byte for byte (NOTE [the findings grid])."""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console
from rich.text import Text

from opscan.records import Finding, Location, Report
from opscan.reporters.terminal import findings
from opscan.reporters.terminal.grid import FindingsGrid

WIDTHS = (12, 20, 26, 33, 40, 57, 80, 100, 120, 200)
MODES = {"plain": {"color_system": None}, "colour": {"color_system": "truecolor", "force_terminal": True}}

WORDS = ["torch", "cuda()", "device", "tensor.to('cuda')", "replace", "with", "torch.accelerator", "a", "",
         "x" * 70, "é", "数据并行", "—", "[fixable]", "  ", "ends.", "model.half()", "│"]


def _text(rng: random.Random, lines: int, style: str = "") -> Text:
    text = Text()
    for n in range(lines):
        if n:
            text.append("\n")
        words = [rng.choice(WORDS) for _ in range(rng.randint(0, 18))]
        text.append(" ".join(words), style=rng.choice(["", "dim", "green", style]))
    return text


def _rows(seed: int) -> list[tuple[Text, Text, Text]]:
    rng = random.Random(seed)
    rows = []
    for _ in range(rng.randint(1, 9)):
        where = Text(f" {rng.randint(1, 99999)}:{rng.randint(0, 120)}")
        style = rng.choice(["bold red", "yellow", "cyan"])
        code = Text(f"OPS{rng.randint(1, 999):03d}", style=style)
        code.append(" " + rng.choice(["error", "warning", "note"]), style=style)
        rows.append((where, code, _text(rng, rng.randint(1, 4), "bold")))
    return rows


def _printed(renderable, width: int, mode: str) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, highlight=False, soft_wrap=False, **MODES[mode])
    console.print(renderable)
    return out.getvalue()


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_grid_prints_what_table_grid_printed(mode: str) -> None:
    for seed in range(40):
        grid = FindingsGrid(_rows(seed))
        for width in WIDTHS:
            assert _printed(grid, width, mode) == _printed(grid.table(), width, mode), (seed, width)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_narrow_widths_fall_back_to_the_table(mode: str) -> None:
    wide = Text(" " + "9" * 30 + ":1")
    grid = FindingsGrid([(wide, Text("OPS101 error"), Text("message"))])
    assert grid.widths(40) is None
    assert _printed(grid, 40, mode) == _printed(grid.table(), 40, mode)


def test_tabs_and_long_words_are_left_to_rich() -> None:
    rows = [(Text(" 3:1"), Text("OPS101 error"), Text("a\tb " + "y" * 200 + "\n│ tab\there"))]
    grid = FindingsGrid(rows)
    for width in WIDTHS:
        for mode in MODES:
            assert _printed(grid, width, mode) == _printed(grid.table(), width, mode)


def test_the_findings_section_is_unchanged_by_width() -> None:
    """A report's findings section, with fixes, guards, fixable marks and long snippets: the same
    text as the section printed with a Table.grid per file (as before)."""
    rng = random.Random(7)
    found = []
    for n in range(40):
        found.append(Finding(rule=f"OPS{rng.randint(100, 400)}", name="n", category="device-string",
                             severity=rng.choice(["error", "warning", "note"]),
                             message=" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 20))),
                             location=Location(f"pkg/mod{n % 6}.py", rng.randint(1, 5000), rng.randint(0, 80)),
                             fix=rng.choice(["", "use torch.accelerator", "move the tensor with .to(device)"]),
                             guarded=rng.random() < 0.2, fixable=rng.random() < 0.3,
                             snippet=" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 30)))))
    report = Report(root="r", tool_version="0", files_scanned=6, findings=tuple(found))
    for width in (40, 80, 120):
        for mode in MODES:
            out = io.StringIO()
            console = Console(file=out, width=width, highlight=False, soft_wrap=False, **MODES[mode])
            findings.section(report, console)
            before = io.StringIO()
            old = Console(file=before, width=width, highlight=False, soft_wrap=False, **MODES[mode])
            _section_with_table_grids(report, old)
            assert out.getvalue() == before.getvalue(), (width, mode)


def _section_with_table_grids(report: Report, console: Console) -> None:
    """The section as it was printed before FindingsGrid: one Table.grid per file."""
    from itertools import groupby

    from opscan.reporters.terminal.findings import SEVERITY_STYLE, SNIPPET_MAX, _body, _where
    from opscan.reporters.terminal.location import fit

    ordered = sorted(report.findings, key=Finding.sort_key)
    snippet_max = min(SNIPPET_MAX, console.width - 26)
    files = len({f.location.path for f in ordered})
    console.print(Text(f"Findings — {len(ordered)} in {files} file{'s' if files != 1 else ''}", style="bold"))
    for path, group in groupby(ordered, key=lambda f: f.location.path):
        console.print()
        console.print(Text(fit(path, "", console.width), style="bold underline"))
        rows, last_fix = [], None
        for finding in group:
            style = SEVERITY_STYLE.get(finding.severity, "")
            code = Text(finding.rule, style=style)
            code.append(f" {finding.severity}", style=style)
            rows.append((Text(" " + _where(finding)), code, _body(finding, finding.fix != last_fix, snippet_max)))
            last_fix = finding.fix
        console.print(FindingsGrid(rows).table())
    console.print()
