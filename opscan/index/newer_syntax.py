"""Python newer than the running interpreter's grammar (PEP 695, 701, 758), read as `ast` trees, positions kept."""

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
# Every other character keeps its line, column and UTF-8 byte offset (a blanked non-ASCII character
# becomes as many spaces as it has bytes: `_Rows`), so findings are reported where they are and the
# scan's snippets (read from the original text) are right. What is blanked runs nothing when the
# module is imported (type parameters and alias values are evaluated lazily, as annotations), so
# no finding can be lost there: the scan never reports annotations. Line breaks inside a blanked
# range are kept, each preceded by a `\` continuation, so line numbers do not move.
# This route, rather than converting libcst's tree to an `ast` tree, keeps one tree type for the
# whole scan (its visitor, families and facts read `ast` nodes only) and costs nothing for the
# files `ast` accepts. It is tried only when the text spells one of the forms (`_CANDIDATE`) and
# the file is at most MAX_BYTES (libcst's parse is ~25x slower than `ast`'s and keeps the whole
# tree); anything else stays the original SyntaxError: a real syntax error is still OPS000.
# PEP 701 f-strings (3.12: `f"{d["k"]}"`, a line break or a comment inside a replacement field,
# a backslash in its expression) take the same route (NOTE [newer f-strings]). PEP 758 (3.14:
# `except A, B:` without parentheses) too (NOTE [except without parentheses]).

# NOTE [except without parentheses]
# Python 3.14 reads `except A, B:` (and `except* A, B:`) as `except (A, B):`. The rewrite gives the
# tuple its parentheses: `(` over the blank that must separate `except` from its first name, and
# `)` over a blank between the last name and the colon when there is one, else inserted there.
# An inserted `)` moves what follows it on that line one byte to the right in the rewritten text;
# the `ast` tree is put back in place after the parse (every position on that line past the
# insertion one byte to the left), so a finding in the handler's one-line body (`except A, B:
# x.cuda()`) is still reported at its column. Nothing else on the line changes.

# NOTE [newer f-strings]
# An f-string that `ast` of this interpreter rejects (its own text, tried alone) is rewritten in
# place, character for character, into a tuple of its replacement fields' expressions: the prefix
# and opening quote become `(` and spaces, the literal text, braces, conversions and format-spec
# text become spaces, the first character after each expression becomes `,`, the closing quote
# becomes `)`. `f"{d["k"]:{w}}"` becomes `(  d["k"],  w, )`: every expression keeps its line and
# column, so a finding inside one (`f"{x.cuda()}"`) is reported where it is; line breaks inside the
# string stay, inside the parentheses. A string concatenated with it (`"a" f"..."`) is rewritten
# with it, as one tuple. What is lost is what the literal text says: a rule that reads string
# constants (a device name "cuda:" in the text part) does not see it in such an f-string; an
# f-string this interpreter reads is left as it is, so this holds only for the newer forms.

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst
    from libcst.metadata import CodeRange

    Positions = Mapping[cst.CSTNode, CodeRange]

MAX_BYTES = 2_000_000
_CANDIDATE = re.compile(r"^[ \t]*(?:(?:async[ \t]+)?(?:def|class)[ \t]+\w+[ \t]*\[|type[ \t]+\w+[ \t]*[\[=])"
                        r"|;[ \t]*type[ \t]+\w+", re.M)
_FSTRING = re.compile(r"(?<![\w.])(?:[fF][rR]?|[rR][fF])['\"]")
_EXCEPT = re.compile(r"^[ \t]*except\*?[ \t]+[^(\s][^:\n]*,", re.M)   # PEP 758 (a candidate)


