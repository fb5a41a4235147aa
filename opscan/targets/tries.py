"""The tries of `opscan REPO` with nothing configured: each target found is traced in turn, within bounds."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from opscan.errors import MissingModulesError, ModelProcessError, TargetError
from opscan.records import ModelTrace, Target, TargetKind
from opscan.targets.recipes import REPO_KINDS

MAX_TRIES = 6              # zero-configuration targets tried at most (docs/repositories.md)
MAIN_MODELS = 2            # ... until this many were traced
ZERO_CONFIG_SECONDS = 60.0  # ... or this much time passed (checked before each try)


@dataclass(frozen=True)
class Attempt:
    """One try of a target found with no configuration, as a result: the trace when it counts as a
    model traced, else why not (`stop`, and the stop's `hint` when the step stopped); `note` is the
    one line the run's notes carry for it."""

    target: str
    trace: ModelTrace | None       # None: not built, or its step stopped before any op
    stop: str = ""                 # why the try did not count ("" when traced)
    hint: str = ""                 # what the stop said to try (a step that stopped)
    how: str = ""                  # how the target was found (a traced try's note)
    seconds: float = 0.0
    missing: bool = False          # not built because modules are not installed here (Verdict.remedy)

    @property
    def traced(self) -> bool:
        return self.trace is not None

    @property
    def guessed(self) -> bool:
        """A `repo:` construction opscan guessed (timed; counts only with ops)."""
        return Target.parse(self.target).kind is TargetKind.REPO

    @property
    def note(self) -> str:
        """"traced with no configuration: TARGET: how" or "not built: TARGET: why"."""
        if self.trace is not None:
            return f"traced with no configuration: {self.target}: {self.how}".rstrip(": ")
        return f"not built: {self.target}: {self.stop}"


class ZeroConfig:
    """`opscan REPO` with nothing configured: the targets found are traced in turn (each in the
    contained child) until MAIN_MODELS were traced or ZERO_CONFIG_SECONDS passed (or, once one was
    traced, would pass were the next try as long as that one). One that cannot be
    built is a one-line note, not an error; one that was traced is noted with how it was found."""

    def __init__(self, discovery) -> None:
        self.active = bool(discovery is not None and discovery.candidates and discovery.traced)
        self.how = {c.target: c.note or CANDIDATE_WORDS.get(c.kind, c.kind)
                    for c in (discovery.candidates if discovery is not None else ())}
        self.start = time.monotonic()
        self.attempts: list[Attempt] = []   # every try so far, in order

    def __bool__(self) -> bool:
        return self.active

    @property
    def failed(self) -> list[tuple[str, str]]:
        """(target, why) of each try that could not be built (or stopped before any op)."""
        return [(a.target, a.stop) for a in self.attempts if not a.traced]

    @property
    def missing(self) -> bool:
        """A try missed modules not installed here (the one remedy line: Verdict.remedy)."""
        return any(a.missing for a in self.attempts)

    @property
    def last_traced(self) -> float:
        """Seconds the last traced `repo:` try took (0.0: none yet)."""
        return next((a.seconds for a in reversed(self.attempts) if a.traced and a.guessed), 0.0)

    def done(self) -> bool:
        """True when no further target should be tried: MAIN_MODELS traced, the time is up, or (once
        a `repo:` construction was traced) a try as long as it would carry the next past the bound."""
        if not self.active:
            return False
        spent = time.monotonic() - self.start
        traced = sum(1 for a in self.attempts if a.traced)
        return traced >= MAIN_MODELS or spent > ZERO_CONFIG_SECONDS \
            or bool(self.last_traced) and spent + self.last_traced > ZERO_CONFIG_SECONDS

    def attempt(self, run: Callable[[], ModelTrace], target: str) -> Attempt:
        """The result of tracing `target` with `run()` (a TraceError other than a process failure
        propagates: the engine, not the target, failed); kept in `attempts`."""
        began = time.monotonic()
        guessed = Target.parse(target).kind is TargetKind.REPO   # a construction opscan guessed, timed
        try:
            trace = run()
        except (TargetError, ModelProcessError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            got = Attempt(target, None, reason.removeprefix(target + ": "),
                          missing=isinstance(exc, MissingModulesError))
        else:
            if guessed and not trace.complete and not trace.ops:
                # a guessed construction whose step stopped before its first op: not a model traced
                got = Attempt(target, None, f"its step stopped before any op: {trace.stopped_at}", trace.stop_hint)
            else:   # a guessed construction is timed; a model folder or factory is always tried
                got = Attempt(target, trace, how=self.how.get(target, ""),
                              seconds=time.monotonic() - began if guessed else 0.0)
        self.attempts.append(got)
        return got


CANDIDATE_WORDS = {"factory": "a factory whose arguments have defaults", "hf-folder": "a transformers model folder",
                   "timm-folder": "a timm model folder", **REPO_KINDS}
