"""The scan's phases: discover files -> read project facts -> scan each file (pure) -> suppress -> check fixes.

`scan_source` is a pure function of (relative path, bytes, rules, project): the unit a process pool
or a content-addressed cache works on (see workers.py, cache.py). `scan_paths` runs it over a tree.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

from opscan.errors import InputError
from opscan.fsutil import UnreadableFile, read_source_bytes
from opscan.index import ProjectIndex
from opscan.index import parse as parse_source
from opscan.records import Finding, Location, ScanFacts
from opscan.scan import demos, members, native
from opscan.scan.facts import decode_facts, encode_facts, file_facts, merge
from opscan.scan.files import BUILD_FILES, NATIVE_SUFFIXES, discover, manifest_kind
from opscan.scan.matchers import from_import_names
from opscan.scan.fixes import check_fixes as _check_fixes
from opscan.scan.project import EMPTY, Project, local_packages, packages_on_disk, project_from_files
from opscan.scan.rules import Rule, RuleSet, load_rules
from opscan.scan.sources import ALL, DecodeError, char_column, comment_suppressions, decode, suppressions
from opscan.scan.visitor import Visitor, own_imports


_WALK_DEPTH = 20_000

# NOTE [one rule, one file]
# A rule that raises on one statement of one file costs only that statement: the visitor records
# (line, rule, exception) and walks on (visitor.py `_statement`), and a hit whose finding cannot
# be built is dropped alone. Each becomes an OPS002 finding at that line naming the rule, so the
# gap is visible while the file's other findings, and every other file, are kept. Only a failure
# outside any statement (or in reading the file) costs the whole file (workers.py `on_error`).


@dataclass(frozen=True)
class Suppression:
    """One `# opscan: ignore[...]` comment and which of its codes hid a finding in this run."""

    path: str
    line: int
    codes: tuple[str, ...]           # ("*",) for a bare `# opscan: ignore`
    used: tuple[str, ...] = ()       # the codes that matched a finding (sorted)


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

    def unused_suppressions(self) -> tuple[Suppression, ...]:
        """Suppression comments that hid nothing (for an unused-suppression check, OPS003)."""
        return tuple(s for s in self.suppressions if not s.used or (ALL not in s.codes and set(s.used) != set(s.codes)))


class _Builder:
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
            rule=rule.id, name=rule.name, category=rule.category, severity=rule.severity_for(fix_name or name),
            message=rule.format(rule.message_for(fix_name or name), value=value, name=name),
            location=Location(self.relpath, line, col, end_line or line, end_col or col, cell),
            fix=rule.format(fix, value=value, name=name), guarded=guarded, snippet=snippet,
            task=task or rule.task, subject=subject,
        )
        self.findings.append((finding, requires))

    def add_node(self, hit) -> None:
        node = hit.node
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
            Suppression(self.relpath, line, tuple(sorted(codes)), tuple(sorted(self.used.get(line, ()))))
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


def _decoded(relpath: str, rules: RuleSet, data: bytes) -> str | FileResult:
    """The file's text, or its result when it cannot be decoded (one "unreadable" finding at the line)."""
    try:
        return decode(data)
    except DecodeError as exc:
        builder = _Builder(relpath, [], {})
        _input(builder, rules, "unreadable", line=exc.line, value=str(exc))
        return builder.result()


def _input(builder: _Builder, rules: RuleSet, kind: str, line: int = 1, col: int = 1, value: str = "") -> None:
    rule = rules.compiled.inputs.get(kind)
    if rule is not None:
        builder.add(rule, line, col, value=value)


def _extra_words(project: Project) -> frozenset[str]:
    """Names other files bind to something the rules care about: extension modules, wrappers."""
    return (frozenset(e.rsplit(".", 1)[-1] for e in project.extensions)
            | frozenset(w.rsplit("=", 1)[0].rsplit(".", 1)[-1] for w in project.wrappers))


