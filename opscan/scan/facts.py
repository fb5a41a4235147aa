"""The facts a file's scan states beside its findings (model.ScanFacts): import bindings, library
use, kernel functions and PyTorch reference paths, from the scan's own parse and import resolver.

# NOTE [scan facts]
# The plan (sizing a library or kernel task), discovery and the fixer need to know what a file
# imports under which name, what it uses of a library, and where a kernel function starts and ends.
# The scan has parsed the file and resolved its imports already, so it states these as frozen
# records in its result (FileResult.facts -> ScanResult.facts -> phases.ScanOutcome.facts) and
# the readers look them up instead of parsing again. The unit of an import is the alias: each
# (local name, dotted target) a statement binds is one ImportBinding, and a library finding is
# measured over the aliases of its own package only (`import cupy, flash_attn`: two findings, two
# measurements). Library use, kernel spans and references are measured only in files with such
# findings (a handful per tree), so facts cost the scan nearly nothing; a file the pre-filter does
# not walk states no facts (it has no findings either).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any, cast

from opscan.records import FunctionSpan, ImportBinding, LibraryUse, ScanFacts, TaskKind, is_kernel_work

# A function whose name says it is a PyTorch (or reference) implementation: a kernel next to one
# has a path to fall back on (plan/sizing.py, kernel_reference_factor).
# Sort keys read in C (no generated __lt__ per comparison: a tree has tens of thousands of bindings).
_BINDING_ORDER = attrgetter("path", "line", "local", "target", "module_level", "end_line")
REFERENCE = re.compile(r"(?:^|_)(?:ref|reference|naive|torch|pytorch|eager|fallback|native|slow)(?:_|$)", re.I)


def file_facts(path: str, tree: ast.Module, bindings: Iterable[tuple[int, int, str, str, bool]],
               hits: Iterable[Any], where: Sequence[tuple[int, int]] | None = None) -> ScanFacts:
    """The facts of one walked file.

    Args:
        path: the file as findings name it.
        tree: its parse.
        bindings: the walk's (line, end line, local, target, module level) per bound name.
        hits: the walk's hits (context.Hit), after every family finished.
        where: for a notebook, (cell, line in cell) per line of the joined source; else None.
    """
    out: list[ImportBinding] = []
    for line, end, local, target, module_level in bindings:
        cell = None
        if where is not None:
            if not 0 < line <= len(where):
                continue
            cell, first = where[line - 1]
            end, line = end - line + first, first
        out.append(ImportBinding(path, line, local, target, module_level, cell, end))
    if where is not None:   # notebook lines are cell-local: the plan measures .py files only
        return ScanFacts(bindings=tuple(sorted(out, key=_BINDING_ORDER)))
    library_hits: list[Any] = []
    kernel_lines: set[int] = set()
    has_kernel = False
    for hit in hits:
        task = hit.task or hit.rule.task
        if task == TaskKind.LIBRARY and isinstance(hit.node, (ast.Import, ast.ImportFrom)):
            library_hits.append(hit)
        if is_kernel_work(task, hit.rule.category):
            has_kernel = True
            kernel_lines.add(hit.node.lineno)
    if not (library_hits or kernel_lines or has_kernel):
        return ScanFacts(bindings=tuple(sorted(out, key=_BINDING_ORDER)))
    walked = _Walked(tree)   # one walk of the file for all of its measurements
    libraries: set[LibraryUse] = set()
    for hit in library_hits:
        bound = _statement_bindings(hit.node, hit.subject)
        if bound:
            names, calls = walked.use(bound)
            libraries.add(LibraryUse(path, hit.node.lineno, hit.subject, names, calls))
    kernels: set[FunctionSpan] = set()
    for line in kernel_lines:
        for fn in walked.functions:   # the first in walk order, as measured before (outer before inner)
            first = min([d.lineno for d in fn.decorator_list] + [fn.lineno])
            if first <= line <= fn.lineno:
                kernels.add(FunctionSpan(path, first, fn.lineno, (fn.end_lineno or fn.lineno) - first + 1, fn.name))
                break
    references: tuple[str, ...] = ()
    if has_kernel and any(REFERENCE.search(fn.name) for fn in walked.functions):
        references = (path,)
    return ScanFacts(tuple(sorted(out, key=_BINDING_ORDER)), tuple(sorted(libraries)), tuple(sorted(kernels)),
                     references)


def merge(many: Iterable[ScanFacts | None]) -> ScanFacts:
    """One ScanFacts from many (each tuple sorted)."""
    facts = [f for f in many if f is not None]
    return ScanFacts(
        tuple(sorted((b for f in facts for b in f.bindings), key=_BINDING_ORDER)),
        tuple(sorted(u for f in facts for u in f.libraries)),
        tuple(sorted(k for f in facts for k in f.kernels)),
        tuple(sorted({p for f in facts for p in f.references})))


def encode_facts(facts: ScanFacts, path: str = "") -> dict[str, Any] | None:
    """ScanFacts as JSON-able data (for the scan cache); None when there are none. The bindings of
    `path` (the file the facts are of) are written without their path, the bulk of a tree's index."""
    if not (facts.bindings or facts.libraries or facts.kernels or facts.references):
        return None
    out: dict[str, Any] = {"bindings": [
        [b.line, b.local, b.target, b.module_level, b.cell, b.end_line] if b.path == path and path else
        [b.path, b.line, b.local, b.target, b.module_level, b.cell, b.end_line] for b in facts.bindings]}
    if facts.libraries:
        out["libraries"] = [[u.path, u.line, u.package, list(u.names), u.call_sites] for u in facts.libraries]
    if facts.kernels:
        out["kernels"] = [[k.path, k.line, k.def_line, k.lines, k.name] for k in facts.kernels]
    if facts.references:
        out["references"] = list(facts.references)
    return out


