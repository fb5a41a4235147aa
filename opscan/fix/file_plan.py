"""One file's fix, planned from its bytes and the scan's findings of exactly those bytes: the new bytes
and an outcome per finding. Pure (reads and writes nothing); `opscan fix` writes what it gives
(fix/files.py), the scan's fixable mark keeps which findings it rewrites (fix/preview.py).

This module imports no libcst at import time: the scan imports it on every run (warm ones too),
and libcst is needed only for a file the fixer would try.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from opscan.fix.scope import Probe, fixable, lookups, would_try
from opscan.records import Finding
from opscan.fix.reasons import FixStatus

__all__ = ["FilePlan", "AnsweredProbe", "Probe", "fixable", "has_fix", "lookups", "on_big_stack", "plan_file",
           "too_large", "would_try"]

if TYPE_CHECKING:
    from opscan.fix.elision import Elided
    from opscan.fix.module import SiteOutcome

INPUT_RULES = ("parse-error", "unreadable-file")   # a file with these is never touched

# NOTE [the fixer's size bound]
# libcst reads about 7k lines/s and holds some 10 kB per line of source while the codemods plan
# (measured on modeling_utils.py and on generated files, docs/benchmarks.md "The fixer's size
# bound"): a 700,002-line generated file took over 200 s and 7.4 GB before it was stopped. The
# largest hand-written file of transformers is 0.25 MB. So a file over MAX_FIX_BYTES is neither
# fixed by `opscan fix` nor planned for the scan's fixable mark: its findings are left ("file
# not touched: too large for the fixer"), the scan says so in one note, and libcst never sees it.
MAX_FIX_BYTES = 1 << 20

FIX_STACK = 512 << 20   # bytes of C stack for one file's rewrite (NOTE [deep nesting and libcst])


@dataclass(frozen=True)
class FilePlan:
    """What `opscan fix` does to one file: its bytes after, an outcome per finding, and why the file
    was not touched at all ("" when it was planned)."""

    after: bytes
    outcomes: tuple[SiteOutcome, ...]
    skipped: str = ""


def has_fix(finding: Finding, rules: dict[str, Any]) -> bool:
    """Whether the finding's rule declares a rewrite at all."""
    rule = rules.get(finding.rule)
    return rule is not None and rule.autofix is not None


def too_large(size: int) -> str:
    """Why a file of `size` bytes is not fixed (NOTE [the fixer's size bound]), or ""."""
    if size <= MAX_FIX_BYTES:
        return ""
    return f"too large for the fixer ({size:,} bytes; the bound is {MAX_FIX_BYTES:,})"


