"""What to trace: a target string parsed once into its kind and parts (`Target`).

`hf:PATH`, `timm:NAME`, `pt2:FILE`, `script:PATH`, `repo:SPEC`, `path/to/file.py:NAME` or
`package.module:NAME` (docs/trace.md, "Targets").
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class TargetKind(StrEnum):
    """What a target names (its prefix, or the form of a `where:NAME` target)."""

    HF = "hf"              # hf:PATH, a transformers model folder (or a name of the hub's form)
    TIMM = "timm"          # timm:NAME, a timm architecture (or timm:FOLDER)
    EXPORT = "pt2"         # pt2:FILE, a program saved with torch.export.save
    SCRIPT = "script"      # script:PATH, a script `opscan run` ran
    REPO = "repo"          # repo:SPEC, a repository's model opscan builds with no configuration
    FILE = "file"          # path/to/file.py:NAME, a factory or class of a Python file
    MODULE = "module"      # package.module:NAME, a factory or class of an importable module

    @property
    def description(self) -> str:
        return _KINDS[self]

    @property
    def prefixed(self) -> bool:
        """Written `KIND:SPEC` (every kind but a file's or a module's `where:NAME`)."""
        return self not in (TargetKind.FILE, TargetKind.MODULE)


_KINDS: dict[str, str] = {
    "hf": "a transformers model folder: config.json read, the model built with empty weights",
    "timm": "a timm architecture by name (or a timm model folder)",
    "pt2": "a program saved with torch.export.save: loaded and read, never run",
    "script": "a training script `opscan run` ran for its first optimizer steps",
    "repo": "a model of a repository that opscan builds with no configuration (a class, factory, "
            "README example, __main__ demo or test)",
    "file": "a factory or nn.Module class of a Python file: path/to/file.py:NAME",
    "module": "a factory or nn.Module class of an importable module: package.module:NAME",
}
TARGET_FORMS = "path/to/file.py:NAME, package.module:NAME, hf:PATH, timm:NAME or pt2:FILE"


# NOTE [targets parsed once]: a target is parsed where it enters opscan (the configuration, the
# command line, the model search, the zoo's list) into a `Target`, and the record is what flows
# down: callers read `target.kind`, `.spec`, `.where` and `.name` instead of testing prefixes.
# A Target is its string, as a StrEnum member is its word (NOTE [typed vocabularies] in
# vocabulary.py): it compares, hashes, formats and serialises (JSON) as the string the user wrote,
# so reports and trace records (`ModelTrace.target`) are the same bytes. It crosses into a trace's
# child process as that string, and the child parses it again at its own edge.
class Target(str):
    """A trace target, parsed (`Target("hf:models/llama").kind is TargetKind.HF`); frozen.

    kind: TargetKind; spec: what follows a prefix (`models/llama` of `hf:models/llama`), the whole
    string for a `where:NAME` target; where: the file or module of a `where:NAME` target (and of a
    `repo:FILE:NAME` one), else ""; name: the attribute called there, else "".
    A string that is none of the forms is a ValueError with one line naming it.
    """

    kind: TargetKind
    spec: str
    where: str
    name: str

    def __new__(cls, text: str) -> Target:
        if isinstance(text, Target):
            return text
        kind, spec, where, name = _parse(str(text))
        self = super().__new__(cls, text)
        for key, value in (("kind", kind), ("spec", spec), ("where", where), ("name", name)):
            object.__setattr__(self, key, value)
        return self

    @classmethod
    def parse(cls, text: str) -> Target:
        """The one parser of target strings (ValueError: `bad target 'x': expected ...`)."""
        return cls(text)

    @classmethod
    def of(cls, text: str) -> Target | None:
        """`text` parsed, or None when it is no target (a trace record's target read back: lenient)."""
        try:
            return cls(text)
        except ValueError:
            return None

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"a Target is frozen: cannot set {key}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Target, (str(self),))

    @property
    def is_file(self) -> bool:
        """A `path/to/file.py:NAME` target: its factory is read from a file of the project."""
        return self.kind is TargetKind.FILE


def _parse(text: str) -> tuple[TargetKind, str, str, str]:
    head, colon, rest = text.partition(":")
    if colon and head in _PREFIXES:
        kind = TargetKind(head)
        if not rest.strip():
            raise ValueError(f"bad target {text!r}: nothing after {head + ':'!r} (expected {TARGET_FORMS})")
        where, sep, name = rest.rpartition(":") if kind is TargetKind.REPO and "::" not in rest else ("", "", "")
        return kind, rest, (where if sep and where and name else ""), (name if sep and where else "")
    where, sep, name = text.rpartition(":")
    if not sep or not where.strip() or not name.strip():
        raise ValueError(f"bad target {text!r}: expected {TARGET_FORMS}")
    return (TargetKind.FILE if where.endswith(".py") else TargetKind.MODULE), text, where, name


_PREFIXES = frozenset(k.value for k in TargetKind if k.prefixed)
