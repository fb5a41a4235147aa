"""Rule hits as Findings for one file (positions, messages, fixes, suppression), and the result of a
file that could not be read or scanned."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from opscan.fsutil import UnreadableFile
from opscan.records import Finding, Location, Severity, TaskKind
from opscan.scan.results import FileResult, Suppression
from opscan.scan.rules import Rule, RuleSet
from opscan.scan.sources import ALL, char_column

if TYPE_CHECKING:
    from opscan.scan.context import Hit


class Builder:
    """Turns rule hits into Findings for one file: positions, messages, fixes, suppression."""

    def __init__(self, relpath: str, lines: list[str], supp: dict[int, frozenset[str]],
                 where: list[tuple[int, int]] | None = None) -> None:
        self.relpath = printable_path(relpath)
        self.lines = lines
        self.supp = supp
        self.where = where
        self.used: dict[int, set[str]] = {}
        self.findings: list[tuple[Finding, tuple[str, ...]]] = []

    def add(self, rule: Rule, line: int, col: int = 1, end_line: int = 0, end_col: int = 0,
            value: str = "", name: str = "", guarded: bool = False, subject: str = "", task: str = "",
            fix_name: str = "") -> None:
        codes = self.supp.get(line)
        if codes and (rule.id in codes or ALL in codes):
            self.used.setdefault(line, set()).add(rule.id if rule.id in codes else ALL)
            return
        snippet = self.lines[line - 1].rstrip("\r\n") if 0 < line <= len(self.lines) else ""
        cell = None
        if self.where is not None and 0 < line <= len(self.where):
            cell, local = self.where[line - 1]
            if end_line:
                end_line = end_line - line + local
            line = local
        fix, requires = rule.fix_for(fix_name or name)
        finding = Finding(
            rule=rule.id, name=rule.name, category=rule.category,
            severity=Severity(rule.severity_for(fix_name or name)),
            message=rule.format(rule.message_for(fix_name or name), value=value, name=name),
            location=Location(self.relpath, line, col, end_line or line, end_col or col, cell),
            fix=rule.format(fix, value=value, name=name), guarded=guarded, snippet=snippet,
            task=TaskKind(task or rule.task), subject=subject,
        )
        self.findings.append((finding, requires))

    def add_node(self, hit: Hit) -> None:
        node = hit.node
        assert isinstance(node, (ast.expr, ast.stmt, ast.alias, ast.arg, ast.keyword))   # nodes with positions
        line = node.lineno
        text = self.lines[line - 1] if line <= len(self.lines) else ""
        end_line = node.end_lineno or line
        end_text = self.lines[end_line - 1] if end_line <= len(self.lines) else ""
        self.add(hit.rule, line, char_column(text, node.col_offset), end_line,
                 char_column(end_text, node.end_col_offset or 0), hit.value, hit.name, hit.guarded, hit.subject,
                 hit.task, hit.fix_name)

    def result(self, scanned: bool = True) -> FileResult:
        pairs = sorted(self.findings, key=lambda p: p[0].sort_key())
        supps = tuple(
            Suppression(self.relpath, line, tuple(sorted(codes)), tuple(sorted(self.used.get(line, ()))),
                        self.lines[line - 1].rstrip("\r\n") if 0 < line <= len(self.lines) else "")
            for line, codes in sorted(self.supp.items()))
        return FileResult(self.relpath, tuple(p[0] for p in pairs), tuple(p[1] for p in pairs), supps,
                          scanned, len(self.lines))


def printable_path(relpath: str) -> str:
    """A file name that is not valid UTF-8 (os gives it with surrogate escapes) as printable text:
    `bad\\xff.py`. Reports must stay valid UTF-8, whatever a repository's file names are."""
    try:
        relpath.encode("utf-8")
        return relpath
    except UnicodeEncodeError:
        return relpath.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def add_input(builder: Builder, rules: RuleSet, kind: str, line: int = 1, col: int = 1, value: str = "") -> None:
    rule = rules.compiled.inputs.get(kind)
    if rule is not None:
        builder.add(rule, line, col, value=value)


def internal_error(relpath: str, exc: Exception, rules: RuleSet) -> FileResult:
    """The result for a file that could not be read (OPS001) or whose scan raised (OPS002)."""
    builder = Builder(relpath, [], {})
    if isinstance(exc, UnreadableFile):
        add_input(builder, rules, "unreadable", value=exc.reason)
    elif isinstance(exc, OSError):
        add_input(builder, rules, "unreadable", value=f"cannot read: {exc.strerror or exc}")
    else:
        add_input(builder, rules, "internal-error", value=f"{type(exc).__name__}: {exc}")
    return builder.result()
