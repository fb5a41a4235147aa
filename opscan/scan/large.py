"""A very large Python file read block by block: the statements the walk needs, never its whole tree at once.

# NOTE [very large files]
# CPython's tree of a 700,002-line generated file (assignments, then one `.cuda()` line) takes
# 1.6 GB, and parsing it 1.9 GB at its peak: the scan of one generated file would need more memory
# than a scan of transformers. The walk (visitor.py) visits only the statements whose lines hold a
# token (NOTE [pre-filter tokens]); everything else of the tree is read only for the module's
# bindings. So a file of more than LARGE_LINES lines is cut, at top-level statement boundaries
# (found by the prose lexer, scan/prose.py: outside strings, comments and brackets, no backslash
# continuation, not an `else:`/`except:`/... of the statement before, never after a decorator),
# into blocks of about BLOCK_LINES lines; each block is parsed alone and only its
# top-level statements that the walk can need are kept: those whose lines hold a token, an import,
# a name an import binds to a matched module or the project's extension and wrapper names (as the
# walk's own hot lines), the imports, the aliases (`T = torch.cuda`), and the statements that use a
# name a kept statement defines (`DEVICE = "cuda"` ... `model.to(DEVICE)`; those blocks are parsed
# once more). The kept statements, with their own line numbers, make the module the walk visits.
# Memory is one block's tree plus the kept statements; a syntax error is reported at its line as in
# a whole parse. A file this large is generated: facts about library use (plan sizing) count the
# kept statements only. tests/scan/test_scan_large.py compares the findings with the whole parse.
"""

from __future__ import annotations

import ast
import bisect
import re
import warnings
from typing import Any

from opscan.index.resolver import Imports
from opscan.scan.matchers import IMPORT_STATEMENT
from opscan.scan.prose import Lexer

LARGE_LINES = 100_000      # a file with more lines is read block by block
BLOCK_LINES = 50_000       # about this many lines per block

_IMPORT_LINE = re.compile(r"^[ \t]*(?:import|from)[ \t]", re.M)
_LINE_START = re.compile(r"^(?=[^\s#])", re.M)                  # a line starting at column 0 with code
_CONTINUES = re.compile(r"(?:else|elif|except|finally)\b")     # the rest of the statement before


def is_large(text: str) -> bool:
    return text.count("\n") > LARGE_LINES


def lean_tree(text: str, relpath: str, compiled: Any, extra: frozenset[str]) -> ast.Module:
    """The module of the statements the walk needs (NOTE [very large files]). Raises SyntaxError
    (at the file's line) as `ast.parse` would."""
    starts = _line_offsets(text)
    blocks = _blocks(text, starts)
    hot = _hot_lines(text, starts, compiled, extra)
    kept: dict[tuple[int, int], ast.stmt] = {}      # (first line, column) -> statement
    spans: list[tuple[int, int]] = []                 # the kept statements' lines
    for first, last in blocks:
        shift = first - 1
        for statement in _parse_block(text, starts, first, last, relpath):
            span = _span(statement, shift)
            if _keep(statement, span, hot):
                kept[(span[0], statement.col_offset)] = _moved(statement, shift)
                spans.append(span)
    # statements that use a name a kept statement defines (a constant, a kernel, a wrapper)
    words = {name for statement in kept.values() for name in _defined(statement)}
    used = _word_lines(text, starts, words) if words else []
    spans.sort()
    firsts = [b[0] for b in blocks]
    again = {bisect.bisect_right(firsts, line) - 1 for line in used if not _within(line, spans)}
    for number in sorted(again):
        first, last = blocks[number]
        for statement in _parse_block(text, starts, first, last, relpath):
            span = _span(statement, first - 1)
            if (span[0], statement.col_offset) not in kept and _touches(*span, used):
                kept[(span[0], statement.col_offset)] = _moved(statement, first - 1)
    return ast.Module(body=[kept[key] for key in sorted(kept)], type_ignores=[])


def _line_offsets(text: str) -> list[int]:
    """Offset of the start of each line (1-based line n at index n - 1)."""
    offsets = [0]
    index = text.find("\n")
    while index != -1:
        offsets.append(index + 1)
        index = text.find("\n", index + 1)
    return offsets


def _blocks(text: str, starts: list[int]) -> list[tuple[int, int]]:
    """(first, last) lines of blocks of about BLOCK_LINES lines, cut before top-level statements."""
    lexer = Lexer(text)
    blocks = []
    first = 1
    total = len(starts)
    target = first + BLOCK_LINES
    while target < total:
        cut = _next_cut(text, starts, lexer, target)
        if cut is None:
            break
        blocks.append((first, cut - 1))
        first = cut
        target = cut + BLOCK_LINES
    blocks.append((first, total))
    return blocks


