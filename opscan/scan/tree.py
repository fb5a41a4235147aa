"""The scan of a tree: discover files -> read project facts -> scan each file (file_scan.py, in
workers, cached) -> second pass (wrappers.py) -> demos, members, lock dedupe -> collect.
`scan_paths` runs it over a folder, `scan_memory` over files held in memory.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opscan.errors import InputError
from opscan.fsutil import read_source_bytes
from opscan.index import ProjectIndex
from opscan.records import Finding
from opscan.scan import alternatives, demos, members
from opscan.scan.builder import internal_error
from opscan.scan.collect import collect
from opscan.scan.enrichment import Enrichment
from opscan.scan.files import BUILD_FILES, discover, manifest_kind
from opscan.scan.locks import dedupe_locks
from opscan.scan.project import Project, local_packages, packages_on_disk, project_from_files
from opscan.scan.result_codec import decode_result, encode_result
from opscan.scan.results import FileResult, ScanResult
from opscan.scan.rules import RuleSet, load_rules
from opscan.scan.suppressions import unused_suppression_findings
from opscan.scan.wrappers import second_pass

if TYPE_CHECKING:
    from opscan.scan.cache import ResultCache
    from opscan.scan.dependencies import DependencyContext
    from opscan.scan.fixes import TorchProbe


def scan_memory(files: dict[str, bytes | str], rules: RuleSet | None = None, check_fixes: bool = False,
                precheck: bool = True, deps: DependencyContext | None = None) -> ScanResult:
    """Scan files held in memory (relative path -> content); used by rule examples and tests.
    `precheck=False`: parse every file (NOTE [pre-check]), for tests comparing both paths.
    `deps`: the DependencyContext manifests are judged against (scan/dependencies.py)."""
    from opscan.scan.file_scan import scan_source

    rules = rules if rules is not None else load_rules()
    data = {k: v.encode("utf-8") if isinstance(v, str) else v for k, v in sorted(files.items())}
    project = project_from_files(data, local_packages("", False, data))
    results = second_pass([scan_source(rel, blob, rules, project, precheck, deps) for rel, blob in data.items()],
                           project, rules, data.__getitem__, precheck, deps=deps)
    results = demos.apply(results, lambda: [(rel, blob) for rel, blob in data.items() if demos.is_script_doc(rel)],
                          lambda: [])
    results = members.python_members(results, rules, data.__contains__)
    results = alternatives.apply_files(results, lambda folder: _names_in(data, folder), data.get)
    return collect(dedupe_locks(results), rules, check_fixes)


def _names_in(paths: Iterable[str], folder: str) -> list[str]:
    """The file names directly in `folder` among relative paths."""
    return [p.rpartition("/")[2] for p in paths if p.rpartition("/")[0] == folder]


def _small_file(root: Path, relpath: str) -> bytes | None:
    """A sibling manifest's bytes, or None when unreadable or over 1 MiB (NOTE [CUDA alternatives])."""
    try:
        path = root / relpath
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 1 << 20:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _names_on_disk(root: Path, folder: str) -> list[str]:
    try:
        return [entry.name for entry in os.scandir(root / folder) if entry.is_file()]
    except OSError:
        return []


