"""The rule records: one loaded rule (Rule) and its parts, as frozen dataclasses.

rules.py loads and validates rule files into these; matchers.py compiles them for the visitor.
Keeping the records apart lets both import them without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from opscan.records import Category


@dataclass(frozen=True)
class Matcher:
    """One entry of a rule's `match`: its kind and its options (validated)."""

    kind: str
    options: tuple[tuple[str, Any], ...]

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.options:
            if k == key:
                return v
        return default


@dataclass(frozen=True)
class FixEntry:
    """A fix for some of a rule's matches: `names` are fnmatch patterns over the matched name."""

    names: tuple[str, ...]
    text: str
    requires: tuple[str, ...] = ()
    severity: str = ""   # overrides the rule's severity for these names ("" = the rule's)
    message: str = ""    # overrides the rule's message for these names ("" = the rule's)


@dataclass(frozen=True)
class Example:
    """A rule example: files (relative path -> source text) and whether it must fire."""

    files: tuple[tuple[str, str], ...]
    invalid: bool
    expect: tuple[str, ...] = ()   # extra expectations "path:line CODE" (for files that cannot hold a marker)


@dataclass(frozen=True)
class FixExample:
    """A before/after pair of an autofix; `unsafe` examples need `--unsafe-fixes`."""

    before: str
    after: str
    unsafe: bool = False


@dataclass(frozen=True)
class AutoFix:
    """A rule's automatic rewrite: which codemod, how safe, and for which matched names."""

    codemod: str
    safety: str                                  # "safe" | "unsafe": the rewrite's default safety
    replace: tuple[tuple[str, str], ...] = ()    # matched name -> replacement (only these names are fixed)
    examples: tuple[FixExample, ...] = ()

    def covers(self, name: str) -> bool:
        """Whether a finding whose matched name is `name` has this rewrite."""
        return not self.replace or name in dict(self.replace)

    def fixes(self, subject: str, guarded: bool) -> bool:
        """Whether `opscan fix` applies this rewrite by default to a finding (safe, not guarded,
        its subject covered); the fix run itself may still leave a site, saying why."""
        return self.safety == "safe" and not guarded and self.covers(subject)


@dataclass(frozen=True)
class Rule:
    """One rule, as loaded from its YAML file."""

    id: str
    name: str
    status: str
    since: str
    category: Category
    severity: str
    message: str
    match: tuple[Matcher, ...]
    what: str
    why: str
    fix_doc: str
    fix: str
    requires: tuple[str, ...] = ()
    fixes: tuple[FixEntry, ...] = ()
    examples: tuple[Example, ...] = ()
    path: str = ""
    task: str = "none"   # the kind of port task its findings need, one of model.TASKS
    sources: tuple[str, ...] = ()   # what its docs and fixes rely on: public URLs or shipped files
    autofix: AutoFix | None = None   # the rewrite `opscan fix` applies (docs/fix.md)

    def fix_for(self, name: str) -> tuple[str, tuple[str, ...]]:
        """The fix text and the torch attributes it relies on, for a match named `name`."""
        leaf = name.rsplit(".", 1)[-1]
        for entry in self.fixes:
            if name and any(fnmatchcase(name, pattern) for pattern in entry.names):
                return entry.text, tuple(r.replace("{leaf}", leaf) for r in entry.requires)
        return self.fix, tuple(r.replace("{leaf}", leaf) for r in self.requires)

    def message_for(self, name: str) -> str:
        """The message template of a match named `name`: the first `fixes` entry naming it may override it."""
        for entry in self.fixes:
            if name and entry.message and any(fnmatchcase(name, pattern) for pattern in entry.names):
                return entry.message
        return self.message

    def severity_for(self, name: str) -> str:
        """The severity of a match named `name`: the first `fixes` entry naming it may override it."""
        for entry in self.fixes:
            if name and entry.severity and any(fnmatchcase(name, pattern) for pattern in entry.names):
                return entry.severity
        return self.severity

    def format(self, template: str, value: str = "", name: str = "") -> str:
        return template.format(value=value, name=name, leaf=name.rsplit(".", 1)[-1])
