"""Measures custom kernels and library use for the cost model, from the scan's facts and the kernel sources.

For each custom-kernel finding it returns the kernel sources behind it as (source id, non-blank
lines): a flagged .cu / C++ file itself; the source files named in a flagged build call
(`sources=["scan.cu"]`, resolved next to the file, then from the root; the id is the path relative
to the root); or the decorated function of a flagged decorator (`@triton.jit`; the id is
`path:line`, its span from the scan's facts). An extension name stated anywhere in a flagged
multi-line call (`name="fused_gelu_cuda"`) is returned as (`name:<name>`, 0). Grouping joins
findings that share a source or a name. Library use and PyTorch reference paths are the scan's
facts (NOTE [scan facts] in scan/facts.py), looked up per finding: nothing here parses Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from opscan.records import Finding, FunctionSpan, LibraryUse, Location, ScanFacts, TaskKind

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


def _decorated(facts: ScanFacts, path: str, line: int) -> FunctionSpan | None:
    """The function whose decorators or `def` cover `line` (from the scan's facts)."""
    for span in facts.kernels:
        if span.path == path and span.line <= line <= span.def_line:
            return span
    return None


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.resolve().as_posix()


def kernel_sources(root: Path, findings: tuple[Finding, ...], facts: ScanFacts = ScanFacts()) -> Sources:
    """The kernel sources behind each custom-kernel finding that could be measured.

    Args:
        root: the scanned root (findings' paths are relative to it).
        findings: the findings; only custom-kernel ones outside notebooks are measured.
        facts: the scan's facts (ScanResult.facts), for the spans of decorated kernel functions.
    """
    out: Sources = {}
    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.is_kernel and finding.location.cell is None:
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
                span = _decorated(facts, rel, line)
                if span is not None:
                    found.append((f"{rel}:{span.line}", span.lines))
            statement = _statement(lines, line)
            named = _NAMED.search(statement)
            if named:   # the extension / op name stated in a multi-line call joins its users
                found.append((f"name:{named[1].rsplit('.', 1)[-1]}", 0))
            if found:
                out[finding.location] = tuple(found)
    return out


# NOTE [library usage]: what a project uses of a CUDA-only library, read from its files (never run).
# For each library-import finding: the dotted names its own package's aliases bring in (`from
# flash_attn import flash_attn_func` -> `flash_attn.flash_attn_func`) plus every attribute taken
# from such an imported module in that file (`te.Linear` -> `transformer_engine.pytorch.Linear`),
# and the call sites: the loads of a bound name in that file outside import statements. The scan
# measures these (scan/facts.py, model.LibraryUse) per alias: `import cupy, flash_attn` gives cupy's
# finding cupy's use and flash_attn's its own. The catalog sizes a library task from these names
# (its API parts) and call sites.
@dataclass(frozen=True)
class Usage:
    """Measurements of library use and kernel reference paths, by finding."""

    libraries: dict = field(default_factory=dict)      # (Location, subject) -> model.LibraryUse
    references: frozenset = frozenset()                # kernel-finding Locations whose file has a PyTorch path

    def library(self, finding: Finding) -> LibraryUse | None:
        """The measured use of the library a finding imports, if any."""
        return self.libraries.get((finding.location, finding.subject))


def usage(findings: tuple[Finding, ...], facts: ScanFacts) -> Usage:
    """Library use (NOTE [library usage]) and the kernel findings whose file holds a PyTorch path,
    from the scan's facts."""
    libraries: dict[tuple[Location, str], LibraryUse] = {}
    references: set[Location] = set()
    referenced = set(facts.references)
    for finding in findings:
        loc = finding.location
        if loc.cell is not None or not loc.path.endswith(".py"):
            continue
        if finding.is_kernel:
            if loc.path in referenced:
                references.add(loc)
        elif finding.task is TaskKind.LIBRARY:
            use = facts.library(loc.path, loc.line, finding.subject)
            if use is not None:
                libraries[(loc, finding.subject)] = use
    return Usage(libraries, frozenset(references))
