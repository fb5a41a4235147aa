"""DataLoaders of an `opscan run`: worker processes replaced by in-process loading that dispatches
the ops a worker's batch does (collate into shared memory, the main process's rebuild of it)."""

from __future__ import annotations

import contextlib
import inspect
import itertools

from torch.utils._mode_utils import no_dispatch
from torch.utils._pytree import tree_flatten, tree_map_only

from opscan.trace.fakes import patched

# NOTE [loader workers]
# A DataLoader with num_workers > 0 forks worker processes: opscan's contained child may not have
# children, and fake tensors cannot cross processes. So the run loads each batch in the script's
# own process and says so at the line that built the loader. A real
# worker's batch takes a path of its own, which dispatches ops a num_workers=0 loader does not: the
# worker's collate writes the batch into shared memory (`aten::set_.source_Storage`,
# `aten::resize_`, `aten::stack.out`), the queue's feeder thread pickles it (not on the recorded
# thread), and the main process rebuilds it (`aten::set_.source_Storage_storage_offset`). When the
# batch's tensors have values (host data, NOTE [host values] in run_mode.py), the run takes that same
# path in-process, for real: torch's collate with a worker's info set, torch's pickler out of the
# recorder's sight, its unpickler under it. A batch with tensors without values is collated as by
# num_workers=0, and the difference shows (`aten::stack` in place of the worker's ops).
#
# NOTE [imitated workers]
# Each worker of a real loader starts with its own random state (`random`, torch's CPU generator and
# numpy's global one seeded from the iterator's base seed plus its id), sets its WorkerInfo (what
# `torch.utils.data.get_worker_info()` answers inside it), calls `worker_init_fn(worker_id)` and then
# fetches the batches sent to it, batch k to worker k % num_workers. The imitation keeps one such
# state per worker: when an iterator starts (once per loader with persistent_workers), each worker's
# state is seeded as torch's worker loop seeds it and its worker_init_fn runs inside it; a batch is
# fetched (the dataset's __getitem__, the collate) inside its worker's state, WorkerInfo set. The
# script's own random state is saved before and restored after, as a worker's seeding happens in
# another process and never touches the main one's.

# NOTE [the data side on real values]
# Where the run stands in for the data (`opscan PATH`: NOTE [stand-ins for data and weights]), the
# samples are synthetic but real (numpy arrays, PIL images, host tensors), and a dataset's
# `__getitem__` and its transforms run on them as on real data: a random augmentation draws its
# parameters (`ColorJitter`: `float(torch.empty(1).uniform_(a, b))`), checks them and branches on
# them. Under the run's fake mode those draws would be fake tensors whose values are counted
# stand-ins, and a stand-in value can fail the library's own check (a hue factor of 1.0 outside
# [-0.5, 0.5]). So a DataLoader's fetch (the dataset's items and the collate) runs with the fake
# mode unset: the data side makes real CPU tensors with real values, and fake tensors begin where
# the batch meets the fake mode again: the first op of the step on it (a move to the device, the
# model's first layer), which takes it as host data (NOTE [host values] in run_mode.py). A fetch
# that fails on real values (a dataset holding the run's own fake tensors) is fetched again under
# the fake mode, as without this. `opscan run` keeps the fake mode throughout: it runs where the
# data is, and its ops are compared to a real run's.


@contextlib.contextmanager
def in_process(note, real_data: bool = False):
    """Inside: a DataLoader built with num_workers > 0 loads in this process, as its workers would;
    `note(what)` is told at the line that built it. `real_data`: each fetch runs on real values
    (NOTE [the data side on real values])."""
    from torch.utils.data import DataLoader

    original = DataLoader.__init__
    signature = inspect.signature(original)

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        workers = bound.arguments.get("num_workers", 0)
        persistent = bound.arguments.get("persistent_workers", False)
        if workers and workers > 0:
            note(f"DataLoader(num_workers={workers}) loaded in the main process")
            bound.arguments.update(num_workers=0, prefetch_factor=None, persistent_workers=False)
            bound.arguments.pop("multiprocessing_context", None)
        original(*bound.args, **bound.kwargs)
        if workers and workers > 0:
            self._opscan_workers = _Workers(workers, self.worker_init_fn, persistent)
            self.collate_fn = _AsWorker(self.collate_fn, self._opscan_workers)

    def get_iterator(self):
        iterator = get(self)
        workers = getattr(self, "_opscan_workers", None)
        if workers is not None:
            workers.start(iterator, self.dataset)
        if real_data and getattr(iterator, "_dataset_fetcher", None) is not None:
            _fetch_real(iterator._dataset_fetcher)
        return iterator

    get = DataLoader._get_iterator
    with patched(DataLoader, "__init__", __init__), patched(DataLoader, "_get_iterator", get_iterator):
        yield


