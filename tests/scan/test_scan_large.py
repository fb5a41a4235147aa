"""Very large files are read block by block (NOTE [very large files] in opscan/scan/large.py): the same
findings as the whole parse, a syntax error at its line, and never a cut inside a statement."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from opscan.scan import large, load_rules, scan_source

ROOT = Path(__file__).resolve().parents[2]
RULES = load_rules()
FILES = sorted([*(ROOT / "examples" / "nanogpt").rglob("*.py"), *(ROOT / "tests" / "run" / "fixtures").glob("*.py"),
                *(ROOT / "tests" / "fix" / "fixtures").glob("*.py")])
TRICKY = '''import torch
from torch.cuda import synchronize as sync
T = torch.cuda
DEVICE = "cuda"


@decorator
# a comment between
@other(
    1,
)
def first():
    return T.current_device()


x = [
1,
]
s = """
not a statement start
"""
if x:
    pass
else:
    y = 2
try:
    z = 1
except ValueError:
    z = 2
finally:
    w = 3
v = 1 + \\
2


class Model:
    def go(self, m):
        sync()
        return m.to(DEVICE)


@torch.library.impl(lib, "op", "Meta")
@torch.library.impl(lib, "op", "CUDA")
@torch.library.impl(lib, "op", "XPU")
@torch.library.impl(
    lib,
    "op",
    "CPU",
)
@torch.library.impl(lib, "op", "HPU")
@register(
    [
        1,
    ],
)
@dataclass
def op(x):
    return x
'''


def _signature(result) -> list[tuple]:
    return [(f.rule, f.location.line, f.location.column, f.location.end_line, f.location.end_column, f.message,
             f.guarded) for f in result.findings]


@pytest.fixture
def small(monkeypatch):
    """Every file is 'very large', cut every few lines."""
    monkeypatch.setattr(large, "LARGE_LINES", 5)
    monkeypatch.setattr(large, "BLOCK_LINES", 4)


def test_block_by_block_gives_the_whole_parses_findings(small, monkeypatch):
    files = {p.relative_to(ROOT).as_posix(): p.read_bytes() for p in FILES}
    files["tricky.py"] = TRICKY.encode()
    compared = 0
    for rel, data in files.items():
        lean = scan_source(rel, data, RULES)
        with monkeypatch.context() as m:
            m.setattr(large, "LARGE_LINES", 10 ** 9)
            whole = scan_source(rel, data, RULES)
        assert _signature(lean) == _signature(whole), rel
        compared += bool(whole.findings)
    assert compared >= 10


def test_blocks_are_cut_only_where_a_top_level_statement_starts(small):
    text = TRICKY
    starts = large._line_offsets(text)
    tree = ast.parse(text)
    statement_lines = {min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", ()))]) for s in tree.body}
    blocks = large._blocks(text, starts)
    assert len(blocks) > 5
    assert {first for first, _ in blocks[1:]} <= statement_lines
    assert blocks[0][0] == 1 and blocks[-1][1] == len(starts)


def test_a_syntax_error_is_reported_at_its_line(small):
    text = "import torch\n" + "a = 1\n" * 20 + "def broken(:\n    pass\n" + "b = 2\n" * 20 + "m = m.cuda()\n"
    result = scan_source("big.py", text.encode(), RULES)
    assert [(f.rule, f.location.line) for f in result.findings] == [("OPS000", 22)]


def test_a_generated_file_keeps_only_what_the_walk_needs(small):
    text = "import torch\n" + "".join(f"value_{i} = {i}\n" for i in range(200))
    text += "model = torch.nn.Linear(2, 2).cuda()\n"
    tree = large.lean_tree(text, "g.py", RULES.compiled, frozenset())
    assert [type(s).__name__ for s in tree.body] == ["Import", "Assign"] and tree.body[1].lineno == 202
    result = scan_source("g.py", text.encode(), RULES)
    assert [(f.rule, f.location.line) for f in result.findings] == [("OPS105", 202)]