def parse(text: str, filename: str) -> ast.Module | None:
    """The `ast` tree of `text` when it is valid Python of a newer grammar (NOTE [newer syntax]),
    with every node at its place in `text`; None when it is not (the caller's SyntaxError stands)."""
    if len(text) > MAX_BYTES or not (_CANDIDATE.search(text) or _FSTRING.search(text) or _EXCEPT.search(text)):
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
    lines = text.split("\n")
    # a statement's range holds its `;` (`type X = int; y = 1`): the `;` stays, after `pass`
    ranges = [(first, start, last, _before_semicolon(lines[last - 1], start if first == last else 0, end), keep)
              if keep else (first, start, last, end, keep) for first, start, last, end, keep in ranges]
    edits = _fstring_edits(positions, lines) if _FSTRING.search(text) else {}
    inserts: list[tuple[int, int]] = []
    if edits is not None and _EXCEPT.search(text) and not _except_edits(positions, lines, edits, inserts):
        return None
    if edits is None or not (ranges or edits):
        return None
    rows = _Rows(lines)
    for (row, column), char in edits.items():
        rows.put(row, column, char)
    for first, start, last, end, keep in ranges:   # after the f-strings: a blanked alias may hold one
        if not _blank(rows, first - 1, start, last - 1, end, keep):
            return None
    rewritten = rows.text()
    shifts: dict[int, list[int]] = {}
    for row, column in sorted(inserts, reverse=True):   # right to left: earlier columns stay valid
        line = rewritten[row]
        rewritten[row] = line[:column] + ")" + line[column:]
        shifts.setdefault(row + 1, []).append(len(line[:column].encode("utf-8", "surrogatepass")))
    try:
        tree = ast.parse("\n".join(rewritten), filename=filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if shifts:
        _unshift(tree, shifts)
    return tree


def _except_edits(positions: Positions, lines: list[str], edits: Edits, inserts: list[tuple[int, int]]) -> bool:
    """Parentheses for every `except A, B:` tuple (NOTE [except without parentheses]): characters to
    change in `edits`, `)` to insert in `inserts` (0-based row, character column); False when a
    clause has no blank before its first name."""
    import libcst as cst

    for node in positions:
        if not isinstance(node, (cst.ExceptHandler, cst.ExceptStarHandler)):
            continue
        kind = node.type
        if not isinstance(kind, cst.Tuple) or kind.lpar:
            continue
        where = positions[kind]
        row, column = where.start.line - 1, where.start.column
        if column == 0 or lines[row][column - 1] not in " \t":
            return False
        edits[(row, column - 1)] = "("
        row, column = where.end.line - 1, where.end.column
        if column < len(lines[row]) and lines[row][column] in " \t":
            edits[(row, column)] = ")"
        else:
            inserts.append((row, column))
    return True


def _unshift(tree: ast.AST, shifts: dict[int, list[int]]) -> None:
    """Put back every position that an inserted `)` moved: on line L, a byte offset past an insertion
    point is one less for each such point (NOTE [except without parentheses])."""
    for node in ast.walk(tree):
        if not isinstance(node, _POSITIONED):
            continue
        if node.lineno in shifts:
            node.col_offset -= len([at for at in shifts[node.lineno] if node.col_offset > at])
        end, column = node.end_lineno, node.end_col_offset
        if end is not None and end in shifts and column is not None:
            node.end_col_offset = column - len([at for at in shifts[end] if column > at])


_POSITIONED = (ast.expr, ast.stmt, ast.excepthandler, ast.arg, ast.keyword, ast.alias, ast.pattern)


def _before_semicolon(line: str, start: int, end: int) -> int:
    """`end` moved back over a statement's trailing `;` and the blanks around it."""
    while end > start and line[end - 1] in " \t;":
        end -= 1
    return end


class _Rows:
    """The lines being rewritten, character by character. `ast` gives columns as UTF-8 byte offsets
    (the scan turns them into characters with the original line: scan/sources.py `char_column`),
    so each character is replaced by one of the same byte length: a blanked `é` is two spaces, and
    every other character keeps its byte offset as well as its line."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.rows: dict[int, list[str]] = {}

    def put(self, row: int, column: int, char: str) -> None:
        """Write the ASCII `char` over the original character at (row, column), padded with spaces."""
        chars = self.rows.setdefault(row, list(self.lines[row]))
        chars[column] = char + " " * (len(self.lines[row][column].encode("utf-8", "surrogatepass")) - 1)

    def text(self) -> list[str]:
        return ["".join(self.rows[n]) if n in self.rows else line for n, line in enumerate(self.lines)]


def _blank(rows: _Rows, first: int, start: int, last: int, end: int, keep: str) -> bool:
    """Blank the range (0-based lines, character columns, end exclusive) in place, writing `keep` at
    its start and a `\\` before each line break inside it; False when a line break has no room."""
    for row in range(first, last + 1):
        lo = start if row == first else 0
        hi = end if row == last else len(rows.lines[row])
        if row == first and lo + len(keep) > hi:
            return False
        if row != last and (hi - lo == 0 or (row == first and keep and hi - lo <= len(keep))):
            return False   # no room for the line break's `\\` after `keep`
        for column in range(lo, hi):
            rows.put(row, column, " ")
        if row == first:
            for n, char in enumerate(keep):
                rows.put(row, lo + n, char)
        if row != last:
            rows.put(row, hi - 1, "\\")
    return True


Edits = dict[tuple[int, int], str]


def _fstring_edits(positions: Positions, lines: list[str]) -> Edits | None:
    """The characters to change (0-based row, column -> character) so that every f-string this
    interpreter rejects reads as a tuple of its expressions (NOTE [newer f-strings]); None when one
    cannot be rewritten."""
    import libcst as cst

    def text_of(where: CodeRange) -> str:
        first, last = where.start.line - 1, where.end.line - 1
        if first == last:
            return lines[first][where.start.column:where.end.column]
        return "\n".join([lines[first][where.start.column:], *lines[first + 1:last], lines[last][:where.end.column]])

    def rejected(node: cst.CSTNode) -> bool:
        try:
            ast.parse("(" + text_of(positions[node]) + ")", mode="eval")
        except SyntaxError:
            return True
        except (ValueError, RecursionError, MemoryError):
            return True
        return False

    units: list[cst.CSTNode] = []
    inside: set[int] = set()        # parts of a concatenation: rewritten with the outermost one
    concatenations = [node for node in positions if isinstance(node, cst.ConcatenatedString)]
    for node in concatenations:
        stack = [node.left, node.right]
        while stack:
            part = stack.pop()
            inside.add(id(part))
            if isinstance(part, cst.ConcatenatedString):
                stack += [part.left, part.right]
    units += [node for node in concatenations if id(node) not in inside and rejected(node)]
    units += [node for node in positions
              if isinstance(node, cst.FormattedString) and id(node) not in inside and rejected(node)]
    # outer units first: an f-string inside another's expression is then rewritten over it
    units.sort(key=lambda n: (positions[n].start.line, positions[n].start.column,
                              -positions[n].end.line, -positions[n].end.column))
    edits: Edits = {}
    for unit in units:
        if not _rewrite(unit, positions, lines, edits):
            return None
    return edits


def _rewrite(unit: cst.CSTNode, positions: Positions, lines: list[str], edits: Edits) -> bool:
    import libcst as cst

    def cells(where: CodeRange) -> Iterator[tuple[int, int]]:
        """(row, column) of each character of a range, in order (line breaks excluded)."""
        for row in range(where.start.line - 1, where.end.line):
            lo = where.start.column if row == where.start.line - 1 else 0
            hi = where.end.column if row == where.end.line - 1 else len(lines[row])
            for column in range(lo, hi):
                yield row, column

    strings: list[cst.CSTNode] = [unit]
    expressions: list[cst.BaseExpression] = []
    while strings:
        node = strings.pop()
        if isinstance(node, cst.ConcatenatedString):
            strings += [node.left, node.right]
        elif isinstance(node, cst.FormattedString):
            fields = [p for p in node.parts if isinstance(p, cst.FormattedStringExpression)]
            while fields:
                field = fields.pop()
                expressions.append(field.expression)
                fields += [p for p in field.format_spec or () if isinstance(p, cst.FormattedStringExpression)]
    kept: set[tuple[int, int]] = set()
    for expression in expressions:
        kept.update(cells(positions[expression]))
    everything = list(cells(positions[unit]))
    if len(everything) < 2:
        return False
    for cell in everything:
        if cell not in kept:
            edits[cell] = " "
    order = {cell: n for n, cell in enumerate(everything)}
    for expression in expressions:
        where = positions[expression]
        after = order.get((where.end.line - 1, where.end.column - 1), -1) + 1
        while after < len(everything) - 1 and everything[after] in kept:
            after += 1
        if after >= len(everything) - 1:
            return False
        edits[everything[after]] = ","
    edits[everything[0]] = "("
    edits[everything[-1]] = ")"
    return True