def decode_facts(data: dict[str, Any] | None, path: str = "") -> ScanFacts:
    """The inverse of encode_facts (no data: no facts)."""
    if not data:
        return ScanFacts()
    return ScanFacts(
        _bindings(data["bindings"], path),
        tuple(LibraryUse(u[0], u[1], u[2], tuple(u[3]), u[4]) for u in data.get("libraries", ())),
        tuple(FunctionSpan(*k) for k in data.get("kernels", ())),
        tuple(data.get("references", ())))


# NOTE [decoding bindings]
# A warm scan of transformers decodes ~10,000 ImportBindings from the tree's index, and the
# generated __init__ of a frozen dataclass sets each field through object.__setattr__: about
# 3 us a record, a tenth of the whole warm run. A record is made here as its __init__ would
# leave it (its __dict__ filled with the same fields, in order); records with __slots__ or a
# __post_init__ (an __init__ that does more than store its fields) go through their __init__.
# tests/scan/test_scan_facts.py compares both ways field by field.
_BINDING_FIELDS = tuple(f.name for f in dataclasses.fields(ImportBinding))
_PLAIN_BINDING = not hasattr(ImportBinding, "__slots__") and not hasattr(ImportBinding, "__post_init__")


def _bindings(rows: Iterable[Sequence[Any]], path: str) -> tuple[ImportBinding, ...]:
    full = [row if len(row) == 7 else (path, *row) for row in rows]
    if not _PLAIN_BINDING:
        return tuple(ImportBinding(*row) for row in full)
    new, fields, out = object.__new__, _BINDING_FIELDS, []
    for row in full:
        binding = new(ImportBinding)
        binding.__dict__.update(zip(fields, row))
        out.append(binding)
    return tuple(out)


def _statement_bindings(node: ast.Import | ast.ImportFrom, package: str) -> list[tuple[str, str]]:
    """(bound name, dotted target) of the aliases of one import statement that belong to `package`
    ("" bound name: brought in, not bound: `import apex.optimizers` binds `apex` and brings in
    `apex.optimizers`; `from m import *`)."""
    out: list[tuple[str, str]] = []
    for alias in node.names:
        if isinstance(node, ast.Import):
            if alias.asname:
                pairs = [(alias.asname, alias.name)]
            else:
                top = alias.name.split(".")[0]
                pairs = [(top, top)] + ([("", alias.name)] if alias.name != top else [])
        elif node.module and node.level == 0 and alias.name != "*":
            pairs = [(alias.asname or alias.name, f"{node.module}.{alias.name}")]
        elif node.module and alias.name == "*":
            pairs = [("", node.module)]
        else:
            pairs = []
        out += [(name, target) for name, target in pairs if not package or target.split(".", 1)[0] == package]
    return out


class _Walked:
    """What one walk of a file gives the measurements: its functions (in walk order), the dotted
    chains of its outermost loaded attributes, and how often each name is loaded."""

    def __init__(self, tree: ast.AST) -> None:
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        attributes: list[ast.Attribute] = []
        parents: set[int] = set()
        self.loads: dict[str, int] = {}
        for node in ast.walk(tree):
            kind = type(node)
            if kind is ast.Attribute:   # `type() is`: faster than isinstance on every node of the file
                attribute = cast(ast.Attribute, node)
                parents.add(id(attribute.value))
                attributes.append(attribute)
            elif kind is ast.Name:
                name = cast(ast.Name, node)
                if isinstance(name.ctx, ast.Load):
                    self.loads[name.id] = self.loads.get(name.id, 0) + 1
            elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                self.functions.append(cast("ast.FunctionDef | ast.AsyncFunctionDef", node))
        self.chains = [chain for chain in (_dotted(a) for a in attributes
                                           if id(a) not in parents and isinstance(a.ctx, ast.Load)) if chain]

    def use(self, bound: list[tuple[str, str]]) -> tuple[tuple[str, ...], int]:
        """NOTE [library usage] (plan/measure.py): the dotted names used through `bound`, and the
        loads of the bound names anywhere in the file outside import statements."""
        targets = {name: target for name, target in bound if name}
        names = {target for name, target in bound if not name or name != target or
                 not any(other.startswith(target + ".") for _, other in bound)}
        for chain in self.chains:
            if chain[0] in targets:
                names.add(".".join([targets[chain[0]], *chain[1:]]))
        return tuple(sorted(names)), sum(self.loads.get(name, 0) for name in targets)


def _dotted(node: ast.AST) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None
