"""A dispatch-mode recorder of the op names a real run dispatches (the reference for honesty tests)."""

from __future__ import annotations

from pathlib import Path

import torch
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


def real_step_ops(folder: Path, seq_len: int) -> set[str]:
    """Really run one AdamW (foreach) training step on CPU of the transformers model whose
    config.json is in `folder` (random weights, batch 2) and record every op dispatched."""
    from opscan.targets.hf.builder import _model_class, config_dtype, default_dtype, load_config, task_inputs

    torch.manual_seed(0)
    config, path = load_config(str(folder))
    cls = _model_class(config, path)
    with default_dtype(config_dtype(config)):
        model = cls.from_config(config) if hasattr(cls, "from_config") else cls(config)
    model.train()
    inputs = task_inputs(model, config, 2, seq_len)
    optimizer = torch.optim.AdamW(model.parameters(), foreach=True)
    recorder = Recorder()
    with recorder:
        model(**inputs).loss.backward()
        optimizer.step()
    return recorder.ops
