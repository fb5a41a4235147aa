"""Python newer than the running interpreter's grammar (PEP 695), read as `ast` trees with the same positions."""

# NOTE [newer syntax]
# A project written for Python 3.12+ uses syntax the interpreter opscan runs on may not know:
# PEP 695 type parameters (`def f[T](x: T)`, `class C[T]`) and type aliases (`type X = ...`;
# PEP 696 defaults `[T = int]` too). `ast.parse` on 3.11 rejects them, and before this every such
# file was an OPS000 "syntax error" that blocked the gate. The scan keeps `ast` as its parser (the
# project index parses each file once: opscan/index); a file `ast` rejects is parsed again with
# libcst's native parser, which reads these forms on any interpreter, before it is called a syntax
# error. Its `ast` tree is then made from the same text with those constructs blanked in place:
#   - a type-parameter list `[T: int, *Ts]` becomes spaces (`def f   (x: T)` is valid 3.11);
#   - a type alias statement becomes `pass` followed by spaces.
# Every other character keeps its line and column, so findings are reported where they are and the
# scan's snippets (read from the original text) are right. What is blanked runs nothing when the
# module is imported (type parameters and alias values are evaluated lazily, as annotations), so
# no finding can be lost there: the scan never reports annotations. Line breaks inside a blanked
# range are kept, each preceded by a `\` continuation, so line numbers do not move.
# This route, rather than converting libcst's tree to an `ast` tree, keeps one tree type for the
# whole scan (its visitor, families and facts read `ast` nodes only) and costs nothing for the
# files `ast` accepts. It is tried only when the text spells one of the forms (`_CANDIDATE`) and
# the file is at most MAX_BYTES (libcst's parse is ~25x slower than `ast`'s and keeps the whole
# tree); anything else stays the original SyntaxError: a real syntax error is still OPS000.
# PEP 701 f-strings (`f"{d["k"]}"`) and PEP 758 `except A, B:` are not rewritten (they would move
# columns): such a file stays OPS000 on an interpreter older than its syntax.

from __future__ import annotations

import ast
import re

MAX_BYTES = 2_000_000
_CANDIDATE = re.compile(r"^[ \t]*(?:(?:async[ \t]+)?(?:def|class)[ \t]+\w+[ \t]*\[|type[ \t]+\w+[ \t]*[\[=])"
                        r"|;[ \t]*type[ \t]+\w+", re.M)


def parse(text: str, filename: str) -> ast.Module | None:
    """The `ast` tree of `text` when it is valid Python of a newer grammar (NOTE [newer syntax]),
    with every node at its place in `text`; None when it is not (the caller's SyntaxError stands)."""
    if len(text) > MAX_BYTES or not _CANDIDATE.search(text):
        return None
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    try:
        wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)
        positions = wrapper.resolve(PositionProvider)
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
        return None
    ranges = []
    for node, where in positions.items():
        if isinstance(node, cst.TypeParameters):
            ranges.append((where.start.line, where.start.column, where.end.line, where.end.column, ""))
        elif isinstance(node, cst.TypeAlias):
            ranges.append((where.start.line, where.start.column, where.end.line, where.end.column, "pass"))
    if not ranges:
        return None
    lines = text.split("\n")
    for first, start, last, end, keep in ranges:
        if not _blank(lines, first - 1, start, last - 1, end, keep):
            return None
    try:
        return ast.parse("\n".join(lines), filename=filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _blank(lines: list[str], first: int, start: int, last: int, end: int, keep: str) -> bool:
    """Blank the range (0-based lines, character columns, end exclusive) in place, writing `keep` at
    its start and a `\\` before each line break inside it; False when a line break has no room."""
    for row in range(first, last + 1):
        line = lines[row]
        lo = start if row == first else 0
        hi = end if row == last else len(line)
        blanked = " " * (hi - lo)
        if row == first and keep:
            blanked = keep + blanked[len(keep):]
        if row != last:
            if hi - lo == 0 or (row == first and keep and hi - lo <= len(keep)):
                return False
            blanked = blanked[:-1] + "\\"
        lines[row] = line[:lo] + blanked + line[hi:]
    return True
