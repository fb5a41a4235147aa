"""The records of the source scan: places, findings, kernel sources, rules that fired, the baseline's
status, and the scan facts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from enum import StrEnum

from opscan.records.vocabulary import BlockUnit, Category, Severity, TaskKind


@dataclass(frozen=True, order=True)
class Location:
    """A place in a scanned file. `path` is relative to the scanned root with `/` separators;
    lines and columns are 1-based. `cell` is the 1-based code-cell number for notebooks."""

    path: str
    line: int = 1
    column: int = 1
    end_line: int = 0
    end_column: int = 0
    cell: int | None = None
    cause: str = ""      # a task site from a traced op: the library line (`path:line`) it stands for, when
                         # the site is the project's line that reaches it (NOTE [sites the user can change])

    def __str__(self) -> str:
        if self.cell is not None:
            return f"{self.path}:cell {self.cell}:line {self.line}"
        return f"{self.path}:{self.line}:{self.column}"

    @property
    def site(self) -> tuple[str, int, int]:
        """The unit of every count of sites (NOTE [sites] in opscan/assess/verdict.py): one line of one
        file (or of one notebook cell); two findings on one line are one site."""
        return (self.path, self.cell or 0, self.line)


def is_kernel_work(task: str, category: str) -> bool:
    """The one test of "is this kernel work", for a finding (Finding.is_kernel) and the scan's hits:
    its task kind is `kernel` (the scan gives an import of a kernel's own language next to that
    kernel the task too, NOTE [subjects]); without a task kind (hand-built) it goes by its category."""
    return task == TaskKind.KERNEL if task else category == Category.CUSTOM_KERNEL


@dataclass(frozen=True)
class Finding:
    """One place in the source that pins the code to CUDA (or a file opscan could not read)."""

    rule: str            # stable code, e.g. "OPS101"
    name: str            # kebab-case rule name, e.g. "hardcoded-cuda-device"
    category: Category   # one of CATEGORIES
    severity: Severity   # one of SEVERITIES
    message: str
    location: Location
    fix: str = ""        # the concrete TorchNeuron fix
    guarded: bool = False  # inside `if torch.cuda.is_available():` or similar
    snippet: str = ""    # the source line, stripped of its newline
    task: TaskKind | Literal[""] = ""   # the rule's task kind, one of TASKS ("" when not known, e.g. hand-built)
    subject: str = ""    # what matched: symbol (torch.cuda.synchronize), device or backend string,
                         # library (flash_attn), kernel name (docs/scan.md, "Subjects")
    fixable: bool = False  # `opscan fix` rewrites it with a safe fix (its rule's `autofix`; docs/fix.md)

    def __post_init__(self) -> None:   # NOTE [typed vocabularies]
        object.__setattr__(self, "severity", Severity(self.severity))
        object.__setattr__(self, "category", Category(self.category))
        if self.task:
            object.__setattr__(self, "task", TaskKind(self.task))

    def sort_key(self) -> tuple[str, int, int, int, str, str]:
        loc = self.location
        return (loc.path, loc.cell or 0, loc.line, loc.column, self.rule, self.message)

    @property
    def is_kernel(self) -> bool:
        """The one test of "is this a kernel finding" (`is_kernel_work`)."""
        return is_kernel_work(self.task, self.category)

    @property
    def blocking(self) -> bool:
        """An unguarded finding of severity error: it blocks the port (NOTE [blockers] in assess/verdict.py)."""
        return self.severity is Severity.ERROR and not self.guarded

    @property
    def blocks_as(self) -> BlockUnit:
        """What a blocking finding counts as in the blockers (NOTE [blockers] in assess/verdict.py): "file"
        (opscan could not read it), "kernel", "library", "pin" (a manifest line holding torch off the
        release's pairing) or "site" (a line of code pinned to CUDA); "" when it does not block.
        Pins and sites are counted by `Location.site` within their task (NOTE [sites])."""
        if not self.blocking:
            return BlockUnit.NONE
        if self.category is Category.INPUT:
            return BlockUnit.FILE
        if self.is_kernel:
            return BlockUnit.KERNEL
        if self.task is TaskKind.LIBRARY:
            return BlockUnit.LIBRARY
        return BlockUnit.PIN if self.task is TaskKind.TORCH_VERSION else BlockUnit.SITE


class KernelSourceKind(StrEnum):
    """What a piece of kernel code is (KernelSource.kind)."""

    FILE = "file"
    FUNCTION = "function"
    NAME = "name"

    @property
    def description(self) -> str:
        return _KERNEL_SOURCE_KINDS[self]


_KERNEL_SOURCE_KINDS: dict[str, str] = {
    "file": "a native source file (.cu, C++) flagged itself or named in a build call",
    "function": "a decorated kernel function (`@triton.jit`, `@cuda.jit`), from its first line",
    "name": "an extension or op name stated in a build call (joins the code that uses it; no lines)",
}
KERNEL_SOURCE_KINDS: dict[str, str] = {k.value: k.description for k in KernelSourceKind}


@dataclass(frozen=True, order=True)
class KernelSource:
    """A piece of kernel code behind a custom-kernel finding, measured by reading (never running) it."""

    kind: KernelSourceKind   # one of KERNEL_SOURCE_KINDS
    path: str = ""           # file / function: relative to the scanned root, `/` separators
    line: int = 0            # function: its first line (decorators included)
    name: str = ""           # name: the extension or op name, e.g. "fused_gelu_cuda"
    lines: int = 0           # non-blank lines measured (0 for a name)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", KernelSourceKind(self.kind))   # NOTE [typed vocabularies]

    @property
    def key(self) -> str:
        """Identity of the code (what joins findings into one kernel task): `file:PATH`,
        `function:PATH:LINE`, `name:NAME`."""
        if self.kind is KernelSourceKind.NAME:
            return f"name:{self.name}"
        return f"function:{self.path}:{self.line}" if self.kind is KernelSourceKind.FUNCTION else f"file:{self.path}"

    @property
    def is_cuda_file(self) -> bool:
        """A `.cu` file: one kernel of its own (C++ glue and headers are not)."""
        return self.kind is KernelSourceKind.FILE and self.path.endswith(".cu")

    @classmethod
    def parse(cls, text: str, lines: int = 0) -> KernelSource:
        """From the measuring code's (id, lines) pairs: `name:NAME`, `PATH:LINE` (a function) or `PATH`."""
        if text.startswith("name:"):
            return cls(KernelSourceKind.NAME, name=text[5:])
        path, _, line = text.rpartition(":")
        if path and line.isdigit():
            return cls(KernelSourceKind.FUNCTION, path=path, line=int(line), lines=lines)
        return cls(KernelSourceKind.FILE, path=text, lines=lines)


@dataclass(frozen=True)
class RuleInfo:
    """What reporters may say about a rule that fired (SARIF rule list, help text)."""

    id: str                              # e.g. "OPS101"
    name: str                            # e.g. "hardcoded-cuda-device"
    severity: Severity                   # default level, one of SEVERITIES
    category: str = ""
    what: str = ""                       # one paragraph: what it flags
    why: str = ""                        # why it matters on TorchNeuron
    fix: str = ""                        # how to fix it
    help_uri: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "severity", Severity(self.severity))


