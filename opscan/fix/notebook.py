"""Fixes the code cells of a Jupyter notebook; every byte outside a changed cell's `source` is kept.

The notebook is not re-serialised: a small JSON reader records where each code cell's `source`
value starts and ends in the file, and only the values of cells that changed are replaced, in
the layout the file already uses (nbformat's one-line-per-string list, or one string). Outputs,
metadata, key order and indentation stay byte-for-byte. IPython magics (`%`, `!` lines) are
swapped for placeholder comments while libcst reads the cell and put back afterwards; whole-cell
magics (`%%bash`) are not Python and are left alone.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]   # (not in the standard library's stubs)
from typing import Any

from opscan.fix.module import SiteOutcome, SourceFix, fix_module, manual_outcome
from opscan.fix.scope import Probe
from opscan.records import Finding
from opscan.scan.rule_records import Rule
from opscan.fix.reasons import FixStatus

MAGIC = re.compile(r"^(\s*)[%!]")
_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")


class _Reader:
    """A JSON reader that returns values and records the spans of `cells[i].source`."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.spans: list[tuple[int, int, object]] = []   # per code cell: (start, end, value)

    def skip(self, pos: int) -> int:
        match = _WS.match(self.text, pos)
        return match.end() if match is not None else pos     # the pattern matches anywhere (maybe empty)

    def value(self, pos: int, path: tuple[str | int, ...] = ()) -> tuple[object, int]:
        pos = self.skip(pos)
        char = self.text[pos:pos + 1]
        if char == "{":
            return self._object(pos + 1, path)
        if char == "[":
            return self._array(pos + 1, path)
        if char == '"':
            found: tuple[str, int] = scanstring(self.text, pos + 1)
            return found
        for word, val in (("true", True), ("false", False), ("null", None)):
            if self.text.startswith(word, pos):
                return val, pos + len(word)
        match = _NUMBER.match(self.text, pos)
        if not match:
            raise ValueError(f"unexpected character at offset {pos}")
        number: object = json.loads(match.group())
        return number, match.end()

    def _object(self, pos: int, path: tuple[str | int, ...]) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        pos = self.skip(pos)
        if self.text[pos:pos + 1] == "}":
            return out, pos + 1
        while True:
            pos = self.skip(pos)
            if self.text[pos:pos + 1] != '"':
                raise ValueError(f"expected a key at offset {pos}")
            key, pos = scanstring(self.text, pos + 1)
            pos = self.skip(pos)
            if self.text[pos:pos + 1] != ":":
                raise ValueError(f"expected ':' at offset {pos}")
            start = self.skip(pos + 1)
            out[key], pos = self.value(start, path + (key,))
            if len(path) == 2 and path[0] == "cells" and key == "source":
                out["__span__"] = (start, pos)
            pos = self.skip(pos)
            if self.text[pos:pos + 1] == ",":
                pos += 1
                continue
            if self.text[pos:pos + 1] == "}":
                return out, pos + 1
            raise ValueError(f"expected ',' or '}}' at offset {pos}")

    def _array(self, pos: int, path: tuple[str | int, ...]) -> tuple[list[Any], int]:
        out: list[Any] = []
        pos = self.skip(pos)
        if self.text[pos:pos + 1] == "]":
            return out, pos + 1
        while True:
            item, pos = self.value(pos, path + (len(out),))
            out.append(item)
            pos = self.skip(pos)
            if self.text[pos:pos + 1] == ",":
                pos += 1
                continue
            if self.text[pos:pos + 1] == "]":
                return out, pos + 1
            raise ValueError(f"expected ',' or ']' at offset {pos}")


def code_cells(text: str) -> list[tuple[int, int, str, object]]:
    """(start, end, cell source text, raw source value) for each code cell, in order."""
    doc, _ = _Reader(text).value(0)
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise ValueError("not a Jupyter notebook (no `cells` list)")  # noqa: TRY004 - bad input, as json raises
    out = []
    for cell in doc["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code" or "__span__" not in cell:
            continue
        raw = cell["source"]
        source = "".join(raw) if isinstance(raw, list) else str(raw)
        out.append((*cell["__span__"], source, raw))
    return out


def _encode(source: str, original_text: str, raw: object) -> str:
    """The JSON for a new `source` value, laid out like the original value `original_text`."""
    ascii_only = "\\u" in original_text and original_text.isascii()
    if not isinstance(raw, list):
        return json.dumps(source, ensure_ascii=ascii_only)
    lines = source.splitlines(keepends=True)
    items = [json.dumps(line, ensure_ascii=ascii_only) for line in lines]
    match = re.match(r"\[(\s*)", original_text)
    lead = match.group(1) if match and len(raw) else ""
    tail = re.search(r"(\s*)\]$", original_text)
    close = tail.group(1) if tail and len(raw) else ""
    if not items:
        return "[]"
    sep = "," + lead if "\n" in lead else ", "
    return "[" + lead + sep.join(items) + close + "]"


def _unmagic(source: str) -> tuple[str, dict[str, str]] | None:
    """The cell with magic lines replaced by placeholder comments (None for a whole-cell magic)."""
    if source.lstrip().startswith("%%"):
        return None
    saved: dict[str, str] = {}
    lines = source.split("\n")
    for i, line in enumerate(lines):
        match = MAGIC.match(line)
        if match:
            key = f"# opscan-magic-{i}"
            saved[key] = line[len(match.group(1)):]
            lines[i] = match.group(1) + key
    return "\n".join(lines), saved


def _remagic(source: str, saved: dict[str, str]) -> str:
    for key, line in saved.items():
        source = source.replace(key, line, 1)
    return source


def fix_notebook(data: bytes, findings: list[Finding], rules: dict[str, Rule], unsafe: bool = False,
                 probe: Probe | None = None) -> SourceFix:
    """Fix the code cells of a notebook given its findings (located by cell and line in cell)."""
    text = data.decode("utf-8")
    cells = code_cells(text)
    prior: dict[str, str] = {}
    outcomes: list[SiteOutcome] = []
    pieces: list[str] = []
    last = 0
    for number, (start, end, source, raw) in enumerate(cells, 1):
        mine = [f for f in findings if f.location.cell == number]
        if not mine and "torch" not in source:
            continue
        unmagicked = _unmagic(source)
        if unmagicked is None:
            outcomes.extend(SiteOutcome(f, FixStatus.LEFT, "a whole-cell magic: not Python", "file-skipped")
                            for f in mine)
            continue
        if not mine:     # nothing to fix here, but later cells may use its `import torch` or device
            fix_module(unmagicked[0], [], rules, unsafe, probe, prior)
            continue
        body, saved = unmagicked
        result = fix_module(body, mine, rules, unsafe, probe, prior)
        outcomes.extend(result.outcomes)
        fixed = result.text if isinstance(result.text, str) else result.text.decode("utf-8")   # text in, text out
        new_source = _remagic(fixed, saved)
        if new_source != source:
            pieces.append(text[last:start])
            pieces.append(_encode(new_source, text[start:end], raw))
            last = end
    outcomes.extend(manual_outcome(f, rules) for f in findings if f.location.cell is None)
    if not pieces:
        return SourceFix(data, tuple(outcomes))
    pieces.append(text[last:])
    return SourceFix("".join(pieces).encode("utf-8"), tuple(outcomes))
