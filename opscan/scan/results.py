"""What the scan gives: per file (FileResult, with its Suppressions) and per tree (ScanResult)."""

from __future__ import annotations

from dataclasses import dataclass

from opscan.records import Finding, ScanFacts

@dataclass(frozen=True)
class Suppression:
    """One `# opscan: ignore[...]` comment and which of its codes hid a finding in this run."""

    path: str
    line: int
    codes: tuple[str, ...]           # ("*",) for a bare `# opscan: ignore`
    used: tuple[str, ...] = ()       # the codes that matched a finding (sorted)
    text: str = ""                   # its line, as the scan read it: OPS003's snippet (the file is not read again)


@dataclass(frozen=True)
class FileResult:
    """What scanning one file gave."""

    path: str
    findings: tuple[Finding, ...] = ()
    requires: tuple[tuple[str, ...], ...] = ()   # per finding: torch attributes its fix relies on
    suppressions: tuple[Suppression, ...] = ()
    scanned: bool = True                         # False for build files read only for project facts
    lines: int = 0
    exports: tuple[str, ...] = ()   # kernel wrappers this file defines ("module.function=RULEID") and its
    # native libraries ("module.name=RULEID@" / "module.Class=RULEID@attr": NOTE [native libraries])
    imports: tuple[str, ...] = ()   # dotted names it imports from the scanned tree's own packages
    facts: ScanFacts = ScanFacts()  # NOTE [scan facts] (facts.py)
    parsed: bool = True             # False: skipped by the pre-check (NOTE [pre-check])
    marked: bool = False            # the findings' `fixable` was set by an enrichment (NOTE [enrichments])
    notes: tuple[str, ...] = ()     # one line per enrichment that failed on this file (NOTE [enrichments])
    # per finding (or empty): the torch names its rewrite relies on; a fixable finding whose name the
    # installed torch lacks is unmarked by `collect` (NOTE [fixable is what fix fixes] in fix/preview.py)
    fix_needs: tuple[tuple[str, ...], ...] = ()
    demos: tuple[tuple[int, int], ...] = ()   # its `if __name__ == "__main__":` blocks (NOTE [demo blocks])
    modules: tuple[str, ...] = ()   # the dotted names its imports name (demos.imported_modules)
    members: tuple[tuple[str, str, int, str], ...] = ()   # (module, name, line, local) of its `_C`-style imports
    # (NOTE [members of Python modules] in members.py)


@dataclass(frozen=True)
class ScanResult:
    """What scanning a tree gave: findings sorted by Finding.sort_key."""

    findings: tuple[Finding, ...]
    files_scanned: int
    suppressions: tuple[Suppression, ...] = ()
    notes: tuple[str, ...] = ()
    lines: int = 0
    facts: ScanFacts = ScanFacts()   # of every walked file (NOTE [scan facts] in facts.py)

