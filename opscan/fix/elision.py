"""The module the fixable mark plans on: the file with every statement that holds no finding (and
that no codemod reads) elided, each kept node on its own line and column.

# NOTE [planning on an elided module]
# The fixable mark needs the outcome of each finding, not the rewritten file. libcst builds a node
# for every token of a module (about 20k lines/s here), and the files of a large library that hold
# a fixable finding are its largest: on transformers, planning them in full cost more than the
# rest of the cold scan. What the codemods read (fix/context.py, codemods.py, precision.py) is the
# node of a finding and its ancestors, the module's top-level statements (the docstring, the
# imports, an assignment of the accelerator to reuse, where each statement is: their kinds and
# order) and the file's text (fresh names, how often a name is bound: `Context.source` is always
# the whole file). Two codemods read more, the availability idiom (a variable's uses anywhere)
# and torch.amp (the script's autocast device names, the statements before a call): a file with
# a finding of theirs (WHOLE_MODULE) is planned whole. For the others, the mark plans on the file
# with
#   - each top-level statement that holds no finding and is neither the docstring, an import nor
#     a mention of `current_accelerator`, made `pass` (same index, same kind: not an import);
#   - inside a compound statement whose findings all lie in its inner statements, each inner
#     statement that holds no finding blanked, and a block left empty given one `pass`;
#   - a compound statement with a finding in its header (a decorator, a default, an `if` test, an
#     `elif`), and any statement that shares a line with another, kept whole.
# The lines of elided statements are dropped (`Elided.line` maps a line of the file to its line in
# the elided text; the findings and the scan's import bindings are moved with it, and the outcomes
# handed back to the findings as they were). Every kept node keeps its column and its order, the
# findings' nodes their ancestors, the top-level statements their indices, so each finding gets the
# outcome the whole file gives it
# (tests/fix/test_fix_mark.py compares both on the fixtures, the example and generated cases;
# benchmarks/speed/fix_bench.py and the crash guard, tools/crash_guard.py, compare the mark with `opscan
# fix --diff` on real trees). Whether the rewrite parses is checked on the elided rewrite: the
# changed statements are the same, and what surrounds them parses in both. One thing the elided
# statements could still change is whether libcst reads the file at all: its trees nest once per
# operand of `a and b and ...` (flat in ast) and its visitors recurse once per level, so past about
# 500 levels the whole file is "too deeply nested for the fixer" (fix/file_plan.py). A file whose
# ast nests deeper than DEEP (operands of a boolean chain counted as levels) is therefore planned
# whole, and fails as `opscan fix` fails. `opscan fix` itself always plans the whole file: it
# writes it.
"""

from __future__ import annotations

import ast
import bisect
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

WHOLE_MODULE = frozenset({"availability-idiom", "torch-amp"})   # codemods that read the whole module
DEEP = 200       # ast levels past which the file is planned whole (libcst gives up at about 500)
_BLOCKS = ("body", "orelse", "finalbody")


@dataclass(frozen=True)
class Elided:
    """The elided text and the lines of the file it dropped."""

    text: str
    dropped: tuple[int, ...]      # sorted line numbers of the file

    def line(self, number: int) -> int:
        """Where line `number` of the file is in the elided text (a dropped line: where it was)."""
        return number - bisect.bisect_left(self.dropped, number)

    def keeps(self, number: int) -> bool:
        index = bisect.bisect_left(self.dropped, number)
        return index == len(self.dropped) or self.dropped[index] != number