def _fetch_real(fetcher) -> None:
    """The fetcher's batches made on real values (NOTE [the data side on real values])."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    fetch = fetcher.fetch

    def fetch_real(index):
        try:
            with unset_fake_temporarily():
                return fetch(index)
        except StopIteration:
            raise
        except Exception:   # noqa: BLE001 - the data side needs the run's fakes: fetched as before
            return fetch(index)

    fetcher.fetch = fetch_real


class _Workers:
    """The imitated workers of one loader (NOTE [imitated workers])."""

    def __init__(self, count: int, init_fn, persistent) -> None:
        self.count = count
        self.init_fn = init_fn
        self.persistent = bool(persistent)
        self.states: list[dict] = []
        self.infos: list = []

    def start(self, iterator, dataset) -> None:
        from torch.utils.data._utils import worker

        if not (self.persistent and self.states):
            base = int(iterator._base_seed)
            self.infos = [worker.WorkerInfo(id=i, num_workers=self.count, seed=base + i, dataset=dataset)
                          for i in range(self.count)]
            self.states = [_seeded(base, i) for i in range(self.count)]
            for i in range(self.count):
                with self.inside(i):
                    if self.init_fn is not None:
                        self.init_fn(i)
        fetcher = iterator._dataset_fetcher
        fetch, batches = fetcher.fetch, itertools.count()

        def fetch_as_worker(index):
            with self.inside(next(batches) % self.count):
                return fetch(index)

        fetcher.fetch = fetch_as_worker

    @contextlib.contextmanager
    def inside(self, i: int):
        """Worker i's random state and WorkerInfo inside; the script's own restored after."""
        from torch.utils.data._utils import worker

        main, saved_info = _random_state(), worker._worker_info
        _set_random_state(self.states[i])
        worker._worker_info = self.infos[i]
        try:
            yield
        finally:
            self.states[i] = _random_state()
            _set_random_state(main)
            worker._worker_info = saved_info


def _seeded(base: int, worker_id: int) -> dict:
    """A worker's random state as torch's worker loop seeds it (random, torch's CPU generator, numpy)."""
    import random

    import torch
    from torch.utils.data._utils.worker import _generate_state

    main = _random_state()
    try:
        random.seed(base + worker_id)
        torch.default_generator.manual_seed(base + worker_id)
        if _numpy() is not None:
            _numpy().random.seed(_generate_state(base, worker_id))
        return _random_state()
    finally:
        _set_random_state(main)


def _numpy():
    try:
        import numpy
    except ImportError:   # torch runs without numpy; its worker loop then seeds only the others
        return None
    return numpy


def _random_state() -> dict:
    import random

    import torch

    np = _numpy()
    return {"random": random.getstate(), "torch": torch.default_generator.get_state(),
            "numpy": np.random.get_state() if np is not None else None}


def _set_random_state(state: dict) -> None:
    import random

    import torch

    random.setstate(state["random"])
    torch.default_generator.set_state(state["torch"])
    if state["numpy"] is not None:
        _numpy().random.set_state(state["numpy"])

class _AsWorker:
    """A loader's collate_fn run as in the worker fetching the batch, the batch handed over as a
    worker's is."""

    def __init__(self, collate, workers: _Workers) -> None:
        self.collate = collate
        self.workers = workers

    def __call__(self, batch):
        from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

        leaves, _ = tree_flatten(batch)
        if any(isinstance(t, FakeTensor) and t.constant is None for t in leaves):
            with _outside_worker():   # collated as by num_workers=0 (NOTE [loader workers])
                return self.collate(batch)
        real = tree_map_only(FakeTensor, lambda t: t.constant, batch)
        with unset_fake_temporarily():
            out = self.collate(real)
            return _hand_over(out)

@contextlib.contextmanager
def _outside_worker():
    from torch.utils.data._utils import worker

    saved, worker._worker_info = worker._worker_info, None
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