# NOTE [pre-check]
# A file whose text holds no pre-filter token within its bounds (NOTE [pre-filter bounds] in
# matchers.py) is not parsed at all: nothing in it can match. Its FileResult says `parsed=False`.
# Two consequences, both deliberate:
#   - a syntax error in such a file is not reported (OPS000 says "opscan cannot vouch for this
#     file"; a file that spells nothing any rule looks for needs no vouching);
#   - its imports are not resolved, yet the wrapper pass (NOTE [wrappers across files]) must know
#     whether it imports a wrapper another file defines: the names its `from X import a, b as c`
#     statements bring in are read from the text (FROM_IMPORT, parenthesised lists included) and
#     listed bare in `imports` ("a", "b"), which `_importers` matches against the wrappers' last
#     component. A file that imports a wrapper is then scanned again with the wrapper names as
#     extra tokens, so it is parsed and its calls are sites (tests/scan/test_scan_files.py).
# `precheck=False` restores the old path (every file parsed, the visitor's own line filter only);
# tests compare both (tests/scan/test_scan_files.py).
def scan_source(relpath: str, data: bytes, rules: RuleSet, project: Project = EMPTY,
                precheck: bool = True, deps=None, parse=None) -> FileResult:
    """Scan one file's bytes. Pure: the same inputs always give the same FileResult.

    Args:
        relpath: the file's path relative to the scanned root, with `/` separators.
        data: the file's content.
        rules: the rules to apply.
        project: facts about the whole tree (compiled extension names).
        precheck: skip the parse of a file that spells no token (NOTE [pre-check]).
        deps: what the dependency rules judge manifests against (scan/dependencies.py
            DependencyContext; None: no release known, torch pins are not judged).
        parse: `parse(relpath, text) -> ast.Module` for a .py file (opscan/index `ProjectIndex.scan_parse`:
            the run's one parse of each file); None: `opscan.index.parse`.
    """
    kind = manifest_kind(relpath) or ("requirements" if relpath in project.requirements else "")
    if kind and kind != "setup-py":
        return scan_manifest(relpath, data, rules, kind, deps)
    if kind == "setup-py":   # Python first, then its install_requires (NOTE [manifests in the scan])
        python = _scan_python(relpath, data, rules, project, precheck, parse)
        manifest = scan_manifest(relpath, data, rules, kind, deps)
        if not manifest.findings:
            return python
        findings = tuple(sorted(python.findings + manifest.findings, key=Finding.sort_key))
        requires = dict(zip(python.findings, python.requires))
        return replace(python, findings=findings, requires=tuple(requires.get(f, ()) for f in findings),
                       parsed=True)
    return _scan_python(relpath, data, rules, project, precheck, parse)


# NOTE [manifests in the scan]
# Dependency manifests (scan/files.py manifest_kind: requirements files, pyproject.toml, setup.py,
# setup.cfg, Pipfile, uv/poetry/pdm/Pipfile locks, conda environments, Dockerfiles) are one more
# kind of file of the same pipeline: discovered by the walk, scanned by the pure `scan_source`,
# cached per content, suppressed with `# opscan: ignore[...]`, sorted with every other finding.
# Their findings come from the rules' `dependency` matchers (scan/dependencies.py), with the
# DependencyContext of the run (the release's torch pairing) in the cache salt. A manifest that
# spells no token (NOTE [manifest pre-check]) is not read further: FileResult(parsed=False,
# scanned=False). A line that cannot be read is OPS000 at that line; the rest of the file is
# still judged. setup.py is a Python file too: both results are merged. A lock beside a manifest
# that already reports the same package is not reported again (_dedupe_locks).
def scan_manifest(relpath: str, data: bytes, rules: RuleSet, kind: str, deps=None) -> FileResult:
    """Findings of one dependency manifest (NOTE [manifests in the scan])."""
    from opscan.scan import dependencies

    compiled = rules.compiled
    scanned = kind != "pyproject"   # a pyproject without dependency findings stays a build file
    if not compiled.dependencies:
        return FileResult(relpath, scanned=False, parsed=False)
    text, undecodable = dependencies.decode_lines(data)   # a bad line costs itself only (NOTE [manifest lines])
    text = _universal_newlines(text)
    ctx = deps if deps is not None else dependencies.EMPTY
    if not undecodable and not dependencies.relevant(text, tuple(compiled.dependencies), ctx):
        count = text.count("\n") + (bool(text) and not text.endswith("\n"))
        return FileResult(relpath, scanned=scanned and kind != "setup-py", lines=count, parsed=False)
    lines = _split_lines(text)
    builder = _Builder(relpath, lines, comment_suppressions(lines, "#"))
    for line, problem in undecodable:
        _input(builder, rules, "unreadable", line=line, value=problem)
    try:
        hits, problems = dependencies.hits(relpath, kind, text, tuple(compiled.dependencies), ctx)
    except Exception as exc:  # noqa: BLE001 - NOTE [one rule, one file]: one bad manifest costs itself only
        _input(builder, rules, "internal-error", value=f"reading this manifest failed: {type(exc).__name__}: {exc}")
        return builder.result()
    for problem in problems:
        _input(builder, rules, "parse-error", line=problem.line, value=problem.message)
    for rule, line, value, name, subject, optional in hits:
        text_line = lines[line - 1] if 0 < line <= len(lines) else ""
        col = len(text_line) - len(text_line.lstrip()) + 1
        builder.add(rule, line, col, value=value, name=name, subject=subject, guarded=optional)
    result = builder.result()
    return replace(result, scanned=scanned or bool(result.findings), lines=len(lines))


