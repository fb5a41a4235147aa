"""The tries of `opscan REPO` with nothing configured: each target found is traced in turn, within bounds."""

from __future__ import annotations

import time

from opscan.errors import MissingModulesError, ModelProcessError, TargetError
from opscan.targets.recipes import REPO_KINDS

MAX_TRIES = 6              # zero-configuration targets tried at most (docs/repositories.md)
MAIN_MODELS = 2            # ... until this many were traced
ZERO_CONFIG_SECONDS = 60.0  # ... or this much time passed (checked before each try)


class ZeroConfig:
    """`opscan REPO` with nothing configured: the targets found are traced in turn (each in the
    sandbox child) until MAIN_MODELS were traced or ZERO_CONFIG_SECONDS passed (or, once one was
    traced, would pass were the next try as long as that one). One that cannot be
    built is a one-line note, not an error; one that was traced is noted with how it was found."""

    def __init__(self, discovery) -> None:
        self.active = bool(discovery is not None and discovery.candidates and discovery.traced)
        self.how = {c.target: c.note or CANDIDATE_WORDS.get(c.kind, c.kind)
                    for c in (discovery.candidates if discovery is not None else ())}
        self.start = time.monotonic()
        self.failed: list[tuple[str, str]] = []   # (target, why) of each try that could not be built
        self.last_traced = 0.0                     # seconds the last traced `repo:` try took
        self.missing = False                       # a try missed modules not installed here (Verdict.remedy)

    def __bool__(self) -> bool:
        return self.active

    def done(self, traces) -> bool:
        """True when no further target should be tried: MAIN_MODELS traced, the time is up, or (once
        a `repo:` construction was traced) a try as long as it would carry the next past the bound."""
        if not self.active:
            return False
        spent = time.monotonic() - self.start
        return len(traces) >= MAIN_MODELS or spent > ZERO_CONFIG_SECONDS \
            or bool(self.last_traced) and spent + self.last_traced > ZERO_CONFIG_SECONDS

    def attempt(self, run, target: str, notes: list[str]) -> list:
        """[the trace] of `run()`, or [] with the reason in `notes`."""
        began = time.monotonic()
        try:
            trace = run()
        except (TargetError, ModelProcessError) as exc:
            self.missing = self.missing or isinstance(exc, MissingModulesError)
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.failed.append((target, reason.removeprefix(target + ": ")))
            notes.append(f"not built: {target}: {reason.removeprefix(target + ': ')}")
            return []
        if target.startswith("repo:") and not trace.complete and not trace.ops:
            # a guessed construction whose step stopped before its first op: not a model traced
            why = trace.stopped_at.split("; try:")[0]
            self.failed.append((target, f"its step stopped before any op: {why}"))
            notes.append(f"not built: {target}: its step stopped before any op: {why}")
            return []
        if target.startswith("repo:"):   # a guessed construction; a model folder or factory is always tried
            self.last_traced = time.monotonic() - began
        notes.append(f"traced with no configuration: {target}: {self.how.get(target, '')}".rstrip(": "))
        return [trace]


CANDIDATE_WORDS = {"factory": "a factory whose arguments have defaults", "hf-folder": "a transformers model folder",
                   "timm-folder": "a timm model folder", **REPO_KINDS}
