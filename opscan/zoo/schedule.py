"""The order zoo jobs start in: the longest first, from the times the cache kept of earlier runs.

NOTE [longest first]
A zoo run's wall time is the per-model time divided by the workers, plus its tail: the time the
other workers sit idle while the last long model finishes. Started in name order, a model that takes
minutes (zamba, longcat_flash: hundreds of expert or time-step loops) may start near the end and
keep one core busy alone for as long. Started first, it runs beside the short ones, so the tail is
at most one short model (longest-processing-time-first scheduling). The time a model takes is
only known from an earlier trace of the same config, options and toolchain (the trace cache's
`seconds`, read even under `--no-cache`, which only stops the run from using or writing traces):
models with no earlier time start first, in name order (a new model may be long), then the
known ones, longest first. The order changes when models start, never what a row says or the
order rows are written in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def longest_first(jobs: Sequence[T], name: Callable[[T], str],
                  seconds: Callable[[T], float | None]) -> list[T]:
    """`jobs` ordered: unknown times first (by name), then known times, longest first (ties by name)."""
    timed = [(seconds(job), name(job), job) for job in jobs]
    unknown = sorted((entry for entry in timed if entry[0] is None), key=lambda e: e[1])
    known = sorted((entry for entry in timed if entry[0] is not None), key=lambda e: (-e[0], e[1]))
    return [job for _, _, job in unknown + known]