def _scan_python(relpath: str, data: bytes, rules: RuleSet, project: Project = EMPTY,
                 precheck: bool = True, parse=None) -> FileResult:
    """scan_source for Python files, notebooks and native sources."""
    base = relpath.rsplit("/", 1)[-1]
    if base in BUILD_FILES and not base.endswith(".py"):
        return FileResult(relpath, scanned=False)
    if relpath.endswith(NATIVE_SUFFIXES):
        return _scan_native(relpath, data, rules)
    where = None
    if relpath.endswith(".ipynb"):
        try:
            text, where = native.notebook_source(data)
        except (ValueError, UnicodeDecodeError) as exc:
            builder = _Builder(relpath, [], {})
            _input(builder, rules, "unreadable", value=f"not a readable notebook: {exc}")
            return builder.result()
        except RecursionError:
            builder = _Builder(relpath, [], {})
            _input(builder, rules, "unreadable", value="not a readable notebook: JSON nested too deeply")
            return builder.result()
    else:
        text = _decoded(relpath, rules, data)
        if isinstance(text, FileResult):
            return text
    text = _universal_newlines(text)
    compiled = rules.compiled
    extra = _extra_words(project)
    blank = not text.strip()
    if precheck and not blank and where is None and "\x00" not in text and not compiled.relevant(text, extra):
        # skipped (NOTE [pre-check]): only the line count is needed, not the lines themselves
        count = text.count("\n") + (not text.endswith("\n"))
        return replace(_Builder(relpath, [], suppressions(text)).result(), lines=count, parsed=False,
                       imports=from_import_names(text), modules=demos.imported_modules(text, relpath))
    lines = _split_lines(text) if where is None else text.split("\n")
    builder = _Builder(relpath, lines, suppressions(text), where)
    if blank:
        if base != "__init__.py" and where is None:
            _input(builder, rules, "empty-file", value="empty file")
        return builder.result()
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        _input(builder, rules, "unreadable", line=line, value="contains NUL bytes (a binary file?)")
        return builder.result()
    if precheck:   # a .py file here passed the check above; a notebook is checked now
        if where is not None and not compiled.relevant(text, extra):
            return replace(builder.result(), parsed=False, imports=from_import_names(text))
        relevant = True
    else:
        regex = compiled.token_regex(extra)
        relevant = compiled.always or (regex is not None and regex.search(text) is not None)
    if not relevant and "parse-error" not in compiled.inputs:
        return builder.result()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree, text = _parse(text, relpath, where, builder, rules, parse)
    except SyntaxError as exc:
        line = exc.lineno or 1
        _input(builder, rules, "parse-error", line=line, col=max(1, exc.offset or 1), value=exc.msg)
        return builder.result()
    except (MemoryError, RecursionError):
        _input(builder, rules, "parse-error", value="too deeply nested for the Python parser")
        return builder.result()
    except ValueError as exc:
        _input(builder, rules, "unreadable", value=f"cannot parse: {exc}")
        return builder.result()
    if not relevant:   # not walked, but its own-package imports may name a wrapper (NOTE [wrappers across files])
        return replace(builder.result(), imports=own_imports(tree, relpath, project.packages),
                       modules=demos.imported_modules(text, relpath))
    limit = sys.getrecursionlimit()
    try:
        # Deeply nested expressions (long `a + b + ...` chains) recurse once per level; Python
        # frames do not use the C stack on 3.11+, so a higher limit is safe for the walk.
        sys.setrecursionlimit(max(limit, _WALK_DEPTH))
        visitor = Visitor(relpath, text, tree, compiled, project.extensions, project.packages, project.wrappers)
        hits = visitor.run()
    except RecursionError:
        _input(builder, rules, "internal-error", value="expression nested too deeply to analyse")
        return builder.result()
    finally:
        sys.setrecursionlimit(limit)
    for hit in hits:
        try:
            builder.add_node(hit)
        except Exception as exc:  # noqa: BLE001 - NOTE [one rule, one file]
            _input(builder, rules, "internal-error", line=getattr(hit.node, "lineno", 1),
                   value=f"rule {hit.rule.id} ({hit.rule.name}) failed here: {type(exc).__name__}: {exc}")
    for line, rule, exc in visitor.failures:
        what = f"rule {rule.id} ({rule.name}) failed here" if rule is not None \
            else "the analysis of this statement failed"
        detail = "nested too deeply to walk" if isinstance(exc, RecursionError) else f"{type(exc).__name__}: {exc}"
        _input(builder, rules, "internal-error", line=line, value=f"{what}: {detail}")
    facts = file_facts(builder.relpath, tree, visitor.bindings, hits, where)
    return replace(builder.result(), exports=visitor.exports(), imports=tuple(sorted(set(visitor.own_imports))),
                   facts=facts, demos=demos.blocks(tree) if where is None else (),
                   modules=demos.imported_modules(text, relpath), members=tuple(sorted(set(visitor.member_sources))))