def _next_cut(text: str, starts: list[int], lexer: Lexer, line: int) -> int | None:
    """The first line from `line` on where a top-level statement starts (None: none)."""
    position = starts[line - 1]
    while True:
        match = _LINE_START.search(text, position)
        if match is None:
            return None
        offset = match.start()
        number = bisect.bisect_right(starts, offset)
        position = offset + 1
        if lexer.inside(offset) or lexer.depth_at(offset) or _CONTINUES.match(text, offset):
            continue
        before = text[:offset - 1].rstrip(" \t\f") if offset else ""
        if before.endswith("\\") and not lexer.in_prose(len(before) - 1):
            continue
        if _decorated(text, starts, lexer, number):    # a decorator is no statement of its own
            continue
        return number


def _decorated(text: str, starts: list[int], lexer: Lexer, number: int) -> bool:
    """Whether the top-level code line before line `number` is a decorator (or inside one)."""
    for previous in range(number - 1, 0, -1):
        offset = starts[previous - 1]
        head = text[offset:offset + 1]
        if head in ("", "\n", " ", "\t", "\f", "#") or lexer.inside(offset) or lexer.depth_at(offset):
            continue
        return head == "@"
    return False


def _parse_block(text: str, starts: list[int], first: int, last: int, relpath: str) -> list[ast.stmt]:
    end = starts[last] if last < len(starts) else len(text)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text[starts[first - 1]:end], relpath)
    except SyntaxError as exc:
        if exc.lineno:
            exc.lineno += first - 1
            if exc.end_lineno:
                exc.end_lineno += first - 1
        raise
    return tree.body


def _moved(statement: ast.stmt, shift: int) -> ast.stmt:
    """The statement with its lines those of the file (a block's lines start at 1)."""
    return ast.increment_lineno(statement, shift) if shift else statement


def _span(statement: ast.stmt, shift: int = 0) -> tuple[int, int]:
    """(first, last) lines of the statement in the file, decorators included."""
    first = statement.lineno
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and statement.decorator_list:
        first = min(first, *(d.lineno for d in statement.decorator_list))
    return first + shift, (statement.end_lineno or statement.lineno) + shift


def _within(line: int, spans: list[tuple[int, int]]) -> bool:
    """Whether `line` lies in one of the sorted, disjoint (first, last) `spans`."""
    index = bisect.bisect_right(spans, (line, 1 << 62)) - 1
    return index >= 0 and spans[index][0] <= line <= spans[index][1]


def _touches(first: int, last: int, lines: list[int]) -> bool:
    index = bisect.bisect_left(lines, first)
    return index < len(lines) and lines[index] <= last


def _keep(statement: ast.stmt, span: tuple[int, int], hot: list[int]) -> bool:
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(statement, (ast.Assign, ast.AnnAssign)) and isinstance(statement.value, (ast.Name, ast.Attribute)):
        return True       # an alias (`T = torch.cuda`): the walk resolves names through it
    return _touches(*span, hot)


def _defined(statement: ast.stmt) -> set[str]:
    """The module-level names a statement binds (defs, classes, assignment targets)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    targets = statement.targets if isinstance(statement, ast.Assign) else \
        [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _hot_lines(text: str, starts: list[int], compiled: Any, extra: frozenset[str]) -> list[int]:
    """The lines the walk would visit: a token within its bounds, an import, a name an import binds
    to a matched module, the project's extension and wrapper names (as visitor.py `_hot_lines`)."""
    offsets = [m.start() for m in _IMPORT_LINE.finditer(text)]
    regex = compiled.bounded_regex()
    if regex is not None:
        offsets += [m.start() for m in regex.finditer(text)]
    lines = {bisect.bisect_right(starts, o) for o in offsets}
    tokens = compiled.token_regex()
    words = set(extra)
    resolver = Imports("")
    for match in _IMPORT_LINE.finditer(text):
        statement = IMPORT_STATEMENT.match(text, match.end() - len(match[0].lstrip(" \t")))
        if statement is None:
            continue
        try:
            body = ast.parse(statement[0]).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                words |= {local for local, full in resolver.add(node) if tokens is not None and tokens.search(full)}
    lines.update(_word_lines(text, starts, words))
    return sorted(lines)


def _word_lines(text: str, starts: list[int], words: set[str]) -> list[int]:
    """The lines where one of `words` stands as a whole identifier."""
    if not words:
        return []
    pattern = re.compile(r"(?<![\w.])(?:" + "|".join(re.escape(w) for w in sorted(words)) + r")(?!\w)")
    return sorted({bisect.bisect_right(starts, m.start()) for m in pattern.finditer(text)})
