"""Source text handling: PEP 263 decoding, `# opscan: ignore[...]` comments, character columns."""

from __future__ import annotations

import io
import re
import tokenize

SUPPRESS = re.compile(r"#\s*opscan:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)
ALL = "*"


class DecodeError(Exception):
    """A file whose bytes cannot be decoded; `line` is where the problem is (1-based)."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


def decode(data: bytes) -> str:
    """Decode Python source bytes as the interpreter would (BOM, PEP 263 cookie, else UTF-8)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        message = exc.msg if hasattr(exc, "msg") else str(exc)
        if "invalid or missing" in message:   # no cookie: the first two lines are not UTF-8
            _not_utf8(data)
        if data.startswith(b"\xef\xbb\xbf") and "encoding problem" in message:
            message = "the file starts with a UTF-8 byte-order mark but declares another encoding"
        raise DecodeError(f"bad encoding declaration: {message}", _cookie_line(data)) from None
    try:
        text = data.decode(encoding)
    except LookupError:
        raise DecodeError(f"unknown encoding {encoding!r} in the coding declaration") from None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DecodeError(f"not valid {encoding}: byte 0x{data[exc.start]:02x} at line {line}", line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def _not_utf8(data: bytes) -> None:
    """Raise the DecodeError for bytes that are not UTF-8 (binary when they hold a NUL byte)."""
    nul = data.find(b"\x00")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = nul if 0 <= nul < exc.start else exc.start
        line = data.count(b"\n", 0, where) + 1
        if where == nul:
            raise DecodeError(f"a binary file, not Python source (NUL byte at line {line})", line) from None
        raise DecodeError(f"not valid utf-8: byte 0x{data[where]:02x} at line {line}", line) from None


def _cookie_line(data: bytes) -> int:
    """The line of the PEP 263 declaration (1 or 2), else 1."""
    for number, line in enumerate(data.split(b"\n", 2)[:2], 1):
        if line.lstrip().startswith(b"#") and b"coding" in line:
            return number
    return 1


def suppressions(text: str) -> dict[int, frozenset[str]]:
    """Line -> codes suppressed on it by `# opscan: ignore[CODE, ...]` (ALL for a bare ignore).

    Only real comments count (found with the tokenizer), so the text inside a string does not.
    """
    if "opscan:" not in text and "OPSCAN:" not in text.upper():
        return {}
    out: dict[int, frozenset[str]] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return out
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        for match in SUPPRESS.finditer(tok.string):
            codes = match["codes"]
            found = frozenset(c.strip().upper() for c in codes.split(",") if c.strip()) if codes is not None \
                else frozenset([ALL])
            out[tok.start[0]] = out.get(tok.start[0], frozenset()) | found
    return out


def comment_suppressions(lines: list[str], marker: str = "//") -> dict[int, frozenset[str]]:
    """Suppressions in a non-Python file: the same syntax after `marker` or `#` anywhere on a line."""
    out: dict[int, frozenset[str]] = {}
    for number, line in enumerate(lines, 1):
        match = re.search(r"(?:#|//)\s*opscan:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", line, re.I)
        if match:
            codes = match["codes"]
            out[number] = frozenset(c.strip().upper() for c in codes.split(",") if c.strip()) if codes is not None \
                else frozenset([ALL])
    return out


def char_column(line: str, byte_offset: int) -> int:
    """1-based character column of a 0-based UTF-8 byte offset within `line`."""
    if line.isascii():
        return byte_offset + 1
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace")) + 1
