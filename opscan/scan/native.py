"""Non-Python inputs: CUDA/C++ sources (reported per file) and Jupyter notebooks (code cells)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any

from opscan.scan.rule_records import Rule

MAGIC = re.compile(r"^\s*[%!]")


def native_hits(relpath: str, text: str, files_rules: Iterable[tuple[tuple[str, ...], Any, Rule]]
                ) -> list[tuple[Rule, int, str]]:
    """(rule, line, value) for each `file` matcher that fires on this file: one per rule and file.

    The line is the first match of `contains` (or 1 without it); the value is the number of
    matches, e.g. "3 TORCH_LIBRARY blocks".
    """
    base = relpath.rsplit("/", 1)[-1]
    out: list[tuple[Rule, int, str]] = []
    for globs, contains, rule in files_rules:
        if not any(fnmatchcase(base, g) or fnmatchcase(relpath, g) for g in globs):
            continue
        if contains is None:
            out.append((rule, 1, ""))
            continue
        matches = list(contains.finditer(text))
        if matches:
            first = text.count("\n", 0, matches[0].start()) + 1
            out.append((rule, first, str(len(matches))))
    return out


def notebook_source(data: bytes) -> tuple[str, list[tuple[int, int]]]:
    """The code cells of a notebook joined into one source, and a map line -> (cell, line in cell).

    IPython magics and shell escapes (`%`, `!`, whole `%%` cells) become blank lines so that the rest still parses.
    Cells are numbered from 1 among code cells. Raises ValueError for a file that is not a notebook.
    """
    doc = json.loads(data.decode("utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise ValueError("not a Jupyter notebook (no `cells` list)")
    lines: list[str] = []
    where: list[tuple[int, int]] = []
    cell_no = 0
    for cell in doc["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        cell_no += 1
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else str(source)
        cell_magic = text.lstrip().startswith("%%")   # %%bash, %%writefile...: not Python at all
        for n, line in enumerate(text.split("\n"), 1):
            lines.append("" if cell_magic or MAGIC.match(line) else line)
            where.append((cell_no, n))
    return "\n".join(lines) + "\n", where
