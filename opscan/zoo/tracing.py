"""The default zoo tracer: opscan's fake-tensor tracer, imported only inside the child process."""

from __future__ import annotations

from opscan.errors import TargetError
from opscan.model import ModelTrace


def trace_model(target: str, **options) -> ModelTrace:
    """Trace `target` with opscan.trace (options: mode, device, profile, batch, seq_len, ...).

    A model that cannot be built because a package is missing raises ImportError (its row's stop
    class is then `missing-package`, see opscan/zoo/results.py), any other build failure TargetError.
    """
    from opscan.trace import trace_target

    try:
        return trace_target(target, **options)
    except TargetError as exc:
        # the tracer reports a failed build as one TargetError line, raised while the original
        # exception is handled: a missing package (transformers' requires_backends) keeps its type
        if isinstance(exc.__context__, ImportError):
            raise ImportError(exc.message) from None
        raise
