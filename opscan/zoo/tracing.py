"""The default zoo tracer: opscan's fake-tensor tracer, imported only inside the child process."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from opscan.errors import TargetError
from opscan.model import ModelTrace
from opscan.zoo import upstream


def trace_model(target: str, **options) -> ModelTrace:
    """Trace `target` with opscan.trace (options: mode, device, profile, batch, seq_len, ...).

    A stop that is a known transformers bug says so, with its reproduction (opscan/zoo/upstream.py).
    """
    from opscan.trace import trace_target

    model_type = _model_type(target)
    try:
        trace = trace_target(target, **options)
    except TargetError as exc:
        bug = upstream.known(model_type, "build")
        if bug is None:
            raise
        raise TargetError(f"{exc.message}; {upstream.explain(bug)}", path=exc.path, line=exc.line) from None
    bug = None if trace.complete else upstream.known(model_type, "step")
    if bug is not None:
        trace = dataclasses.replace(trace, stopped_at=f"{trace.stopped_at}; {upstream.explain(bug)}")
    return trace


def _model_type(target: str) -> str:
    """The model_type of an hf: target's config.json ("" for anything else or an unreadable file)."""
    if not target.startswith("hf:"):
        return ""
    path = Path(target[3:])
    path = path / "config.json" if path.is_dir() else path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return data.get("model_type", "") if isinstance(data, dict) else ""