# NOTE [wrappers across files]
# A project's helper that wraps a custom-op API (`def get_operator(ns, name): return
# getattr(getattr(torch.ops, ns), name)` in common.py) is used from other files
# (`from .common import get_operator`). The per-file scan stays pure: each FileResult lists the
# wrappers its file defines (`exports`) and the own-package names it imports (`imports`); after the
# first pass, the files that import an exported wrapper are scanned again with the wrappers added
# to the project facts (`Project.wrappers`), so their calls are sites too. The second pass reads
# only those files (usually a handful); its results are cached under a salt that adds the wrappers.
def _wrapper_facts(results) -> frozenset[str]:
    return frozenset(e for r in results for e in r.exports)


def _importers(results, wrappers: frozenset[str]) -> list[str]:
    """The files importing a wrapper: by its dotted name or any dotted tail of it."""
    tails = set()
    for wrapper in wrappers:
        parts = wrapper.rsplit("=", 1)[0].split(".")
        tails.update(".".join(parts[i:]) for i in range(len(parts)))
    return [r.path for r in results if not tails.isdisjoint(r.imports)]


def _second_pass(results: list[FileResult], project: Project, rules: RuleSet, read,
                 precheck: bool = True, cache=None, deps=None, parse=None) -> list[FileResult]:
    wrappers = _wrapper_facts(results)
    if not wrappers:
        return results
    again = set(_importers(results, wrappers))
    if not again:
        return results
    project = replace(project, wrappers=project.wrappers | wrappers)
    if cache is not None:   # the second pass' results, under a salt that also covers the wrappers
        from opscan.scan.cache import content_hash, entry_key

        cache = cache.salted("wrappers", *sorted(wrappers))
        try:
            cache.base.mkdir(parents=True, exist_ok=True)
        except OSError:
            cache = None
    out = []
    for result in results:
        path = result.path
        if path in again:
            try:
                data = read(path)
            except OSError:
                out.append(result)   # vanished since the first pass: keep what it gave
                continue
            key = entry_key(path, content_hash(data)) if cache is not None else ""
            payload = cache.get(key) if cache is not None else None
            try:
                result = decode_result(payload) if payload is not None else None
            except (KeyError, TypeError, ValueError, IndexError):   # not intact: scan again
                result = None
            if result is None:
                result = scan_source(path, data, rules, project, precheck, deps, parse)
                if cache is not None:
                    cache.put(key, encode_result(result))
        out.append(result)
    return out


