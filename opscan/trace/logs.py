"""Keeps PyTorch's log output off the terminal while a step is traced.

NOTE [torch logs during a trace]
When a fake kernel raises, FakeTensorMode logs the error with its whole traceback
("E1201 ... failed while attempting to run meta for aten._grouped_mm ... Traceback") through the
`torch` logger, which prints to stderr; an exception opscan handles (a supplied fake kernel, a
stand-in) or reports itself (the trace's stop reason) then reached the terminal too, full
traceback first. While a step is traced, records of the `torch` logger tree go to a list instead:
nothing is printed, and the trace's stop reason (taken from the exception) says what matters.
"""

from __future__ import annotations

import contextlib
import logging

LOGGER = "torch"


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.NOTSET)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def captured(name: str = LOGGER):
    """Route the records of logger `name` and its children to a list (yielded); print nothing."""
    keep = _Keep()
    tree = [logging.getLogger(name)] + [
        logger for key, logger in sorted(logging.root.manager.loggerDict.items())
        if key.startswith(name + ".") and isinstance(logger, logging.Logger) and logger.handlers]
    saved = [(logger, list(logger.handlers), logger.propagate) for logger in tree]
    for logger, handlers, _ in saved:
        for handler in handlers:
            logger.removeHandler(handler)
        logger.addHandler(keep)
        logger.propagate = False
    try:
        yield keep.records
    finally:
        for logger, handlers, propagate in saved:
            logger.removeHandler(keep)
            for handler in handlers:
                logger.addHandler(handler)
            logger.propagate = propagate
