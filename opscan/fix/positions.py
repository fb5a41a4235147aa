"""Where the nodes of a module are, placed one statement at a time, only where a fix looks.

# NOTE [positions per statement]
# libcst's PositionProvider places every node of a module by generating its code with position
# tracking: on a 5,000-line file that costs more than the parse itself (0.5 s against 0.3 s), and
# a fix looks inside the few statements holding its findings. So statements are placed by their
# code alone (`module.code_for_node`, no tracking: the line each starts on, lines counted as
# libcst counts them), and the nodes of one statement are placed by PositionProvider on a module
# holding that statement only, then moved down to the line it starts on. That is exact: a parsed
# statement owns its whitespace (leading lines, indentation, newlines), so it generates the same
# code alone as in its module, whose defaults (newline, indent) the one-statement module keeps.
# A statement inside a class, a function or another compound statement with one block (`with`,
# `for`, `while`, `if` without `else`) is placed the same way inside `if True:` with the block's
# whole indentation, so its columns are those of the file too; the lines of the statements of a
# block are counted from the compound statement's own (its header is its lines less its block's).
# The innermost such statement holding a finding is placed up front; any other when a codemod
# first asks about one of its nodes (`place_all`: a codemod that reads the whole module).
# tests/fix/test_fix_positions.py compares the placed positions with PositionProvider's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, PositionProvider

NEWLINE = re.compile(r"\r\n?|\n")   # what libcst's position tracking counts as a line break
_END = 1 << 30


def _span(start: int, count: int) -> CodeRange:
    return CodeRange(CodePosition(start, 0), CodePosition(start + max(count, 1) - 1, _END))


class Positions:
    """`node -> CodeRange` for the placed statements' nodes (as PositionProvider gives them), and a
    whitespace-inclusive range for every statement whose lines are known, placed or not."""

    def __init__(self, module: cst.Module, lines: Iterable[tuple[int, int]] = ()) -> None:
        """`lines`: (first, last) line ranges whose innermost statements are placed up front (the findings')."""
        self.module = module
        self._placed: dict[cst.CSTNode, CodeRange] = {}
        self._spans: dict[cst.CSTNode, CodeRange] = {}
        self._where: dict[cst.BaseStatement, tuple[int, int, str]] = {}   # statement -> (first line, lines, indent)
        self._blocks: dict[cst.BaseStatement, Sequence[cst.BaseStatement] | None] = {}
        self._done: set[int] = set()      # ids of the placed statements
        self.complete = False
        line = 1 + sum(self._count(h) for h in module.header)
        for statement in module.body:
            count = self._count(statement)
            self._where[statement] = (line, count, "")
            self._spans[statement] = _span(line, count)
            line += count
        for first, last in sorted(set(lines)):
            self._locate(first, last)

    def _count(self, node: cst.CSTNode) -> int:
        return len(NEWLINE.split(self.module.code_for_node(node))) - 1

    def _locate(self, first: int, last: int) -> None:
        """Place the innermost statement holding lines first..last (every top-level one they overlap)."""
        found: list[cst.BaseStatement] = [s for s in self.module.body if self._overlaps(s, first, last)]
        if len(found) != 1:
            for each in found:
                self._place(each)
            return
        statement = found[0]
        while True:
            inner = [s for s in self._inner(statement) if self._holds(s, first, last)]
            if len(inner) != 1:
                break
            statement = inner[0]
        self._place(statement)

    def _overlaps(self, statement: cst.BaseStatement, first: int, last: int) -> bool:
        start, count, _ = self._where[statement]
        return first <= start + count - 1 and last >= start

    def _holds(self, statement: cst.BaseStatement, first: int, last: int) -> bool:
        start, count, _ = self._where[statement]
        return start <= first and last <= start + count - 1

    def _inner(self, statement: cst.BaseStatement) -> Sequence[cst.BaseStatement]:
        """The statements of a compound statement's one block, their lines known; () for any other."""
        if statement in self._blocks:
            return self._blocks[statement] or ()
        self._blocks[statement] = None
        block = getattr(statement, "body", None)
        if not isinstance(block, cst.IndentedBlock) or any(getattr(statement, name, None) for name in
                                                           ("orelse", "handlers", "finalbody")):
            return ()
        start, count, prefix = self._where[statement]
        counts = [self._count(s) for s in block.body]
        header = count - sum(counts) - sum(self._count(e) for e in block.footer)
        if header < 1:
            return ()
        line = start + header
        indent = prefix + (block.indent if block.indent is not None else self.module.default_indent)
        for inner, lines in zip(block.body, counts):
            self._where[inner] = (line, lines, indent)
            self._spans[inner] = _span(line, lines)
            line += lines
        self._spans[block] = self._spans[statement]
        self._blocks[statement] = block.body
        return block.body

    def _place(self, statement: cst.BaseStatement) -> None:
        if id(statement) in self._done:
            return
        self._done.add(id(statement))
        start, _, prefix = self._where[statement]
        shell: cst.BaseStatement = statement
        shift = start - 1
        wrapper: tuple[cst.CSTNode, ...] = ()
        if prefix:    # inside `if True:` with the block's indentation: the statement's code starts on line 2
            block = cst.IndentedBlock(body=[statement], indent=prefix)
            test = cst.Name("True")
            shell = cst.If(test=test, body=block)
            shift = start - 2
            wrapper = (shell, block, test)
        alone = self.module.with_changes(body=(shell,), header=(), footer=(), has_trailing_newline=True)
        for node, where in cst.MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider).items():
            if node is alone or any(node is w for w in wrapper):
                continue
            self._placed[node] = CodeRange(CodePosition(where.start.line + shift, where.start.column),
                                           CodePosition(where.end.line + shift, where.end.column))

    def place_all(self) -> None:
        """Place every statement (a codemod asked about a node of one not placed yet)."""
        for statement in self.module.body:
            self._place(statement)
        self.complete = True

    def get(self, node: cst.CSTNode, default: CodeRange | None = None) -> CodeRange | None:
        placed = self._placed.get(node)
        if placed is not None:
            return placed
        return self._spans.get(node, default)

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self._placed.get(node)
        if found is None and isinstance(node, cst.BaseStatement) and node in self._where:
            self._place(node)
            found = self._placed.get(node)
        if found is None and not self.complete:
            self.place_all()
            found = self._placed.get(node)
        if found is None:
            raise KeyError(node)
        return found

    def items(self) -> Iterator[tuple[cst.CSTNode, CodeRange]]:
        """The placed nodes and their positions."""
        return iter(list(self._placed.items()))
