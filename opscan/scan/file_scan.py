"""The per-file scan: `scan_source` is a pure function of (relative path, bytes, rules, project), the
unit a process pool or a content-addressed cache works on (see workers.py, cache.py); `scan_file`
adds the run's enrichment of its result."""

from __future__ import annotations

import ast
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from opscan.index import parse as parse_source
from opscan.records import Finding
from opscan.scan import demos, large, native, prose
from opscan.scan.builder import Builder, add_input
from opscan.scan.enrichment import Enrichment, enriched
from opscan.scan.facts import file_facts
from opscan.scan.files import BUILD_FILES, NATIVE_SUFFIXES, manifest_kind, other_hardware
from opscan.scan.matchers import from_import_names
from opscan.scan.project import EMPTY, Project
from opscan.scan.results import FileResult
from opscan.scan.rules import RuleSet
from opscan.scan.sources import DecodeError, comment_suppressions, decode, suppressions
from opscan.scan.visitor import Visitor, own_imports

if TYPE_CHECKING:
    from opscan.scan.dependencies import DependencyContext

ParseFn = Callable[[str, str], ast.Module]     # (relpath, text) -> tree: the run's one parse (opscan/index)


_WALK_DEPTH = 20_000

# NOTE [one rule, one file]
# A rule that raises on one statement of one file costs only that statement: the visitor records
# (line, rule, exception) and walks on (visitor.py `_statement`), and a hit whose finding cannot
# be built is dropped alone. Each becomes an OPS002 finding at that line naming the rule, so the
# gap is visible while the file's other findings, and every other file, are kept. Only a failure
# outside any statement (or in reading the file) costs the whole file (workers.py `on_error`).


def _decoded(relpath: str, rules: RuleSet, data: bytes) -> str | FileResult:
    """The file's text, or its result when it cannot be decoded (one "unreadable" finding at the line)."""
    try:
        return decode(data)
    except DecodeError as exc:
        builder = Builder(relpath, [], {})
        add_input(builder, rules, "unreadable", line=exc.line, value=str(exc))
        return builder.result()


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
#   - its imports are not resolved, yet the wrapper pass (NOTE [wrappers across files] in
#     wrappers.py) must know whether it imports a wrapper another file defines: the names its `from X import a, b as c`
#     statements bring in are read from the text (FROM_IMPORT, parenthesised lists included) and
#     listed bare in `imports` ("a", "b"), which `_importers` matches against the wrappers' last
#     component. A file that imports a wrapper is then scanned again with the wrapper names as
#     extra tokens, so it is parsed and its calls are sites (tests/scan/test_scan_files.py).
# `precheck=False` restores the old path (every file parsed, the visitor's own line filter only);
# tests compare both (tests/scan/test_scan_files.py).
def scan_source(relpath: str, data: bytes, rules: RuleSet, project: Project = EMPTY,
                precheck: bool = True, deps: DependencyContext | None = None, parse: ParseFn | None = None
                ) -> FileResult:
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
# that already reports the same package is not reported again (locks.py `dedupe_locks`).
def scan_manifest(relpath: str, data: bytes, rules: RuleSet, kind: str, deps: DependencyContext | None = None
                  ) -> FileResult:
    """Findings of one dependency manifest (NOTE [manifests in the scan])."""
    from opscan.scan import dependencies

    compiled = rules.compiled
    scanned = kind != "pyproject"   # a pyproject without dependency findings stays a build file
    if not compiled.dependencies or other_hardware(relpath):   # NOTE [manifests for other hardware]
        return FileResult(relpath, scanned=False, parsed=False)
    text, undecodable = dependencies.decode_lines(data)   # a bad line costs itself only (NOTE [manifest lines])
    text = _universal_newlines(text)
    ctx = deps if deps is not None else dependencies.EMPTY
    if not undecodable and not dependencies.relevant(text, tuple(compiled.dependencies), ctx):
        count = text.count("\n") + (bool(text) and not text.endswith("\n"))
        return FileResult(relpath, scanned=scanned and kind != "setup-py", lines=count, parsed=False)
    lines = _split_lines(text)
    builder = Builder(relpath, lines, comment_suppressions(lines, "#"))
    for line, why in undecodable:
        add_input(builder, rules, "unreadable", line=line, value=why)
    try:
        hits, problems = dependencies.hits(relpath, kind, text, tuple(compiled.dependencies), ctx)
    except Exception as exc:  # noqa: BLE001 - NOTE [one rule, one file]: one bad manifest costs itself only
        add_input(builder, rules, "internal-error", value=f"reading this manifest failed: {type(exc).__name__}: {exc}")
        return builder.result()
    for problem in problems:
        add_input(builder, rules, "parse-error", line=problem.line, value=problem.message)
    alternative: dict[tuple[str, int, str], str] = {}   # NOTE [CUDA alternatives] in scan/alternatives.py
    for rule, line, value, name, subject, optional, cpu_extra in hits:
        text_line = lines[line - 1] if 0 < line <= len(lines) else ""
        col = len(text_line) - len(text_line.lstrip()) + 1
        builder.add(rule, line, col, value=value, name=name, subject=subject, guarded=optional)
        if cpu_extra:
            alternative[(rule.id, line, subject)] = cpu_extra
    result = builder.result()
    if alternative:
        from opscan.scan.alternatives import demote

        result = replace(result, findings=tuple(
            demote(f, alternative[key]) if (key := (f.rule, f.location.line, f.subject)) in alternative else f
            for f in result.findings))
    return replace(result, scanned=scanned or bool(result.findings), lines=len(lines))


