"""Where the nodes of a module are, placed one top-level statement at a time, only where a fix looks.

# NOTE [positions per statement]
# libcst's PositionProvider places every node of a module by generating its code with position
# tracking: on a 5,000-line file that costs more than the parse itself (0.5 s against 0.3 s), and
# on the files of transformers the fixable mark spent most of its time there. A fix looks inside
# the few statements holding its findings. So the top-level statements are placed by their code
# alone (`module.code_for_node`, no tracking: the line each starts on, lines counted as libcst
# counts them), and the nodes of one statement are placed by PositionProvider on a module holding
# that statement only, then moved down to the line it starts on. That is exact: a parsed
# statement owns its whitespace (leading lines, indentation, newlines), so it generates the same
# code alone as in its module, whose defaults (newline, indent) the one-statement module keeps.
# The statements overlapping the findings' lines are placed up front; any other when a codemod
# first asks about one of its nodes (`place_all`: a codemod that reads the whole module).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, PositionProvider

NEWLINE = re.compile(r"\r\n?|\n")   # what libcst's position tracking counts as a line break


class Positions:
    """`node -> CodeRange` for the placed statements' nodes (as PositionProvider gives them), and a
    whitespace-inclusive range for every top-level statement, placed or not."""

    def __init__(self, module: cst.Module, lines: Iterable[tuple[int, int]] = ()) -> None:
        """`lines`: (first, last) line ranges whose statements are placed up front (the findings')."""
        self.module = module
        self._placed: dict[cst.CSTNode, CodeRange] = {}
        self._spans: dict[cst.CSTNode, CodeRange] = {}
        self._starts: list[int] = []      # per top-level statement: the line its code (leading lines too) starts on
        line = 1 + sum(len(NEWLINE.split(module.code_for_node(h))) - 1 for h in module.header)
        for statement in module.body:
            count = len(NEWLINE.split(module.code_for_node(statement))) - 1
            self._starts.append(line)
            self._spans[statement] = CodeRange(CodePosition(line, 0), CodePosition(line + max(count, 1) - 1, 1 << 30))
            line += count
        self._done: set[int] = set()
        wanted = sorted(set(lines))
        for index, statement in enumerate(module.body):
            span = self._spans[statement]
            if any(first <= span.end.line and last >= span.start.line for first, last in wanted):
                self._place(index)

    def _place(self, index: int) -> None:
        if index in self._done:
            return
        self._done.add(index)
        statement = self.module.body[index]
        alone = self.module.with_changes(body=(statement,), header=(), footer=(), has_trailing_newline=True)
        shift = self._starts[index] - 1
        for node, where in cst.MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider).items():
            if node is alone:
                continue
            self._placed[node] = CodeRange(CodePosition(where.start.line + shift, where.start.column),
                                           CodePosition(where.end.line + shift, where.end.column))

    def place_all(self) -> None:
        """Place every statement (a codemod asked about a node of one not placed yet)."""
        for index in range(len(self.module.body)):
            self._place(index)

    @property
    def complete(self) -> bool:
        return len(self._done) == len(self.module.body)

    def get(self, node: cst.CSTNode, default: CodeRange | None = None) -> CodeRange | None:
        placed = self._placed.get(node)
        if placed is not None:
            return placed
        return self._spans.get(node, default)

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        found = self.get(node)
        if found is None and not self.complete:
            self.place_all()
            found = self.get(node)
        if found is None:
            raise KeyError(node)
        return found

    def items(self) -> Iterator[tuple[cst.CSTNode, CodeRange]]:
        """The placed nodes and their positions."""
        return iter(list(self._placed.items()))