@dataclass(frozen=True)
class BaselineStatus:
    """How a run's findings compared with a baseline file (only new findings stay in the Report)."""

    path: str
    known: int = 0                       # findings the baseline hides
    stale: tuple[str, ...] = ()          # entries that match nothing any more: "path:line: RULE message"


# --- scan facts (docs/architecture.md, "Scan facts") ------------------------------------------
# What the scan learnt about the code beside its findings, so the plan, discovery and the fixer read
# it instead of parsing and resolving imports again. Lines are as in Location (a notebook's are
# cell-local, with the cell number in `cell`).

@dataclass(frozen=True, order=True)
class ImportBinding:
    """One name an import statement binds; the alias is the unit (`import cupy, flash_attn` is two)."""

    path: str                 # the file, relative to the scanned root (as Location.path)
    line: int                 # the first line of the import statement
    local: str                # the name bound in the file (`np` for `import numpy as np`)
    target: str               # the dotted name it stands for (`numpy`, `torch.nn.functional.gelu`)
    module_level: bool = True  # bound at module level (not inside a def or class)
    cell: int | None = None   # 1-based notebook cell, None for a .py file
    end_line: int = 0         # the statement's last line (0: as `line`)


@dataclass(frozen=True, order=True)
class LibraryUse:
    """What one import of a CUDA-only library brings into its file (NOTE [library usage] in
    plan/measure.py): the dotted names used and the loads of the bound names."""

    path: str
    line: int                  # the import statement's first line (the finding's line)
    package: str               # the top-level package (the finding's subject)
    names: tuple[str, ...]     # dotted names used, sorted
    call_sites: int            # loads of the bound names in the file


@dataclass(frozen=True, order=True)
class FunctionSpan:
    """A function that holds a custom-kernel finding on its decorators or `def` line."""

    path: str
    line: int       # first line (its first decorator, else the `def`)
    def_line: int   # the `def` line
    lines: int      # first line .. last line of the body, inclusive
    name: str


@dataclass(frozen=True)
class ScanFacts:
    """The facts of a scan (each tuple sorted): import bindings of every walked file, library use
    and kernel functions of the files with such findings, and the files with a PyTorch reference
    path (a function named `*_ref`, `naive_*`, `torch_*`, ...) next to a kernel finding."""

    bindings: tuple[ImportBinding, ...] = ()
    libraries: tuple[LibraryUse, ...] = ()
    kernels: tuple[FunctionSpan, ...] = ()
    references: tuple[str, ...] = ()      # paths

    def library(self, path: str, line: int, package: str) -> LibraryUse | None:
        """The use of the library `package` imported at `path:line`, if measured."""
        for use in self.libraries:
            if use.path == path and use.line == line and use.package == package:
                return use
        return None

    def bindings_of(self, path: str) -> tuple[ImportBinding, ...]:
        """The import bindings of one file, in line order."""
        return tuple(b for b in self.bindings if b.path == path)