def elided(text: str, keep: Iterable[tuple[int, int]], tree: ast.Module | None = None) -> Elided | None:
    """`text` (newlines made `\\n`) elided around the `keep` line ranges (the findings'); `tree`: its
    parse, when the caller has it (the scan's). None when nothing would be elided or the text does
    not parse."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if tree is None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    lines = text.split("\n")
    if _deep(tree.body, lines, DEEP):
        return None
    return _Elider(lines, sorted(set(keep))).run(tree)


def _deep(body: list[ast.stmt], lines: list[str], limit: int) -> bool:
    """Whether a statement of `body` nests its expressions deeper than `limit` levels as libcst
    builds them. Every level takes at least two characters (an operator, a bracket, a dot and a
    name), so only a statement whose own lines (a compound statement's header) hold more than
    2 x `limit` characters is walked; the others are known shallow from their length."""
    for statement in body:
        blocks = [getattr(statement, name) for name in _BLOCKS if getattr(statement, name, None)]
        blocks += [h.body for h in getattr(statement, "handlers", ())]
        blocks += [c.body for c in getattr(statement, "cases", ())]
        first, last = _span(statement)
        if blocks:
            last = min(s.lineno for block in blocks for s in block) - 1
        if sum(len(lines[n - 1]) for n in range(first, last + 1)) > 2 * limit and _depth(statement) > limit:
            return True
        if any(_deep(block, lines, limit) for block in blocks):
            return True
    return False


def _depth(statement: ast.stmt) -> int:
    """How deep the expressions of a statement (not of its inner statements) nest, each operand of a
    boolean chain one level more."""
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(value, 1) for name, value in ast.iter_fields(statement)
                                        if name not in (*_BLOCKS, "handlers", "cases") and isinstance(value, ast.AST)]
    stack += [(item, 1) for name, value in ast.iter_fields(statement)
              if name not in (*_BLOCKS, "handlers", "cases") and isinstance(value, list)
              for item in value if isinstance(item, ast.AST)]
    while stack:
        node, depth = stack.pop()
        depth += len(node.values) if isinstance(node, ast.BoolOp) else 1
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in ast.iter_child_nodes(node) if not isinstance(child, ast.stmt))
    return deepest


def _span(statement: ast.stmt) -> tuple[int, int]:
    decorators = getattr(statement, "decorator_list", ())
    first = min([statement.lineno, *(d.lineno for d in decorators)])
    return first, statement.end_lineno or statement.lineno


class _Elider:
    def __init__(self, lines: list[str], keep: list[tuple[int, int]]) -> None:
        self.lines = lines
        self.keep = keep
        self.passes: dict[int, str] = {}    # line -> the `pass` written there (its indentation)
        self.blank: set[int] = set()

    def run(self, tree: ast.Module) -> Elided | None:
        body = tree.body
        for index, statement in enumerate(body):
            first, last = _span(statement)
            if self._holds(first, last):
                self._inside(statement)
            elif not self._kept_top(statement, index) and self._alone(body, index):
                self._elide(first, last, "")
        if not self.blank and not self.passes:
            return None
        lines = list(self.lines)
        for number, prefix in self.passes.items():
            lines[number - 1] = prefix + "pass"
        kept = [line for number, line in enumerate(lines, 1) if number not in self.blank]
        return Elided("\n".join(kept), tuple(sorted(self.blank)))

    def _holds(self, first: int, last: int) -> bool:
        return any(a <= last and b >= first for a, b in self.keep)

    def _kept_top(self, statement: ast.stmt, index: int) -> bool:
        """A top-level statement the codemods read: the docstring, an import, the accelerator."""
        if index == 0 and isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
                and isinstance(statement.value.value, str):
            return True
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            return True
        first, last = _span(statement)
        return any("current_accelerator" in self.lines[n - 1] for n in range(first, last + 1))

    def _alone(self, body: Sequence[ast.stmt], index: int) -> bool:
        """Whether the statement has its lines to itself and starts its first line."""
        first, last = _span(body[index])
        if index > 0 and _span(body[index - 1])[1] >= first:
            return False
        if index + 1 < len(body) and _span(body[index + 1])[0] <= last:
            return False
        line = self.lines[first - 1]
        if line.lstrip().startswith("@"):     # a decorator starts its line
            return True
        return bool(line.strip()) and not line.encode("utf-8")[:body[index].col_offset].strip()

    def _inside(self, statement: ast.stmt) -> None:
        """A statement holding findings: its inner statements elided when every finding is in them."""
        blocks = [getattr(statement, name) for name in _BLOCKS if getattr(statement, name, None)]
        blocks += [h.body for h in getattr(statement, "handlers", ())]
        blocks += [c.body for c in getattr(statement, "cases", ())]
        inner = [_span(s) for block in blocks for s in block]
        first, last = _span(statement)
        mine = [(max(a, first), min(b, last)) for a, b in self.keep if a <= last and b >= first]
        if not blocks or not all(any(s <= a and b <= e for s, e in inner) for a, b in mine):
            return       # a finding in the header (or no blocks): kept whole
        if isinstance(statement, ast.If) and statement.orelse and self._is_elif(statement.orelse):
            return       # `elif` chains are kept whole: an elided `elif` would close the `if`
        for block in blocks:
            self._block(block)

    def _is_elif(self, orelse: list[ast.stmt]) -> bool:
        if len(orelse) != 1 or not isinstance(orelse[0], ast.If):
            return False
        line = self.lines[orelse[0].lineno - 1]
        return line.lstrip().startswith("elif")

    def _block(self, block: list[ast.stmt]) -> None:
        elidable = []
        kept = False
        for index, statement in enumerate(block):
            first, last = _span(statement)
            if self._holds(first, last):
                kept = True
                self._inside(statement)
            elif self._alone(block, index):
                elidable.append(statement)
            else:
                kept = True
        for number, statement in enumerate(elidable):
            first, last = _span(statement)
            line = self.lines[first - 1]
            self._elide(first, last, line[:len(line) - len(line.lstrip())] if not kept and number == 0 else None)

    def _elide(self, first: int, last: int, prefix: str | None) -> None:
        """Blank lines first..last; with `prefix`, write `pass` on the first at that indentation."""
        self.blank.update(range(first, last + 1))
        if prefix is not None:
            self.blank.discard(first)
            self.passes[first] = prefix
