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
from dataclasses import dataclass, field
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


# NOTE [library usage]: what a project uses of a CUDA-only library, read from its files (never run).
# For each library-import finding: the dotted names the import brings in (`from flash_attn import
# flash_attn_func` -> `flash_attn.flash_attn_func`) plus every attribute taken from an imported
# module in that file (`te.Linear` -> `transformer_engine.pytorch.Linear`), and the call sites:
# the loads of a bound name in that file outside import statements. The catalog sizes a library
# task from these names (its API parts) and call sites.
@dataclass(frozen=True)
class LibraryUse:
    """What one import of a CUDA-only library brings in and how often the file uses it."""

    names: tuple[str, ...]       # dotted names used, sorted
    call_sites: int              # loads of the bound names in the file


@dataclass(frozen=True)
class Usage:
    """Measurements of library use and kernel reference paths, by finding location."""

    libraries: dict = field(default_factory=dict)      # Location -> LibraryUse
    references: frozenset = frozenset()                # kernel-finding Locations whose file has a PyTorch path


_REFERENCE = re.compile(r"(?:^|_)(?:ref|reference|naive|torch|pytorch|eager|fallback|native|slow)(?:_|$)", re.I)


def _imports_at(tree: ast.AST, line: int) -> list[tuple[str, str]]:
    """(bound name, dotted target) of the import statement covering `line`."""
    out: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno <= line <= (node.end_lineno or node.lineno):
            for alias in node.names:
                if isinstance(node, ast.Import):
                    if alias.asname:
                        out.append((alias.asname, alias.name))
                    else:   # `import apex.optimizers` binds `apex` and brings in `apex.optimizers`
                        top = alias.name.split(".")[0]
                        out.append((top, top))
                        if alias.name != top:
                            out.append(("", alias.name))
                elif node.module and node.level == 0 and alias.name != "*":
                    out.append((alias.asname or alias.name, f"{node.module}.{alias.name}"))
                elif node.module and alias.name == "*":
                    out.append(("", node.module))
    return out


def _dotted(node: ast.AST) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _use_in(tree: ast.AST, bound: list[tuple[str, str]]) -> LibraryUse:
    targets = {name: target for name, target in bound if name}
    names = {target for name, target in bound if not name or name != target or
             not any(other.startswith(target + ".") for _, other in bound)}
    calls = 0
    parents: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parents.add(id(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and id(node) not in parents:
            chain = _dotted(node)
            if chain and chain[0] in targets and isinstance(node.ctx, ast.Load):
                names.add(".".join([targets[chain[0]], *chain[1:]]))
        if isinstance(node, ast.Name) and node.id in targets and isinstance(node.ctx, ast.Load):
            calls += 1
    return LibraryUse(tuple(sorted(names)), calls)


def usage(root: Path, findings: tuple[Finding, ...]) -> Usage:
    """Library use (NOTE [library usage]) and the kernel findings whose file holds a PyTorch path."""
    libraries: dict[Location, LibraryUse] = {}
    references: set[Location] = set()
    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.task in ("library", "kernel") and finding.location.cell is None and finding.location.path.endswith(".py"):
            by_file.setdefault(finding.location.path, []).append(finding)
    for rel, items in sorted(by_file.items()):
        try:
            tree = ast.parse((root / rel).read_text(encoding="utf-8", errors="replace"))
        except (OSError, SyntaxError, ValueError):
            continue
        has_reference = any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _REFERENCE.search(node.name)
                            for node in ast.walk(tree))
        for finding in items:
            if finding.task == "kernel":
                if has_reference:
                    references.add(finding.location)
                continue
            bound = _imports_at(tree, finding.location.line)
            if bound:
                libraries[finding.location] = _use_in(tree, bound)
    return Usage(libraries, frozenset(references))
