"""One zoo model = one Job, traced through opscan.containment.process (the containment `opscan trace` uses too);
how the child ended becomes the model's Outcome (opscan/containment/outcome.py: the vocabulary `opscan PATH`
shares). Every outcome is an Outcome, never an exception."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from opscan.containment.process import Limits, run
from opscan.containment.outcome import OUTCOMES, Outcome, outcome

DEFAULT_TRACER = "opscan.zoo.tracing:trace_model"
# What a forkserver imports once, so each model's child starts with torch and transformers loaded.
PRELOAD = ("opscan.zoo.tracing", "torch", "transformers", "transformers.modeling_utils", "opscan.targets.loader")


@dataclass(frozen=True)
class Job:
    """What one contained child needs: the tracer target and the tracer's keyword options."""

    name: str
    target: str
    options: tuple[tuple[str, Any], ...] = ()


def tracer_spec(tracer: str | Callable) -> str:
    """`module:qualname` for a tracer callable (so it can cross process and machine borders)."""
    if isinstance(tracer, str):
        return tracer
    return f"{tracer.__module__}:{tracer.__qualname__}"


def trace_job(job: Job, tracer: str | Callable, limits: Limits) -> Outcome:
    """Trace `job` with `tracer(target, **options)` in a child process under `limits`."""
    ended = run(tracer_spec(tracer), {**dict(job.options), "target": job.target}, limits,
                capture_output=True, preload=PRELOAD)
    return outcome(job.name, ended, limits)


__all__ = ["DEFAULT_TRACER", "OUTCOMES", "Job", "Outcome", "trace_job", "tracer_spec"]