def _universal_newlines(text: str) -> str:
    """`\r\n` and a lone `\r` end lines for Python (and ast's line numbers): make them `\n`."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _split_lines(text: str) -> list[str]:
    """Lines as Python counts them: only `\n` ends a line (not form feed, U+2028, ...)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line + "\n" for line in lines]


def _parse(text: str, relpath: str, where, builder: "_Builder", rules: RuleSet, parse=None):
    """Parse `text` (a .py file through `parse`, the run's project index, when given); in a notebook,
    a code cell that does not parse is reported (OPS000 at its own cell and line) and blanked, so
    the other cells are still scanned. Returns (tree, text)."""
    if where is None:
        return (parse(relpath, text) if parse is not None else parse_source(text, relpath)), text
    reported: set[int] = set()
    while True:
        try:
            return parse_source(text, relpath), text
        except SyntaxError as exc:
            line = exc.lineno or 0
            if where is None or not 0 < line <= len(where) or where[line - 1][0] in reported:
                raise
            cell = where[line - 1][0]
            reported.add(cell)
            _input(builder, rules, "parse-error", line=line, col=max(1, exc.offset or 1), value=exc.msg)
            text = "\n".join("" if where[i][0] == cell else part
                             for i, part in enumerate(text.split("\n")) if i < len(where)) + "\n"


def _scan_native(relpath: str, data: bytes, rules: RuleSet) -> FileResult:
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    builder = _Builder(relpath, lines, comment_suppressions(lines))
    for rule, line, value in native.native_hits(relpath, text, rules.compiled.files):
        builder.add(rule, line, 1, value=value)
    return builder.result()


def internal_error(relpath: str, exc: Exception, rules: RuleSet) -> FileResult:
    """The result for a file that could not be read (OPS001) or whose scan raised (OPS002)."""
    builder = _Builder(relpath, [], {})
    if isinstance(exc, UnreadableFile):
        _input(builder, rules, "unreadable", value=exc.reason)
    elif isinstance(exc, OSError):
        _input(builder, rules, "unreadable", value=f"cannot read: {exc.strerror or exc}")
    else:
        _input(builder, rules, "internal-error", value=f"{type(exc).__name__}: {exc}")
    return builder.result()


def _collect(results, check_fixes: bool, probe=None) -> ScanResult:
    findings: list[Finding] = []
    requires: list[tuple[str, ...]] = []
    supps: list[Suppression] = []
    scanned = lines = 0
    for result in results:
        scanned += result.scanned
        lines += result.lines
        findings.extend(result.findings)
        requires.extend(result.requires or [()] * len(result.findings))
        supps.extend(result.suppressions)
    order = sorted(range(len(findings)), key=lambda i: findings[i].sort_key())
    findings = [findings[i] for i in order]
    requires = [requires[i] for i in order]
    notes: list[str] = []
    if check_fixes:
        findings, notes = _check_fixes(findings, requires, probe)
    return ScanResult(tuple(findings), scanned, tuple(sorted(supps, key=lambda s: (s.path, s.line))),
                      tuple(notes), lines, merge(r.facts for r in results))