def plan_file(rel: str, before: bytes, findings: list[Finding], rules: dict[str, Any], *, unsafe: bool = False,
              probe: Probe | None = None, bindings: tuple[Any, ...] | None = None,
              outcomes_only: bool = False, tree: ast.Module | None = None) -> FilePlan:
    """Plan the fix of one file (`rel`, relative to its root) from its bytes and the scan's findings
    of those bytes. `rules`: rule id -> Rule; `bindings`: the scan's import bindings of the file
    (ScanFacts.bindings), which name torch's alias. `outcomes_only`: only the outcomes are wanted
    (the fixable mark), so a module may be planned elided (NOTE [planning on an elided module] in
    fix/elision.py) and `after` is not the file's rewrite; `tree`: the scan's parse of the file's
    decoded text, newlines made `\n` (else parsed again when needed). Raises what a codemod raises (a bug of
    opscan): callers turn it into their own per-file outcome."""
    from opscan.fix import manifest as manifest_fix
    from opscan.fix.module import SiteOutcome, fix_module, manual_outcome
    from opscan.fix.notebook import fix_notebook
    from opscan.scan.files import manifest_kind

    def left(why: str) -> FilePlan:
        return FilePlan(before, tuple(SiteOutcome(f, FixStatus.LEFT, f"file not touched: {why}", "file-skipped")
                                      if has_fix(f, rules) else manual_outcome(f, rules) for f in findings), why)

    kind = manifest_kind(rel)
    if kind and kind != "setup-py":   # text edits of exact lines (fix/manifest.py)
        if any(rules.get(f.rule) is not None and rules[f.rule].name in INPUT_RULES for f in findings):
            return FilePlan(before, tuple(manual_outcome(f, rules) for f in findings), "the manifest could not be read")
        after, outcomes = manifest_fix.fix_manifest(before, findings, rules)
        return FilePlan(after, outcomes)
    broken = [f for f in findings if rules.get(f.rule) is not None and rules[f.rule].name in INPUT_RULES]
    if broken:
        return left(broken[0].message)
    large = too_large(len(before))
    if large:
        return left(large)
    try:
        if rel.endswith(".ipynb"):
            result = on_big_stack(fix_notebook, before, findings, rules, unsafe, probe)
        else:
            cut = _elided(before, findings, rules, tree) if outcomes_only else None
            if cut is not None:    # NOTE [planning on an elided module]: outcomes only
                moved = [_moved(f, cut) for f in findings]
                result = on_big_stack(fix_module, before, moved, rules, unsafe, probe, planned=cut.text,
                                      bindings=None if bindings is None else tuple(
                                          replace(b, line=cut.line(b.line), end_line=cut.line(b.end_line) if b.end_line
                                                  else 0) for b in bindings if cut.keeps(b.line)))
                return FilePlan(before, tuple(replace(o, finding=f) for o, f in zip(result.outcomes, findings)))
            result = on_big_stack(fix_module, before, findings, rules, unsafe, probe, bindings=bindings)
    except (RecursionError, MemoryError) as exc:   # nested too deeply for libcst: this file only is left
        return left(f"too deeply nested for the fixer ({type(exc).__name__})")
    after = result.text if isinstance(result.text, bytes) else result.text.encode("utf-8")
    return FilePlan(after, result.outcomes)


def _moved(finding: Finding, cut: Elided) -> Finding:
    """The finding where its lines are in the elided text."""
    loc = finding.location
    return replace(finding, location=replace(loc, line=cut.line(loc.line),
                                             end_line=cut.line(loc.end_line) if loc.end_line else 0))


def _elided(before: bytes, findings: list[Finding], rules: dict[str, Any], tree: ast.Module | None) -> Elided | None:
    """The module to plan the outcomes on (NOTE [planning on an elided module]), or None: the whole file."""
    from opscan.fix.elision import WHOLE_MODULE, elided
    from opscan.scan.sources import DecodeError, decode

    if any(has_fix(f, rules) and rules[f.rule].autofix.codemod in WHOLE_MODULE for f in findings):
        return None
    try:
        text = decode(before)
    except DecodeError:
        return None
    return elided(text, [(f.location.line, f.location.end_line or f.location.line) for f in findings], tree)


T = TypeVar("T")


# NOTE [deep nesting and libcst]
# libcst's native parser recurses once per operand of a long `a and b and ...` chain (stdlib ast
# keeps it flat): at 10,000 operands it overflows the main thread's 8 MB C stack, a segmentation
# fault that would end `opscan fix` and, through the fixable mark, `opscan PATH` itself. A file
# is therefore rewritten on a thread with a FIX_STACK stack, where that parse succeeds, and the
# RecursionError its Python visitors then raise (from about 1,000 levels) leaves that file alone
# ("too deeply nested for the fixer"); the other files are fixed (tests/fix/test_fix_cli.py).
def on_big_stack(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` on a thread with a FIX_STACK stack; its exception is raised here."""
    import threading

    result: list[T] = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            result.append(fn(*args, **kwargs))
        except BaseException as exc:   # noqa: BLE001 - handed to the caller's thread, raised there
            error.append(exc)

    previous = threading.stack_size(FIX_STACK)
    try:
        thread = threading.Thread(target=run, name="opscan-fix")
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    if error:
        raise error[0]
    return result[0]


class AnsweredProbe:
    """The torch lookups a fix may need, answered once in the parent (worker processes never import torch)."""

    def __init__(self, probe: Probe, names: Iterable[str]) -> None:
        self.installed = bool(probe.installed)
        self.answers = {name: probe.has(name) for name in sorted(names)} if self.installed else {}
        self.installed = bool(probe.installed)     # asking may find torch broken
        self.version: str | None = getattr(probe, "version", None)

    def has(self, path: str) -> bool:
        return self.answers.get(path, True)

