"""Measures custom kernels for the cost model: lines of the .cu / C++ sources or Triton functions.

This reads the user's files (never runs them). For each custom-kernel finding it returns the
kernel sources behind it as (source id, non-blank lines): a flagged .cu / C++ file itself; the
source files named in a flagged build call (`sources=["scan.cu"]`, resolved next to the file, then
from the root; the id is the path relative to the root); or the decorated function of a flagged
decorator (`@triton.jit`; the id is `path:line`). An extension name stated anywhere in a flagged
multi-line call (`name="fused_gelu_cuda"`) is returned as (`name:<name>`, 0). Grouping joins
findings that share a source or a name.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from opscan.model import Finding, Location

NATIVE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c++", ".h", ".hpp", ".hh", ".hxx")
_SOURCE = re.compile(r"""["']([^"'\s]+\.(?:cu|cuh|cpp|cc|cxx|c|h|hpp))["']""")
_MAX_STATEMENT_LINES = 40
_NAMED = re.compile(r"""(?:\bname\s*=\s*|Extension\(\s*)["']([\w.\-]+)["']""")

Sources = dict[Location, tuple[tuple[str, int], ...]]


def _statement(lines: list[str], start: int) -> str:
    """The text of the statement starting at 1-based line `start` (until brackets balance)."""
    depth, out = 0, []
    for text in lines[start - 1:start - 1 + _MAX_STATEMENT_LINES]:
        out.append(text)
        depth += sum(text.count(c) for c in "([{") - sum(text.count(c) for c in ")]}")
        if depth <= 0:
            break
    return "\n".join(out)


def _count(path: Path) -> int | None:
    try:
        return sum(1 for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip())
    except OSError:
        return None


def _decorated(tree: ast.AST, line: int) -> tuple[int, int] | None:
    """(first line, line count) of the function whose decorators or `def` cover `line`."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            if first <= line <= node.lineno:
                return first, (node.end_lineno or node.lineno) - first + 1
    return None


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def kernel_sources(root: Path, findings: tuple[Finding, ...]) -> Sources:
    """The kernel sources behind each custom-kernel finding that could be measured."""
    out: Sources = {}
    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.category == "custom-kernel" and finding.location.cell is None:
            by_file.setdefault(finding.location.path, []).append(finding)
    for rel, items in sorted(by_file.items()):
        path = root / rel
        if rel.endswith(NATIVE_SUFFIXES):
            count = _count(path)
            for finding in items:
                if count:
                    out[finding.location] = ((rel, count),)
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        lines = text.splitlines()
        tree = None
        for finding in sorted(items, key=Finding.sort_key):
            line = finding.location.line
            if not 1 <= line <= len(lines):
                continue
            found: list[tuple[str, int]] = []
            for name in _SOURCE.findall(_statement(lines, line)):
                for candidate in (path.parent / name, root / name):
                    if candidate.is_file():
                        found.append((_relative(candidate, root), _count(candidate) or 0))
                        break
            if not found and lines[line - 1].lstrip().startswith(("@", "def ", "async def ")):
                if tree is None:
                    try:
                        tree = ast.parse(text)
                    except (SyntaxError, ValueError):
                        tree = ast.Module(body=[], type_ignores=[])
                hit = _decorated(tree, line)
                if hit:
                    found.append((f"{rel}:{hit[0]}", hit[1]))
            statement = _statement(lines, line)
            named = _NAMED.search(statement)
            if named:   # the extension / op name stated in a multi-line call joins its users
                found.append((f"name:{named[1].rsplit('.', 1)[-1]}", 0))
            if found:
                out[finding.location] = tuple(found)
    return out
