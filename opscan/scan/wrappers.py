"""The tree run's second pass: the files that import a wrapper another file defines, scanned again
with it (NOTE [wrappers across files])."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from opscan.scan.builder import internal_error
from opscan.scan.enrichment import Enrichment
from opscan.scan.project import Project
from opscan.scan.result_codec import decode_result, encode_result
from opscan.scan.results import FileResult
from opscan.scan.rules import RuleSet

if TYPE_CHECKING:
    from opscan.scan.file_scan import ParseFn
    from opscan.scan.cache import ResultCache
    from opscan.scan.dependencies import DependencyContext

ReadFn = Callable[[str], bytes]                # relpath -> the file's bytes


# NOTE [wrappers across files]
# A project's helper that wraps a custom-op API (`def get_operator(ns, name): return
# getattr(getattr(torch.ops, ns), name)` in common.py) is used from other files
# (`from .common import get_operator`). The per-file scan stays pure: each FileResult lists the
# wrappers its file defines (`exports`) and the own-package names it imports (`imports`); after the
# first pass, the files that import an exported wrapper are scanned again with the wrappers added
# to the project facts (`Project.wrappers`), so their calls are sites too. The second pass reads
# only those files (usually a handful); its results are cached under a salt that adds the wrappers.
def _wrapper_facts(results: Iterable[FileResult]) -> frozenset[str]:
    return frozenset(e for r in results for e in r.exports)


def _importers(results: Iterable[FileResult], wrappers: frozenset[str]) -> list[str]:
    """The files importing a wrapper: by its dotted name or any dotted tail of it."""
    tails: set[str] = set()
    for wrapper in wrappers:
        parts = wrapper.rsplit("=", 1)[0].split(".")
        tails.update(".".join(parts[i:]) for i in range(len(parts)))
    return [r.path for r in results if not tails.isdisjoint(r.imports)]


def second_pass(results: list[FileResult], project: Project, rules: RuleSet, read: ReadFn,
                 precheck: bool = True, cache: ResultCache | None = None, deps: DependencyContext | None = None,
                 parse: ParseFn | None = None, enrich: Enrichment | None = None) -> list[FileResult]:
    wrappers = _wrapper_facts(results)
    if not wrappers:
        return results
    importers = set(_importers(results, wrappers))
    if not importers:
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
        if path in importers:
            try:
                data = read(path)
            except OSError:
                out.append(result)   # vanished since the first pass: keep what it gave
                continue
            key = entry_key(path, content_hash(data)) if cache is not None else ""
            payload = cache.get(key) if cache is not None else None
            again: FileResult | None
            try:
                again = decode_result(payload) if payload is not None else None
            except (KeyError, TypeError, ValueError, IndexError):   # not intact: scan again
                again = None
            if again is None:
                try:
                    from opscan.scan.file_scan import scan_file   # the scanner: only when a file is re-scanned

                    again = scan_file(path, data, rules, project, precheck, deps, parse, enrich)
                except Exception as exc:  # noqa: BLE001 - NOTE [one rule, one file]: as in the first pass
                    out.append(internal_error(path, exc, rules))
                    continue
                if cache is not None:
                    cache.put(key, encode_result(again))
            result = again
        out.append(result)
    return out
