"""What libraries ask of an `opscan run` about its tensors, answered as in a real run (NOTE [fake
tensors asked])."""

from __future__ import annotations

import contextlib
import importlib.abc
import sys

# NOTE [fake tensors asked]
# Libraries skip value-dependent code while a graph is traced, and count a FakeTensor as tracing:
# transformers' `is_tracing(tensor)` is true for one (`is_fake_tensor`), so its attention masks take
# the traced path (an explicit causal mask: new_ones, le, bitwise_and, index) where a real run reads
# the padding mask, finds no padding and lets SDPA apply `is_causal` (ones, tril in its math kernel).
# In a real run no tensor is fake: inside the run the question answers False, and the value-dependent
# code then runs as for real (host values, else counted stand-ins). The answer is given where the
# library asks it: its module is patched when it is imported during the run (or at the start, when
# it already was) and restored after.
_ANSWERS = {("transformers.utils.import_utils", "is_fake_tensor"): lambda x: False}


class _Patcher(importlib.abc.MetaPathFinder):
    """Patches a module of _ANSWERS right after it is executed."""

    def __init__(self, patch) -> None:
        self.patch = patch

    def find_spec(self, fullname, path, target=None):
        if not any(fullname == module for module, _ in _ANSWERS):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _Loader(spec.loader, self.patch)
                return spec
        return None


class _Loader(importlib.abc.Loader):
    def __init__(self, loader, patch) -> None:
        self.loader, self.patch = loader, patch

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        self.loader.exec_module(module)
        self.patch(module)


@contextlib.contextmanager
def real_answers():
    """Inside: the library questions of _ANSWERS answer as in a real run."""
    saved: list[tuple] = []

    def patch(module) -> None:
        for (name, attribute), answer in _ANSWERS.items():
            if module.__name__ == name and hasattr(module, attribute):
                saved.append((module, attribute, getattr(module, attribute)))
                setattr(module, attribute, answer)

    for name, _ in _ANSWERS:
        if name in sys.modules:
            patch(sys.modules[name])
    finder = _Patcher(patch)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for module, attribute, original in reversed(saved):
            setattr(module, attribute, original)


__all__ = ["real_answers"]
