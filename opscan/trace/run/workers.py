"""Training that a script starts in worker processes, run in the run's own process.

NOTE [training in worker processes]
A3C-style and hand-rolled distributed scripts hand their training function to
`multiprocessing.Process(target=train, args=...)` (or `torch.multiprocessing.spawn(train, ...)`) and
wait: the optimizer steps happen in children that opscan's fake tensors, hooks and stand-ins do not
reach. In a run of the project's training command (`opscan PATH`), the workers are imitated: the
first worker whose target trains (its source calls `.backward(`) runs in the run's own process when
it is started, so its step is traced; the other workers (more copies of it, an evaluation loop that
waits for checkpoints) are not started, as if the workers count were 1; `join()` returns at once;
`spawn(fn, nprocs=N)` starts N copies of one function, the distributed pattern (`mp.spawn(main,
args=(manager,), nprocs=world_size)`), so its rank 0 runs whether or not `fn`'s own source shows
the backward pass (it is often in a trainer method `fn` calls: `manager.train(model, loaders)`);
`share_memory()` keeps the model as it is (one process shares nothing).
Each choice is a note of the run. `opscan run` keeps real processes: it runs the command as written.
"""

from __future__ import annotations

import contextlib
import inspect
import re

from opscan.trace import fakes

TRAINS = re.compile(r"\.backward\(|autograd\.grad\(")


def trains(target) -> bool:
    """Whether the worker's function computes gradients (its source, read, never run)."""
    try:
        source = inspect.getsource(target)
    except (OSError, TypeError):
        return False
    return bool(TRAINS.search(source))


def _name(target) -> str:
    return getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or repr(target)


class Workers:
    """The imitated workers of one run, and what happened to each."""

    def __init__(self) -> None:
        self.ran: str = ""
        self.skipped: list[str] = []

    def start(self, target, args=(), kwargs=None, copies: bool = False) -> None:
        """Run `target` here when it is the first worker that trains (`copies`: every worker runs
        this one function, so it is the training whatever its own source shows)."""
        if target is None:
            return
        if self.ran or not (copies or trains(target)):
            self.skipped.append(_name(target))
            return
        self.ran = _name(target)
        target(*args, **(kwargs or {}))

    def notes(self) -> list[str]:
        if not self.ran and not self.skipped:
            return []
        lines = ([f"worker process `{self.ran}` run in the main process (1 worker: its step is traced)"]
                 if self.ran else [])
        if self.skipped:
            counts: dict[str, int] = {}
            for name in self.skipped:
                counts[name] = counts.get(name, 0) + 1
            lines.append("worker processes not started: " + ", ".join(
                f"`{n}`" + (f" x{c}" if c > 1 else "") for n, c in counts.items()))
        return lines

    def process_class(self):
        workers = self

        class Process:   # multiprocessing.Process as the script uses it
            def __init__(self, group=None, target=None, name=None, args=(), kwargs=None, *, daemon=None) -> None:
                self._target, self._args, self._kwargs = target, tuple(args), dict(kwargs or {})
                self.name, self.daemon, self.exitcode, self.pid = name or "Process", daemon, None, None

            def start(self) -> None:
                workers.start(self._target, self._args, self._kwargs)
                self.exitcode = 0

            def run(self) -> None:
                workers.start(self._target, self._args, self._kwargs)

            def join(self, timeout=None) -> None:
                pass

            def is_alive(self) -> bool:
                return False

            def terminate(self) -> None:
                pass

            kill = close = terminate

        return Process

    def spawn(self, fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
        self.start(fn, (0, *tuple(args)), copies=True)
        self.skipped.extend([_name(fn)] * (max(int(nprocs or 1), 1) - 1))


@contextlib.contextmanager
def imitated(workers: Workers | None):
    """Inside: `multiprocessing.Process`, torch.multiprocessing's `Process`, `spawn` and
    `start_processes` imitated by `workers` (nothing when None)."""
    if workers is None:
        yield
        return
    import multiprocessing

    import torch
    import torch.multiprocessing as tmp

    process = workers.process_class()
    with contextlib.ExitStack() as stack:
        for owner in (multiprocessing, tmp):
            stack.enter_context(fakes.patched(owner, "Process", process))
        stack.enter_context(fakes.patched(tmp, "spawn", workers.spawn))
        stack.enter_context(fakes.patched(tmp, "start_processes", workers.spawn))
        # one process: nothing to share (and fake tensors have no storage to share)
        stack.enter_context(fakes.patched(torch.nn.Module, "share_memory", _itself))
        stack.enter_context(fakes.patched(torch.Tensor, "share_memory_", _itself))
        yield


def _itself(self):
    return self
