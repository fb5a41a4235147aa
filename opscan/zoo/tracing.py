"""The default zoo tracer: opscan's fake-tensor tracer, imported only inside the child process."""

from __future__ import annotations

from opscan.model import ModelTrace


def trace_model(target: str, **options) -> ModelTrace:
    """Trace `target` with opscan.trace (options: mode, device, profile, batch, seq_len, ...)."""
    from opscan.trace import trace_target

    return trace_target(target, **options)
