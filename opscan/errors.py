"""The exceptions opscan raises on purpose; the CLI prints each as one line and exits 2.

    OpscanError                 any error a user can act on; carries the path (and line) it is about
    ├── UsageError              bad flags or arguments
    ├── ConfigError             [tool.opscan] / opscan.toml problems (may carry several at once)
    ├── RuleError               a rule file that does not load
    ├── DatabaseError           a coverage_db file that does not load, or an unknown release
    ├── CatalogError            the library catalog (opscan/plan/libraries.yaml) that does not load
    ├── InputError              a file given on the command line that cannot be read or understood
    ├── TargetError             a trace target that cannot be imported or built
    ├── TraceError              a trace that could not run at all (partial traces are results, not errors)
    │   ├── ModelProcessError   the model's child process hung, crashed or ran out of memory (containment/process.py)
    │   └── MissingDependencyError  a package tracing needs (torch) is not installed: no model can be traced
    ├── RunError                a command opscan runs for the user (`parity run`) that failed
    └── ContainmentError        --require-containment, and a part of the containment cannot be had (containment/)
"""

from __future__ import annotations


class OpscanError(Exception):
    """An error the user can act on. `str()` gives the one line the CLI prints. `subject`: what
    failed, when the message opens with it ("trace of hf:gpt2"), so that `reason` can say why
    beside a subject a report names anyway."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None, *,
                 subject: str = "") -> None:
        super().__init__(message)
        if subject and not message.startswith(subject):
            raise ValueError(f"the message of an error about {subject!r} opens with it: {message!r}")
        self.message = message
        self.path = path
        self.line = line
        self.subject = subject

    @property
    def reason(self) -> str:
        """Why, as one line (never cut): the message without its subject (all of `str()` without one)."""
        text = self.message[len(self.subject):] if self.subject and self.path is None else str(self)
        return " ".join(line.strip() for line in text.splitlines() if line.strip())

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        return f"{where}{self.message}"


class ContainmentError(OpscanError):
    """--require-containment was given and a part of the child's containment cannot be had here."""


class UsageError(OpscanError):
    """Bad command-line flags or arguments."""


class ConfigError(OpscanError):
    """A problem in the project configuration; `problems` lists every one found."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None,
                 problems: tuple[str, ...] = ()) -> None:
        super().__init__(message, path, line)
        self.problems = problems


class RuleError(OpscanError):
    """A rule file that does not load."""


class DatabaseError(OpscanError):
    """A coverage database file that does not load, or a release that does not exist."""


class CatalogError(OpscanError):
    """The catalog of CUDA-only libraries and kernel families does not load."""


class InputError(OpscanError):
    """An input file given by the user that cannot be read or understood."""


class TargetError(OpscanError):
    """A trace target that cannot be imported or built."""


class MissingModulesError(TargetError):
    """A model's module imports modules not installed here, `modules` naming every one found in one
    run (NOTE [every missing module at once] in opscan/targets/absent.py). Its message is the cause
    only: the report adds one remedy line for all such causes (`Verdict.remedy`)."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None,
                 modules: tuple[str, ...] = ()) -> None:   # () when re-raised from a child process
        super().__init__(message, path, line)
        self.modules = modules


class TraceError(OpscanError):
    """A trace that could not run at all."""


class ModelProcessError(TraceError):
    """The child process running a model's code timed out, crashed or ran out of memory."""


class MissingDependencyError(TraceError):
    """A package every trace needs is not installed (torch): the run stops tracing, the scan goes on.
    `package` names it. (A package only some targets need, like transformers for `hf:` targets, is
    a TargetError of those targets.)"""

    def __init__(self, message: str, package: str, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message, path, line)
        self.package = package


class RunError(OpscanError):
    """A command opscan ran on the user's behalf (e.g. a training script under `parity run`) failed."""