def unused_suppression_findings(result: ScanResult, rules: RuleSet, known, read_lines) -> list[Finding]:
    """OPS003 findings (rules/unused-suppression.yaml) from the scan's per-file suppression usage.

    Args:
        result: the scan, with its suppressions and which codes they silenced.
        rules: the rules that ran; nothing is reported when the unused-suppression rule is not among them.
        known: every rule code opscan knows (built-in and extra rules, selected or not).
        read_lines: path -> the file's lines (for the snippet), or None when unreadable.
    """
    from dataclasses import replace

    from opscan.scan import suppressions as supp

    rule = rules.input_rule("unused-suppression")
    if rule is None:
        return []
    by_path: dict[str, list[Suppression]] = {}
    for item in result.suppressions:
        by_path.setdefault(item.path, []).append(item)
    active = {r.id for r in rules}
    out: list[Finding] = []
    for path, items in sorted(by_path.items()):
        if path.endswith(".ipynb"):   # suppression lines there are not cell lines: not judged
            continue
        declared = {s.line: frozenset(s.codes) for s in items}
        used = [(s.line, code) for s in items for code in s.used]
        for finding in supp.unused(path, declared, used, active, set(known) | active, read_lines(path)):
            out.append(replace(finding, rule=rule.id, name=rule.name, category=rule.category, severity=rule.severity,
                               message=rule.format(rule.message, value=finding.message),
                               fix=rule.format(rule.fix), task=rule.task))
    return out


def scan_memory(files: dict[str, bytes | str], rules: RuleSet | None = None, check_fixes: bool = False,
                precheck: bool = True, deps=None) -> ScanResult:
    """Scan files held in memory (relative path -> content); used by rule examples and tests.
    `precheck=False`: parse every file (NOTE [pre-check]), for tests comparing both paths.
    `deps`: the DependencyContext manifests are judged against (scan/dependencies.py)."""
    rules = rules if rules is not None else load_rules()
    data = {k: v.encode("utf-8") if isinstance(v, str) else v for k, v in sorted(files.items())}
    project = project_from_files(data, local_packages("", False, data))
    results = _second_pass([scan_source(rel, blob, rules, project, precheck, deps) for rel, blob in data.items()],
                           project, rules, data.__getitem__, precheck, deps=deps)
    results = demos.apply(results, lambda: [(rel, blob) for rel, blob in data.items() if demos.is_script_doc(rel)],
                          lambda: [])
    results = members.python_members(results, rules, data.__contains__)
    return mark_fixable(_collect(_dedupe_locks(results), check_fixes), rules)


# The lock files and the manifests whose versions they resolve (NOTE [manifests in the scan]).
_LOCKS = {"uv.lock": ("pyproject.toml",), "poetry.lock": ("pyproject.toml",), "pdm.lock": ("pyproject.toml",),
          "Pipfile.lock": ("Pipfile",)}


def _dedupe_locks(results: list[FileResult]) -> list[FileResult]:
    """A lock's finding on a package its manifest (same folder) already reports, under the same
    rule, is dropped: the manifest's line is the one to change, the lock follows (reported once)."""
    by_path = {r.path: r for r in results}
    out = []
    for result in results:
        folder, _, base = result.path.rpartition("/")
        owners = [by_path.get(f"{folder}/{m}" if folder else m) for m in _LOCKS.get(base, ())]
        reported = {(f.rule, f.subject.split(" ")[0]) for owner in owners if owner is not None for f in owner.findings}
        # the manifest's CUDA index (OPS504 on "index") is the cause of every CUDA build its lock resolves
        indexed = {f.rule for owner in owners if owner is not None for f in owner.findings if f.subject == "index"}
        if reported and result.findings:
            kept = [(f, r) for f, r in zip(result.findings, result.requires or [()] * len(result.findings))
                    if (f.rule, f.subject.split(" ")[0]) not in reported and f.rule not in indexed]
            if len(kept) != len(result.findings):
                result = replace(result, findings=tuple(f for f, _ in kept), requires=tuple(r for _, r in kept))
        out.append(result)
    return out