def requirement_includes(root: Path, relpaths: list[str]) -> list[str]:
    """The files the discovered requirements files include (`-r`/`-c`) whose names do not say they
    are one (`-r dev.txt`), relative to the root; read only when a requirements file names one."""
    kinds = {rel: kind for rel in relpaths if (kind := manifest_kind(rel))}
    listed = set(kinds)
    queue = [rel for rel, kind in kinds.items() if kind == "requirements"]
    extra: list[str] = []
    while queue:
        rel = queue.pop()
        try:
            text = (root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "-r" not in text and "-c" not in text and "--requirement" not in text and "--constraint" not in text:
            continue
        from opscan.scan.manifests import included_files   # only for a file that may include one

        folder = rel.rpartition("/")[0]
        for name in included_files(text):
            candidate = os.path.normpath(os.path.join(folder, name)).replace(os.sep, "/")
            if candidate.startswith("..") or candidate in listed or not (root / candidate).is_file():
                continue
            listed.add(candidate)
            extra.append(candidate)
            queue.append(candidate)
    return sorted(extra)


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
    base = str(root)
    for rel in dict.fromkeys(candidates):
        if rel in build or (rel not in listed and not os.path.isfile(os.path.join(base, rel))):   # a stat, not a read
            continue
        try:
            build[rel] = read_source_bytes(root / rel, root)
        except OSError:
            continue
    return project_from_files(build, packages_on_disk(root))


def scan_paths(root: Path | str, paths: Iterable[str | os.PathLike[str]] | None = None,
               rules: RuleSet | None = None, exclude: Iterable[str] = (), jobs: int = 1,
               check_fixes: bool = True, cache: ResultCache | None = None, probe: TorchProbe | None = None,
               precheck: bool = True, deps: DependencyContext | None = None,
               index: ProjectIndex | None = None, enrich: Enrichment | None = None,
               unused_suppressions: bool = False) -> ScanResult:
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
        enrich: completes each file's result where it was scanned, cached with it (NOTE
            [enrichments] in enrichment.py: fix/preview.py's fixable mark); None: `fixable` from
            the rules alone.
        unused_suppressions: add OPS003 (suppressions.py) when the rules select it, from the
            suppressions the scan recorded (no file is read again).
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
    scan = functools.partial(_scan_file, project=project, precheck=precheck, deps=deps, parse=index.scan_parse,
                             enrich=enrich)
    on_error = functools.partial(_on_error, rules=rules)
    codec = Codec(encode_result, decode_result, _worth_an_entry) if cache is not None else None
    if cache is not None:
        from opscan.scan.cache import facts_fingerprint

        cache = cache.salted(facts_fingerprint(project), "precheck" if precheck else "full",
                             deps.fingerprint() if deps is not None else "no-deps",
                             enrich.fingerprint() if enrich is not None else "no-enrichment")
    results = [result for _, result in scan_files(root, relpaths, scan, rules, jobs=jobs, cache=cache,
                                                  codec=codec, on_error=on_error,
                                                  full_walk=paths is None and not exclude,
                                                  read=functools.partial(_read, index),
                                                  prepare=enrich.prepare if enrich is not None else None)]
    results = second_pass(results, project, rules, functools.partial(_read, index), precheck, cache, deps,
                           index.scan_parse, enrich)
    scanned = {r.path for r in results}
    others = functools.partial(demos.project_files, index, lambda rel: rel.endswith(".py") and rel not in scanned)
    results = demos.apply(results, functools.partial(demos.project_files, index, demos.is_script_doc), others)
    results = members.python_members(results, rules, lambda rel: (root / rel).is_file())
    results = alternatives.apply_files(results, functools.partial(_names_on_disk, root),
                                       functools.partial(_small_file, root))
    result = collect(dedupe_locks(results), rules, check_fixes, probe)
    from opscan.scan.includes import missing_includes   # a `-r` file that is not there (scan/includes.py)

    extra = missing_includes(root, relpaths, rules, project.requirements)
    if unused_suppressions:
        extra += unused_suppression_findings(result, rules, rules.known)
    if extra:
        result = replace(result, findings=tuple(sorted(result.findings + tuple(extra), key=Finding.sort_key)))
    return result


def _read(index: ProjectIndex, relpath: str, abspath: str | None = None) -> bytes:
    """A scanned file's bytes: through the run's index for a file of its tree (read once, not kept
    by the scan: NOTE [one project index]), else read as given (a file outside the root)."""
    if relpath.startswith("../") or os.path.isabs(relpath):
        return read_source_bytes(Path(abspath) if abspath else index.root / relpath, None)
    return index.data(relpath, keep=False)


def _scan_file(relpath: str, data: bytes, rules: RuleSet, **options: Any) -> FileResult:
    """file_scan.scan_file, imported on the first file that is read: a warm run, whose results all
    come from the cache's tree index, never loads the scanner (its visitor, families and lexers)."""
    from opscan.scan.file_scan import scan_file

    return scan_file(relpath, data, rules, **options)


def _worth_an_entry(result: FileResult) -> bool:
    """A file the pre-check skipped is re-checked as fast as its entry would be read: index only."""
    return result.parsed


def _on_error(relpath: str, exc: Exception, rules: RuleSet) -> FileResult:
    return internal_error(relpath, exc, rules)
