"""The default zoo tracer: opscan's fake-tensor tracer, imported only inside the child process."""

from __future__ import annotations

from opscan.errors import TargetError
from opscan.records import ModelTrace, Target, TargetKind


def trace_model(target: str, *, fill_unset: bool = False, **options) -> ModelTrace:
    """Trace `target` with opscan.trace (options: mode, device, profile, batch, seq_len, ...).

    `fill_unset` (set by the zoo for the default configs it writes, never for a user's): a config
    whose build or step fails on a field it leaves unset is traced again with the field filled
    (opscan/targets/hf/repair.py, NOTE [unset fields]).
    A model that cannot be built because a package is missing raises ImportError (its row's stop
    class is then `missing-package`, see opscan/zoo/results.py), any other build failure TargetError.
    """
    from opscan.targets.loader import trace_target

    try:
        if fill_unset and Target.parse(target).kind is TargetKind.HF:
            from opscan.targets.hf.repair import trace_repaired

            return trace_repaired(trace_target, target, options)
        return trace_target(target, **options)
    except TargetError as exc:
        # the tracer reports a failed build as one TargetError line, raised while the original
        # exception is handled: a missing package (transformers' requires_backends) keeps its type
        if isinstance(exc.__context__, ImportError):
            raise ImportError(exc.message) from None
        raise
