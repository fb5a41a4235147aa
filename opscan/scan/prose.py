"""A Python file's prose, which no rule reads: its comments and string statements (docstrings).

# NOTE [prose in the pre-check]
# The file pre-check (NOTE [pre-check] in file_scan.py) looks for the rules' tokens in the text. On
# transformers, 351 of the 494 files it let through had no finding: the token was in a docstring
# ("under torch.compile", `>>> device = "cuda" if ...`) or a comment, and parsing those 320k lines
# was the larger part of a cold scan. A rule never reads a comment, nor a string that is a
# statement of its own (a docstring, or any bare string: it is evaluated and dropped, in no
# device, backend, environment or command position). So a file the pre-check lets through is
# parsed only if a token (or an import statement with an import token) is still there once those
# are set aside: `relevant` reads the file's strings and comments in order (one regex: every
# prefix, triple quotes, escapes, line continuations inside strings; brackets counted in the code
# between them) only as far as the first token found in code.
# A string is a statement when it starts a logical line outside brackets (only whitespace before
# it on its line, that line not continued from the previous one by a backslash) and nothing but
# whitespace or a comment follows it on its line. Everything else stays code (a string followed by
# `.format(...)`, `x = 1; 's'`, an unterminated quote, a 3.12 f-string whose quotes it reads
# otherwise), so a mistake can only make a file parsed, never skip one with a finding.
# tests/scan/test_scan_prose.py compares `prose_spans` with Python's tokenizer (generated programs,
# and all 12,901 files of a test environment's site-packages: identical), and the findings with and
# without the pre-check.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

from opscan.scan.matchers import IMPORT_STATEMENT

_LEXEMES = re.compile(r"""
    (?P<comment>\#[^\n]*)
  | (?:(?<![A-Za-z0-9_])[rRbBuUfF]{1,2})?
    (?:\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
      |'''(?:[^'\\]|\\.|'(?!''))*'''
      |"(?:[^"\\\n]|\\.)*"
      |'(?:[^'\\\n]|\\.)*')
""", re.VERBOSE | re.DOTALL)
_REST_OF_LINE = re.compile(r"[ \t\f]*(?:\#[^\n]*)?(?:\n|\Z)")


class Lexer:
    """The strings and comments of a text, read in order as far as asked, with which are prose."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._matches = _LEXEMES.finditer(text)
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.prose: list[bool] = []
        self.depths: list[int] = []    # brackets open in the code after each lexeme
        self.depth = 0                 # brackets open in the code read so far
        self.read = 0                  # where the last lexeme read ends
        self.done = False
        self._counted = (-2, 0, 0)     # depth_at's last answer: (lexeme index, offset, depth)

    def _next(self) -> None:
        match = next(self._matches, None)
        if match is None:
            self.done = True
            return
        start, end = match.span()
        text = self.text
        gap = text[self.read:start]
        if gap:
            self.depth = max(0, self.depth + gap.count("(") + gap.count("[") + gap.count("{")
                             - gap.count(")") - gap.count("]") - gap.count("}"))
        if match.lastgroup == "comment":
            prose = True
        else:
            line = text.rfind("\n", 0, start) + 1
            prose = self.depth == 0 and not text[line:start].strip(" \t\f") and self._line_starts(line) \
                and _REST_OF_LINE.match(text, end) is not None
        self.starts.append(start)
        self.ends.append(end)
        self.prose.append(prose)
        self.depths.append(self.depth)
        self.read = end

    def _line_starts(self, line: int) -> bool:
        """Whether the physical line at offset `line` starts a logical line (no backslash before it)."""
        if line == 0:
            return True
        before = self.text[:line - 1].rstrip(" \t\f")
        if not before.endswith("\\"):
            return True
        index = bisect.bisect_right(self.starts, len(before) - 1) - 1   # a backslash ending a comment
        return index >= 0 and self.ends[index] >= len(before) and self.prose[index] and \
            self.text[self.starts[index]] == "#"

    def _at(self, offset: int) -> int:
        """The index of the last lexeme starting at or before `offset` (-1: none), read so far."""
        while not self.done and self.read <= offset:
            self._next()
        return bisect.bisect_right(self.starts, offset) - 1

    def in_prose(self, offset: int) -> bool:
        """Whether `offset` lies in a comment or a string statement."""
        index = self._at(offset)
        return index >= 0 and offset < self.ends[index] and self.prose[index]

    def inside(self, offset: int) -> bool:
        """Whether `offset` lies in a string or a comment."""
        index = self._at(offset)
        return index >= 0 and offset < self.ends[index]

    def depth_at(self, offset: int) -> int:
        """The brackets open at `offset` (which lies in code)."""
        index = self._at(offset)
        depth, since = (self.depths[index], self.ends[index]) if index >= 0 else (0, 0)
        if self._counted[0] == index and self._counted[1] <= offset:    # counted from there before
            depth, since = self._counted[2], self._counted[1]
        gap = self.text[since:offset]
        depth += gap.count("(") + gap.count("[") + gap.count("{") - gap.count(")") - gap.count("]") - gap.count("}")
        self._counted = (index, offset, depth)
        return max(0, depth)


def relevant(compiled: Any, text: str, extra: frozenset[str] = frozenset()) -> bool:
    """`compiled.relevant(text, extra)` (matchers.py Compiled) with the prose of `text` set aside
    (NOTE [prose in the pre-check]): a token in code, or an import token in an import statement in
    code. `text`: a Python file's decoded text, newlines `\\n`."""
    if compiled.always or not (compiled.bounded or compiled.import_tokens or extra):   # as Compiled.relevant
        return True
    lexer = Lexer(text)
    regex = compiled.bounded_regex(extra)
    if regex is not None:
        for match in regex.finditer(text):
            if not lexer.in_prose(match.start()):
                return True
    imports = compiled.import_regex()
    if imports is None:
        return False
    end = 0
    for start in sorted(_keyword_offsets(text)):
        if start < end:
            continue
        statement = IMPORT_STATEMENT.match(text, start)
        if statement is None:
            continue
        end = statement.end()
        if imports.search(statement[0]) is not None and not lexer.in_prose(start):
            return True
    return False


def _keyword_offsets(text: str) -> list[int]:
    out = []
    for word in ("from", "import"):
        i = text.find(word)
        while i != -1:
            out.append(i)
            i = text.find(word, i + 1)
    return out


def prose_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the comments and string statements of `text` (newlines `\\n`), in order."""
    lexer = Lexer(text)
    while not lexer.done:
        lexer._next()
    return [(s, e) for s, e, p in zip(lexer.starts, lexer.ends, lexer.prose) if p]
