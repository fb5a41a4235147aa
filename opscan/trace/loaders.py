"""DataLoaders of an `opscan run`: worker processes replaced by in-process loading that dispatches
the ops a worker's batch does (collate into shared memory, the main process's rebuild of it)."""

from __future__ import annotations

import contextlib
import inspect

from torch.utils._mode_utils import no_dispatch
from torch.utils._pytree import tree_flatten, tree_map_only

from opscan.trace.fakes import patched

# NOTE [loader workers]
# A DataLoader with num_workers > 0 forks worker processes: opscan's isolated child may not have
# children, and fake tensors cannot cross processes. So the run loads each batch in the script's
# own process (worker_init_fn is not called) and says so at the line that built the loader. A real
# worker's batch takes a path of its own, which dispatches ops a num_workers=0 loader does not: the
# worker's collate writes the batch into shared memory (`aten::set_.source_Storage`,
# `aten::resize_`, `aten::stack.out`), the queue's feeder thread pickles it (not on the recorded
# thread), and the main process rebuilds it (`aten::set_.source_Storage_storage_offset`). When the
# batch's tensors have values (host data, NOTE [host values] in run_mode.py), the run takes that same
# path in-process, for real: torch's collate with a worker's info set, torch's pickler out of the
# recorder's sight, its unpickler under it. A batch with tensors without values is collated as by
# num_workers=0, and the difference shows (`aten::stack` in place of the worker's ops).

@contextlib.contextmanager
def in_process(note):
    """Inside: a DataLoader built with num_workers > 0 loads in this process, as its workers would;
    `note(what)` is told at the line that built it."""
    from torch.utils.data import DataLoader

    original = DataLoader.__init__
    signature = inspect.signature(original)

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        workers = bound.arguments.get("num_workers", 0)
        if workers and workers > 0:
            note(f"DataLoader(num_workers={workers}) loaded in the main process")
            bound.arguments.update(num_workers=0, prefetch_factor=None, persistent_workers=False)
            bound.arguments.pop("multiprocessing_context", None)
        original(*bound.args, **bound.kwargs)
        if workers and workers > 0:
            self.collate_fn = _AsWorker(self.collate_fn, workers, self.dataset)

    with patched(DataLoader, "__init__", __init__):
        yield

class _AsWorker:
    """A loader's collate_fn run as in worker 0 of `workers`, the batch handed over as a worker's is."""

    def __init__(self, collate, workers: int, dataset) -> None:
        self.collate = collate
        self.workers = workers
        self.dataset = dataset

    def __call__(self, batch):
        from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

        leaves, _ = tree_flatten(batch)
        if any(isinstance(t, FakeTensor) and t.constant is None for t in leaves):
            return self.collate(batch)
        real = tree_map_only(FakeTensor, lambda t: t.constant, batch)
        with unset_fake_temporarily():
            with _worker_info(self.workers, self.dataset):
                out = self.collate(real)
            return _hand_over(out)

@contextlib.contextmanager
def _worker_info(workers: int, dataset):
    from torch.utils.data._utils import worker

    saved = worker._worker_info
    worker._worker_info = worker.WorkerInfo(id=0, num_workers=workers, seed=0, dataset=dataset)
    try:
        yield
    finally:
        worker._worker_info = saved

def _hand_over(batch):
    """The batch through torch's inter-process pickler: dumped as the worker's feeder thread does
    (unrecorded), loaded as the main process does (recorded)."""
    import io
    from multiprocessing.reduction import ForkingPickler

    import torch.multiprocessing  # noqa: F401 - registers torch's shared-memory reductions

    buffer = io.BytesIO()
    with no_dispatch():
        ForkingPickler(buffer, 2).dump(batch)
    return ForkingPickler.loads(buffer.getvalue())

__all__ = ["in_process"]
