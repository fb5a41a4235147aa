"""Positions placed one statement at a time are PositionProvider's (NOTE [positions per statement]
in opscan/fix/positions.py)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import PositionProvider

from opscan.fix.positions import Positions

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "examples" / "nanogpt").rglob("*.py"))
LARGE = sorted([*(ROOT / "tests" / "run" / "fixtures").glob("*.py"), *(ROOT / "opscan" / "fix").glob("*.py"),
                ROOT / "opscan" / "scan" / "file_scan.py", *(ROOT / "opscan" / "records").glob("*.py")])
ODD = {   # indentation, decorators, comments, line endings and continuation lines of every kind
    "tabs.py": "class A:\n\tx = 1\n\n\t@property\n\tdef f(self):\n\t\t# note\n\t\treturn (1 +\n\t\t\t2)\n",
    "crlf.py": "import os\r\n\r\nclass B:\r\n    def g(self):\r\n        return [\r\n            1,\r\n        ]\r\n",
    "mixed.py": ("# header\n\n\ndef h(a,\n      b=2):  # trailing\n    '''doc\n    more'''\n    if a:\n"
                 "        with open(a) as f:\n            return f.read()\n    for i in b:\n        pass\n"
                 "    else:\n        x = \\\n            3\n    return x\n\n\n@decorator\n# between\n@other(1)\n"
                 "class C(Base):\n    y: int = 3\n\n    async def m(self):\n        await z\n"),
}


def _modules(paths) -> dict[str, cst.Module]:
    return {p.relative_to(ROOT).as_posix(): cst.parse_module(p.read_bytes()) for p in paths}


def _compare(name: str, module: cst.Module, samples: int) -> None:
    full = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    lines = sorted({where.start.line for node, where in full.items() if isinstance(node, cst.BaseExpression)})
    assert lines, name
    placed = 0
    for line in lines[:: max(1, len(lines) // samples)]:      # lines of the module at any depth
        positions = Positions(module, [(line, line)])
        for node, where in positions.items():
            if node in full:
                assert where == full[node], (name, line, type(node).__name__)
                placed += 1
        statements = [n for n in full if isinstance(n, cst.BaseStatement)][:30]
        for node in statements:                          # asked for later: placed on demand, the same
            assert positions[node] == full[node], (name, type(node).__name__)
    assert placed


@pytest.mark.parametrize("name", sorted(ODD))
def test_placed_positions_are_position_providers(name):
    _compare(name, cst.parse_module(ODD[name]), 40)


@pytest.mark.slow
def test_placed_positions_on_the_example():
    for name, module in _modules(SOURCES).items():
        _compare(name, module, 6)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(_modules(LARGE)))
def test_placed_positions_on_large_modules(name):
    _compare(name, _modules(LARGE)[name], 12)


def test_only_the_statements_holding_the_lines_are_placed():
    module = cst.parse_module(ODD["mixed.py"])
    positions = Positions(module, [(10, 10)])             # `return f.read()`, inside def > if > with
    placed = {type(n).__name__ for n, _ in positions.items()}
    assert "Return" in placed and "FunctionDef" not in placed and "ClassDef" not in placed
    assert not positions.complete