def _scan_python(relpath: str, data: bytes, rules: RuleSet, project: Project = EMPTY,
                 precheck: bool = True, parse: ParseFn | None = None) -> FileResult:
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
            builder = Builder(relpath, [], {})
            add_input(builder, rules, "unreadable", value=f"not a readable notebook: {exc}")
            return builder.result()
        except RecursionError:
            builder = Builder(relpath, [], {})
            add_input(builder, rules, "unreadable", value="not a readable notebook: JSON nested too deeply")
            return builder.result()
    else:
        decoded = _decoded(relpath, rules, data)
        if isinstance(decoded, FileResult):
            return decoded
        text = decoded
    text = _universal_newlines(text)
    compiled = rules.compiled
    extra = _extra_words(project)
    blank = not text.strip()
    if precheck and not blank and where is None and "\x00" not in text and \
            not (compiled.relevant(text, extra) and prose.relevant(compiled, text, extra)):
        # skipped (NOTE [pre-check], NOTE [prose in the pre-check]): only the line count is needed
        count = text.count("\n") + (not text.endswith("\n"))
        supp = suppressions(text)   # their lines are kept for OPS003 (suppressions.py), split only when there are some
        return replace(Builder(relpath, _split_lines(text) if supp else [], supp).result(), lines=count, parsed=False,
                       imports=from_import_names(text), modules=demos.imported_modules(text, relpath))
    lines = _split_lines(text) if where is None else text.split("\n")
    builder = Builder(relpath, lines, suppressions(text), where)
    if blank:
        if base != "__init__.py" and where is None:
            add_input(builder, rules, "empty-file", value="empty file")
        return builder.result()
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        add_input(builder, rules, "unreadable", line=line, value="contains NUL bytes (a binary file?)")
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
            if where is None and large.is_large(text):   # NOTE [very large files]: block by block
                tree = large.lean_tree(text, relpath, compiled, extra)
            else:
                tree, text = _parse(text, relpath, where, builder, rules, parse)
    except SyntaxError as exc:
        line = exc.lineno or 1
        add_input(builder, rules, "parse-error", line=line, col=max(1, exc.offset or 1), value=exc.msg)
        return builder.result()
    except (MemoryError, RecursionError):
        add_input(builder, rules, "parse-error", value="too deeply nested for the Python parser")
        return builder.result()
    except ValueError as exc:
        add_input(builder, rules, "unreadable", value=f"cannot parse: {exc}")
        return builder.result()
    if not relevant:   # not walked, but its own-package imports may name a wrapper (wrappers.py)
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
        add_input(builder, rules, "internal-error", value="expression nested too deeply to analyse")
        return builder.result()
    finally:
        sys.setrecursionlimit(limit)
    for hit in hits:
        try:
            builder.add_node(hit)
        except Exception as exc:  # noqa: BLE001 - NOTE [one rule, one file]
            add_input(builder, rules, "internal-error", line=getattr(hit.node, "lineno", 1),
                   value=f"rule {hit.rule.id} ({hit.rule.name}) failed here: {type(exc).__name__}: {exc}")
    for line, failed, error in visitor.failures:
        what = f"rule {failed.id} ({failed.name}) failed here" if failed is not None \
            else "the analysis of this statement failed"
        detail = "nested too deeply to walk" if isinstance(error, RecursionError) \
            else f"{type(error).__name__}: {error}"
        add_input(builder, rules, "internal-error", line=line, value=f"{what}: {detail}")
    facts = file_facts(builder.relpath, tree, visitor.bindings, hits, where)
    return replace(builder.result(), exports=visitor.exports(), imports=tuple(sorted(set(visitor.own_imports))),
                   facts=facts, demos=demos.blocks(tree) if where is None else (),
                   modules=demos.imported_modules(text, relpath), members=tuple(sorted(set(visitor.member_sources))))


def _universal_newlines(text: str) -> str:
    """`\r\n` and a lone `\r` end lines for Python (and ast's line numbers): make them `\n`."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _split_lines(text: str) -> list[str]:
    """Lines as Python counts them: only `\n` ends a line (not form feed, U+2028, ...)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line + "\n" for line in lines]


def _parse(text: str, relpath: str, where: Sequence[tuple[int, int]] | None, builder: Builder, rules: RuleSet,
           parse: ParseFn | None = None) -> tuple[ast.Module, str]:
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
            add_input(builder, rules, "parse-error", line=line, col=max(1, exc.offset or 1), value=exc.msg)
            text = "\n".join("" if where[i][0] == cell else part
                             for i, part in enumerate(text.split("\n")) if i < len(where)) + "\n"


def _scan_native(relpath: str, data: bytes, rules: RuleSet) -> FileResult:
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines(keepends=True)
    builder = Builder(relpath, lines, comment_suppressions(lines))
    for rule, line, value in native.native_hits(relpath, text, rules.compiled.files):
        builder.add(rule, line, 1, value=value)
    return builder.result()


def scan_file(relpath: str, data: bytes, rules: RuleSet, project: Project = EMPTY, precheck: bool = True,
              deps: DependencyContext | None = None, parse: ParseFn | None = None,
              enrich: Enrichment | None = None) -> FileResult:
    """`scan_source`, then the run's enrichment of its result (NOTE [enrichments] in enrichment.py),
    handed the tree the scan parsed (a Python file's), so that it never parses it again."""
    if enrich is None:
        return scan_source(relpath, data, rules, project, precheck, deps, parse)
    trees: list[ast.Module] = []

    def parsed(rel: str, text: str) -> ast.Module:
        tree = parse(rel, text) if parse is not None else parse_source(text, rel)
        trees.append(tree)
        return tree

    result = scan_source(relpath, data, rules, project, precheck, deps, parsed)
    done: FileResult = enriched(relpath, data, result, rules, enrich, trees[-1] if trees else None)
    return done
