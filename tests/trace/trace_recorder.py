"""A dispatch-mode recorder of the op names a real run dispatches (the reference for honesty tests)."""

from __future__ import annotations

from torch.utils._python_dispatch import TorchDispatchMode


class Recorder(TorchDispatchMode):
    """Records every op name dispatched inside the `with` block, minus tracing artifacts."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.name()
        if not name.startswith(("prim::device", "profiler::")):
            self.ops.add(name)
        return func(*args, **(kwargs or {}))
