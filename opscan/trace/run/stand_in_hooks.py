"""The stand-ins of NOTE [stand-ins for data and weights] (stand_ins.py) put in place for a run:
numpy's and torch's readers at once, each library's when the script imports it (an import hook,
so opscan never imports a library the script does not use), all put back after the run."""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import os
import sys
from collections.abc import Callable

from opscan.trace.run import (data_stand_ins, existence_checks, file_stand_ins, listings, media_stand_ins,
                              nltk_stand_ins, outside_writes, pretrained, real_transforms, removed_apis, rendering,
                              table_stand_ins, tokenizer_stand_ins, trackers, windows_paths)
from opscan.trace.run.stand_ins import Patches, StandIns

# NOTE [only the real library is patched]
# A hook watches a module by its name (`datasets`, `h5py`, `wandb`, `torchvision`), and a project may
# have its own module of that name (CycleGAN-pytorch's `datasets.py`, found first on the script's
# import path). Patching it ran the Hugging Face stand-in on the project's half-imported module
# ("partially initialized module 'datasets' has no attribute 'load_dataset'"). A watched module is
# patched only when its file lies outside the project (site-packages, an editable install of
# another checkout, a folder on PYTHONPATH); a module of the project, by its file, is imported and
# run untouched. A module with no file (built-in, a namespace with no folder) is not patched.


def _origins(spec) -> list[str]:
    if spec is None:
        return []
    if spec.origin and spec.origin not in ("built-in", "frozen", "namespace"):
        return [spec.origin]
    return list(spec.submodule_search_locations or [])


def is_library(spec, root: str) -> bool:
    """Whether a module's spec is a library's, not the project's (NOTE [only the real library is patched])."""
    origins = [os.path.realpath(o) for o in _origins(spec)]
    return bool(origins) and not any(root and (o == root or o.startswith(root + os.sep)) for o in origins)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls `patch(module)` right after a watched module is executed (NOTE [stand-ins for data and weights])."""

    def __init__(self, watched: dict[str, Callable], root: str = "") -> None:
        self.watched = watched
        self.root = root
        self._busy: set[str] = set()

    def find_spec(self, name, path=None, target=None):
        if name not in self.watched or name in self._busy:
            return None
        self._busy.add(name)
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        finally:
            self._busy.discard(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module") \
                or not is_library(spec, self.root):
            return None
        loader, patch = spec.loader, self.watched[name]

        class Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                patch(module)

        spec.loader = Loader()
        return spec


def _both(first: Callable, second: Callable) -> Callable:
    """Two parts' patches of one module, in order."""
    def run(module) -> None:
        first(module)
        second(module)
    return run


@contextlib.contextmanager
def installed(stand_ins: StandIns | None):
    """Inside: every stand-in of NOTE [stand-ins for data and weights] answers (nothing when None)."""
    if stand_ins is None:
        yield
        return
    patches = Patches()
    watched: dict[str, Callable] = {}
    # windows_paths, then outside_writes first: the others' open, torch.load and listings wrap their own,
    # so they see the path the script named (and the frame that asked: NOTE [a library's own files]);
    # they map what the others pass on
    for part in (windows_paths, outside_writes, data_stand_ins, file_stand_ins, table_stand_ins, media_stand_ins,
                 pretrained, tokenizer_stand_ins, trackers, real_transforms, listings, existence_checks, rendering,
                 nltk_stand_ins, removed_apis):
        for name, patch in part.install(stand_ins, patches).items():
            watched[name] = _both(watched[name], patch) if name in watched else patch
    done: set[str] = set()

    def once(name: str, patch: Callable) -> Callable:
        def run(module) -> None:
            if name not in done:
                done.add(name)
                patch(sys.modules.get(name, module))   # a lazy package may have replaced its module object
        return run

    hooks = {name: once(name, patch) for name, patch in watched.items()}
    for name, patch in hooks.items():
        if name in sys.modules and is_library(getattr(sys.modules[name], "__spec__", None), stand_ins.root):
            patch(sys.modules[name])
    finder = _AfterImport(hooks, stand_ins.root)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(finder)
        patches.undo()