def requirement_includes(root: Path, relpaths: list[str]) -> list[str]:
    """The files the discovered requirements files include (`-r`/`-c`) whose names do not say they
    are one (`-r dev.txt`), relative to the root; read only when a requirements file names one."""
    from opscan.scan.manifests import included_files

    listed = {rel for rel in relpaths if manifest_kind(rel)}
    queue = [rel for rel in relpaths if manifest_kind(rel) == "requirements"]
    extra: list[str] = []
    while queue:
        rel = queue.pop()
        try:
            text = (root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "-r" not in text and "-c" not in text and "--requirement" not in text and "--constraint" not in text:
            continue
        folder = rel.rpartition("/")[0]
        for name in included_files(text):
            candidate = os.path.normpath(os.path.join(folder, name)).replace(os.sep, "/")
            if candidate.startswith("..") or candidate in listed or not (root / candidate).is_file():
                continue
            listed.add(candidate)
            extra.append(candidate)
            queue.append(candidate)
    return sorted(extra)


def mark_fixable(result: ScanResult, rules: RuleSet) -> ScanResult:
    """Set Finding.fixable from each finding's rule (`autofix`, docs/fix.md); derived, never cached."""
    by_id = {r.id: r for r in rules}
    findings = tuple(replace(f, fixable=True) if by_id.get(f.rule) is not None and by_id[f.rule].autofix is not None
                     and by_id[f.rule].autofix.fixes(f.subject, f.guarded) else f for f in result.findings)
    return replace(result, findings=findings)


def read_project(root: Path, relpaths: list[str]) -> Project:
    """Project facts from the build files among `relpaths` and at the root, and its own packages."""
    build: dict[str, bytes] = {}
    folders = {""}
    for rel in relpaths:            # the folders of the scanned files and their parents (pre-commit)
        parts = rel.split("/")[:-1]
        if parts and parts[0] == "..":
            continue
        folders.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    candidates = [r for r in relpaths if r.rsplit("/", 1)[-1] in BUILD_FILES]
    candidates += [f"{folder}/{name}" if folder else name for folder in sorted(folders) for name in BUILD_FILES]
    listed = set(relpaths)
    for rel in dict.fromkeys(candidates):
        if rel in build or (rel not in listed and not os.path.isfile(root / rel)):   # a stat, not a read
            continue
        try:
            build[rel] = read_source_bytes(root / rel, root)
        except OSError:
            continue
    return project_from_files(build, packages_on_disk(root))


def scan_paths(root: Path | str, paths=None, rules: RuleSet | None = None, exclude=(), jobs: int = 1,
               check_fixes: bool = True, cache=None, probe=None, precheck: bool = True, deps=None,
               index: ProjectIndex | None = None) -> ScanResult:
    """Scan the files under `root` (or just `paths`, files or folders) with `rules`.

    Args:
        root: findings' paths are relative to it.
        paths: what to scan (default: the whole root).
        rules: default: the built-in rules.
        exclude: extra glob patterns to skip.
        jobs: worker processes (1: in-process).
        check_fixes: check suggested replacements against the installed torch (see fixes.py).
        cache: an opscan.scan.cache.ResultCache, or None; its salt is extended with the project
            facts here, since results depend on them.
        probe: the torch lookup of the fix check (default: a fresh TorchProbe), e.g. a
            probe_cache.CachedProbe that remembers answers between runs.
        precheck: skip the parse of files that spell no token (NOTE [pre-check]); False for tests.
        deps: the DependencyContext manifests are judged against (None: no release known).
        index: the run's project index of `root` (opscan/index): files it read or parsed already
            (the model search ran first) are not read or parsed again; default a new one.
    Raises:
        InputError: the root or a path does not exist.
    """
    from opscan.scan.workers import Codec, scan_files

    root = Path(root)
    if not root.exists():
        raise InputError("no such file or directory", path=str(root))
    root = root.resolve()
    if root.is_file():
        paths, root = [root], root.parent
    rules = rules if rules is not None else load_rules()
    relpaths = discover(root, paths, exclude)
    includes = requirement_includes(root, relpaths)
    if includes:
        relpaths = sorted(set(relpaths) | set(includes))
    project = read_project(root, relpaths)
    if includes:
        project = replace(project, requirements=frozenset(includes))
    if index is None or index.root != root:
        index = ProjectIndex(root)
    scan = functools.partial(scan_source, project=project, precheck=precheck, deps=deps, parse=index.scan_parse)
    on_error = functools.partial(_on_error, rules=rules)
    codec = Codec(encode_result, decode_result, _worth_an_entry) if cache is not None else None
    if cache is not None:
        from opscan.scan.cache import facts_fingerprint

        cache = cache.salted(facts_fingerprint(project), "precheck" if precheck else "full",
                             deps.fingerprint() if deps is not None else "no-deps")
    results = [result for _, result in scan_files(root, relpaths, scan, rules, jobs=jobs, cache=cache,
                                                  codec=codec, on_error=on_error,
                                                  full_walk=paths is None and not exclude,
                                                  read=functools.partial(_read, index))]
    results = _second_pass(results, project, rules, functools.partial(_read, index), precheck, cache, deps,
                           index.scan_parse)
    scanned = {r.path for r in results}
    others = functools.partial(demos.project_files, index, lambda rel: rel.endswith(".py") and rel not in scanned)
    results = demos.apply(results, functools.partial(demos.project_files, index, demos.is_script_doc), others)
    results = members.python_members(results, rules, lambda rel: (root / rel).is_file())
    result = mark_fixable(_collect(_dedupe_locks(results), check_fixes, probe), rules)
    from opscan.scan.includes import missing_includes   # a `-r` file that is not there (scan/includes.py)

    missing = missing_includes(root, relpaths, rules, project.requirements)
    if missing:
        result = replace(result, findings=tuple(sorted(result.findings + tuple(missing), key=Finding.sort_key)))
    return result


def _read(index: ProjectIndex, relpath: str, abspath: str | None = None) -> bytes:
    """A scanned file's bytes: through the run's index for a file of its tree (read once, not kept
    by the scan: NOTE [one project index]), else read as given (a file outside the root)."""
    if relpath.startswith("../") or os.path.isabs(relpath):
        return read_source_bytes(Path(abspath) if abspath else index.root / relpath, None)
    return index.data(relpath, keep=False)


def _worth_an_entry(result: FileResult) -> bool:
    """A file the pre-check skipped is re-checked as fast as its entry would be read: index only."""
    return result.parsed


def _on_error(relpath: str, exc: Exception, rules: RuleSet) -> FileResult:
    return internal_error(relpath, exc, rules)


def encode_result(result: FileResult) -> dict:
    """A FileResult as JSON-able data (for the cache)."""
    return {
        "path": result.path, "scanned": result.scanned, "lines": result.lines,
        "findings": [[f.rule, f.name, f.category, f.severity, f.message, f.location.path, f.location.line,
                      f.location.column, f.location.end_line, f.location.end_column, f.location.cell, f.fix,
                      f.guarded, f.snippet, f.task, f.subject] for f in result.findings],
        "requires": [list(r) for r in result.requires],
        "suppressions": [[s.line, list(s.codes), list(s.used)] for s in result.suppressions],
        "exports": list(result.exports), "imports": list(result.imports),
        "facts": encode_facts(result.facts), "parsed": result.parsed,
        "demos": [list(span) for span in result.demos], "modules": list(result.modules),
        "members": [list(member) for member in result.members],
    }


def decode_result(data: dict) -> FileResult:
    """The inverse of encode_result."""
    findings = tuple(
        Finding(rule=f[0], name=f[1], category=f[2], severity=f[3], message=f[4],
                location=Location(f[5], f[6], f[7], f[8], f[9], f[10]), fix=f[11], guarded=f[12], snippet=f[13],
                task=f[14], subject=f[15])
        for f in data["findings"])
    return FileResult(
        data["path"], findings, tuple(tuple(r) for r in data["requires"]),
        tuple(Suppression(data["path"], s[0], tuple(s[1]), tuple(s[2])) for s in data["suppressions"]),
        data["scanned"], data["lines"], tuple(data.get("exports", ())), tuple(data.get("imports", ())),
        decode_facts(data.get("facts")), data.get("parsed", True),
        tuple((int(a), int(b)) for a, b in data.get("demos", ())), tuple(data.get("modules", ())),
        tuple((str(a), str(b), int(c), str(d)) for a, b, c, d in data.get("members", ())))

